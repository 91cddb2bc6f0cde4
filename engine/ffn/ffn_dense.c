/* The dense FFN: every neuron bundle of the layer, on the engine's
 * backend. The reference that flash-resident FFNs are checked against.
 * Its host form serves FFNs that watch the dense one on the host (the
 * probes that record activations). */
#include "engine/ffn/ffn.h"

static int dense_create(struct ffn *f, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    f->priv = NULL;
    return 0;
}

static void dense_forward_host(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    ck_ffn_rows(f->ck, out, L->ffn_bundles, m->bundle_stride, (int)m->shape.d_ff, L->ffn_up_bias, x,
                (int)m->shape.d_model, m->dtype, &m->arch);
    if (L->ffn_down_bias)
        ck_add(f->ck, out, L->ffn_down_bias, (int)m->shape.d_model);
}

static int dense_forward(struct ffn *f, int layer, int pos, struct dev_ref x, struct dev_ref out)
{
    (void)pos;
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    const struct dev_model *dm = f->dev;
    int d = (int)m->shape.d_model;
    if (dm->ops->ffn_rows(dm->be, out, dev_model_ref(dm, L->ffn_bundles), m->bundle_stride, (int)m->shape.d_ff,
                          dev_model_ref(dm, L->ffn_up_bias), x, d, m->dtype, &m->arch) != 0)
        return -1;
    if (L->ffn_down_bias)
        return dm->ops->add(dm->be, out, dev_model_ref(dm, L->ffn_down_bias), d);
    return 0;
}

static void dense_destroy(struct ffn *f)
{
    f->priv = NULL;
}

const struct ffn_ops ffn_dense = {
    .name = "dense",
    .create = dense_create,
    .forward = dense_forward_host,
    .forward_device = dense_forward,
    .destroy = dense_destroy,
};
