/* Choosing a layer's neurons (neuron_select.h): predictor, gate, oracle. */
#include "engine/ffn/neuron_select.h"

#include "engine/model/ffn_matrix.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/compute/activation.h"
#include "engine/model/model_format.h"

const char *neuron_source_name(enum neuron_source src)
{
    switch (src) {
    case SOURCE_PREDICTOR:
        return "predictor";
    case SOURCE_GATE:
        return "gate";
    case SOURCE_TRACE:
        return "trace";
    case SOURCE_TEAL:
        return "teal";
    case SOURCE_ORACLE:
        break;
    }
    return "oracle";
}

bool neuron_source_parse(const char *name, enum neuron_source *out)
{
    static const enum neuron_source computed[] = {SOURCE_ORACLE, SOURCE_PREDICTOR, SOURCE_GATE, SOURCE_TEAL};
    for (size_t i = 0; i < sizeof computed / sizeof *computed; i++)
        if (!strcmp(name, neuron_source_name(computed[i]))) {
            *out = computed[i];
            return true;
        }
    return false;
}

/* Bytes of one [n_layers][d_ff][d_model] matrix in the model's dtype. */
static uint64_t matrix_bytes(const struct model *m)
{
    const struct model_shape *s = &m->shape;
    return (uint64_t)s->n_layers * s->d_ff * wtype_row_bytes(m->dtype, s->d_model);
}

int neuron_select_check(const struct model *m, const struct select_config *c, char *err, size_t errlen)
{
    const struct model_shape *s = &m->shape;
    if (c->source == SOURCE_TRACE)
        return err_set(err, errlen, "a trace's sets are replayed, not computed: neurons are selected by the oracle, a "
                       "predictor or the gate");
    if (c->source == SOURCE_GATE && !m->arch.glu)
        return err_set(err, errlen,
                       "the gate chooses neurons of GLU FFNs only: %s's FFN (%s, no GLU) has no gate projection",
                       s->name, s->ffn_activation);
    if (c->source == SOURCE_TEAL && (!c->input_thresholds || !c->inter_thresholds))
        return err_set(err, errlen, "input sparsity needs its calibrated thresholds (flashbed sparsify calibrate)");
    if (c->source != SOURCE_PREDICTOR)
        return 0;
    const struct predictor *p = c->predictor;
    if (!p)
        return err_set(err, errlen, "no predictor given");
    if (p->n_layers != s->n_layers || p->d_model != s->d_model || p->d_ff != s->d_ff)
        return err_set(err, errlen, "the predictor is for %u layers of %u x %u, the model has %u of %u x %u",
                       p->n_layers, p->d_model, p->d_ff, s->n_layers, s->d_model, s->d_ff);
    return 0;
}

uint64_t neuron_select_bytes(const struct model *m, const struct select_config *c)
{
    switch (c->source) {
    case SOURCE_PREDICTOR:
        return c->predictor ? predictor_bytes(c->predictor) : 0;
    case SOURCE_GATE:
        return matrix_bytes(m);
    case SOURCE_ORACLE:
        return matrix_bytes(m) * (m->arch.glu ? 2 : 1);
    case SOURCE_TRACE: /* replayed, not computed: nothing held here */
    case SOURCE_TEAL:  /* chooses as the FFN computes: nothing held beside it */
        break;
    }
    return 0;
}

uint64_t neuron_select_madds(const struct model *m, const struct select_config *c)
{
    const struct model_shape *s = &m->shape;
    uint64_t one = (uint64_t)s->n_layers * s->d_ff * s->d_model;
    switch (c->source) {
    case SOURCE_PREDICTOR:
        return c->predictor ? predictor_madds(c->predictor) : 0;
    case SOURCE_GATE:
        return one;
    case SOURCE_ORACLE:
        return one * (m->arch.glu ? 2 : 1);
    case SOURCE_TRACE:
    case SOURCE_TEAL:
        break;
    }
    return 0;
}

/* Copies vector `vec` (0: up, 1: gate) of every bundle into dst
 * [n_layers][d_ff][d_model]: from the DRAM bundles, or from ffn.bin. */
static int gather_rows(const struct model *m, unsigned vec, uint8_t *dst, char *err, size_t errlen)
{
    const struct model_shape *s = &m->shape;
    uint64_t row = wtype_row_bytes(m->dtype, s->d_model);
    uint64_t skip = vec ? wtype_row_bytes(m->dtype, ffn_bundle_gate(s)) : 0;
    uint64_t n = (uint64_t)s->n_layers * s->d_ff;
    if (m->ffn) { /* all bundles in DRAM */
        for (uint32_t l = 0; l < s->n_layers; l++)
            ffn_matrix_copy(m, l, vec ? FFN_PART_GATE : FFN_PART_UP, dst + (uint64_t)l * s->d_ff * row);
        return 0;
    }
    FILE *in = fopen(m->ffn_path, "rb");
    if (!in)
        return err_set(err, errlen, "%s: cannot open: %s", m->ffn_path, strerror(errno));
    uint8_t *bundle = malloc(m->bundle_stride);
    int rc = bundle ? 0 : err_set(err, errlen, "out of memory reading %s", m->ffn_path);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        if (fread(bundle, 1, m->bundle_stride, in) != m->bundle_stride)
            rc = err_set(err, errlen, "%s: short read at bundle %llu", m->ffn_path, (unsigned long long)i);
        else
            memcpy(dst + i * row, bundle + skip, row);
    }
    free(bundle);
    fclose(in);
    return rc;
}

