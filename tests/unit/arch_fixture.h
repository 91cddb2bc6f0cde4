/* A model of any architecture the engine runs, with random weights kept
 * in memory as f32 and written as a flashbed model folder through the
 * internal model writer (engine/model/model_format.h) under the tensor names
 * the importers write. test_engine_reference computes the same weights
 * with its own double-precision forward pass; fb_test_arch_model writes a
 * folder for the integration tests' CLI runs.
 *
 * Which tensors exist is read from the shape's strings here, not through
 * the engine's arch_from_shape, so that a test of the engine does not take
 * the engine's word for what the architecture is. */
#ifndef FLASHBED_TESTS_ARCH_FIXTURE_H
#define FLASHBED_TESTS_ARCH_FIXTURE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/model_shape.h"
#include "common/rng.h"
#include "engine/model/dtype.h"
#include "engine/model/model.h"
#include "engine/model/model_format.h"

struct fx_layer {
    float *n1w, *n1b, *n2w, *n2b;          /* attn_norm, ffn_norm (+ biases) */
    float *wq, *wk, *wv, *wo, *bq, *bk, *bv, *bo;
    float *qnw, *qnb, *knw, *knb;          /* the per-head q and k norms, [head_dim] (biases: LayerNorm's) */
    float *up, *gate, *down, *bup, *bdown; /* up, gate [ff][d]; down [d][ff] */
};

struct fx_model {
    struct model_shape s;
    uint32_t d, ff, nl, h, kvh, hd, v, npos; /* npos: rows of the position table */
    bool layernorm, learned, glu, parallel;  /* from the shape's strings */
    float *emb, *pos, *out, *out_b, *nfw, *nfb;
    struct fx_layer *l;
    float *mem; /* every tensor above, one allocation */
};

/* Every tensor is allocated whatever the shape; only those it has are
 * written and used. */
static inline size_t fx_floats(const struct fx_model *f)
{
    size_t d = f->d, kv = (size_t)f->kvh * f->hd, q = (size_t)f->h * f->hd;
    size_t layer = 4 * d + q * d + 2 * kv * d + d * q + q + 2 * kv + d + 4 * f->hd + 3 * (size_t)f->ff * d + f->ff + d;
    return (size_t)f->v * d * 2 + f->v + (size_t)f->npos * d + 2 * d + f->nl * layer;
}

static inline float *fx_take(float **at, size_t n)
{
    float *p = *at;
    *at += n;
    return p;
}

static inline void fx_fill(struct rng *r, float *v, size_t n, float scale, float base)
{
    for (size_t i = 0; i < n; i++)
        v[i] = base + scale * (float)(2 * rng_unit(r) - 1);
}

static inline void fx_layer_fill(struct fx_model *f, struct fx_layer *L, struct rng *r, float ffn_scale)
{
    size_t d = f->d, kv = (size_t)f->kvh * f->hd, q = (size_t)f->h * f->hd;
    float s = 1.0f / sqrtf((float)d);
    fx_fill(r, L->n1w, d, 0.2f, 1), fx_fill(r, L->n1b, d, 0.1f, 0);
    fx_fill(r, L->n2w, d, 0.2f, 1), fx_fill(r, L->n2b, d, 0.1f, 0);
    fx_fill(r, L->wq, q * d, s, 0), fx_fill(r, L->wk, kv * d, s, 0), fx_fill(r, L->wv, kv * d, s, 0);
    fx_fill(r, L->wo, d * q, 1.0f / sqrtf((float)q), 0);
    fx_fill(r, L->bq, q, 0.1f, 0), fx_fill(r, L->bk, kv, 0.1f, 0), fx_fill(r, L->bv, kv, 0.1f, 0);
    fx_fill(r, L->bo, d, 0.1f, 0);
    fx_fill(r, L->qnw, f->hd, 0.3f, 1), fx_fill(r, L->qnb, f->hd, 0.2f, 0);
    fx_fill(r, L->knw, f->hd, 0.3f, 1), fx_fill(r, L->knb, f->hd, 0.2f, 0);
    fx_fill(r, L->up, (size_t)f->ff * d, ffn_scale * s, 0), fx_fill(r, L->gate, (size_t)f->ff * d, ffn_scale * s, 0);
    fx_fill(r, L->down, d * f->ff, 1.0f / sqrtf((float)f->ff), 0);
    fx_fill(r, L->bup, f->ff, 0.2f, -0.05f), fx_fill(r, L->bdown, d, 0.1f, 0);
}

/* Random weights for shape s: matrices uniform in ±1/sqrt(fan-in) (the up
 * and gate rows ffn_scale times that, to spread the activation's input
 * beyond its near-linear middle), norms 1 ± 0.2, biases ± 0.1. 0, or -1
 * when out of memory. */
