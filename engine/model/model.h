/* A loaded flashbed model: the shape, the architecture's choices as data,
 * and pointers into the DRAM tensors and the FFN bundles. */
#ifndef FLASHBED_ENGINE_MODEL_H
#define FLASHBED_ENGINE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/unit_geometry.h"
#include "common/model_shape.h"
#include "engine/model/dtype.h"
#include "engine/tokenizer/tokenizer.h"
#include "traces/trace.h"

/* What differs between architectures, as data; forward.c reads only this. */
enum norm_kind { NORM_RMS, NORM_LAYER };
enum position_kind { POSITION_ROPE, POSITION_LEARNED };
enum activation {
    ACT_RELU,
    ACT_SILU,
    ACT_GELU,         /* exact: x/2 (1 + erf(x / sqrt 2)) (Falcon's nn.GELU) */
    ACT_GELU_TANH,    /* the tanh approximation (Phi-2's "gelu_new") */
    ACT_SQUARED_RELU, /* relu(x)^2 (Persimmon) */
    ACT_FATRELU,      /* x if x > t else 0 (arch.fatrelu_threshold; ProSparse's Llama 2) */
};

/* How RoPE's per-pair frequencies are rescaled (HF's rope_scaling). */
enum rope_scaling { ROPE_PLAIN, ROPE_LINEAR, ROPE_LLAMA3, ROPE_LONGROPE };

/* longrope's choice of table by position, as transformers 4.46.3 makes it
 * when decoding one token at a time with a KV cache (modeling_phi3.py,
 * Phi3LongRoPEScaledRotaryEmbedding.forward: the attention passes seq_len
 * = the cached length + 1 = p + 1, and long_factor is taken when seq_len >
 * original_max_position_embeddings): position p < original rotates q and
 * k with the short factors, p >= original with the long ones, and keys
 * cached under the short factors keep them. (A whole-sequence forward of
 * n > original positions rotates every one with the long factors, and
 * transformers' generate() drops its cache once, when the length first
 * passes original, to recompute it so; the engine decodes token by token
 * and keeps its cache.) model.json says it in these words. */
#define LONGROPE_RULE                                                                                                 \
    "positions p < rope_original_max_positions rotate with rope_short_factor, p >= it with rope_long_factor; "     \
    "cached keys keep the factors they were rotated with (transformers 4.46.3 "                                     \
    "Phi3LongRoPEScaledRotaryEmbedding decoding one token at a time with a KV cache: seq_len p + 1 > "              \
    "original_max_position_embeddings takes long_factor)"

struct arch {
    enum norm_kind norm;
    enum position_kind position;
    enum activation act;
    bool glu;            /* act(gate . x) * (up . x) */
    bool act_on_up;      /* a GLU's up through act too: act(gate . x) * act(up . x) (TurboSparse's dReLU) */
    bool biases;         /* o, up and down biases (and q, k, v: qkv_bias is set with it) */
    bool qkv_bias;       /* q, k and v biases (Qwen2 has these alone) */
    bool tied_output;    /* logits through the token embedding */
    bool parallel_block; /* attention and FFN read the same normed input (one norm per layer) */
    bool qk_norm;        /* the model's norm over each head's q and k before RoPE (Persimmon: LayerNorm,
                          * Qwen3: RMSNorm) */
    bool output_bias;    /* the LM head adds a bias (Phi-2) */
    float fatrelu_threshold;
    float norm_eps;
    uint32_t position_offset; /* OPT: learned positions start at 2 */
    float rope_theta;
    uint32_t rope_dims;  /* dims of each head rotated (partial RoPE) */
    enum rope_scaling rope_scaling;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor, rope_original_max_positions;
    /* longrope: one factor per rotated pair (rope_dims / 2 of them) */
    double rope_short_factor[MODEL_MAX_ROPE_PAIRS], rope_long_factor[MODEL_MAX_ROPE_PAIRS];
    uint32_t sliding_window; /* attend to the last sliding_window positions; 0: all */
    /* Gemma 3: */
    uint32_t window_pattern; /* with sliding_window: layers l with (l + 1) % window_pattern == 0 attend to
                              * every position (model_shape_layer_windowed); 0: every layer windowed */
    float rope_local_theta;  /* RoPE base of the windowed layers (table 1, unscaled); 0: rope_theta */
    float embed_scale;       /* the token embedding times this on input (1: as stored) */
    bool post_norms;         /* post_attn_norm and post_ffn_norm on each branch's output before its residual add */
};

