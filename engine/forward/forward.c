/* The transformer forward pass, one token at a time, enqueued on the
 * engine's backend. Architecture differences come from m->arch (data),
 * never from copies of this code. */
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

static size_t widest_vector(const struct model *m)
{
    size_t w = m->shape.d_model > m->q_dim ? m->shape.d_model : m->q_dim;
    return w < m->shape.d_ff ? m->shape.d_ff : w;
}

/* The run state's refs, laid out in one buffer (each 256-byte aligned,
 * as devices align their sub-buffers); returns the bytes it needs. */
static size_t lay_out_state(struct run_state *r, const struct model *m, int max_seq, struct dev_buf *buf)
{
    size_t d = m->shape.d_model, kv = (size_t)m->shape.n_layers * max_seq * m->kv_dim;
    size_t pairs = m->arch.rope_dims / 2 + 1; /* + 1: a place even without RoPE */
    size_t long_pairs = arch_two_rope_tables(&m->arch) ? pairs : 0;
    size_t floats[] = {d, widest_vector(m), d, d, m->q_dim, m->q_dim, kv, kv, m->shape.vocab_size, pairs, long_pairs};
    struct dev_ref *refs[] = {&r->x,       &r->xb,      &r->xb2,          &r->ffn_out,     &r->q,           &r->att_out,
                              &r->k_cache, &r->v_cache, &r->logits_dev,   &r->rope_freq[0], &r->rope_freq[1]};
    size_t at = 0;
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        *refs[i] = (struct dev_ref){buf, at};
        at += (floats[i] * sizeof(float) + 255) / 256 * 256;
    }
    if (!long_pairs) /* one table serves every position */
        r->rope_freq[1] = r->rope_freq[0];
    return at;
}

/* A buffer of bytes, zeroed: already by a backend whose alloc zeroes
 * (cpu: the KV cache's pages stay unbacked until used), else through the
 * host's address or uploads of zeros (a device's memory starts undefined);
 * 0 or -1 with the reason in err. */
static int alloc_zeroed(struct engine *e, size_t bytes, enum buf_kind kind, struct dev_buf **out, const char *what,
                        char *err, size_t errlen)
{
    const struct backend_ops *b = e->be_ops;
    if (b->alloc(e->be, bytes, kind, out) != 0)
        return err_set(err, errlen, "%s backend: %s (%zu MiB): %s", b->name, what, bytes >> 20, b->error(e->be));
    if (e->be_info.zeroed)
        return 0;
    void *host = b->host_ptr(e->be, *out);
    if (host) {
        memset(host, 0, bytes);
        return 0;
    }
    static const char zeros[65536];
    for (size_t at = 0; at < bytes; at += sizeof zeros) {
        size_t n = bytes - at < sizeof zeros ? bytes - at : sizeof zeros;
        if (b->upload(e->be, (struct dev_ref){*out, at}, zeros, n) != 0)
            return err_set(err, errlen, "%s backend: %s: %s", b->name, what, b->error(e->be));
    }
    return 0;
}

/* The activations and KV cache on the backend, and the host memory the
 * logits (and a host FFN's vectors) come back to. */
static int alloc_state(struct engine *e, char *err, size_t errlen)
{
    const struct model *m = e->m;
    size_t bytes = lay_out_state(&e->s, m, e->max_seq, NULL);
    if (alloc_zeroed(e, bytes, BUF_DEVICE, &e->state, "the run state and KV cache", err, errlen))
        return -1;
    lay_out_state(&e->s, m, e->max_seq, e->state);
    size_t d = m->shape.d_model;
    if (e->be_info.host_visible) {
        e->s.logits = (float *)((char *)e->be_ops->host_ptr(e->be, e->state) + e->s.logits_dev.off);
        return 0;
    }
    if (alloc_zeroed(e, m->shape.vocab_size * sizeof(float), BUF_PINNED, &e->logits_host, "the logits' host copy",
                     err, errlen) ||
        alloc_zeroed(e, 2 * d * sizeof(float), BUF_PINNED, &e->bridge.buf, "the host FFN's vectors", err, errlen))
        return -1;
    e->s.logits = e->be_ops->host_ptr(e->be, e->logits_host);
    e->bridge.x = e->be_ops->host_ptr(e->be, e->bridge.buf);
    e->bridge.out = e->bridge.x + d;
    return e->be_ops->sync(e->be) == 0 ? 0 : err_set(err, errlen, "%s backend: %s", e->be_ops->name, e->be_ops->error(e->be));
}

/* The model's RoPE frequencies, computed once (arch_rope_table: one
 * table, two for longrope or a windowed layers' theta), into the run state on the backend, waited
 * for: set-up's uploads are done (and counted) before the FFN's set-up and
 * the first token. */
