/* The transformer forward pass, one token at a time. Architecture
 * differences come from m->arch (data), never from copies of this code. */
#include "engine/forward/engine.h"

#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

int engine_init(struct engine *e, const struct fb_settings *set, const struct model *m,
                const struct backend_ops *be, const struct ffn_ops *ffn, int threads, int max_seq, char *err,
                size_t errlen)
{
    return engine_init_with(e, set, m, be, ffn, NULL, threads, max_seq, err, errlen);
}

int engine_context(const struct model *m, int max_seq)
{
    uint32_t most = m->shape.max_positions;
    return max_seq > 0 && (uint32_t)max_seq < most ? max_seq : (int)most;
}

int engine_init_with(struct engine *e, const struct fb_settings *set, const struct model *m,
                     const struct backend_ops *be, const struct ffn_ops *ffn, const void *ffn_config, int threads,
                     int max_seq, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    const struct model_shape *s = &m->shape;
    e->m = m;
    e->be_ops = be;
    e->max_seq = engine_context(m, max_seq);
    size_t d = s->d_model, kv = (size_t)s->n_layers * e->max_seq * m->kv_dim;
    size_t widest = d > m->q_dim ? d : m->q_dim;
    if (widest < s->d_ff)
        widest = s->d_ff;
    e->be_threads = threads < 1 ? 1 : threads;
    e->be = be->create(set, e->be_threads, widest, (size_t)e->max_seq, s->n_heads, err, errlen);
    if (!e->be)
        return -1;
    struct run_state *r = &e->s;
    r->x = calloc(d, sizeof(float));
    r->xb = calloc(widest, sizeof(float));
    r->xb2 = calloc(d, sizeof(float));
    r->ffn_out = calloc(d, sizeof(float));
    r->q = calloc(m->q_dim, sizeof(float));
    r->att_out = calloc(m->q_dim, sizeof(float));
    r->k_cache = calloc(kv, sizeof(float));
    r->v_cache = calloc(kv, sizeof(float));
    r->logits = calloc(s->vocab_size, sizeof(float));
    if (!r->x || !r->xb || !r->xb2 || !r->ffn_out || !r->q || !r->att_out || !r->k_cache || !r->v_cache || !r->logits) {
        err_set(err, errlen, "engine: cannot allocate the run state (KV cache of %zu floats)", 2 * kv);
        engine_free(e);
        return -1;
    }
    e->ffn = (struct ffn){.ops = ffn, .m = m, .be_ops = be, .be = e->be, .config = ffn_config};
    if (ffn->create(&e->ffn, err, errlen) != 0) {
        ffn->destroy(&e->ffn); /* releases what create started (reader threads) */
        e->ffn.ops = NULL;
        engine_free(e);
        return -1;
    }
    return 0;
}

void engine_free(struct engine *e)
{
    if (e->ffn.ops)
        e->ffn.ops->destroy(&e->ffn);
    if (e->be)
        e->be_ops->destroy(e->be);
    struct run_state *r = &e->s;
    free(r->x);
    free(r->xb);
    free(r->xb2);
    free(r->ffn_out);
    free(r->q);
    free(r->att_out);
    free(r->k_cache);
    free(r->v_cache);
    free(r->logits);
    memset(e, 0, sizeof *e);
}

/* x = token embedding (+ learned position embedding). */
static void embed(struct engine *e, int token, int pos)
{
    const struct model *m = e->m;
    int d = (int)m->shape.d_model;
    e->be_ops->embed(e->be, e->s.x, m->tok_embedding, m->dtype, token, d);
    if (m->pos_embedding) {
        e->be_ops->embed(e->be, e->s.xb2, m->pos_embedding, m->dtype, pos + (int)m->arch.position_offset, d);
        e->be_ops->add(e->be, e->s.x, e->s.xb2, d);
    }
}

/* Each of n_heads heads of v through the LayerNorm over a head that all
 * heads share (Persimmon's q_layernorm and k_layernorm). */
static void head_norm(struct engine *e, float *v, int n_heads, const float *w, const float *bias)
{
    int hd = (int)e->m->head_dim;
    for (int h = 0; h < n_heads; h++)
        e->be_ops->norm(e->be, v + (size_t)h * hd, v + (size_t)h * hd, w, bias, hd, NORM_LAYER,
                        e->m->arch.norm_eps);
}

/* q and this position's k: normed per head (qk_norm), then rotated over
 * each head's first rope_dims dims (RoPE, whole or partial). The norm
 * comes first, as in HF's Persimmon. */
