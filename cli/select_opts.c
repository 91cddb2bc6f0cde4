/* --active and --threshold (select_opts.h). */
#include "cli/select_opts.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "engine/forward/engine.h"
#include "engine/ffn/ffn_select.h"

static int load_predictor(const char *cmd, const struct model *m, struct select_choice *c)
{
    char err[1024];
    const struct model_shape *s = &m->shape;
    int rc = predictor_load(&c->pred, m->dir, s->n_layers, s->d_model, s->d_ff, err, sizeof err);
    if (rc == 1) {
        fb_error("%s --active predictor: %s has no activation predictor (%s and a \"predictor\" entry in "
                 "model.json): make one with `flashbed predictor train --model %s --text FILE --tokens N`",
                 cmd, m->dir, PREDICTOR_FILE, m->dir);
        return -1;
    }
    if (rc != 0) {
        fb_error("%s --active predictor: %s", cmd, err);
        return -1;
    }
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

int select_choice_make(const char *cmd, const char *name, bool threshold_given, double threshold,
                       const struct model *m, struct select_choice *out)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(name, "predictor"))
        out->cfg.source = SOURCE_PREDICTOR;
    else if (!strcmp(name, "gate"))
        out->cfg.source = SOURCE_GATE;
    else if (!strcmp(name, "oracle"))
        out->cfg.source = SOURCE_ORACLE;
    else {
        fb_error("%s --active: '%s' is not oracle, predictor or gate", cmd, name);
        return -1;
    }
    out->cfg.threshold = threshold_given ? (float)threshold : 0;
    if (out->cfg.source == SOURCE_PREDICTOR) {
        if (threshold_given && (threshold < 0 || threshold > 1)) {
            fb_error("%s --threshold %g: the predictor's threshold is a probability, 0 to 1", cmd, threshold);
            return -1;
        }
        if (load_predictor(cmd, m, out) != 0)
            return -1;
        if (threshold_given)
            predictor_set_threshold(&out->pred, threshold);
        out->cfg.predictor = &out->pred;
    }
    char err[512];
    if (neuron_select_check(m, &out->cfg, err, sizeof err) != 0) {
        fb_error("%s --active %s: %s", cmd, name, err);
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

int select_engine_init(const char *cmd, const char *active, bool threshold_given, double threshold,
                       struct engine *e, const struct fb_settings *set, const struct model *m,
                       const struct backend_ops *be, int threads, int max_seq, struct select_choice *sel,
                       bool *have_sel)
{
    *have_sel = false;
    bool sparse = strcmp(active, "all") != 0;
    if (sparse && select_choice_make(cmd, active, threshold_given, threshold, m, sel) != 0)
        return -1;
    *have_sel = sparse;
    char err[1024];
    if (engine_init_with(e, set, m, be, sparse ? &ffn_select : &ffn_dense, sparse ? &sel->cfg : NULL, threads,
                         max_seq, err, sizeof err) != 0) {
        fb_error("%s: %s", cmd, err);
        return -1;
    }
    return 0;
}
