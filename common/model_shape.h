/* Model shapes (configs/models/<name>.json): the structure of a transformer,
 * enough to count its bytes, size its FFN file, generate traces and build a
 * synthetic model. Real shapes come from the models' public configs. */
#ifndef FLASHBED_COMMON_MODEL_SHAPE_H
#define FLASHBED_COMMON_MODEL_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/settings.h"

enum ffn_kind {
    FFN_RELU, /* up, activation, down: neuron i = up row i + down column i */
    FFN_GLU,  /* gate and up, activation(gate) * up, down: + gate row i */
};

/* Upper bounds on a shape's dimensions, far above any real model's, so that
 * every product model_shape_params and the engine form (d_model x d_ff x
 * n_layers x 3 matrices x 4 bytes, vocab x d_model, ...) stays below 2^62
 * and every dimension fits an int. model_shape_load refuses larger ones. */
#define MODEL_MAX_D_MODEL (1u << 20)
#define MODEL_MAX_D_FF (1u << 22)
#define MODEL_MAX_LAYERS (1u << 12)
#define MODEL_MAX_VOCAB (1u << 24)
#define MODEL_MAX_POSITIONS (1u << 24)
/* longrope's factor lists hold one number per rotated pair: heads of up
 * to 512 rotated dims (Phi-3's are 96) */
#define MODEL_MAX_ROPE_PAIRS 256u

struct model_shape {
    char name[64];
    char arch[32];          /* "opt", "llama", "falcon", "persimmon", "phi" */
    uint32_t d_model, d_ff, n_layers, n_heads, n_kv_heads, vocab_size, max_positions;
    enum ffn_kind ffn_kind;
    char ffn_activation[32];/* "relu", "squared_relu", "fatrelu", "gelu" (erf), "gelu_tanh", "swiglu",
                             * "drelu" (a GLU's relu(gate . x) * relu(up . x): TurboSparse) */
    double fatrelu_threshold; /* FATReLU: x if x > t else 0 ("fatrelu_threshold", default 0) */
    char norm[16];          /* "layernorm" or "rmsnorm" */
    double norm_eps;
    char position[16];      /* "learned" or "rope" */
    uint32_t position_offset;/* OPT's learned positions start at 2 */
    double rope_fraction;   /* share of each head's dims rotated (partial RoPE) */
    double rope_theta;
    bool biases, tied_embeddings, parallel_block;
    /* optional keys (false when absent): */
    bool qk_norm;     /* Persimmon: a LayerNorm over each head's q and k ([head_dim], before RoPE) */
    bool output_bias; /* Phi-2: the LM head has a bias [vocab] */
    uint32_t head_dim; /* a head's dims when stated (Qwen3: not d_model / n_heads); 0: d_model / n_heads */
    bool qkv_bias;     /* q, k and v biases without the others (Qwen2); biases implies them */
    /* RoPE's frequencies rescaled (HF's rope_scaling): "" none, "linear"
     * (all divided by rope_factor) or "llama3" (Llama 3.1: wavelengths
     * past original/low_freq_factor divided by rope_factor, those under
     * original/high_freq_factor kept, a smooth blend between) or
     * "longrope" (Phi-3-mini-128k, Phi-3.5: pair j's frequency divided by
     * rope_short_factor[j] at positions below rope_original_max_positions,
     * by rope_long_factor[j] from there on; cos and sin times
     * sqrt(1 + ln(rope_factor) / ln(original)) where rope_factor, HF's
     * max_position_embeddings / original_max_position_embeddings, is
     * above 1) */
    char rope_scaling[16];
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    uint32_t rope_original_max_positions;
    uint32_t rope_pairs; /* longrope: the length of each factor list, rotated dims / 2 */
    double rope_short_factor[MODEL_MAX_ROPE_PAIRS], rope_long_factor[MODEL_MAX_ROPE_PAIRS];
    uint32_t sliding_window; /* attention over the last sliding_window positions (Mistral); 0: all */
    /* Gemma 3's keys (0 / false when absent): */
    uint32_t sliding_window_pattern; /* with sliding_window: layer l attends to every position when
                                      * (l + 1) % pattern == 0 (global), the others through the window;
                                      * 0: every layer windowed */
    double rope_local_theta; /* RoPE base of the windowed layers, unscaled (no rope_scaling); 0: rope_theta */
    double embedding_scale;  /* the token embedding times this on input; 0: not scaled */
    bool post_norms;         /* a norm on attention's and on the FFN's output before each residual add */
    char paper_statistics[160]; /* where trace statistics for this shape come from */
};

/* Parameter counts of one shape, by where the paper keeps them. */
struct param_counts {
    uint64_t embeddings;    /* token (+ learned position) embeddings */
    uint64_t lm_head;       /* 0 when tied to the embeddings */
    uint64_t attention;     /* q, k, v, o (+ biases), all layers */
    uint64_t ffn;           /* up (+ gate), down (+ biases), all layers */
    uint64_t norms;         /* layer norms, all layers + final */
    uint64_t total;
};

/* name: a shape name ("opt-6.7b", looked up in set's configs folder,
 * models/), a path to a .json file (config_file_path), or a model folder
 * (its model.json, as every other command's --model takes). A name that is
 * none of them is refused listing the shapes the configs hold. 0, or -1 with a
 * reason naming the file and key in err: dimensions outside the MODEL_MAX_*
 * bounds, heads that do not divide d_model (or KV heads the heads), an odd
 * head_dim or a rope_fraction outside (0, 1] with RoPE, numbers that are
 * negative, fractional where a count is meant, or not finite. */
int model_shape_load(const struct fb_settings *set, const char *name, struct model_shape *s, char *err,
                     size_t errlen);

/* The same from the file at path, never looked up among the configs (a
 * model folder's model.json). */
int model_shape_read(const char *path, struct model_shape *s, char *err, size_t errlen);

/* What any shape must be, wherever it came from (a shape file, model.json,
 * an HF config.json): dimensions within MODEL_MAX_*, heads dividing
 * d_model and KV heads the heads, an even head_dim and a rope_fraction in
 * (0, 1] with RoPE, finite non-negative reals. 0, or -1 with the key named
 * (flashbed's name for it) and path as the file. */
int model_shape_check(const struct model_shape *s, const char *path, char *err, size_t errlen);

void model_shape_params(const struct model_shape *s, struct param_counts *c);

/* Whether layer l attends through the sliding window (sliding_window and
 * sliding_window_pattern). */
bool model_shape_layer_windowed(const struct model_shape *s, uint32_t l);

/* A head's dims: head_dim when stated, else d_model / n_heads. */
uint32_t model_shape_head_dim(const struct model_shape *s);

/* The cached positions one token attends to at a context of context
 * tokens: all of them, or the last sliding_window (Mistral); with a
 * sliding_window_pattern, the mean over the layers. */
double model_shape_attended(const struct model_shape *s, double context);

/* The FFN's weight matrices: up and down, and a GLU's gate. (What one
 * neuron's unit holds is the unit geometry's, cache/unit_geometry.h.) */
uint32_t model_shape_ffn_matrices(const struct model_shape *s);

/* A config named by the user: a path when it has a '/' or ends in .json,
 * else <set->configs_dir>/<kind>/<name>.json ("models", "hw"). 0, or -1
 * when that path does not fit in len (buf then holds "": nothing by that
 * name). */
int config_file_path(const struct fb_settings *set, const char *kind, const char *name, char *buf, size_t len);

#endif