static void position_qk(struct engine *e, const struct layer_weights *L, float *k, int pos)
{
    const struct model *m = e->m;
    const struct arch *a = &m->arch;
    float *q = e->s.q;
    int n_heads = (int)m->shape.n_heads, n_kv = (int)m->shape.n_kv_heads;
    if (a->qk_norm) {
        head_norm(e, q, n_heads, L->q_norm, L->q_norm_bias);
        head_norm(e, k, n_kv, L->k_norm, L->k_norm_bias);
    }
    if (a->position == POSITION_ROPE) {
        e->be_ops->rope(e->be, q, n_heads, (int)m->head_dim, (int)a->rope_dims, pos, a->rope_theta);
        e->be_ops->rope(e->be, k, n_kv, (int)m->head_dim, (int)a->rope_dims, pos, a->rope_theta);
    }
}

/* xb2 = attention(xb) for layer l at pos; writes this position's K and V. */
static void attention(struct engine *e, int l, int pos)
{
    const struct model *m = e->m;
    const struct layer_weights *L = &m->layers[l];
    const struct backend_ops *b = e->be_ops;
    struct run_state *r = &e->s;
    int d = (int)m->shape.d_model, kv = (int)m->kv_dim;
    float *k_layer = r->k_cache + (size_t)l * e->max_seq * kv;
    float *v_layer = r->v_cache + (size_t)l * e->max_seq * kv;
    float *k = k_layer + (size_t)pos * kv, *v = v_layer + (size_t)pos * kv;
    b->matvec(e->be, r->q, L->wq, m->dtype, r->xb, L->bq, (int)m->q_dim, d);
    b->matvec(e->be, k, L->wk, m->dtype, r->xb, L->bk, kv, d);
    b->matvec(e->be, v, L->wv, m->dtype, r->xb, L->bv, kv, d);
    position_qk(e, L, k, pos);
    b->attention(e->be, r->att_out, r->q, k_layer, v_layer, pos + 1, (int)m->shape.n_heads,
                 (int)m->shape.n_kv_heads, (int)m->head_dim);
    b->matvec(e->be, r->xb2, L->wo, m->dtype, r->att_out, L->bo, d, (int)m->q_dim);
}

/* xb = norm(x) with the layer's norm (attn_norm or ffn_norm, weight and
 * bias), the arch's kind of norm: the input of a branch. */
static void norm_into_xb(struct engine *e, const float *weight, const float *bias)
{
    const struct arch *a = &e->m->arch;
    e->be_ops->norm(e->be, e->s.xb, e->s.x, weight, bias, (int)e->m->shape.d_model, a->norm, a->norm_eps);
}

/* x += attn(norm1(x)); x += ffn(norm2(x)): OPT, Llama, Persimmon. */
static void sequential_block(struct engine *e, int l, int pos)
{
    const struct layer_weights *L = &e->m->layers[l];
    struct run_state *r = &e->s;
    int d = (int)e->m->shape.d_model;
    norm_into_xb(e, L->attn_norm, L->attn_norm_bias);
    attention(e, l, pos);
    e->be_ops->add(e->be, r->x, r->xb2, d);
    norm_into_xb(e, L->ffn_norm, L->ffn_norm_bias);
    e->ffn.ops->forward(&e->ffn, l, pos, r->xb, r->xb2);
    e->be_ops->add(e->be, r->x, r->xb2, d);
}

/* x += attn(n) + ffn(n) with n = norm(x), one norm per layer (Falcon,
 * Phi-2): both branches read the same normed input. The branches are
 * summed before the residual, in HF's order. */
static void parallel_block(struct engine *e, int l, int pos)
{
    const struct layer_weights *L = &e->m->layers[l];
    struct run_state *r = &e->s;
    int d = (int)e->m->shape.d_model;
    norm_into_xb(e, L->attn_norm, L->attn_norm_bias);
    attention(e, l, pos);
    e->ffn.ops->forward(&e->ffn, l, pos, r->xb, r->ffn_out);
    e->be_ops->add(e->be, r->ffn_out, r->xb2, d);
    e->be_ops->add(e->be, r->x, r->ffn_out, d);
}

/* logits = output · final_norm(x) (+ output bias). */
static void lm_head(struct engine *e)
{
    const struct model *m = e->m;
    const struct arch *a = &m->arch;
    struct run_state *r = &e->s;
    int d = (int)m->shape.d_model;
    e->be_ops->norm(e->be, r->x, r->x, m->final_norm, m->final_norm_bias, d, a->norm, a->norm_eps);
    e->be_ops->matvec(e->be, r->logits, m->output, m->dtype, r->x, m->output_bias, (int)m->shape.vocab_size, d);
}

void engine_forward(struct engine *e, int token, int pos)
{
    embed(e, token, pos);
    for (int l = 0; l < (int)e->m->shape.n_layers; l++) {
        if (e->m->arch.parallel_block)
            parallel_block(e, l, pos);
        else
            sequential_block(e, l, pos);
    }
    lm_head(e);
}
