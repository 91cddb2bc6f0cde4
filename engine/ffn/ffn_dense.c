/* The dense FFN: every neuron of the layer, on the engine's backend. The
 * reference that flash-resident FFNs are checked against. Its host form
 * serves FFNs that watch the dense one on the host (the probes that record
 * activations). On a model that holds its FFN's matrices as a source stored
 * them (a GGUF's blocks), it computes on those (ffn.h). */
#include "engine/ffn/ffn.h"

#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/compute/activation.h"

/* The device form's scratch for z and g, when the model has matrices. */
struct dense {
    struct dev_buf *zg; /* [2 * d_ff] floats */
};

static int dense_create(struct ffn *f, char *err, size_t errlen)
{
    f->priv = NULL;
    if (!f->m->ffn_matrices || !f->dev)
        return 0;
    struct dense *d = calloc(1, sizeof *d);
    if (!d)
        return err_set(err, errlen, "dense FFN: out of memory");
    f->priv = d;
    const struct dev_model *dm = f->dev;
    if (dm->ops->alloc(dm->be, 2 * (size_t)f->m->shape.d_ff * sizeof(float), BUF_DEVICE, &d->zg) != 0)
        return err_set(err, errlen, "dense FFN: %s backend: its scratch: %s", dm->ops->name, dm->ops->error(dm->be));
    return 0;
}

void ffn_matrices_host(struct ffn *f, const struct layer_weights *L, const float *x, const uint32_t *ids, uint32_t n,
                       float *out)
{
    const struct model *m = f->m;
    int d = (int)m->shape.d_model, nf = (int)m->shape.d_ff;
    float *z = f->host_zg, *g = L->ffn_gate ? f->host_zg + nf : NULL;
    ck_matvec(f->ck, z, L->ffn_up, L->ffn_up_type, x, L->ffn_up_bias, nf, d);
    if (g)
        ck_matvec(f->ck, g, L->ffn_gate, L->ffn_gate_type, x, NULL, nf, d);
    ck_ffn_act(f->ck, z, z, g, nf, &m->arch);
    if (ids) { /* the chosen neurons' h, the others zero: gate's half is free once act has read it */
        float *h = f->host_zg + nf;
        memset(h, 0, (size_t)nf * sizeof *h);
        for (uint32_t i = 0; i < n; i++)
            h[ids[i]] = z[ids[i]];
        z = h;
    }
    ck_matvec(f->ck, out, L->ffn_down, L->ffn_down_type, z, L->ffn_down_bias, d, nf);
}

static void dense_forward_host(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    if (L->ffn_down && f->host_zg) {
        ffn_matrices_host(f, L, x, NULL, 0, out);
        return;
    }
    ck_ffn_rows(f->ck, out, L->ffn_bundles, m->bundle_stride, (int)m->shape.d_ff, L->ffn_up_bias, x,
                (int)m->shape.d_model, m->dtype, &m->arch);
    if (L->ffn_down_bias)
        ck_add(f->ck, out, L->ffn_down_bias, (int)m->shape.d_model);
}

/* The same on the backend. */
static int matrices_device(struct ffn *f, const struct layer_weights *L, struct dev_ref x, struct dev_ref out)
{
    const struct model *m = f->m;
    const struct dev_model *dm = f->dev;
    const struct dense *dn = f->priv;
    int d = (int)m->shape.d_model, n = (int)m->shape.d_ff;
    struct dev_ref z = {dn->zg, 0}, g = L->ffn_gate ? (struct dev_ref){dn->zg, (size_t)n * sizeof(float)}
                                                    : (struct dev_ref){0};
    const struct backend_ops *b = dm->ops;
    return b->matvec(dm->be, z, dev_model_ref(dm, L->ffn_up), L->ffn_up_type, x, dev_model_ref(dm, L->ffn_up_bias), n,
                     d) ||
                   (L->ffn_gate &&
                    b->matvec(dm->be, g, dev_model_ref(dm, L->ffn_gate), L->ffn_gate_type, x, (struct dev_ref){0}, n,
                              d)) ||
                   b->ffn_act(dm->be, z, z, g, n, &m->arch) ||
                   b->matvec(dm->be, out, dev_model_ref(dm, L->ffn_down), L->ffn_down_type, z,
                             dev_model_ref(dm, L->ffn_down_bias), d, n)
               ? -1
               : 0;
}

static int dense_forward(struct ffn *f, int layer, int pos, struct dev_ref x, struct dev_ref out)
{
    (void)pos;
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    const struct dev_model *dm = f->dev;
    int d = (int)m->shape.d_model;
    if (L->ffn_down && f->priv)
        return matrices_device(f, L, x, out);
    if (dm->ops->ffn_rows(dm->be, out, dev_model_ref(dm, L->ffn_bundles), m->bundle_stride, (int)m->shape.d_ff,
                          dev_model_ref(dm, L->ffn_up_bias), x, d, m->dtype, &m->arch) != 0)
        return -1;
    if (L->ffn_down_bias)
        return dm->ops->add(dm->be, out, dev_model_ref(dm, L->ffn_down_bias), d);
    return 0;
}

static void dense_destroy(struct ffn *f)
{
    struct dense *d = f->priv;
    if (d && d->zg)
        f->dev->ops->buf_free(f->dev->be, d->zg);
    free(d);
    f->priv = NULL;
}

const struct ffn_ops ffn_dense = {
    .name = "dense",
    .create = dense_create,
    .forward = dense_forward_host,
    .forward_device = dense_forward,
    .destroy = dense_destroy,
};
