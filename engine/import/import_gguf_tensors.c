/* A GGUF file's tensors into a flashbed model folder: llama.cpp's names
 * (token_embd, blk.N.attn_q, ...) to flashbed's (model.h's layer_weights,
 * model_format.h's writer), each shape checked against the metadata.
 * GGUF gives a tensor's dims row length first (dims[0]); a matrix is
 * dims[1] rows of dims[0] values, row-major, as flashbed stores it.
 *
 * Kept (c->keep): each matrix in its own type, bytes as stored (a NEOX
 * architecture's q and k rows reordered whole); the FFN's matrices into
 * ffn_matrices.bin as stored, and decoded for ffn.bin's bundles. Else
 * every weight is decoded (dtype_to_f32) and written in the writer's
 * dtype. Norms and biases are f32 either way. */
#include "engine/import/import_gguf_arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/model/dtype.h"
#include "engine/model/model.h"

/* Whole rows of a tensor: rows x cols values of type, at data. */
struct rows_view {
    const unsigned char *data;
    enum fb_dtype type;
    uint64_t rows, cols;
};

static uint64_t row_bytes(const struct rows_view *v)
{
    return wtype_row_bytes(v->type, v->cols);
}

/* rows [first, first + n) of v */
static struct rows_view sub_rows(struct rows_view v, uint64_t first, uint64_t n)
{
    v.data += first * row_bytes(&v);
    v.rows = n;
    return v;
}

/* Tensor name: found, of a type flashbed reads, of cols x rows (rows 0:
 * a vector of cols), marked used. *found false and 0 when it is absent
 * and optional. -1 naming the file and the tensor otherwise. */
static int take(struct gguf_ctx *c, const char *name, uint64_t cols, uint64_t rows, bool optional,
                struct rows_view *v, bool *found)
{
    const struct gguf_tensor *t = gguf_tensor_find(c->f, name);
    *found = t != NULL;
    if (!t && optional)
        return 0;
    const void *data;
    if (gguf_tensor_get(c->f, name, &t, &data, c->err, c->errlen))
        return -1;
    uint32_t want_dims = rows ? 2 : 1;
    bool same = t->dims[0] == cols && t->dims[1] == (rows ? rows : 1) && t->dims[2] == 1 && t->dims[3] == 1;
    if (!same || t->n_dims > want_dims)
        return err_set(c->err, c->errlen,
                       "%s: tensor %s has %u dims [%llu, %llu, %llu, %llu]; the %s metadata makes it [%llu, %llu]",
                       c->f->path, name, t->n_dims, (unsigned long long)t->dims[0], (unsigned long long)t->dims[1],
                       (unsigned long long)t->dims[2], (unsigned long long)t->dims[3], c->a->name,
                       (unsigned long long)cols, (unsigned long long)(rows ? rows : 1));
    c->used[t - c->f->tensors] = true;
    *v = (struct rows_view){data, t->type, rows ? rows : 1, cols};
    return 0;
}

static int take_needed(struct gguf_ctx *c, const char *name, uint64_t cols, uint64_t rows, struct rows_view *v)
{
    bool found;
    return take(c, name, cols, rows, false, v, &found);
}

/* Layer l's GGUF name "blk.L.what". */
static const char *blk(char *buf, size_t len, uint32_t l, const char *what)
{
    snprintf(buf, len, "blk.%u.%s", l, what);
    return buf;
}

/* In each of heads blocks of hd rows (row_len bytes each): row i to 2i
 * and row i + rot/2 to 2i + 1 for i < rot/2 (llama.cpp's NEOX halves into
 * the engine's adjacent pairs, as hf_rope_to_pairs does for HF's rows);
 * rows from rot on stay. 0, or -1 out of memory. */