static int upload_rope_freqs(struct engine *e, char *err, size_t errlen)
{
    const struct arch *a = &e->m->arch;
    size_t pairs = a->rope_dims / 2 + 1;
    int tables = arch_two_rope_tables(a) ? 2 : 1;
    float *freq = calloc(pairs, sizeof *freq);
    if (!freq)
        return err_set(err, errlen, "the RoPE frequencies: out of memory");
    const struct backend_ops *b = e->be_ops;
    int rc = 0;
    for (int t = 0; t < tables && !rc; t++) {
        arch_rope_table(a, t, freq, &e->s.rope_scale[t]);
        rc = b->upload(e->be, e->s.rope_freq[t], freq, pairs * sizeof *freq) || b->sync(e->be);
    }
    if (tables == 1)
        e->s.rope_scale[1] = e->s.rope_scale[0];
    free(freq);
    return rc ? err_set(err, errlen, "%s backend: %s", b->name, b->error(e->be)) : 0;
}

/* The host's kernels, the backend and the weights on it. */
static int start_backend(struct engine *e, const struct fb_settings *set, int threads, char *err, size_t errlen)
{
    const struct model *m = e->m;
    struct backend_device dev;
    /* backend.h's rule: a device here, and every op for each of the
     * model's types, before anything is allocated */
    bool has[DTYPE_COUNT];
    model_weight_types(m, has);
    for (int t = 0; t < DTYPE_COUNT; t++)
        if (has[t] && backend_check_type(e->be_ops, set, (enum fb_dtype)t, &dev, err, errlen) != 0)
            return -1;
    size_t widest = widest_vector(m);
    e->be_threads = threads < 1 ? 1 : threads;
    /* the team pinned only where it computes the pass (cpu: the host's
     * memory, the engine's kernels): a device's runtime (PoCL) starts its
     * own threads from this one, which would inherit a pin */
    struct fb_settings host = *set;
    host.pin_threads = set->pin_threads && dev.host_visible;
    e->ck = ck_create(&host, e->be_threads, widest, (size_t)e->max_seq, m->shape.n_heads, err, errlen);
    if (!e->ck)
        return -1;
    struct backend_config cfg = {.set = set, .threads = e->be_threads, .max_dim = widest,
                                 .max_seq = (size_t)e->max_seq, .max_heads = m->shape.n_heads, .host = e->ck};
    e->be = e->be_ops->create(&cfg, err, errlen);
    if (!e->be)
        return -1;
    e->be_ops->info(e->be, &e->be_info);
    return dev_model_load(&e->w, m, e->be_ops, e->be, err, errlen);
}

int engine_init_with(struct engine *e, const struct fb_settings *set, const struct model *m,
                     const struct backend_ops *be, const struct ffn_ops *ffn, const void *ffn_config, int threads,
                     int max_seq, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    e->m = m;
    e->be_ops = be;
    e->max_seq = engine_context(m, max_seq);
    if (start_backend(e, set, threads, err, errlen) || alloc_state(e, err, errlen) ||
        upload_rope_freqs(e, err, errlen)) {
        engine_free(e);
        return -1;
    }
    e->ffn = (struct ffn){.ops = ffn, .m = m, .ck = e->ck, .dev = &e->w, .config = ffn_config};
    if (m->ffn_matrices && !(e->ffn.host_zg = malloc(2 * (size_t)m->shape.d_ff * sizeof(float)))) {
        e->ffn.ops = NULL;
        engine_free(e);
        return err_set(err, errlen, "the FFN's scratch: out of memory");
    }
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
    free(e->ffn.host_zg);
    e->ffn.host_zg = NULL;
    if (e->be) {
        e->be_ops->sync(e->be); /* nothing left in flight on what is freed */
        e->be_ops->buf_free(e->be, e->state);
        e->be_ops->buf_free(e->be, e->logits_host);
        e->be_ops->buf_free(e->be, e->bridge.buf);
        dev_model_free(&e->w);
        e->be_ops->destroy(e->be);
    }
    ck_destroy(e->ck);
    memset(e, 0, sizeof *e);
}

/* ---- the steps: each enqueues its ops and returns 0, or -1 ---- */

static struct dev_ref W(const struct engine *e, const void *p)
{
    return dev_model_ref(&e->w, p);
}

/* x = token embedding (times embed_scale: Gemma's sqrt(d_model)) (+
 * learned position embedding). */
static int embed(struct engine *e, int token, int pos)
{
    const struct model *m = e->m;
    const struct backend_ops *b = e->be_ops;
    int d = (int)m->shape.d_model;
    if (b->embed(e->be, e->s.x, W(e, m->tok_embedding), m->tok_embedding_type, token, d, m->arch.embed_scale))
        return -1;
    if (!m->pos_embedding)
        return 0;
    return b->embed(e->be, e->s.xb2, W(e, m->pos_embedding), m->pos_embedding_type, pos + (int)m->arch.position_offset,
                    d, 1.0f) ||
           b->add(e->be, e->s.x, e->s.xb2, d);
}

