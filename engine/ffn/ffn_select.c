/* The dense FFN on the chosen neurons (ffn_select.h). */
#include "engine/ffn/ffn_select.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "engine/model/dtype.h"

enum { GATHER_BYTES = 64u << 20 }; /* the compact buffer: a whole layer, or 64 MiB of bundles */

struct select_ffn {
    struct neuron_select sel;
    uint32_t *ids;    /* [d_ff] chosen this step */
    uint8_t *rows;    /* [batch] gathered bundles */
    float *bias;      /* [batch] their up biases */
    float *part;      /* [d_model] one batch's output */
    uint32_t batch;
    struct ffn_select_stats stats;
};

static int select_create(struct ffn *f, char *err, size_t errlen)
{
    const struct select_config *c = f->config;
    const struct model *m = f->m;
    struct select_ffn *sf = calloc(1, sizeof *sf);
    if (!sf || !c) {
        free(sf);
        return err_set(err, errlen, "the masked dense FFN needs its configuration");
    }
    f->priv = sf;
    if (!m->ffn)
        return err_set(err, errlen, "the masked dense FFN computes from the FFN in DRAM: the model left it on flash");
    if (neuron_select_open(&sf->sel, m, c, err, errlen) != 0)
        return -1;
    uint64_t fit = GATHER_BYTES / m->bundle_stride;
    sf->batch = fit < 1 ? 1 : fit < m->shape.d_ff ? (uint32_t)fit : m->shape.d_ff;
    sf->ids = malloc(m->shape.d_ff * sizeof *sf->ids);
    sf->rows = aligned_alloc(64, (size_t)sf->batch * m->bundle_stride);
    sf->bias = malloc(sf->batch * sizeof *sf->bias);
    sf->part = malloc(m->shape.d_model * sizeof *sf->part);
    if (!sf->ids || !sf->rows || !sf->bias || !sf->part)
        return err_set(err, errlen, "the masked dense FFN cannot allocate %u rows of %llu bytes", sf->batch,
                       (unsigned long long)m->bundle_stride);
    return 0;
}

/* Bytes of one neuron's bundle, padding and biases aside: (2 or 3) rows. */
static uint64_t neuron_bytes(const struct model *m)
{
    return m->bundle_bytes;
}

uint64_t ffn_dense_bytes_per_token(const struct model *m)
{
    return (uint64_t)m->shape.n_layers * m->shape.d_ff * neuron_bytes(m);
}

/* What layer step with n chosen reads: bundles, or for input sparsity the
 * kept columns of up and gate and the kept rows of down. */
static uint64_t step_bytes(const struct model *m, const struct neuron_select *s, uint32_t n)
{
    if (!select_source(&s->cfg)->reads_channels)
        return n * neuron_bytes(m);
    uint64_t cols = (uint64_t)s->kept_inputs * (m->arch.glu ? 2 : 1) * m->shape.d_ff;
    return wtype_row_bytes(m->dtype, cols + (uint64_t)n * m->shape.d_model);
}

/* out = the FFN over the bundles of ids[0..n), gathered a batch at a time. */
static void compute_chosen(struct ffn *f, struct select_ffn *sf, int layer, uint32_t n, const float *x, float *out)
{
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    int d = (int)m->shape.d_model;
    memset(out, 0, (size_t)d * sizeof *out);
    for (uint32_t lo = 0; lo < n; lo += sf->batch) {
        uint32_t k = n - lo < sf->batch ? n - lo : sf->batch;
        for (uint32_t j = 0; j < k; j++) {
            uint32_t id = sf->ids[lo + j];
            memcpy(sf->rows + (size_t)j * m->bundle_stride, (const uint8_t *)L->ffn_bundles + (size_t)id * m->bundle_stride,
                   m->bundle_stride);
            if (L->ffn_up_bias)
                sf->bias[j] = L->ffn_up_bias[id];
        }
        ck_ffn_rows(f->ck, sf->part, sf->rows, m->bundle_stride, (int)k, L->ffn_up_bias ? sf->bias : NULL, x,
                            d, m->dtype, &m->arch);
        ck_add(f->ck, out, sf->part, d);
    }
}

static void select_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    struct select_ffn *sf = f->priv;
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    double t0 = now_ms();
    uint32_t n = neuron_select_layer(&sf->sel, layer, f->ck, x, sf->ids);
    sf->stats.select_ms += now_ms() - t0;
    sf->stats.steps++;
    sf->stats.chosen += n;
    sf->stats.bytes += step_bytes(m, &sf->sel, n);
    bool teal = select_source(&sf->sel.cfg)->reads_channels;
    if (teal) /* computed on the kept channels: x with the dropped ones zero (x itself when all are kept) */
        sf->stats.kept_inputs += sf->sel.kept_inputs;
    const float *in = teal ? sf->sel.xs : x;
    if (L->ffn_down && f->host_zg) { /* the stored blocks (a GGUF's), as dense computes on them */
        ffn_matrices_host(f, L, in, n == m->shape.d_ff ? NULL : sf->ids, n, out);
        return;
    }
    if (n == m->shape.d_ff) /* every neuron: dense's own call, bit for bit */
        ck_ffn_rows(f->ck, out, L->ffn_bundles, m->bundle_stride, (int)n, L->ffn_up_bias, in,
                            (int)m->shape.d_model, m->dtype, &m->arch);
    else
        compute_chosen(f, sf, layer, n, in, out);
    if (L->ffn_down_bias)
        ck_add(f->ck, out, L->ffn_down_bias, (int)m->shape.d_model);
}

static void select_destroy(struct ffn *f)
{
    struct select_ffn *sf = f->priv;
    if (!sf)
        return;
    neuron_select_close(&sf->sel);
    free(sf->ids);
    free(sf->rows);
    free(sf->bias);
    free(sf->part);
    free(sf);
    f->priv = NULL;
}

void ffn_select_stats(const struct ffn *f, struct ffn_select_stats *out)
{
    const struct select_ffn *sf = f->priv;
    *out = sf->stats;
}

void ffn_select_summarize(const struct ffn *f, struct ffn_select_summary *out)
{
    const struct select_ffn *sf = f->priv;
    const struct model_shape *s = &f->m->shape;
    const struct ffn_select_stats *st = &sf->stats;
    double steps = (double)st->steps, tokens = steps / (s->n_layers ? s->n_layers : 1);
    *out = (struct ffn_select_summary){.density = steps ? (double)st->chosen / (steps * s->d_ff) : 0,
                                       .input_density = -1,
                                       .bytes_per_token = tokens > 0 ? (double)st->bytes / tokens : 0,
                                       .dense_bytes_per_token = (double)ffn_dense_bytes_per_token(f->m),
                                       .select_ms_per_token = tokens > 0 ? st->select_ms / tokens : 0};
    if (select_source(&sf->sel.cfg)->reads_channels)
        out->input_density = steps ? (double)st->kept_inputs / (steps * s->d_model) : 0;
}

const struct ffn_ops ffn_select = {
    .name = "select",
    .create = select_create,
    .forward = select_forward,
    .destroy = select_destroy,
};