static int halves_to_pairs(unsigned char *m, uint64_t heads, uint32_t hd, uint32_t rot, size_t row_len)
{
    unsigned char *tmp = malloc((size_t)rot * row_len);
    if (!tmp)
        return -1;
    for (uint64_t h = 0; h < heads; h++) {
        unsigned char *head = m + h * hd * row_len;
        memcpy(tmp, head, rot * row_len);
        for (uint32_t i = 0; i < rot / 2; i++) {
            memcpy(head + (2 * i) * row_len, tmp + i * row_len, row_len);
            memcpy(head + (2 * i + 1) * row_len, tmp + (i + rot / 2) * row_len, row_len);
        }
    }
    free(tmp);
    return 0;
}

static uint32_t rot_dims(const struct model_shape *s)
{
    return (uint32_t)(s->rope_fraction * model_shape_head_dim(s));
}

/* v decoded to f32 (rows x cols), its rows reordered when heads > 0. */
static float *decode(struct gguf_ctx *c, const struct rows_view *v, uint64_t heads, const char *dst)
{
    float *out = malloc((size_t)(v->rows * v->cols) * sizeof *out);
    if (out) {
        dtype_to_f32(out, v->data, v->type, (size_t)(v->rows * v->cols));
        if (!heads || halves_to_pairs((unsigned char *)out, heads, model_shape_head_dim(c->s), rot_dims(c->s),
                                      (size_t)v->cols * sizeof *out) == 0)
            return out;
    }
    free(out);
    err_set(c->err, c->errlen, "%s: out of memory decoding tensor '%s'", c->w->dir, dst);
    return NULL;
}

/* A vector (norm, bias) as flashbed tensor dst in f32; its values
 * reordered as q's or k's rows when heads > 0 (q/k biases, q/k norms). */
static int put_vector(struct gguf_ctx *c, const struct rows_view *v, const char *dst, uint64_t heads)
{
    struct rows_view col = {v->data, v->type, 1, v->cols};
    float *x = decode(c, &col, 0, dst);
    if (!x)
        return -1;
    if (heads && halves_to_pairs((unsigned char *)x, heads, model_shape_head_dim(c->s), rot_dims(c->s), sizeof *x)) {
        free(x);
        return err_set(c->err, c->errlen, "%s: out of memory reordering '%s'", c->w->dir, dst);
    }
    uint64_t dims[1] = {v->cols};
    int rc = model_writer_tensor(c->w, dst, x, 1, dims);
    free(x);
    return rc;
}

/* A matrix as flashbed tensor dst: kept in its type, or decoded into the
 * writer's dtype; rows reordered into RoPE pairs when heads > 0. */
static int put_matrix(struct gguf_ctx *c, const struct rows_view *v, const char *dst, uint64_t heads)
{
    uint64_t dims[2] = {v->rows, v->cols};
    if (!c->keep) {
        float *x = decode(c, v, heads, dst);
        int rc = x ? model_writer_tensor(c->w, dst, x, 2, dims) : -1;
        free(x);
        return rc;
    }
    if (!heads)
        return model_writer_matrix_stored(c->w, dst, v->type, v->data, dims);
    size_t bytes = (size_t)(v->rows * row_bytes(v));
    unsigned char *m = malloc(bytes);
    if (!m || (memcpy(m, v->data, bytes), halves_to_pairs(m, heads, model_shape_head_dim(c->s), rot_dims(c->s),
                                                            (size_t)row_bytes(v))) != 0) {
        free(m);
        return err_set(c->err, c->errlen, "%s: out of memory reordering '%s'", c->w->dir, dst);
    }
    int rc = model_writer_matrix_stored(c->w, dst, v->type, m, dims);
    free(m);
    return rc;
}

/* The pairs reordering applies to q and k of a NEOX architecture only. */
static uint64_t rope_heads(const struct gguf_ctx *c, uint64_t heads)
{
    return c->a->neox ? heads : 0;
}

