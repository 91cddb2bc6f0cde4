/* Input sparsity, TEAL-style (neuron_source.h): the input channels j with
 * |x_j| <= the layer's input threshold are dropped (x' keeps the others),
 * then neuron i is chosen when |act(gate_i·x')·(up_i·x')| (|act(up_i·x' +
 * b)| without a gate) > the layer's intermediate threshold: the rows of
 * down it keeps. Both thresholds per layer, from a thresholds file (flashbed
 * sparsify calibrate). It chooses as the FFN computes: nothing held beside
 * the FFN; on flash the transposed unit (ffn_transposed.h) does it. */
#include <math.h>
#include <stdio.h>

#include "common/errbuf.h"
#include "engine/compute/activation.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/select_choice.h"

static int teal_choose(const struct source_args *a, const struct model *m, struct select_choice *c, char *err,
                       size_t errlen)
{
    if (select_choice_calibrated(a, m, SPARSIFY_INPUT, c, err, errlen) != 0)
        return -1;
    c->cfg.threshold = 0;
    c->cfg.input_thresholds = c->cal.input;
    c->cfg.inter_thresholds = c->cal.inter;
    return 0;
}

static void teal_describe(const struct model *m, struct select_choice *c)
{
    (void)m;
    snprintf(c->desc, sizeof c->desc,
             "teal: input channels with |x| above, and rows of down with |act(gate.x').(up.x')| above, per-layer "
             "thresholds calibrated for sparsity %g (%.200s); nothing held beside the FFN", c->cal.sparsity,
             c->cal_path);
}

static int teal_check(const struct model *m, const struct select_config *c, char *err, size_t errlen)
{
    (void)m;
    if (!c->input_thresholds || !c->inter_thresholds)
        return err_set(err, errlen, "input sparsity needs its calibrated thresholds (flashbed sparsify calibrate)");
    return 0;
}

static int teal_open(struct neuron_select *s, char *err, size_t errlen)
{
    int rc = neuron_select_load_matrix(s->m, 0, &s->up, err, errlen);
    if (rc == 0 && s->m->arch.glu)
        rc = neuron_select_load_matrix(s->m, 1, &s->gate, err, errlen);
    return rc;
}

/* Input sparsity: x's small channels dropped into xs, then the rows of down
 * whose |h| over the kept channels passes the layer's cut. */
static uint32_t teal_layer(struct neuron_select *s, int layer, struct cpu_kernels *k, const float *x, uint32_t *out)
{
    const struct model *m = s->m;
    const struct arch *a = &m->arch;
    const struct model_shape *sh = &m->shape;
    float cut_x = s->cfg.input_thresholds[layer], cut_h = s->cfg.inter_thresholds[layer];
    uint32_t kept = 0;
    for (uint32_t j = 0; j < sh->d_model; j++) {
        bool keep = fabsf(x[j]) > cut_x;
        s->xs[j] = keep ? x[j] : 0.0f;
        kept += keep;
    }
    s->kept_inputs = kept;
    ck_matvec(k, s->z, neuron_select_rows(s, s->up, layer), m->dtype, s->xs, m->layers[layer].ffn_up_bias,
              (int)sh->d_ff, (int)sh->d_model);
    if (a->glu)
        ck_matvec(k, s->g, neuron_select_rows(s, s->gate, layer), m->dtype, s->xs, NULL, (int)sh->d_ff,
                  (int)sh->d_model);
    uint32_t n = 0;
    for (uint32_t i = 0; i < sh->d_ff; i++) {
        float h = a->glu ? activation_apply_t(s->g[i], a->act, a->fatrelu_threshold) * s->z[i]
                         : activation_apply_t(s->z[i], a->act, a->fatrelu_threshold);
        if (fabsf(h) > cut_h)
            out[n++] = i;
    }
    return n;
}

const struct neuron_source_ops source_teal = {
    .name = "teal",
    .file = SOURCE_FILE_PER_LAYER,
    .reads_channels = true,
    .choose = teal_choose,
    .describe = teal_describe,
    .check = teal_check,
    .open = teal_open,
    .layer = teal_layer,
};
