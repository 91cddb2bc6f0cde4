/* A GGUF file's metadata as flashbed's shape (common/model_shape.h), for
 * the architectures import_gguf_arch.h lists, as llama.cpp
 * (ggml-org/llama.cpp, llama-model.cpp's load_hparams) reads them.
 *
 * Every key in the architecture's own namespace ("llama.", "qwen2.", ...)
 * is in KEY_RULES: read into the shape, harmless (with why), or accepted
 * only at the value that changes nothing (MoE, soft-capping, logit
 * scales ... refused otherwise); a key not in the table is refused by
 * name, since flashbed cannot know what it changes. Outside it:
 * general.* (names, licence, file type: records), tokenizer.* (the
 * tokenizer's reader decides) and quantize.* (how the file was
 * quantized: records) are accepted; any other namespace is refused
 * (split.*: a sharded file). */
#include "engine/import/import_gguf_arch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/import/import.h"

static const struct gguf_arch archs[] = {
    {.name = "llama", .act = "swiglu"},
    {.name = "qwen2", .neox = true, .qkv_bias = true, .act = "swiglu"},
    {.name = "qwen3", .neox = true, .qk_norm = true, .act = "swiglu"},
    {.name = "phi3", .neox = true, .fused = true, .act = "swiglu"},
    {.name = "gemma3", .neox = true, .qk_norm = true, .act = "gelu_tanh", .swa_pattern = 6, .swa_rope_theta = 10000.0,
     .embed_scale_sqrt_d = true, .post_norms = true},
};
#define N_ARCHS (sizeof archs / sizeof archs[0])

void import_gguf_archs(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_ARCHS && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", archs[i].name);
}

const struct gguf_arch *gguf_arch_find(const struct gguf_file *f, const char *name, size_t len, char *err,
                                       size_t errlen)
{
    for (size_t i = 0; i < N_ARCHS; i++)
        if (strlen(archs[i].name) == len && !memcmp(archs[i].name, name, len))
            return &archs[i];
    char known[256];
    import_gguf_archs(known, sizeof known);
    err_set(err, errlen, "%s: general.architecture \"%.*s\" is not supported (%s)", f->path,
            (int)(len > 64 ? 64 : len), name, known);
    return NULL;
}

enum key_kind {
    KEY_READ,     /* read into the shape below */
    KEY_HARMLESS, /* changes nothing flashbed computes (why says why) */
    KEY_NEUTRAL,  /* accepted only when its value is `neutral`, else refused with why */
};

struct key_rule {
    const char *suffix; /* after "<arch>." */
    enum key_kind kind;
    double neutral;
    const char *why;
};

static const struct key_rule KEY_RULES[] = {
    {"context_length", KEY_READ, 0, "max_positions"},
    {"embedding_length", KEY_READ, 0, "d_model"},
    {"block_count", KEY_READ, 0, "n_layers"},
    {"feed_forward_length", KEY_READ, 0, "d_ff"},
    {"attention.head_count", KEY_READ, 0, "n_heads"},
    {"attention.head_count_kv", KEY_READ, 0, "n_kv_heads"},
    {"attention.key_length", KEY_READ, 0, "head_dim"},
    {"attention.value_length", KEY_READ, 0, "must equal the head dim"},
    {"attention.layer_norm_rms_epsilon", KEY_READ, 0, "norm_eps"},
    {"rope.freq_base", KEY_READ, 0, "rope_theta"},
    {"rope.dimension_count", KEY_READ, 0, "rope_fraction (rotated dims of a head)"},
    {"rope.scaling.type", KEY_READ, 0, "none or linear (others refused)"},
    {"rope.scaling.factor", KEY_READ, 0, "linear RoPE scaling's factor"},
    {"rope.scale_linear", KEY_READ, 0, "the older name of rope.scaling.factor"},
    {"vocab_size", KEY_READ, 0, "must equal tokenizer.ggml.tokens' count"},
    {"attention.sliding_window", KEY_READ, 0, "gemma3's window, else caps max_positions"},
    {"rope.scaling.original_context_length", KEY_HARMLESS, 0,
     "used by YaRN and longrope alone, which are refused (rope.scaling.type, rope_factors tensors)"},
    {"rope.scaling.finetuned", KEY_HARMLESS, 0, "a record of how the model was trained"},
    {"tensor_data_layout", KEY_HARMLESS, 0,
     "an older converter's note on the q/k row order; llama.cpp does not read it: the tensors are what they are"},
    {"expert_count", KEY_NEUTRAL, 0, "mixture of experts"},
    {"expert_used_count", KEY_NEUTRAL, 0, "mixture of experts"},
    {"expert_shared_count", KEY_NEUTRAL, 0, "mixture of experts"},
    {"attention.causal", KEY_NEUTRAL, 1, "non-causal attention"},
    {"attention.clamp_kqv", KEY_NEUTRAL, 0, "q, k and v clamped"},
    {"logit_scale", KEY_NEUTRAL, 1, "logits scaled"},
    {"embedding_scale", KEY_NEUTRAL, 1, "the embedding scaled"},
    {"residual_scale", KEY_NEUTRAL, 1, "residuals scaled"},
    {"attn_logit_softcapping", KEY_NEUTRAL, 0, "attention logits soft-capped"},
    {"final_logit_softcapping", KEY_NEUTRAL, 0, "logits soft-capped"},
    {"rope.scaling.attn_factor", KEY_NEUTRAL, 1, "YaRN's attention factor"},
};
#define N_RULES (sizeof KEY_RULES / sizeof KEY_RULES[0])