static inline int fx_init(struct fx_model *f, const struct model_shape *s, uint64_t seed, float ffn_scale)
{
    memset(f, 0, sizeof *f);
    f->s = *s;
    f->d = s->d_model, f->ff = s->d_ff, f->nl = s->n_layers, f->h = s->n_heads, f->kvh = s->n_kv_heads;
    f->hd = s->head_dim ? s->head_dim : s->d_model / s->n_heads, f->v = s->vocab_size;
    f->layernorm = !strcmp(s->norm, "layernorm");
    f->learned = !strcmp(s->position, "learned");
    f->glu = s->ffn_kind == FFN_GLU;
    f->parallel = s->parallel_block;
    f->npos = f->learned ? s->max_positions + s->position_offset : 0;
    f->mem = malloc(fx_floats(f) * sizeof *f->mem);
    f->l = calloc(f->nl, sizeof *f->l);
    if (!f->mem || !f->l)
        return -1;
    float *at = f->mem;
    size_t d = f->d, kv = (size_t)f->kvh * f->hd, q = (size_t)f->h * f->hd;
    f->emb = fx_take(&at, (size_t)f->v * d), f->out = fx_take(&at, (size_t)f->v * d), f->out_b = fx_take(&at, f->v);
    f->pos = fx_take(&at, (size_t)f->npos * d), f->nfw = fx_take(&at, d), f->nfb = fx_take(&at, d);
    for (uint32_t l = 0; l < f->nl; l++) {
        struct fx_layer *L = &f->l[l];
        L->n1w = fx_take(&at, d), L->n1b = fx_take(&at, d), L->n2w = fx_take(&at, d), L->n2b = fx_take(&at, d);
        L->wq = fx_take(&at, q * d), L->wk = fx_take(&at, kv * d), L->wv = fx_take(&at, kv * d);
        L->wo = fx_take(&at, d * q), L->bq = fx_take(&at, q), L->bk = fx_take(&at, kv), L->bv = fx_take(&at, kv);
        L->bo = fx_take(&at, d);
        L->qnw = fx_take(&at, f->hd), L->qnb = fx_take(&at, f->hd), L->knw = fx_take(&at, f->hd);
        L->knb = fx_take(&at, f->hd);
        L->up = fx_take(&at, (size_t)f->ff * d), L->gate = fx_take(&at, (size_t)f->ff * d);
        L->down = fx_take(&at, d * f->ff), L->bup = fx_take(&at, f->ff), L->bdown = fx_take(&at, d);
    }
    struct rng r;
    rng_seed(&r, seed);
    fx_fill(&r, f->emb, (size_t)f->v * d, 1.0f, 0);
    fx_fill(&r, f->out, (size_t)f->v * d, 0.3f, 0);
    fx_fill(&r, f->out_b, f->v, 0.5f, 0);
    fx_fill(&r, f->pos, (size_t)f->npos * d, 0.5f, 0);
    fx_fill(&r, f->nfw, d, 0.2f, 1), fx_fill(&r, f->nfb, d, 0.1f, 0);
    for (uint32_t l = 0; l < f->nl; l++)
        fx_layer_fill(f, &f->l[l], &r, ffn_scale);
    return 0;
}

static inline void fx_free(struct fx_model *f)
{
    free(f->mem);
    free(f->l);
    memset(f, 0, sizeof *f);
}

static inline void fx_round_through(float *v, size_t n, enum fb_dtype t)
{
    if (t == DTYPE_F32)
        return;
    uint16_t *tmp = malloc(n * 2);
    dtype_from_f32(tmp, t, v, n);
    dtype_to_f32(v, tmp, t, n);
    free(tmp);
}

/* The matrices as the engine sees them once stored in dtype t (norms and
 * biases stay f32). */
static inline void fx_round(struct fx_model *f, enum fb_dtype t)
{
    size_t d = f->d, kv = (size_t)f->kvh * f->hd, q = (size_t)f->h * f->hd;
    fx_round_through(f->emb, (size_t)f->v * d, t);
    fx_round_through(f->out, (size_t)f->v * d, t);
    fx_round_through(f->pos, (size_t)f->npos * d, t);
    for (uint32_t l = 0; l < f->nl; l++) {
        struct fx_layer *L = &f->l[l];
        fx_round_through(L->wq, q * d, t), fx_round_through(L->wk, kv * d, t), fx_round_through(L->wv, kv * d, t);
        fx_round_through(L->wo, d * q, t), fx_round_through(L->up, (size_t)f->ff * d, t);
        fx_round_through(L->gate, (size_t)f->ff * d, t), fx_round_through(L->down, d * f->ff, t);
    }
}

/* A llama2.c tokenizer of v pieces (at most 100000): <unk> <s> </s>, the
 * 256 byte fallbacks, " ", then letters and "wN" pieces. 0, or -1. */
