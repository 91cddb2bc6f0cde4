/* The dense FFN: every neuron bundle of the layer, from DRAM. The
 * reference that flash-resident FFNs are checked against. */
#include "engine/ffn/ffn.h"

static int dense_create(struct ffn *f, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    f->priv = NULL;
    return 0;
}

static void dense_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    f->be_ops->ffn_rows(f->be, out, L->ffn_bundles, m->bundle_stride, (int)m->shape.d_ff,
                        L->ffn_up_bias, x, (int)m->shape.d_model, m->dtype, &m->arch);
    if (L->ffn_down_bias)
        f->be_ops->add(f->be, out, L->ffn_down_bias, (int)m->shape.d_model);
}

static void dense_destroy(struct ffn *f)
{
    f->priv = NULL;
}

const struct ffn_ops ffn_dense = {
    .name = "dense",
    .create = dense_create,
    .forward = dense_forward,
    .destroy = dense_destroy,
};
