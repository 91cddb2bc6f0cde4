/* The observing dense FFN (ffn_probe.h). */
#include "engine/ffn/ffn_probe.h"

#include <stdlib.h>

#include "common/errbuf.h"
#include "engine/compute/activation.h"
#include "engine/model/ffn_matrix.h"

struct probe {
    void *up, *gate; /* [n_layers][d_ff][d_model] in the model's dtype */
    float *z, *g, *h;
    uint8_t *active;
};

int predictor_target_of(const struct arch *a, enum predictor_target *t, char *err, size_t errlen)
{
    (void)err, (void)errlen; /* every activation has a target now */
    /* the ReLU family (a GLU's gate included) is sparse at exactly zero;
     * SiLU and GELU need a threshold on |h| */
    *t = activation_sparse(a->act) ? PREDICT_RELU : PREDICT_GLU_ABS;
    return 0;
}

static int probe_create(struct ffn *f, char *err, size_t errlen)
{
    const struct model *m = f->m;
    const struct model_shape *s = &m->shape;
    struct probe *p = calloc(1, sizeof *p);
    f->priv = p;
    if (!p)
        return err_set(err, errlen, "the FFN probe: out of memory");
    if (!f->config)
        return err_set(err, errlen, "the FFN probe needs its configuration");
    if (s->n_layers && !m->layers[0].ffn_bundles)
        return err_set(err, errlen, "the FFN probe needs the FFN in DRAM (%s stays on flash)", m->ffn_path);
    size_t mat = (size_t)s->d_ff * wtype_row_bytes(m->dtype, s->d_model);
    p->up = malloc(mat * s->n_layers);
    p->gate = m->arch.glu ? malloc(mat * s->n_layers) : NULL;
    p->z = malloc(s->d_ff * sizeof *p->z);
    p->g = malloc(s->d_ff * sizeof *p->g);
    p->h = malloc(s->d_ff * sizeof *p->h);
    p->active = malloc(s->d_ff);
    if (!p->up || (m->arch.glu && !p->gate) || !p->z || !p->g || !p->h || !p->active)
        return err_set(err, errlen, "the FFN probe: cannot allocate %zu bytes for the up%s rows",
                       mat * s->n_layers * (m->arch.glu ? 2 : 1), m->arch.glu ? " and gate" : "");
    for (uint32_t l = 0; l < s->n_layers; l++) {
        ffn_matrix_copy(m, l, FFN_PART_UP, (uint8_t *)p->up + l * mat);
        if (p->gate)
            ffn_matrix_copy(m, l, FFN_PART_GATE, (uint8_t *)p->gate + l * mat);
    }
    return 0;
}

/* h and active for layer's neurons at input x. */
static void activity(struct ffn *f, struct probe *p, int layer, const float *x)
{
    const struct model *m = f->m;
    const struct ffn_probe_config *c = f->config;
    int d = (int)m->shape.d_model, n = (int)m->shape.d_ff;
    size_t mat = (size_t)n * wtype_row_bytes(m->dtype, (uint64_t)d) * (size_t)layer;
    ck_matvec(f->ck, p->z, (const uint8_t *)p->up + mat, m->dtype, x, m->layers[layer].ffn_up_bias, n, d);
    if (p->gate)
        ck_matvec(f->ck, p->g, (const uint8_t *)p->gate + mat, m->dtype, x, NULL, n, d);
    for (int i = 0; i < n; i++) {
        float g = p->gate ? p->g[i] : 0.0f;
        p->h[i] = ffn_neuron_value(&m->arch, p->z[i], g);
        p->active[i] = ffn_neuron_active(&m->arch, p->z[i], g, c->target == PREDICT_RELU ? 0.0f : c->act_threshold);
    }
}

static void probe_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    struct probe *p = f->priv;
    const struct ffn_probe_config *c = f->config;
    activity(f, p, layer, x);
    if (c->observe)
        c->observe(c->ctx, layer, pos, x, p->h, p->active);
    ffn_dense.forward(f, layer, pos, x, out);
}

static void probe_destroy(struct ffn *f)
{
    struct probe *p = f->priv;
    if (p) {
        free(p->up);
        free(p->gate);
        free(p->z);
        free(p->g);
        free(p->h);
        free(p->active);
        free(p);
    }
    f->priv = NULL;
}

const struct ffn_ops ffn_probe = {
    .name = "probe",
    .create = probe_create,
    .forward = probe_forward,
    .destroy = probe_destroy,
};
