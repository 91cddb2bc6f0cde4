/* The paper's deployable low-rank predictor (neuron_source.h, predictor.h):
 * neuron i when sigmoid(B·(A·x) + bias) > its threshold. The model's
 * predictor is loaded by --active predictor; on a device it chooses there
 * (predictor_dev.h). */
#include <stdio.h>
#include <stdlib.h>

#include "common/errbuf.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/select_choice.h"

static int load_predictor(const char *cmd, const struct model *m, struct select_choice *c, char *err,
                          size_t errlen)
{
    char why[1024];
    const struct model_shape *s = &m->shape;
    int rc = predictor_load(&c->pred, m->dir, s->n_layers, s->d_model, s->d_ff, why, sizeof why);
    if (rc == 1)
        return err_set(err, errlen, "%s --active predictor: %s has no activation predictor (%s and a \"predictor\" "
                       "entry in model.json): make one with `flashbed predictor train --model %s --text FILE "
                       "--tokens N`", cmd, m->dir, PREDICTOR_FILE, m->dir);
    if (rc != 0)
        return err_set(err, errlen, "%s --active predictor: %s", cmd, why);
    c->have_pred = true;
    return 0;
}

/* The model's predictor with the threshold asked for (a probability). */
static int choose_predictor(const struct source_args *a, const struct model *m, struct select_choice *c, char *err,
                            size_t errlen)
{
    if (a->threshold_given && (a->threshold < 0 || a->threshold > 1))
        return err_set(err, errlen, "%s --threshold %g: the predictor's threshold is a probability, 0 to 1", a->cmd,
                       a->threshold);
    if (load_predictor(a->cmd, m, c, err, errlen) != 0)
        return -1;
    if (a->threshold_given)
        predictor_set_threshold(&c->pred, a->threshold);
    c->cfg.predictor = &c->pred;
    return 0;
}

static void describe_predictor(const struct model *m, struct select_choice *c)
{
    double mb = (double)neuron_select_bytes(m, &c->cfg) / 1e6, mmadds = (double)neuron_select_madds(m, &c->cfg) / 1e6;
    uint32_t lo = c->pred.layers[0].rank, hi = predictor_max_rank(&c->pred);
    for (uint32_t l = 0; l < c->pred.n_layers; l++)
        lo = c->pred.layers[l].rank < lo ? c->pred.layers[l].rank : lo;
    char ranks[48], thr[128];
    snprintf(ranks, sizeof ranks, lo == hi ? "rank %u" : "ranks %u to %u", lo, hi);
    predictor_threshold_text(&c->pred, thr, sizeof thr);
    snprintf(c->desc, sizeof c->desc,
             "predictor: %s (%s), threshold %s, trained for %s; %.2f MB in DRAM, %.2f M multiply-adds per token",
             ranks, wtype_name(c->pred.dtype), thr, predictor_target_name(c->pred.target), mb, mmadds);
}

static void report_predictor(const struct select_config *c, uint32_t n_layers, struct cJSON *sum)
{
    (void)n_layers;
    predictor_thresholds_json(c->predictor, cJSON_AddObjectToObject(sum, "predictor_threshold"));
}

static int check_predictor(const struct model *m, const struct select_config *c, char *err, size_t errlen)
{
    const struct model_shape *s = &m->shape;
    const struct predictor *p = c->predictor;
    if (!p)
        return err_set(err, errlen, "no predictor given");
    if (p->n_layers != s->n_layers || p->d_model != s->d_model || p->d_ff != s->d_ff)
        return err_set(err, errlen, "the predictor is for %u layers of %u x %u, the model has %u of %u x %u",
                       p->n_layers, p->d_model, p->d_ff, s->n_layers, s->d_model, s->d_ff);
    return 0;
}

static uint64_t predictor_source_bytes(const struct model *m, const struct select_config *c)
{
    (void)m;
    return c->predictor ? predictor_bytes(c->predictor) : 0;
}

static uint64_t predictor_source_madds(const struct model *m, const struct select_config *c)
{
    (void)m;
    return c->predictor ? predictor_madds(c->predictor) : 0;
}

/* Its scratch: A·x, as long as the widest layer's rank. */
static int open_predictor(struct neuron_select *s, char *err, size_t errlen)
{
    s->h = malloc(predictor_max_rank(s->cfg.predictor) * sizeof *s->h);
    return s->h ? 0 : err_set(err, errlen, "out of memory choosing neurons");
}

static uint32_t layer_predictor(struct neuron_select *s, int layer, struct cpu_kernels *k, const float *x,
                                uint32_t *out)
{
    return predictor_predict(s->cfg.predictor, (uint32_t)layer, k, x, s->h, s->z, out);
}

const struct neuron_source_ops source_predictor = {
    .name = "predictor",
    .deployable = true,
    .chooses_on_device = true,
    .held_as = "predictor",
    .choose = choose_predictor,
    .describe = describe_predictor,
    .report = report_predictor,
    .check = check_predictor,
    .bytes = predictor_source_bytes,
    .madds = predictor_source_madds,
    .open = open_predictor,
    .layer = layer_predictor,
};