static inline int fx_write_tokenizer(const char *path, uint32_t v)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int32_t max = 6;
    fwrite(&max, 4, 1, f);
    for (uint32_t i = 0; i < v; i++) {
        char p[16];
        if (i < 3)
            snprintf(p, sizeof p, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        else if (i < 259)
            snprintf(p, sizeof p, "<0x%02X>", i - 3);
        else if (i < 286)
            snprintf(p, sizeof p, "%c", i == 259 ? ' ' : 'a' + (int)(i - 260));
        else
            snprintf(p, sizeof p, "w%u", i);
        float score = -(float)i;
        int32_t len = (int32_t)strlen(p);
        fwrite(&score, 4, 1, f);
        fwrite(&len, 4, 1, f);
        fwrite(p, 1, (size_t)len, f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

static inline int fx_tensor(struct model_writer *w, int layer, const char *what, const float *data, uint64_t d0,
                            uint64_t d1)
{
    char n[96];
    if (layer >= 0)
        layer_tensor_name(n, sizeof n, layer, what);
    else
        snprintf(n, sizeof n, "%s", what);
    return model_writer_tensor(w, n, data, d1 ? 2 : 1, (uint64_t[]){d0, d1});
}

static inline int fx_write_layer(const struct fx_model *f, struct model_writer *w, int l)
{
    const struct fx_layer *L = &f->l[l];
    const struct model_shape *s = &f->s;
    uint64_t d = f->d, kv = (uint64_t)f->kvh * f->hd, q = (uint64_t)f->h * f->hd;
    int rc = fx_tensor(w, l, "attn_norm.weight", L->n1w, d, 0) || fx_tensor(w, l, "attn.wq", L->wq, q, d) ||
             fx_tensor(w, l, "attn.wk", L->wk, kv, d) || fx_tensor(w, l, "attn.wv", L->wv, kv, d) ||
             fx_tensor(w, l, "attn.wo", L->wo, d, q);
    if (!rc && f->layernorm)
        rc = fx_tensor(w, l, "attn_norm.bias", L->n1b, d, 0);
    if (!rc && !f->parallel)
        rc = fx_tensor(w, l, "ffn_norm.weight", L->n2w, d, 0) ||
             (f->layernorm && fx_tensor(w, l, "ffn_norm.bias", L->n2b, d, 0));
    /* the q/k norms are of the model's norm: a LayerNorm's have biases */
    if (!rc && s->qk_norm)
        rc = fx_tensor(w, l, "attn.q_norm.weight", L->qnw, f->hd, 0) ||
             fx_tensor(w, l, "attn.k_norm.weight", L->knw, f->hd, 0) ||
             (f->layernorm && (fx_tensor(w, l, "attn.q_norm.bias", L->qnb, f->hd, 0) ||
                               fx_tensor(w, l, "attn.k_norm.bias", L->knb, f->hd, 0)));
    if (!rc && (s->biases || s->qkv_bias)) /* qkv_bias: Qwen2's q, k and v biases alone */
        rc = fx_tensor(w, l, "attn.bq", L->bq, q, 0) || fx_tensor(w, l, "attn.bk", L->bk, kv, 0) ||
             fx_tensor(w, l, "attn.bv", L->bv, kv, 0);
    if (!rc && s->biases)
        rc = fx_tensor(w, l, "attn.bo", L->bo, d, 0) || fx_tensor(w, l, "ffn.up_bias", L->bup, f->ff, 0) ||
             fx_tensor(w, l, "ffn.down_bias", L->bdown, d, 0);
    return rc ? -1 : model_writer_ffn_layer(w, l, L->up, f->glu ? L->gate : NULL, L->down);
}

/* Writes f as a model folder dir (which must not exist) in dtype t, with
 * the tokenizer file tok (fx_write_tokenizer). 0, or -1 with err. */
static inline int fx_write(const struct fx_model *f, const char *dir, enum fb_dtype t, const char *tok, char *err,
                           size_t errlen)
{
    const struct model_shape *s = &f->s;
    struct model_writer w;
    if (model_writer_begin(&w, dir, s, t, err, errlen))
        return -1;
    int rc = fx_tensor(&w, -1, "tok_embedding", f->emb, f->v, f->d);
    if (!rc && f->learned)
        rc = fx_tensor(&w, -1, "pos_embedding", f->pos, f->npos, f->d);
    for (uint32_t l = 0; !rc && l < f->nl; l++)
        rc = fx_write_layer(f, &w, (int)l);
    if (!rc)
        rc = fx_tensor(&w, -1, "final_norm.weight", f->nfw, f->d, 0) ||
             (f->layernorm && fx_tensor(&w, -1, "final_norm.bias", f->nfb, f->d, 0)) ||
             (!s->tied_embeddings && fx_tensor(&w, -1, "output", f->out, f->v, f->d)) ||
             (s->output_bias && fx_tensor(&w, -1, "output.bias", f->out_b, f->v, 0)) ||
             model_writer_copy_file(&w, tok, "tokenizer.bin");
    if (rc) {
        model_writer_abort(&w);
        return -1;
    }
    cJSON *meta = cJSON_CreateObject();
    cJSON *tk = cJSON_AddObjectToObject(meta, "tokenizer");
    cJSON_AddStringToObject(tk, "kind", "sentencepiece-bpe");
    cJSON_AddStringToObject(tk, "file", "tokenizer.bin");
    cJSON_AddNumberToObject(tk, "bos_id", 1);
    cJSON_AddNumberToObject(tk, "eos_id", 2);
    return model_writer_finish(&w, meta);
}

#endif