/* Each of n_heads heads of v through the norm over a head that all heads
 * share, of the model's kind (Persimmon's q_layernorm and k_layernorm,
 * Qwen3's q_norm and k_norm: RMSNorm, no bias). */
static int head_norm(struct engine *e, struct dev_ref v, int n_heads, const float *w, const float *bias)
{
    size_t hd = e->m->head_dim;
    const struct arch *a = &e->m->arch;
    for (int h = 0; h < n_heads; h++) {
        struct dev_ref vh = dev_at(v, (size_t)h * hd * sizeof(float));
        if (e->be_ops->norm(e->be, vh, vh, W(e, w), W(e, bias), (int)hd, a->norm, a->norm_eps))
            return -1;
    }
    return 0;
}

/* q and this position's k of layer l: normed per head (qk_norm), then
 * rotated over each head's first rope_dims dims (RoPE, whole or partial)
 * with the layer's table at pos. The norm comes first, as in HF's
 * Persimmon. */
static int position_qk(struct engine *e, int l, struct dev_ref k, int pos)
{
    const struct model *m = e->m;
    const struct arch *a = &m->arch;
    const struct layer_weights *L = &m->layers[l];
    int n_heads = (int)m->shape.n_heads, n_kv = (int)m->shape.n_kv_heads, hd = (int)m->head_dim;
    if (a->qk_norm && (head_norm(e, e->s.q, n_heads, L->q_norm, L->q_norm_bias) ||
                       head_norm(e, k, n_kv, L->k_norm, L->k_norm_bias)))
        return -1;
    if (a->position != POSITION_ROPE)
        return 0;
    const struct run_state *r = &e->s;
    int t = arch_layer_rope_table(a, l, pos); /* longrope: short or long factors (LONGROPE_RULE) */
    return e->be_ops->rope(e->be, r->q, n_heads, hd, (int)a->rope_dims, pos, r->rope_freq[t], r->rope_scale[t]) ||
           e->be_ops->rope(e->be, k, n_kv, hd, (int)a->rope_dims, pos, r->rope_freq[t], r->rope_scale[t]);
}

/* The first cached position attention of layer l at pos reads: with a
 * sliding window of W on the layer (Mistral's every layer, Gemma 3's
 * windowed ones), the last W positions, pos among them (HF masks
 * j <= pos - W; llama.cpp's LLAMA_SWA_TYPE_STANDARD masks pos - j >= W);
 * else 0. */
static int window_start(const struct arch *a, int l, int pos)
{
    return arch_layer_windowed(a, l) && pos >= (int)a->sliding_window ? pos + 1 - (int)a->sliding_window : 0;
}

/* xb2 = attention(xb) for layer l at pos; writes this position's K and V. */
static int attention(struct engine *e, int l, int pos)
{
    const struct model *m = e->m;
    const struct layer_weights *L = &m->layers[l];
    const struct backend_ops *b = e->be_ops;
    struct run_state *r = &e->s;
    int d = (int)m->shape.d_model, kv = (int)m->kv_dim;
    size_t layer_bytes = (size_t)l * e->max_seq * kv * sizeof(float), pos_bytes = (size_t)pos * kv * sizeof(float);
    struct dev_ref k_layer = dev_at(r->k_cache, layer_bytes), v_layer = dev_at(r->v_cache, layer_bytes);
    struct dev_ref k = dev_at(k_layer, pos_bytes), v = dev_at(v_layer, pos_bytes);
    int from = window_start(&m->arch, l, pos);
    size_t from_bytes = (size_t)from * kv * sizeof(float);
    return b->matvec(e->be, r->q, W(e, L->wq), L->wq_type, r->xb, W(e, L->bq), (int)m->q_dim, d) ||
           b->matvec(e->be, k, W(e, L->wk), L->wk_type, r->xb, W(e, L->bk), kv, d) ||
           b->matvec(e->be, v, W(e, L->wv), L->wv_type, r->xb, W(e, L->bv), kv, d) || position_qk(e, l, k, pos) ||
           b->attention(e->be, r->att_out, r->q, dev_at(k_layer, from_bytes), dev_at(v_layer, from_bytes),
                        pos + 1 - from, (int)m->shape.n_heads, (int)m->shape.n_kv_heads, (int)m->head_dim) ||
           b->matvec(e->be, r->xb2, W(e, L->wo), L->wo_type, r->att_out, W(e, L->bo), d, (int)m->q_dim);
}

/* xb = norm(x) with the layer's norm (attn_norm or ffn_norm, weight and
 * bias), the arch's kind of norm: the input of a branch. */