/* Layer l's q, k and v (fused attn_qkv: q's rows, k's, v's) and o. */
static int attention(struct gguf_ctx *c, uint32_t l)
{
    const struct model_shape *s = c->s;
    uint64_t d = s->d_model, hd = model_shape_head_dim(s), q = s->n_heads * hd, kv = s->n_kv_heads * hd;
    struct rows_view wq, wk, wv, wo, fused;
    char n[96], dst[96];
    if (c->a->fused) {
        if (take_needed(c, blk(n, sizeof n, l, "attn_qkv.weight"), d, q + 2 * kv, &fused))
            return -1;
        wq = sub_rows(fused, 0, q), wk = sub_rows(fused, q, kv), wv = sub_rows(fused, q + kv, kv);
    } else if (take_needed(c, blk(n, sizeof n, l, "attn_q.weight"), d, q, &wq) ||
               take_needed(c, blk(n, sizeof n, l, "attn_k.weight"), d, kv, &wk) ||
               take_needed(c, blk(n, sizeof n, l, "attn_v.weight"), d, kv, &wv))
        return -1;
    if (take_needed(c, blk(n, sizeof n, l, "attn_output.weight"), q, d, &wo))
        return -1;
    layer_tensor_name(dst, sizeof dst, (int)l, "attn.wq");
    if (put_matrix(c, &wq, dst, rope_heads(c, s->n_heads)))
        return -1;
    layer_tensor_name(dst, sizeof dst, (int)l, "attn.wk");
    if (put_matrix(c, &wk, dst, rope_heads(c, s->n_kv_heads)))
        return -1;
    layer_tensor_name(dst, sizeof dst, (int)l, "attn.wv");
    if (put_matrix(c, &wv, dst, 0))
        return -1;
    layer_tensor_name(dst, sizeof dst, (int)l, "attn.wo");
    return put_matrix(c, &wo, dst, 0);
}

/* A vector of layer l: GGUF's blk.L.from, flashbed's layers.L.to. */
static int layer_vector(struct gguf_ctx *c, uint32_t l, const char *from, const char *to, uint64_t len,
                        uint64_t heads)
{
    char n[96], dst[96];
    struct rows_view v;
    if (take_needed(c, blk(n, sizeof n, l, from), len, 0, &v))
        return -1;
    layer_tensor_name(dst, sizeof dst, (int)l, to);
    return put_vector(c, &v, dst, heads);
}

/* Qwen2's q/k/v biases and Qwen3's q/k norms, reordered as q's and k's rows. */
static int attention_extras(struct gguf_ctx *c, uint32_t l)
{
    const struct model_shape *s = c->s;
    uint64_t hd = model_shape_head_dim(s), q = s->n_heads * hd, kv = s->n_kv_heads * hd;
    if (c->a->qkv_bias && (layer_vector(c, l, "attn_q.bias", "attn.bq", q, rope_heads(c, s->n_heads)) ||
                           layer_vector(c, l, "attn_k.bias", "attn.bk", kv, rope_heads(c, s->n_kv_heads)) ||
                           layer_vector(c, l, "attn_v.bias", "attn.bv", kv, 0)))
        return -1;
    if (c->a->qk_norm && (layer_vector(c, l, "attn_q_norm.weight", "attn.q_norm.weight", hd, rope_heads(c, 1)) ||
                          layer_vector(c, l, "attn_k_norm.weight", "attn.k_norm.weight", hd, rope_heads(c, 1))))
        return -1;
    return 0;
}

/* Layer l's FFN: gate, up (fused ffn_up: the gate's d_ff rows, then
 * up's, as llama.cpp's swiglu halves it) and down [d_model rows of d_ff];
 * kept as stored into ffn_matrices.bin, and decoded into ffn.bin's
 * bundles. */
