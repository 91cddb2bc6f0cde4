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

/* The thresholds of the file (sparsify, or the model's sparsify.json):
 * per layer for gate-cal or teal, the global one for the gate. */
static int load_calibrated(const char *cmd, const char *name, const char *sparsify, const struct model *m,
                           struct select_choice *c, char *err, size_t errlen)
{
    char why[4800];
    bool teal = c->cfg.source == SOURCE_TEAL, global = !strcmp(name, "gate");
    if (sparsify_load(m, sparsify, teal ? SPARSIFY_INPUT : SPARSIFY_GATE, &c->cal, why, sizeof why) != 0)
        return err_set(err, errlen, "%s --active %s%s%s: %s", cmd, name, sparsify ? " --sparsify " : "",
                       sparsify ? sparsify : "", why);
    c->have_cal = true;
    if (sparsify)
        snprintf(c->cal_path, sizeof c->cal_path, "%s", sparsify);
    else
        snprintf(c->cal_path, sizeof c->cal_path, "%s/%s", m->dir, SPARSIFY_FILE);
    c->cfg.threshold = global ? c->cal.gate_global : 0;
    c->cfg.layer_thresholds = teal || global ? NULL : c->cal.gate;
    c->cfg.input_thresholds = teal ? c->cal.input : NULL;
    c->cfg.inter_thresholds = teal ? c->cal.inter : NULL;
    return 0;
}

static void describe_calibrated(const struct model *m, struct select_choice *c)
{
    double mb = (double)neuron_select_bytes(m, &c->cfg) / 1e6, mmadds = (double)neuron_select_madds(m, &c->cfg) / 1e6;
    const char *file = c->cal_path;
    if (c->cfg.source == SOURCE_TEAL)
        snprintf(c->desc, sizeof c->desc,
                 "teal: input channels with |x| above, and rows of down with |act(gate.x').(up.x')| above, per-layer "
                 "thresholds calibrated for sparsity %g (%.200s); nothing held beside the FFN", c->cal.sparsity, file);
    else if (!c->cfg.layer_thresholds)
        snprintf(c->desc, sizeof c->desc,
                 "gate: |act(gate.x)| > %g in every layer, the global threshold calibrated for sparsity %g (%.200s); its "
                 "rows %.2f MB in DRAM, %.2f M multiply-adds per token", c->cfg.threshold, c->cal.sparsity, file, mb,
                 mmadds);
    else
        snprintf(c->desc, sizeof c->desc,
                 "gate-cal: |act(gate.x)| above per-layer thresholds calibrated for sparsity %g (%.200s); its "
                 "rows %.2f MB in DRAM, %.2f M multiply-adds per token", c->cal.sparsity, file, mb, mmadds);
}

static void describe(const struct model *m, struct select_choice *c)
{
    if (c->have_cal) {
        describe_calibrated(m, c);
        return;
    }
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
                 ranks, wtype_name(c->pred.dtype), thr, predictor_target_name(c->pred.target), mb, mmadds);
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

bool select_choice_known(const char *name)
{
    enum neuron_source src;
    return !strcmp(name, "gate-cal") || (neuron_source_parse(name, &src) && src != SOURCE_TRACE);
}

/* gate-cal is the gate with a file's per-layer thresholds, the gate with
 * --sparsify and no --threshold the file's global one; teal is its own
 * source. */
static int open_source(const char *cmd, const char *name, bool threshold_given, double threshold,
                       const char *sparsify, const struct model *m, struct select_choice *out, char *err,
                       size_t errlen)
{
    bool cal = !strcmp(name, "gate-cal");
    if (cal)
        out->cfg.source = SOURCE_GATE;
    else if (!neuron_source_parse(name, &out->cfg.source))
        return err_set(err, errlen, "%s --active: '%s' is not oracle, predictor, gate, gate-cal or teal", cmd, name);
    cal = cal || out->cfg.source == SOURCE_TEAL;
    if (cal && threshold_given)
        return err_set(err, errlen, "%s --threshold: --active %s takes its per-layer thresholds from %s; "
                       "leave out --threshold (or use --active gate for one global threshold)", cmd, name,
                       sparsify ? sparsify : "the model's " SPARSIFY_FILE);
    if (sparsify && !cal && out->cfg.source != SOURCE_GATE)
        return err_set(err, errlen, "%s --sparsify %s: --active %s reads no thresholds file (gate, gate-cal and teal "
                       "do)", cmd, sparsify, name);
    out->cfg.threshold = threshold_given ? (float)threshold : 0;
    if (out->cfg.source == SOURCE_GATE && cal && !m->arch.glu)
        return err_set(err, errlen, "%s --active %s: %s's FFN (%s, no GLU) has no gate projection", cmd, name,
                       m->shape.name, m->shape.ffn_activation);
    if (cal || (out->cfg.source == SOURCE_GATE && sparsify && !threshold_given && m->arch.glu))
        return load_calibrated(cmd, name, sparsify, m, out, err, errlen);
    if (out->cfg.source == SOURCE_PREDICTOR)
        return open_predictor(cmd, threshold_given, threshold, m, out, err, errlen);
    return 0;
}

int select_choice_open(const char *cmd, const char *name, bool threshold_given, double threshold,
                       const char *sparsify, const struct model *m, struct select_choice *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (open_source(cmd, name, threshold_given, threshold, sparsify, m, out, err, errlen) != 0) {
        select_choice_free(out);
        return -1;
    }
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
    if (c->have_cal)
        sparsify_free(&c->cal);
    c->have_pred = false;
    c->have_cal = false;
}
