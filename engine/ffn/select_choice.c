/* --active and --threshold as data (select_choice.h). */
#include "engine/ffn/select_choice.h"

#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/model/dtype.h"

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

static void describe(const struct model *m, struct select_choice *c)
{
    double mb = (double)neuron_select_bytes(m, &c->cfg) / 1e6, mmadds = (double)neuron_select_madds(m, &c->cfg) / 1e6;
    if (c->cfg.source == SOURCE_PREDICTOR) {
        uint32_t lo = c->pred.layers[0].rank, hi = predictor_max_rank(&c->pred);
        for (uint32_t l = 0; l < c->pred.n_layers; l++)
            lo = c->pred.layers[l].rank < lo ? c->pred.layers[l].rank : lo;
        char ranks[48], thr[128];
        snprintf(ranks, sizeof ranks, lo == hi ? "rank %u" : "ranks %u to %u", lo, hi);
        predictor_threshold_text(&c->pred, thr, sizeof thr);
        snprintf(c->desc, sizeof c->desc,
                 "predictor: %s (%s), threshold %s, trained for %s; %.2f MB in DRAM, %.2f M multiply-adds per token",
                 ranks, dtype_name(c->pred.dtype), thr, predictor_target_name(c->pred.target), mb, mmadds);
    } else if (c->cfg.source == SOURCE_GATE)
        snprintf(c->desc, sizeof c->desc,
                 "gate: |act(gate.x)| > %g (App. C.5); its rows %.2f MB in DRAM, %.2f M multiply-adds per token",
                 c->cfg.threshold, mb, mmadds);
    else
        snprintf(c->desc, sizeof c->desc,
                 "oracle: true activations from up-projection rows held in DRAM (a measuring device, not a predictor)");
}

/* The predictor with the threshold asked for (a probability). */
static int open_predictor(const char *cmd, bool threshold_given, double threshold, const struct model *m,
                          struct select_choice *out, char *err, size_t errlen)
{
    if (threshold_given && (threshold < 0 || threshold > 1))
        return err_set(err, errlen, "%s --threshold %g: the predictor's threshold is a probability, 0 to 1", cmd,
                       threshold);
    if (load_predictor(cmd, m, out, err, errlen) != 0)
        return -1;
    if (threshold_given)
        predictor_set_threshold(&out->pred, threshold);
    out->cfg.predictor = &out->pred;
    return 0;
}

int select_choice_open(const char *cmd, const char *name, bool threshold_given, double threshold,
                       const struct model *m, struct select_choice *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!neuron_source_parse(name, &out->cfg.source))
        return err_set(err, errlen, "%s --active: '%s' is not oracle, predictor or gate", cmd, name);
    out->cfg.threshold = threshold_given ? (float)threshold : 0;
    if (out->cfg.source == SOURCE_PREDICTOR && open_predictor(cmd, threshold_given, threshold, m, out, err, errlen) != 0)
        return -1;
    char why[512];
    if (neuron_select_check(m, &out->cfg, why, sizeof why) != 0) {
        err_set(err, errlen, "%s --active %s: %s", cmd, name, why);
        select_choice_free(out);
        return -1;
    }
    describe(m, out);
    return 0;
}

void select_choice_free(struct select_choice *c)
{
    if (c->have_pred)
        predictor_free(&c->pred);
    c->have_pred = false;
}
