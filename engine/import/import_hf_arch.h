/* Inside the Hugging Face importer (import_hf*.c): what the driver
 * (import_hf.c) shares with one file per architecture. Each architecture
 * is a config.json reader and a name table: which HF tensors become which
 * flashbed tensors (model.h's layer_weights, model_format.h's writer). */
#ifndef FLASHBED_ENGINE_IMPORT_HF_ARCH_H
#define FLASHBED_ENGINE_IMPORT_HF_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/model_shape.h"
#include "engine/import/safetensors.h"
#include "engine/model/model_format.h"

/* A JSON object from path; NULL with "PATH: why" in err. */
cJSON *hf_read_json(const char *path, char *err, size_t errlen);

/* config.json, with where to say what is wrong with it. */
struct config {
    const cJSON *json;
    const char *path;
    char *err;
    size_t errlen;
};

/* A positive whole number up to MODEL_MAX_VOCAB; absent (or null, as
 * transformers saves an optional key left unset): an error when
 * required, else 0 and *out untouched. */
int cfg_uint(const struct config *c, const char *key, uint32_t *out, int required);
/* The first of keys that is present (HF renamed some: "n_head" became
 * "num_attention_heads"), read as cfg_uint; keys ends with NULL. */
int cfg_uint_any(const struct config *c, const char *const *keys, uint32_t *out, int required);
/* The number, or def when absent or not a number; not range-checked here:
 * the shape it fills goes through model_shape_check. */
double cfg_num(const cJSON *c, const char *key, double def);
int cfg_bool(const cJSON *c, const char *key, int def);
const char *cfg_str(const cJSON *c, const char *key);
/* -1 with "PATH: KEY WHY" when key is true (def when absent): for the
 * options an architecture has that flashbed does not implement. */
int cfg_refuse_true(const struct config *c, const char *key, int def, const char *why);
/* -1 when rope_scaling is set (for the architectures that support none). */
int cfg_refuse_rope_scaling(const struct config *c);
/* rope_scaling (import_hf_rope.c), or rope_parameters where newer
 * transformers write it (its rope_theta then replaces s->rope_theta):
 * null, absent or "default": nothing; "linear" and "llama3" (rope_type,
 * or type in older configs) into s's rope_scaling keys; any other type,
 * or a number missing or not above 0, -1 naming the key and the value. */
int cfg_rope_scaling(const struct config *c, struct model_shape *s);
/* Phi-3's rope_scaling (import_hf_longrope.c): null or absent, nothing;
 * longrope (or su, yarn: transformers 4.46.3's older names for it) with
 * its two factor lists and original_max_position_embeddings into s's
 * longrope keys; anything else, -1 naming the key. s's sizes and
 * max_positions must be read already. */
int cfg_longrope_scaling(const struct config *c, struct model_shape *s);
/* Sets s->ffn_activation (common/model_shape.h's names) from the HF
 * activation in config key `key` (def when absent; engine/import/hf_act.h maps
 * the names), or -1 naming the key and the value when it is not one of
 * allowed (HF names, ", "-separated: what this architecture supports). */
int cfg_activation(const struct config *c, const char *key, const char *def, const char *allowed,
                   struct model_shape *s);

/* One conversion: the source tensors, the writer, the shape. */
struct hf_ctx {
    const struct st_set *st;
    struct model_writer *w;
    const struct model_shape *s;
    char *err; /* the writer's buffer too */
    size_t errlen;
};