/* A scalar number or bool as a double; NaN for anything else. */
static double scalar_value(const struct gguf_value *v)
{
    struct gguf_value one = {.type = GGUF_TYPE_ARRAY, .data = v->data, .count = 1, .elem_type = v->type};
    switch (v->type) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_BOOL:
        return (double)gguf_elem_uint(&one, 0);
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64:
        return (double)gguf_elem_int(&one, 0);
    case GGUF_TYPE_FLOAT32:
    case GGUF_TYPE_FLOAT64:
        return gguf_elem_float(&one, 0);
    case GGUF_TYPE_STRING:
    case GGUF_TYPE_ARRAY:
        return NAN;
    }
    return NAN;
}

/* One key of the architecture's namespace against KEY_RULES. */
static int check_arch_key(const struct gguf_file *f, const struct gguf_kv *kv, const char *suffix, char *err,
                          size_t errlen)
{
    for (size_t i = 0; i < N_RULES; i++) {
        if (strcmp(KEY_RULES[i].suffix, suffix) != 0)
            continue;
        if (KEY_RULES[i].kind != KEY_NEUTRAL || scalar_value(&kv->value) == KEY_RULES[i].neutral)
            return 0;
        return err_set(err, errlen, "%s: key %s: %s is not supported (only %g is accepted)", f->path, kv->key,
                       KEY_RULES[i].why, KEY_RULES[i].neutral);
    }
    return err_set(err, errlen,
                   "%s: key %s is not supported by flashbed's GGUF import (it does not know what it changes, so "
                   "refuses it rather than ignore it)",
                   f->path, kv->key);
}

/* Every key: the architecture's namespace by KEY_RULES, the others by
 * namespace (the file's opening comment). */
static int check_keys(const struct gguf_file *f, const struct gguf_arch *a, char *err, size_t errlen)
{
    size_t n = strlen(a->name);
    static const char *const records[] = {"general.", "tokenizer.", "quantize."};
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const struct gguf_kv *kv = &f->kv[i];
        if (!strncmp(kv->key, a->name, n) && kv->key[n] == '.') {
            if (check_arch_key(f, kv, kv->key + n + 1, err, errlen))
                return -1;
            continue;
        }
        bool ok = false;
        for (size_t r = 0; r < sizeof records / sizeof records[0]; r++)
            ok = ok || !strncmp(kv->key, records[r], strlen(records[r]));
        if (!ok)
            return err_set(err, errlen, "%s: key %s is not supported (a %s file's keys are %s.*, general.*, "
                           "tokenizer.* and quantize.*)", f->path, kv->key, a->name, a->name);
    }
    return 0;
}

/* "<arch>.<suffix>" */
static const char *akey(char *buf, size_t len, const struct gguf_arch *a, const char *suffix)
{
    snprintf(buf, len, "%s.%s", a->name, suffix);
    return buf;
}

/* A count: required (refused when missing), or def when absent. */
static int arch_u32(const struct gguf_file *f, const struct gguf_arch *a, const char *suffix, uint32_t def,
                    bool required, uint32_t *out, char *err, size_t errlen)
{
    char k[128];
    akey(k, sizeof k, a, suffix);
    if (!required && !gguf_find(f, k)) {
        *out = def;
        return 0;
    }
    if (gguf_get_u32(f, k, out, err, errlen))
        return -1;
    if (*out == 0 && required)
        return err_set(err, errlen, "%s: key %s is 0", f->path, k);
    return 0;
}