static int norm_into_xb(struct engine *e, const float *weight, const float *bias)
{
    const struct arch *a = &e->m->arch;
    return e->be_ops->norm(e->be, e->s.xb, e->s.x, W(e, weight), W(e, bias), (int)e->m->shape.d_model, a->norm,
                           a->norm_eps);
}

/* out = FFN_l(x): on the backend, or on the host for a host FFN: in
 * place where the host reaches the backend's memory, else through the
 * pinned bridge (the download waited for, the upload in order before
 * anything that reads out). */
static int ffn_step(struct engine *e, int l, int pos, struct dev_ref x, struct dev_ref out)
{
    struct ffn *f = &e->ffn;
    const struct backend_ops *b = e->be_ops;
    if (f->ops->forward_device)
        return f->ops->forward_device(f, l, pos, x, out);
    if (e->be_info.host_visible) {
        char *base = b->host_ptr(e->be, e->state);
        f->ops->forward(f, l, pos, (const float *)(base + x.off), (float *)(base + out.off));
        return 0;
    }
    size_t bytes = e->m->shape.d_model * sizeof(float);
    if (b->download(e->be, e->bridge.x, x, bytes) || b->sync(e->be))
        return -1;
    f->ops->forward(f, l, pos, e->bridge.x, e->bridge.out);
    return b->upload(e->be, out, e->bridge.out, bytes);
}

/* x += post(branch) with post_norms (Gemma 3's post_attention_norm and
 * post_ffw_norm on the branch's output in place, RMSNorm without bias),
 * else x += branch. */
static int add_branch(struct engine *e, struct dev_ref branch, const float *post)
{
    const struct arch *a = &e->m->arch;
    int d = (int)e->m->shape.d_model;
    if (a->post_norms && e->be_ops->norm(e->be, branch, branch, W(e, post), W(e, NULL), d, a->norm, a->norm_eps))
        return -1;
    return e->be_ops->add(e->be, e->s.x, branch, d);
}

/* x += attn(norm1(x)); x += ffn(norm2(x)): OPT, Llama, Persimmon; Gemma 3
 * with each branch normed again before its add. */
static int sequential_block(struct engine *e, int l, int pos)
{
    const struct layer_weights *L = &e->m->layers[l];
    struct run_state *r = &e->s;
    return norm_into_xb(e, L->attn_norm, L->attn_norm_bias) || attention(e, l, pos) ||
           add_branch(e, r->xb2, L->post_attn_norm) || norm_into_xb(e, L->ffn_norm, L->ffn_norm_bias) ||
           ffn_step(e, l, pos, r->xb, r->xb2) || add_branch(e, r->xb2, L->post_ffn_norm);
}

/* x += attn(n) + ffn(n) with n = norm(x), one norm per layer (Falcon,
 * Phi-2): both branches read the same normed input. The branches are
 * summed before the residual, in HF's order. */
static int parallel_block(struct engine *e, int l, int pos)
{
    const struct layer_weights *L = &e->m->layers[l];
    struct run_state *r = &e->s;
    int d = (int)e->m->shape.d_model;
    return norm_into_xb(e, L->attn_norm, L->attn_norm_bias) || attention(e, l, pos) ||
           ffn_step(e, l, pos, r->xb, r->ffn_out) || e->be_ops->add(e->be, r->ffn_out, r->xb2, d) ||
           e->be_ops->add(e->be, r->x, r->ffn_out, d);
}

/* logits = output · final_norm(x) (+ output bias), brought to the host. */
static int lm_head(struct engine *e)
{
    const struct model *m = e->m;
    const struct arch *a = &m->arch;
    const struct backend_ops *b = e->be_ops;
    struct run_state *r = &e->s;
    int d = (int)m->shape.d_model, vocab = (int)m->shape.vocab_size;
    if (b->norm(e->be, r->x, r->x, W(e, m->final_norm), W(e, m->final_norm_bias), d, a->norm, a->norm_eps) ||
        b->matvec(e->be, r->logits_dev, W(e, m->output), m->output_type, r->x, W(e, m->output_bias), vocab, d))
        return -1;
    if (!e->be_info.host_visible &&
        b->download(e->be, r->logits, r->logits_dev, (size_t)vocab * sizeof(float)))
        return -1;
    return b->sync(e->be);
}

int engine_forward(struct engine *e, int token, int pos)
{
    int rc = embed(e, token, pos);
    for (int l = 0; rc == 0 && l < (int)e->m->shape.n_layers; l++)
        rc = e->m->arch.parallel_block ? parallel_block(e, l, pos) : sequential_block(e, l, pos);
    if (rc == 0)
        rc = lm_head(e);
    if (rc != 0)
        err_set(e->err, sizeof e->err, "%s backend: %s", e->be_ops->name, e->be_ops->error(e->be));
    return rc;
}