/* HF tensor src as f32 with the given shape; NULL with the reason in c->err. */
float *hf_read(struct hf_ctx *c, const char *src, int ndim, uint64_t d0, uint64_t d1);
/* Writes v as flashbed tensor dst and frees it (v NULL: a read failed, -1). */
int hf_put(struct hf_ctx *c, const char *dst, float *v, int ndim, uint64_t d0, uint64_t d1);
/* hf_read then hf_put. */
int hf_copy(struct hf_ctx *c, const char *src, const char *dst, int ndim, uint64_t d0, uint64_t d1);
/* Layer l's flashbed name ("layers.L.what"). */
void hf_layer_name(char *buf, size_t len, uint32_t l, const char *what);
/* hf_read of a layer's HF tensor pre + name ("model.layers.3." + "mlp.fc1.weight"). */
float *hf_layer_read(struct hf_ctx *c, const char *pre, const char *name, int ndim, uint64_t d0, uint64_t d1);
/* hf_copy of layer l's HF tensor pre + from into layers.l.to. */
int hf_layer_copy(struct hf_ctx *c, const char *pre, uint32_t l, const char *from, const char *to, int ndim,
                  uint64_t d0, uint64_t d1);
/* A LayerNorm of layer l with its bias: pre + from ".weight" and ".bias"
 * ([d_model] each) into layers.l.to ".weight" and ".bias". */
int hf_layer_norm(struct hf_ctx *c, const char *pre, uint32_t l, const char *from, const char *to);
/* The head: the final norm's weight (and bias, when norm_bias is not
 * NULL) and, unless tied, lm_head.weight as output. */
int hf_head_copy(struct hf_ctx *c, const char *norm_weight, const char *norm_bias);
/* The token embeddings under transformers' common name,
 * model.embed_tokens.weight (Llama, Persimmon, Phi). */
int hf_embed_tokens(struct hf_ctx *c);
/* Writes layer l's q or k (what: "attn.wq", "attn.bq", ...), heads blocks
 * of head_dim rows of cols values, after reordering each head's rotated
 * rows for the engine's RoPE (hf_rope_to_pairs); frees v. */
int hf_put_rope(struct hf_ctx *c, uint32_t l, const char *what, float *v, uint32_t heads, uint64_t cols);
/* Writes layer l's attn.wq, attn.wk (reordered as hf_put_rope does) and
 * attn.wv, or with cols 1 the biases attn.bq, attn.bk, attn.bv; frees
 * all three (NULL ones: a read failed, -1). */
int hf_put_qkv(struct hf_ctx *c, uint32_t l, float *q, float *k, float *v, uint64_t cols);
/* Reads layer l's FFN, HF tensors pre + up, pre + gate (NULL: none) and
 * pre + down, and writes its bundles. */
int hf_ffn(struct hf_ctx *c, const char *pre, uint32_t l, const char *up, const char *gate, const char *down);

/* Head dimensions and the rotated share of them, from the shape. */
uint32_t hf_head_dim(const struct model_shape *s);
uint32_t hf_rope_dims(const struct model_shape *s);

/* HF rotates each head's first rot dims by halves (rotate_half: dim i
 * with i + rot/2); the engine rotates adjacent pairs (2i, 2i + 1). Moves,
 * in each of `heads` blocks of hd rows of cols values, row i to 2i and row
 * i + rot/2 to 2i + 1 for i < rot/2; rows from rot on stay. A bias is
 * cols 1, a per-head norm heads 1 and cols 1. 0, or -1 (out of memory). */
int hf_rope_to_pairs(float *w, uint32_t heads, uint32_t hd, uint32_t rot, uint64_t cols);

/* Fused query_key_value rows (Falcon, Persimmon): n_kv groups, each of
 * n_heads/n_kv query heads, then the group's key head, then its value
 * head, head_dim rows each. Persimmon and multi-head Falcon are n_kv =
 * n_heads ([head][q, k, v][head_dim]); multi-query Falcon is n_kv = 1 (all
 * queries, then k, then v). Splits fused (rows x cols, cols 1 for a bias)
 * into new q (n_heads heads), k and v (n_kv heads each); frees fused. 0, or
 * -1 with the reason in c->err (fused NULL: its read failed). */
int hf_split_qkv(struct hf_ctx *c, float *fused, uint64_t cols, float **q, float **k, float **v);