static int arch_f32(const struct gguf_file *f, const struct gguf_arch *a, const char *suffix, float def,
                    bool required, float *out, char *err, size_t errlen)
{
    char k[128];
    akey(k, sizeof k, a, suffix);
    if (!required && !gguf_find(f, k)) {
        *out = def;
        return 0;
    }
    if (gguf_get_f32(f, k, out, err, errlen))
        return -1;
    if (!isfinite(*out) || *out < 0)
        return err_set(err, errlen, "%s: key %s is %g: must be a finite number >= 0", f->path, k, (double)*out);
    return 0;
}

/* The sizes (llama.cpp's defaults: head_count_kv = head_count). */
static int read_sizes(const struct gguf_file *f, const struct gguf_arch *a, struct model_shape *s, char *err,
                      size_t errlen)
{
    if (arch_u32(f, a, "context_length", 0, true, &s->max_positions, err, errlen) ||
        arch_u32(f, a, "embedding_length", 0, true, &s->d_model, err, errlen) ||
        arch_u32(f, a, "block_count", 0, true, &s->n_layers, err, errlen) ||
        arch_u32(f, a, "feed_forward_length", 0, true, &s->d_ff, err, errlen) ||
        arch_u32(f, a, "attention.head_count", 0, true, &s->n_heads, err, errlen) ||
        arch_u32(f, a, "attention.head_count_kv", s->n_heads, false, &s->n_kv_heads, err, errlen))
        return -1;
    if (s->n_kv_heads == 0)
        return err_set(err, errlen, "%s: key %s.attention.head_count_kv is 0", f->path, a->name);
    return 0;
}

/* The head dim (key_length; embedding_length / head_count when absent)
 * and value_length, which must equal it. Kept in the shape only where it
 * is not d_model / n_heads, as the HF importers keep it. */
static int read_head_dim(const struct gguf_file *f, const struct gguf_arch *a, struct model_shape *s, char *err,
                         size_t errlen)
{
    uint32_t even = s->d_model % s->n_heads ? 0 : s->d_model / s->n_heads, hd, vd;
    if (arch_u32(f, a, "attention.key_length", even, false, &hd, err, errlen) ||
        arch_u32(f, a, "attention.value_length", hd, false, &vd, err, errlen))
        return -1;
    if (hd == 0)
        return err_set(err, errlen, "%s: %s.embedding_length %u is not a multiple of %s.attention.head_count %u and "
                       "%s.attention.key_length is absent", f->path, a->name, s->d_model, a->name, s->n_heads, a->name);
    if (vd != hd)
        return err_set(err, errlen, "%s: key %s.attention.value_length %u differs from the head dim %u (not supported)",
                       f->path, a->name, vd, hd);
    if (hd != even)
        s->head_dim = hd;
    return 0;
}

/* rope.scaling.type and its factor, as llama.cpp reads them: the type
 * defaults to linear, the factor (rope.scaling.factor, or the older
 * rope.scale_linear) to none (0 or 1); llama.cpp applies the factor
 * unless the type is YaRN, so "none" with a factor is linear too. */
static int read_rope_scaling(const struct gguf_file *f, const struct gguf_arch *a, struct model_shape *s, char *err,
                             size_t errlen)
{
    char k[128];
    const char *type = "linear";
    size_t len = 6;
    if (gguf_find(f, akey(k, sizeof k, a, "rope.scaling.type")) && gguf_get_str(f, k, &type, &len, err, errlen))
        return -1;
    float factor = 0;
    const char *fk = gguf_find(f, akey(k, sizeof k, a, "rope.scaling.factor")) ? "rope.scaling.factor"
                                                                                : "rope.scale_linear";
    if (arch_f32(f, a, fk, 0, false, &factor, err, errlen))
        return -1;
    bool plain = (len == 6 && !memcmp(type, "linear", 6)) || (len == 4 && !memcmp(type, "none", 4));
    if (!plain)
        return err_set(err, errlen, "%s: key %s.rope.scaling.type \"%.*s\" is not supported (none, linear)", f->path,
                       a->name, (int)(len > 32 ? 32 : len), type);
    if (factor != 0 && factor != 1) {
        snprintf(s->rope_scaling, sizeof s->rope_scaling, "linear");
        s->rope_factor = factor;
    }
    return 0;
}