static int load_matrix(const struct model *m, unsigned vec, void **out, char *err, size_t errlen)
{
    uint64_t bytes = matrix_bytes(m);
    *out = malloc(bytes ? bytes : 1);
    if (!*out)
        return err_set(err, errlen, "cannot allocate %llu bytes for the %s rows", (unsigned long long)bytes,
                       vec ? "gate" : "up-projection");
    return gather_rows(m, vec, *out, err, errlen);
}

int neuron_select_open(struct neuron_select *s, const struct model *m, const struct select_config *c, char *err,
                       size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->cfg = *c;
    s->m = m;
    if (neuron_select_check(m, c, err, errlen) != 0)
        return -1;
    uint32_t d_ff = m->shape.d_ff;
    uint32_t rank = c->source == SOURCE_PREDICTOR ? predictor_max_rank(c->predictor) : 1;
    s->z = malloc(d_ff * sizeof *s->z);
    s->g = malloc(d_ff * sizeof *s->g);
    s->h = malloc(rank * sizeof *s->h);
    s->xs = malloc(m->shape.d_model * sizeof *s->xs);
    int rc = s->z && s->g && s->h && s->xs ? 0 : err_set(err, errlen, "out of memory choosing neurons");
    bool both = c->source == SOURCE_ORACLE || c->source == SOURCE_TEAL;
    if (rc == 0 && both)
        rc = load_matrix(m, 0, &s->up, err, errlen);
    if (rc == 0 && (c->source == SOURCE_GATE || (both && m->arch.glu)))
        rc = load_matrix(m, 1, &s->gate, err, errlen);
    s->rows_bytes = (s->up ? matrix_bytes(m) : 0) + (s->gate ? matrix_bytes(m) : 0);
    /* a threshold's values are sampled where the threshold decides: no exact zeros there */
    if (rc == 0 && c->source == SOURCE_ORACLE && !activation_sparse(m->arch.act) &&
        value_sample_init(&s->sample, VALUE_SAMPLE_CAP) != 0)
        rc = err_set(err, errlen, "out of memory choosing neurons");
    if (rc != 0)
        neuron_select_close(s);
    return rc;
}

void neuron_select_close(struct neuron_select *s)
{
    free(s->up);
    free(s->gate);
    free(s->z);
    free(s->g);
    free(s->h);
    free(s->xs);
    value_sample_free(&s->sample);
    memset(s, 0, sizeof *s);
}

/* The true activations: what the oracle knows. */
static uint32_t oracle_layer(struct neuron_select *s, const void *up, const void *gate, int layer,
                             struct cpu_kernels *k, const float *x, uint32_t *out)
{
    const struct model *m = s->m;
    const struct model_shape *sh = &m->shape;
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

/* The gate alone decides (App. C.5), with one threshold or the layer's. */
static uint32_t gate_layer(struct neuron_select *s, const void *gate, int layer, struct cpu_kernels *k,
                           const float *x, uint32_t *out)
{
    const struct model *m = s->m;
    float t = s->cfg.layer_thresholds ? s->cfg.layer_thresholds[layer] : s->cfg.threshold;
    ck_matvec(k, s->g, gate, m->dtype, x, NULL, (int)m->shape.d_ff, (int)m->shape.d_model);
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->shape.d_ff; i++)
        if (fabsf(activation_apply_t(s->g[i], m->arch.act, m->arch.fatrelu_threshold)) > t)
            out[n++] = i;
    return n;
}

/* Input sparsity: x's small channels dropped into xs, then the rows of down
 * whose |h| over the kept channels passes the layer's cut. */
static uint32_t teal_layer(struct neuron_select *s, const void *up, const void *gate, int layer,
                           struct cpu_kernels *k, const float *x, uint32_t *out)
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
    ck_matvec(k, s->z, up, m->dtype, s->xs, m->layers[layer].ffn_up_bias, (int)sh->d_ff, (int)sh->d_model);
    if (a->glu)
        ck_matvec(k, s->g, gate, m->dtype, s->xs, NULL, (int)sh->d_ff, (int)sh->d_model);
    uint32_t n = 0;
    for (uint32_t i = 0; i < sh->d_ff; i++) {
        float h = a->glu ? activation_apply_t(s->g[i], a->act, a->fatrelu_threshold) * s->z[i]
                         : activation_apply_t(s->z[i], a->act, a->fatrelu_threshold);
        if (fabsf(h) > cut_h)
            out[n++] = i;
    }
    return n;
}

uint32_t neuron_select_layer(struct neuron_select *s, int layer, struct cpu_kernels *k, const float *x,
                             uint32_t *out)
{
    const struct model_shape *sh = &s->m->shape;
    uint64_t at = (uint64_t)layer * sh->d_ff * wtype_row_bytes(s->m->dtype, sh->d_model);
    switch (s->cfg.source) {
    case SOURCE_PREDICTOR:
        return predictor_predict(s->cfg.predictor, (uint32_t)layer, k, x, s->h, s->z, out);
    case SOURCE_GATE:
        return gate_layer(s, (const uint8_t *)s->gate + at, layer, k, x, out);
    case SOURCE_TEAL:
        return teal_layer(s, (const uint8_t *)s->up + at, s->gate ? (const uint8_t *)s->gate + at : NULL, layer, k,
                          x, out);
    case SOURCE_ORACLE:
        return oracle_layer(s, (const uint8_t *)s->up + at, s->gate ? (const uint8_t *)s->gate + at : NULL, layer, k, x,
                            out);
    case SOURCE_TRACE: /* neuron_select_check refuses it */
        break;
    }
    return 0;
}
