/* The FFN over the predicted neurons (ffn_masked.h). */
#include "engine/ffn_masked.h"

#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

struct masked {
    uint8_t *rows;  /* up to d_ff bundles, bundle_stride apart */
    float *bias;    /* their up biases */
    float *h, *logits;
    uint32_t *ids;
};

static int masked_create(struct ffn *f, char *err, size_t errlen)
{
    const struct model *m = f->m;
    const struct model_shape *s = &m->shape;
    const struct ffn_masked_config *c = f->config;
    struct masked *k = calloc(1, sizeof *k);
    f->priv = k;
    if (!k)
        return err_set(err, errlen, "the masked FFN: out of memory");
    if (!c || !c->predictor)
        return err_set(err, errlen, "the masked FFN needs a predictor");
    const struct predictor *p = c->predictor;
    if (p->n_layers != s->n_layers || p->d_model != s->d_model || p->d_ff != s->d_ff)
        return err_set(err, errlen, "the predictor (%u layers, d_model %u, d_ff %u) does not fit the model "
                       "(%u, %u, %u)", p->n_layers, p->d_model, p->d_ff, s->n_layers, s->d_model, s->d_ff);
    if (s->n_layers && !m->layers[0].ffn_bundles)
        return err_set(err, errlen, "the masked FFN needs the FFN in DRAM (%s stays on flash)", m->ffn_path);
    k->rows = aligned_alloc(64, (size_t)s->d_ff * m->bundle_stride);
    k->bias = malloc(s->d_ff * sizeof *k->bias);
    k->h = malloc((predictor_max_rank(p) + 1) * sizeof *k->h);
    k->logits = malloc(s->d_ff * sizeof *k->logits);
    k->ids = malloc(s->d_ff * sizeof *k->ids);
    if (!k->rows || !k->bias || !k->h || !k->logits || !k->ids)
        return err_set(err, errlen, "the masked FFN: cannot allocate one layer's %llu bytes of bundles",
                       (unsigned long long)s->d_ff * m->bundle_stride);
    return 0;
}

void ffn_subset_forward(struct ffn *f, int layer, const uint32_t *ids, uint32_t n, uint8_t *rows, float *bias,
                        const float *x, float *out)
{
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    int d = (int)m->shape.d_model;
    for (uint32_t r = 0; r < n; r++) {
        memcpy(rows + (size_t)r * m->bundle_stride, (const uint8_t *)L->ffn_bundles + (size_t)ids[r] * m->bundle_stride,
               m->bundle_bytes);
        bias[r] = L->ffn_up_bias ? L->ffn_up_bias[ids[r]] : 0.0f;
    }
    if (n > 0)
        f->be_ops->ffn_rows(f->be, out, rows, m->bundle_stride, (int)n, L->ffn_up_bias ? bias : NULL, x, d, m->dtype,
                            m->arch.act, m->arch.glu);
    else
        memset(out, 0, (size_t)d * sizeof *out);
    if (L->ffn_down_bias)
        f->be_ops->add(f->be, out, L->ffn_down_bias, d);
}

static void masked_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    const struct ffn_masked_config *c = f->config;
    struct masked *k = f->priv;
    uint32_t n = predictor_predict(c->predictor, (uint32_t)layer, f->be_ops, f->be, x, k->h, k->logits, k->ids);
    ffn_subset_forward(f, layer, k->ids, n, k->rows, k->bias, x, out);
    if (c->computed)
        c->computed[layer] += n;
}

static void masked_destroy(struct ffn *f)
{
    struct masked *k = f->priv;
    if (k) {
        free(k->rows);
        free(k->bias);
        free(k->h);
        free(k->logits);
        free(k->ids);
        free(k);
    }
    f->priv = NULL;
}

const struct ffn_ops ffn_masked = {
    .name = "masked",
    .create = masked_create,
    .forward = masked_forward,
    .destroy = masked_destroy,
};