/* RoPE's frequencies as data: inv_freq[j], j < rope_dims / 2, the turn
 * per position of each head's pair (2j, 2j + 1) (HF's inv_freq after
 * rope_scaling: theta^(-2j/rope_dims), divided by rope_factor for linear,
 * Llama 3.1's band rule for llama3, by longrope's factor of the pair),
 * and *scale, the factor on cos and sin (HF's attention_scaling: 1 but
 * for longrope). A model has ARCH_ROPE_TABLES tables: table 0, and for
 * longrope table 1, the long factors' (table 1 is table 0 otherwise);
 * arch_rope_table_at says which one rotates position pos (LONGROPE_RULE).
 * With rope_local_theta (Gemma 3), table 1 is the windowed layers' own:
 * theta rope_local_theta, unscaled (llama.cpp's rope_freq_base_train_swa
 * and rope_freq_scale_train_swa 1; the two rules never meet:
 * arch_from_shape refuses longrope with it), and arch_layer_rope_table
 * says which table rotates layer l at pos. The engine computes them once
 * per model and RoPE reads them. */
#define ARCH_ROPE_TABLES 2
void arch_rope_table(const struct arch *a, int table, float *inv_freq, float *scale);
int arch_rope_table_at(const struct arch *a, int pos);
int arch_layer_rope_table(const struct arch *a, int layer, int pos);
/* Whether the model has a table 1 (longrope's, or the windowed layers'). */
bool arch_two_rope_tables(const struct arch *a);
/* Whether layer l attends through the sliding window (every layer but
 * the global ones of window_pattern). */
bool arch_layer_windowed(const struct arch *a, int layer);
/* Table 0: the only one but for longrope. */
void arch_rope_freqs(const struct arch *a, float *inv_freq, float *scale);

/* Fills a from the shape's strings; -1 with a reason when the forward
 * pass does not support them (the shape is still valid for traces). */
int arch_from_shape(const struct model_shape *s, struct arch *a, char *err, size_t errlen);

struct layer_weights {
    const float *attn_norm, *attn_norm_bias; /* (d_model,) */
    const void *wq;                          /* (n_heads * head_dim, d_model) */
    const void *wk, *wv;                     /* (n_kv_heads * head_dim, d_model) */
    const void *wo;                          /* (d_model, n_heads * head_dim) */
    const float *bq, *bk, *bv, *bo;          /* biases or NULL */
    const float *q_norm, *q_norm_bias;       /* (head_dim,) with qk_norm, else NULL */
    const float *k_norm, *k_norm_bias;
    const float *ffn_norm, *ffn_norm_bias;   /* (d_model,); NULL in a parallel block (attn_norm serves both) */
    const float *post_attn_norm, *post_ffn_norm; /* (d_model,) with post_norms, else NULL */
    const float *ffn_up_bias;                /* (d_ff,) or NULL */
    const float *ffn_down_bias;              /* (d_model,) or NULL */
    const void *ffn_bundles;                 /* d_ff bundles of bundle_stride bytes; NULL when on flash */
    /* each matrix's weight type (struct model's rule) */
    enum fb_dtype wq_type, wk_type, wv_type, wo_type;
    /* The FFN's matrices as a source stored them (ffn_matrices.bin, each in
     * its own type): up, gate (GLU) (d_ff, d_model), down (d_model, d_ff);
     * NULL when the folder has none or they were not read (the FFN on
     * flash). The dense FFN computes on them when they are here. */
    const void *ffn_up, *ffn_gate, *ffn_down;
    enum fb_dtype ffn_up_type, ffn_gate_type, ffn_down_type;
};

/* The most tokens a model stops at (EOS and model.json's stop_ids: a
 * GGUF vocabulary's end-of-generation tokens, tokenizer_eog.h). */
#define MODEL_MAX_STOP_IDS 16