/* rope.dimension_count (the head dim when absent): rotated dims, even. */
static int read_rope(const struct gguf_file *f, const struct gguf_arch *a, struct model_shape *s, char *err,
                     size_t errlen)
{
    float theta;
    uint32_t hd = model_shape_head_dim(s), rot;
    if (arch_f32(f, a, "rope.freq_base", 10000.0f, false, &theta, err, errlen) ||
        arch_u32(f, a, "rope.dimension_count", hd, false, &rot, err, errlen))
        return -1;
    s->rope_theta = theta;
    s->rope_fraction = (double)rot / hd;
    if (rot == 0 || rot % 2 || rot > hd || (uint32_t)(s->rope_fraction * hd) != rot)
        return err_set(err, errlen, "%s: key %s.rope.dimension_count %u: needs an even number from 2 to the head dim %u",
                       f->path, a->name, rot, hd);
    return read_rope_scaling(f, a, s, err, errlen);
}

/* The vocabulary: tokenizer.ggml.tokens' count (vocab_size, when stated, agrees). */
static int read_vocab(const struct gguf_file *f, const struct gguf_arch *a, struct model_shape *s, char *err,
                      size_t errlen)
{
    struct gguf_value tokens;
    if (gguf_get_array(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &tokens, err, errlen))
        return -1;
    if (tokens.count == 0 || tokens.count > MODEL_MAX_VOCAB)
        return err_set(err, errlen, "%s: key tokenizer.ggml.tokens holds %llu tokens (1 to %u)", f->path,
                       (unsigned long long)tokens.count, MODEL_MAX_VOCAB);
    s->vocab_size = (uint32_t)tokens.count;
    uint32_t stated;
    if (arch_u32(f, a, "vocab_size", s->vocab_size, false, &stated, err, errlen))
        return -1;
    if (stated != s->vocab_size)
        return err_set(err, errlen, "%s: key %s.vocab_size %u disagrees with tokenizer.ggml.tokens' %u tokens",
                       f->path, a->name, stated, s->vocab_size);
    return 0;
}

/* attention.sliding_window W: an architecture's window with its pattern
 * (gemma3: required, as llama.cpp reads it); else max_positions capped
 * to W, where the window never takes effect whichever edge rule one
 * follows (p attends to at most W - 1 positions back), so full attention
 * is exact there. */
static int read_window(const struct gguf_file *f, const struct gguf_arch *a, struct model_shape *s, char *err,
                       size_t errlen)
{
    uint32_t w;
    if (a->swa_pattern) {
        s->sliding_window_pattern = a->swa_pattern;
        s->rope_local_theta = a->swa_rope_theta;
        return arch_u32(f, a, "attention.sliding_window", 0, true, &s->sliding_window, err, errlen);
    }
    if (arch_u32(f, a, "attention.sliding_window", 0, false, &w, err, errlen))
        return -1;
    if (w && w < s->max_positions)
        s->max_positions = w;
    return 0;
}

/* llama.cpp scales a 62-layer gemma3 (its 27B) by 1/sqrt(d_model /
 * n_heads), every other by 1/sqrt(head_dim), the engine's: refused. */
static int gemma_scale_check(const struct gguf_file *f, const struct gguf_arch *a, const struct model_shape *s,
                             char *err, size_t errlen)
{
    if (!a->swa_pattern || s->n_layers != 62)
        return 0;
    return err_set(err, errlen,
                   "%s: a %s model of 62 layers (llama.cpp's 27B) scales attention by 1/sqrt(embedding_length / "
                   "head_count), not 1/sqrt(head dim): not supported",
                   f->path, a->name);
}

int gguf_shape(const struct gguf_file *f, const struct gguf_arch *a, const char *name, struct model_shape *s,
               char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->arch, sizeof s->arch, "%s", a->name);
    float eps;
    if (check_keys(f, a, err, errlen) || read_sizes(f, a, s, err, errlen) || gemma_scale_check(f, a, s, err, errlen) ||
        read_head_dim(f, a, s, err, errlen) ||
        read_rope(f, a, s, err, errlen) || read_vocab(f, a, s, err, errlen) || read_window(f, a, s, err, errlen) ||
        arch_f32(f, a, "attention.layer_norm_rms_epsilon", 0, true, &eps, err, errlen))
        return -1;
    s->norm_eps = eps;
    s->ffn_kind = FFN_GLU;
    snprintf(s->ffn_activation, sizeof s->ffn_activation, "%s", a->act);
    s->post_norms = a->post_norms;
    if (a->embed_scale_sqrt_d)
        s->embedding_scale = sqrtf((float)s->d_model); /* llama.cpp's ggml_scale by sqrtf(n_embd) */
    snprintf(s->norm, sizeof s->norm, "rmsnorm");
    snprintf(s->position, sizeof s->position, "rope");
    s->qkv_bias = a->qkv_bias;
    s->qk_norm = a->qk_norm;
    s->tied_embeddings = gguf_tensor_find(f, "output.weight") == NULL;
    return model_shape_check(s, f->path, err, errlen);
}