static int ffn(struct gguf_ctx *c, uint32_t l)
{
    uint64_t d = c->s->d_model, ff = c->s->d_ff;
    struct rows_view up, gate, down, fused;
    char n[96];
    if (c->a->fused) {
        if (take_needed(c, blk(n, sizeof n, l, "ffn_up.weight"), d, 2 * ff, &fused))
            return -1;
        gate = sub_rows(fused, 0, ff), up = sub_rows(fused, ff, ff);
    } else if (take_needed(c, blk(n, sizeof n, l, "ffn_gate.weight"), d, ff, &gate) ||
               take_needed(c, blk(n, sizeof n, l, "ffn_up.weight"), d, ff, &up))
        return -1;
    if (take_needed(c, blk(n, sizeof n, l, "ffn_down.weight"), ff, d, &down))
        return -1;
    if (c->keep && (model_writer_ffn_matrix_stored(c->w, (int)l, "up", up.type, up.data) ||
                    model_writer_ffn_matrix_stored(c->w, (int)l, "gate", gate.type, gate.data) ||
                    model_writer_ffn_matrix_stored(c->w, (int)l, "down", down.type, down.data)))
        return -1;
    float *fu = decode(c, &up, 0, "ffn.up"), *fg = fu ? decode(c, &gate, 0, "ffn.gate") : NULL,
          *fd = fg ? decode(c, &down, 0, "ffn.down") : NULL;
    int rc = fd ? model_writer_ffn_layer(c->w, (int)l, fu, fg, fd) : -1;
    free(fu);
    free(fg);
    free(fd);
    return rc;
}

/* Gemma 3's norms on each branch's output, before its residual add. */
static int post_norms(struct gguf_ctx *c, uint32_t l)
{
    uint64_t d = c->s->d_model;
    if (!c->a->post_norms)
        return 0;
    return layer_vector(c, l, "post_attention_norm.weight", "post_attn_norm.weight", d, 0) ||
                   layer_vector(c, l, "post_ffw_norm.weight", "post_ffn_norm.weight", d, 0)
               ? -1
               : 0;
}

static int layer(struct gguf_ctx *c, uint32_t l)
{
    uint64_t d = c->s->d_model;
    return layer_vector(c, l, "attn_norm.weight", "attn_norm.weight", d, 0) || attention(c, l) ||
                   attention_extras(c, l) || layer_vector(c, l, "ffn_norm.weight", "ffn_norm.weight", d, 0) ||
                   post_norms(c, l) || ffn(c, l)
               ? -1
               : 0;
}

/* token_embd, output_norm and output (absent: the head is tied). */
static int ends(struct gguf_ctx *c)
{
    uint64_t d = c->s->d_model, vocab = c->s->vocab_size;
    struct rows_view v;
    bool found;
    if (take_needed(c, "token_embd.weight", d, vocab, &v) || put_matrix(c, &v, "tok_embedding", 0) ||
        take_needed(c, "output_norm.weight", d, 0, &v) || put_vector(c, &v, "final_norm.weight", 0) ||
        take(c, "output.weight", d, vocab, true, &v, &found))
        return -1;
    return found ? put_matrix(c, &v, "output", 0) : 0;
}

/* A tensor the import did not read: refused by name (what it is, where known). */
static int refuse_unread(struct gguf_ctx *c)
{
    for (uint64_t i = 0; i < c->f->n_tensors; i++) {
        if (c->used[i])
            continue;
        const char *name = c->f->tensors[i].name;
        bool rope = !strncmp(name, "rope_freqs", 10) || !strncmp(name, "rope_factors", 12);
        return err_set(c->err, c->errlen, "%s: tensor %s is not part of a %s model as flashbed reads it%s", c->f->path,
                       name, c->a->name,
                       rope ? " (RoPE frequency factors: Llama 3.1's or longrope's scaling, not supported)"
                            : " (refused rather than ignored)");
    }
    return 0;
}

int gguf_copy_weights(struct gguf_ctx *c, const struct progress_report *progress)
{
    uint32_t n = c->s->n_layers;
    progress_report(progress, "convert", 0, n, NULL);
    if (ends(c))
        return -1;
    for (uint32_t l = 0; l < n; l++) {
        if (layer(c, l))
            return -1;
        progress_report(progress, "convert", l + 1, n, NULL);
    }
    return refuse_unread(c);
}