/* An architecture: its config.json reader and its tensors. */
struct hf_arch {
    const char *model_type;
    int bos_id, eos_id; /* when config.json names none */
    /* fills the shape's architecture keys and sizes (s is zeroed, with
     * defaults: norm_eps 1e-5, rope_fraction 1, rope_theta 10000) */
    int (*shape)(const struct config *c, struct model_shape *s);
    int (*embeddings)(struct hf_ctx *c);
    int (*layer)(struct hf_ctx *c, uint32_t l);
    int (*head)(struct hf_ctx *c); /* final norm, output and its bias */
};

extern const struct hf_arch hf_arch_llama, hf_arch_opt, hf_arch_falcon, hf_arch_persimmon, hf_arch_phi,
    hf_arch_mistral, hf_arch_qwen2, hf_arch_qwen3, hf_arch_phi3, hf_arch_bamboo, hf_arch_sparsellama;

/* The Llama family (Llama, Mistral, Qwen2, Qwen3; import_hf_llama.c):
 * the keys their configs share (sizes, head_dim, hidden_act, rope_theta,
 * rope_scaling, rms_norm_eps, tie_word_embeddings; mlp_bias true
 * refused) into s, its arch named arch; 0 or -1 naming the key. */
int hf_llama_config(const struct config *c, struct model_shape *s, const char *arch);
/* What the Llama family shares with Phi-3 and TurboSparse-Mistral, which
 * read their activation and scaling keys their own way: the sizes,
 * head_dim, rope_theta, a GLU, RMSNorm (rms_norm_eps, default eps), RoPE
 * and tie_word_embeddings into s, its arch named arch; 0 or -1 naming the
 * key. */
int hf_llama_block(const struct config *c, struct model_shape *s, const char *arch, double eps);
/* -1 naming the key when hf_llama_block found a head_dim other than
 * hidden_size / num_attention_heads, for an architecture whose modelling
 * code ignores the key (Phi-3 in transformers 4.46.3, Bamboo). */
int hf_refuse_head_dim(const struct config *c, const struct model_shape *s);
/* A Llama-family layer: q, k, v, o, the two RMSNorms and the GLU, with
 * q/k/v biases when the shape has qkv_bias and q/k norms with qk_norm. */
int hf_llama_layer(struct hf_ctx *c, uint32_t l);
int hf_llama_head(struct hf_ctx *c);

/* Caps s->max_positions to config key sliding_window less short_by
 * (absent or null: nothing), where transformers' versions differed by one
 * on the window's edge (TurboSparse-Mistral's modelling code, short_by
 * 1): no sequence of that many positions reaches the window, so the
 * engine's full attention is exact there under either. -1 naming the key when it is not a count above
 * short_by. */
int hf_cap_to_sliding_window(const struct config *c, struct model_shape *s, uint32_t short_by);

/* tokenizer.json of the SentencePiece kind rewritten as a llama2.c
 * tokenizer.bin at out; 1, writing nothing, for a byte-level BPE; -1 with
 * the reason in err. */
int hf_convert_sp_tokenizer(const char *path, const struct model_shape *s, const char *out, char *err,
                            size_t errlen);

/* Before a folder is read (import_hf_folder.c): its weights are
 * safetensors (model.safetensors or the index of its shards), and where its
 * tokenizer is: tokenizer given (a tokenizer.bin) or dir/tokenizer.json,
 * into tokpath; else dir/tokenizer.model, *spm set. -1 with what flashbed
 * expects and the shortest way there (pytorch_model.bin: re-saved by
 * transformers; no tokenizer: copied from the repository). */
int hf_folder_check(const char *dir, const char *tokenizer, char *tokpath, size_t len, bool *spm, char *err,
                    size_t errlen);

/* SentencePiece's tokenizer.model (engine/tokenizer/tokenizer_spm.h)
 * rewritten as a llama2.c tokenizer.bin at out, its pieces and scores as
 * the SentencePiece tokenizer reads them; -1 with the reason in err (a
 * model that does not add the dummy prefix among them: tokenizer.bin
 * always does). */
int hf_convert_spm_tokenizer(const char *path, const struct model_shape *s, const char *out, char *err,
                             size_t errlen);

#endif