struct model {
    char dir[4096];
    struct model_shape shape;
    struct arch arch;
    enum fb_dtype dtype;     /* of the FFN's bundles (ffn.bin), and of every matrix unless tensor_dtypes;
                              * norms and biases are f32 */
    /* model.json's "tensor_dtypes": "per-tensor" (an import that keeps a
     * file's types as stored, GGUF's): each matrix has the type its entry
     * in the tensor table names (its rows a whole number of blocks),
     * recorded in the *_type fields; without it every matrix is dtype. */
    bool tensor_dtypes;
    uint32_t head_dim, q_dim, kv_dim;
    const void *tok_embedding; /* (vocab, d_model) */
    const void *pos_embedding; /* (max_positions + position_offset, d_model) or NULL */
    const float *final_norm, *final_norm_bias;
    const void *output;        /* (vocab, d_model): the embedding when tied */
    const float *output_bias;  /* (vocab,) or NULL */
    enum fb_dtype tok_embedding_type, pos_embedding_type, output_type; /* as the layers' (above) */
    struct layer_weights *layers;
    uint64_t bundle_stride, bundle_bytes;
    int bos_id, eos_id;
    int stop_ids[MODEL_MAX_STOP_IDS], n_stop; /* generation ends at any of these: EOS first */
    struct tokenizer tok;
    /* owned memory */
    void *dram;
    size_t dram_bytes;
    void *ffn;               /* NULL when the FFN stays on flash */
    size_t ffn_bytes;
    void *ffn_matrices;      /* ffn_matrices.bin when read, else NULL */
    size_t ffn_matrices_bytes;
    bool has_ffn_matrices;   /* the folder has ffn_matrices.bin (read or not) */
    char ffn_path[4200];     /* ffn.bin: layer l's bundles start at l * d_ff * bundle_stride */
    uint32_t *ffn_crc;       /* [n_layers * d_ff]: each bundle's CRC-32C (ffn.crc32c), NULL: unchecked */
    bool checked;            /* the folder has checksums: dram.bin was checked at load, bundles are as read */
    bool verify_off;         /* opened with MODEL_NO_VERIFY (--verify off): bundles read outside the
                              * streamer (model_bundle_check) are not checked either */
};

/* Opens a model folder: checks model.json against the files, reads the
 * DRAM tensors and the FFN file into memory. Returns 0, or -1 with the
 * reason in err, naming the file and the tensor; on failure nothing is
 * left open. */
int model_open(struct model *m, const char *dir, char *err, size_t errlen);

enum model_open_flags {
    MODEL_FFN_ON_FLASH = 1u << 0, /* leave ffn.bin on flash (checked, not read): layers' ffn_bundles are NULL */
    MODEL_NO_VERIFY = 1u << 1,    /* --verify off: checksums read, the weights not checked against them */
    MODEL_LOAD_MATRICES = 1u << 2, /* read ffn_matrices.bin even with the FFN on flash (model verify) */
};
int model_open_flags(struct model *m, const char *dir, unsigned flags, char *err, size_t errlen);
void model_close(struct model *m);

/* The weight types m's matrices and bundles use: has[t] for each (the
 * types a backend must support to run m). */
void model_weight_types(const struct model *m, bool has[DTYPE_COUNT]);

/* Weight bytes one decode step of the dense engine reads: every matrix,
 * and the FFN's matrices where they are in memory, else its bundles. */
uint64_t model_bytes_per_token(const struct model *m);

/* m's FFN unit: ffn.bin's neuron bundle (its shape and dtype, as
 * model.json gives them) at the model's bundle_stride (FFN_ALIGN's padding
 * when that is 0). 0, or -1 with err. */
int model_unit_geometry(const struct model *m, struct unit_geometry *g, char *err, size_t errlen);

/* The header of a trace recorded on m (shape, weight type, FFN kind, its
 * neuron bundles as units); source and has_predicted are the recorder's to
 * set, and a recorder that sets has_channels sets the units again
 * (trace_meta_set_units). */
struct trace_meta model_trace_meta(const struct model *m);

/* Canonical tensor names, shared by the writers and the loader. */
void layer_tensor_name(char *buf, size_t len, int layer, const char *what);

#endif
