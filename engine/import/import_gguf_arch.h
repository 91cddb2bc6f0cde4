/* Inside the GGUF importer (import_gguf*.c): what the driver
 * (import_gguf.c) shares with the metadata reader (import_gguf_meta.c)
 * and the tensor mover (import_gguf_tensors.c).
 *
 * An architecture is data here: how its RoPE pairs a head's dims in
 * llama.cpp (adjacent pairs, LLAMA_ROPE_TYPE_NORM, or halves,
 * LLAMA_ROPE_TYPE_NEOX) and which optional tensors it has. flashbed's
 * engine rotates adjacent pairs (hf_rope_to_pairs' layout), so a llama
 * file's q and k rows are taken as they are and a NEOX architecture's
 * are reordered, whole rows moving (a quantized row's blocks stay whole). */
#ifndef FLASHBED_ENGINE_IMPORT_GGUF_ARCH_H
#define FLASHBED_ENGINE_IMPORT_GGUF_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/gguf.h"
#include "common/progress.h"
#include "common/model_shape.h"
#include "engine/model/model_format.h"

struct gguf_arch {
    const char *name; /* general.architecture */
    bool neox;        /* llama.cpp rotates halves (i, i + rot/2): rows reordered into pairs */
    bool qkv_bias;    /* attn_q/k/v.bias (Qwen2) */
    bool qk_norm;     /* attn_q_norm/attn_k_norm [head_dim] (Qwen3, Gemma 3) */
    bool fused;       /* attn_qkv (q, k, v rows) and ffn_up holding gate then up rows (Phi-3) */
    const char *act;  /* the GLU's activation: "swiglu", or "gelu_tanh" (Gemma 3: ggml_gelu's tanh form) */
    /* Gemma 3, as llama.cpp hard-codes it (llama-model.cpp's load_hparams,
     * not in the file): attention.sliding_window is a window on every
     * layer but each swa_pattern-th (set_swa_pattern: layer l global when
     * l % pattern == pattern - 1), windowed layers rotating with base
     * swa_rope_theta unscaled; 0: attention.sliding_window caps
     * max_positions instead */
    uint32_t swa_pattern;
    double swa_rope_theta;
    bool embed_scale_sqrt_d; /* the token embedding times sqrtf(d_model) on input (Gemma) */
    bool post_norms;         /* post_attention_norm and post_ffw_norm on each branch's output (Gemma 3) */
};

/* The architecture called name, or NULL with err saying why not (the
 * list of those supported). */
const struct gguf_arch *gguf_arch_find(const struct gguf_file *f, const char *name, size_t len, char *err,
                                       size_t errlen);

/* The shape from f's metadata for architecture a (every key of
 * a->name's namespace honoured or refused: import_gguf_meta.c's table),
 * named name; vocab_size from tokenizer.ggml.tokens' count; tied_embeddings
 * when output.weight is absent. 0, or -1 naming the file and the key. */
int gguf_shape(const struct gguf_file *f, const struct gguf_arch *a, const char *name, struct model_shape *s,
               char *err, size_t errlen);

/* One conversion. keep: every matrix in its GGUF type (per-tensor, the
 * FFN's into ffn_matrices.bin too); else every weight decoded and
 * written in the writer's dtype. */
struct gguf_ctx {
    const struct gguf_file *f;
    const struct gguf_arch *a;
    const struct model_shape *s;
    struct model_writer *w;
    bool keep;
    bool *used; /* [f->n_tensors]: read by the import (those left: refused) */
    char *err;  /* the writer's buffer too */
    size_t errlen;
};

/* The token embedding, every layer (progress hears of each) and the
 * head, each tensor's shape checked against s (refusals name the
 * tensor); then any tensor of the file not read is refused by name. */
int gguf_copy_weights(struct gguf_ctx *c, const struct progress_report *progress);

#endif
