/* The gate (neuron_source.h; the paper's App. C.5): GLU FFNs only, neuron
 * i when |act(gate_i·x)| > the threshold, one for every layer (--threshold,
 * or a thresholds file's global one) or, as gate-cal (CATS-style), the
 * file's per-layer ones. Its rows are held in DRAM: a deployment has them,
 * so they count as its predictor. */
#include <math.h>
#include <stdio.h>

#include "common/errbuf.h"
#include "engine/compute/activation.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/select_choice.h"

/* gate-cal, or the gate with --sparsify and no --threshold: the file's
 * per-layer thresholds, or its global one. */
static int gate_choose(const struct source_args *a, const struct model *m, struct select_choice *c, char *err,
                       size_t errlen)
{
    if (a->cal && !m->arch.glu)
        return err_set(err, errlen, "%s --active %s: %s's FFN (%s, no GLU) has no gate projection", a->cmd, a->name,
                       m->shape.name, m->shape.ffn_activation);
    if (!a->cal && !(a->sparsify && !a->threshold_given && m->arch.glu))
        return 0;
    if (select_choice_calibrated(a, m, SPARSIFY_GATE, c, err, errlen) != 0)
        return -1;
    c->cfg.threshold = a->cal ? 0 : c->cal.gate_global;
    c->cfg.layer_thresholds = a->cal ? c->cal.gate : NULL;
    return 0;
}

static void gate_describe(const struct model *m, struct select_choice *c)
{
    double mb = (double)neuron_select_bytes(m, &c->cfg) / 1e6, mmadds = (double)neuron_select_madds(m, &c->cfg) / 1e6;
    const char *file = c->cal_path;
    if (!c->have_cal)
        snprintf(c->desc, sizeof c->desc,
                 "gate: |act(gate.x)| > %g (App. C.5); its rows %.2f MB in DRAM, %.2f M multiply-adds per token",
                 c->cfg.threshold, mb, mmadds);
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

static void gate_report(const struct select_config *c, uint32_t n_layers, struct cJSON *sum)
{
    if (!c->layer_thresholds) {
        cJSON_AddNumberToObject(sum, "gate_threshold", c->threshold);
        return;
    }
    cJSON *t = cJSON_AddArrayToObject(sum, "gate_thresholds");
    for (uint32_t l = 0; l < n_layers; l++)
        cJSON_AddItemToArray(t, cJSON_CreateNumber(c->layer_thresholds[l]));
}

static int gate_check(const struct model *m, const struct select_config *c, char *err, size_t errlen)
{
    (void)c;
    if (!m->arch.glu)
        return err_set(err, errlen,
                       "the gate chooses neurons of GLU FFNs only: %s's FFN (%s, no GLU) has no gate projection",
                       m->shape.name, m->shape.ffn_activation);
    return 0;
}

static uint64_t gate_bytes(const struct model *m, const struct select_config *c)
{
    (void)c;
    return neuron_select_matrix_bytes(m);
}

static uint64_t gate_madds(const struct model *m, const struct select_config *c)
{
    (void)c;
    return (uint64_t)m->shape.n_layers * m->shape.d_ff * m->shape.d_model;
}

static int gate_open(struct neuron_select *s, char *err, size_t errlen)
{
    return neuron_select_load_matrix(s->m, 1, &s->gate, err, errlen);
}

/* The gate alone decides (App. C.5), with one threshold or the layer's. */
static uint32_t gate_layer(struct neuron_select *s, int layer, struct cpu_kernels *k, const float *x, uint32_t *out)
{
    const struct model *m = s->m;
    float t = s->cfg.layer_thresholds ? s->cfg.layer_thresholds[layer] : s->cfg.threshold;
    ck_matvec(k, s->g, neuron_select_rows(s, s->gate, layer), m->dtype, x, NULL, (int)m->shape.d_ff,
              (int)m->shape.d_model);
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->shape.d_ff; i++)
        if (fabsf(activation_apply_t(s->g[i], m->arch.act, m->arch.fatrelu_threshold)) > t)
            out[n++] = i;
    return n;
}

const struct neuron_source_ops source_gate = {
    .name = "gate",
    .cal_name = "gate-cal",
    .file = SOURCE_FILE_GLOBAL,
    .deployable = true,
    .held_as = "gate rows",
    .choose = gate_choose,
    .describe = gate_describe,
    .report = gate_report,
    .check = gate_check,
    .bytes = gate_bytes,
    .madds = gate_madds,
    .open = gate_open,
    .layer = gate_layer,
};
