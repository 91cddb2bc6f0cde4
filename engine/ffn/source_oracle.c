/* The oracle (neuron_source.h): the true activations from the up (and
 * gate) rows it holds in DRAM, by the rule of activation.h. A measuring
 * device, not a deployable source: the truth beside the others. */
#include <stdio.h>
#include <stdlib.h>

#include "common/errbuf.h"
#include "engine/compute/activation.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/select_choice.h"

static void oracle_describe(const struct model *m, struct select_choice *c)
{
    (void)m;
    snprintf(c->desc, sizeof c->desc,
             "oracle: true activations from up-projection rows held in DRAM (a measuring device, not a predictor)");
}

static uint64_t oracle_bytes(const struct model *m, const struct select_config *c)
{
    (void)c;
    return neuron_select_matrix_bytes(m) * (m->arch.glu ? 2 : 1);
}

static uint64_t oracle_madds(const struct model *m, const struct select_config *c)
{
    (void)c;
    const struct model_shape *s = &m->shape;
    return (uint64_t)s->n_layers * s->d_ff * s->d_model * (m->arch.glu ? 2 : 1);
}

static int oracle_open(struct neuron_select *s, char *err, size_t errlen)
{
    const struct model *m = s->m;
    int rc = neuron_select_load_matrix(m, 0, &s->up, err, errlen);
    if (rc == 0 && m->arch.glu)
        rc = neuron_select_load_matrix(m, 1, &s->gate, err, errlen);
    /* a threshold's values are sampled where the threshold decides: no exact zeros there */
    if (rc == 0 && !activation_sparse(m->arch.act) && value_sample_init(&s->sample, VALUE_SAMPLE_CAP) != 0)
        rc = err_set(err, errlen, "out of memory choosing neurons");
    return rc;
}

/* The true activations: what the oracle knows. */
static uint32_t oracle_layer(struct neuron_select *s, int layer, struct cpu_kernels *k, const float *x, uint32_t *out)
{
    const struct model *m = s->m;
    const struct model_shape *sh = &m->shape;
    const void *up = neuron_select_rows(s, s->up, layer), *gate = neuron_select_rows(s, s->gate, layer);
    ck_matvec(k, s->z, up, m->dtype, x, m->layers[layer].ffn_up_bias, (int)sh->d_ff, (int)sh->d_model);
    if (m->arch.glu)
        ck_matvec(k, s->g, gate, m->dtype, x, NULL, (int)sh->d_ff, (int)sh->d_model);
    uint32_t n = 0;
    for (uint32_t i = 0; i < sh->d_ff; i++)
        if (ffn_neuron_active(&m->arch, s->z[i], m->arch.glu ? s->g[i] : 0.0f, s->cfg.threshold))
            out[n++] = i;
    if (s->sample.n < s->sample.cap) /* sampled after the choice: the loop above stays as it was */
        for (uint32_t i = 0, stride = (uint32_t)value_sample_stride(sh->d_ff); i < sh->d_ff; i += stride)
            value_sample_push(&s->sample, ffn_neuron_value(&m->arch, s->z[i], m->arch.glu ? s->g[i] : 0.0f));
    return n;
}

const struct neuron_source_ops source_oracle = {
    .name = "oracle",
    .truth = true,
    .describe = oracle_describe,
    .bytes = oracle_bytes,
    .madds = oracle_madds,
    .open = oracle_open,
    .layer = oracle_layer,
};
