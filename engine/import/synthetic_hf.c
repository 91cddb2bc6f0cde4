/* model make's Hugging Face folders, per architecture: tensor names and
 * fused layouts (transformers' modeling_<arch>.py), how each tensor is
 * filled, and config.json's keys. Weights are uniform in +-1/sqrt(fan-in),
 * norms 1, biases 0 (up-projection biases: the ReLU density). */
#include "engine/import/synthetic_hf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/json_file.h"
#include "engine/import/hf_act.h"

/* The list being built, and what filling its tensors needs. */
struct syn_list {
    struct syn_tensor *t;
    int n;
    char pre[32];       /* the current layer's name prefix */
    uint64_t d, ff, hd; /* d_model, d_ff, head_dim */
    float sd, sf;       /* 1/sqrt(d_model), 1/sqrt(d_ff): the fan-in scales */
    bool shaped;        /* the up projection (and a GLU's gate) gets the up spectrum */
    double density;     /* up-projection biases: fraction of neurons firing, or negative */
};

/* Inverse of the standard normal CDF, by bisection on erfc (once per model). */
static double normal_quantile(double p)
{
    double lo = -10, hi = 10;
    for (int i = 0; i < 100; i++) {
        double mid = (lo + hi) / 2;
        if (0.5 * erfc(-mid / sqrt(2.0)) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* Adds tensor prefix + name; returns it for a change of fill. */
static struct syn_tensor *add(struct syn_list *x, const char *prefix, const char *name, int ndim, uint64_t d0,
                              uint64_t d1, float scale, float base)
{
    struct syn_tensor *t = &x->t[x->n++];
    snprintf(t->name, sizeof t->name, "%s%s", prefix, name);
    t->ndim = ndim;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->scale = scale;
    t->base = base;
    t->fill = FILL_UNIFORM;
    return t;
}

/* A layer's tensors: under the layer's prefix. */
static void mat(struct syn_list *x, const char *name, uint64_t rows, uint64_t cols, float scale)
{
    add(x, x->pre, name, 2, rows, cols, scale, 0);
}

static void vec(struct syn_list *x, const char *name, uint64_t n, float base)
{
    add(x, x->pre, name, 1, n, 0, 0, base);
}

/* A LayerNorm's weight (1) and bias (0) as name.weight, name.bias. */
static void layernorm(struct syn_list *x, const char *name, uint64_t n)
{
    char w[64];
    snprintf(w, sizeof w, "%s.weight", name);
    vec(x, w, n, 1);
    snprintf(w, sizeof w, "%s.bias", name);
    vec(x, w, n, 0);
}

/* A linear layer name.weight (rows x d_model) and its bias when asked. */
static void linear(struct syn_list *x, const char *name, uint64_t rows, bool bias)
{
    char w[64];
    snprintf(w, sizeof w, "%s.weight", name);
    mat(x, w, rows, x->d, x->sd);
    snprintf(w, sizeof w, "%s.bias", name);
    if (bias)
        vec(x, w, rows, 0);
}

/* The up projection name.weight [d_ff, d_model] (the up spectrum when
 * shaped) and, with bias, name.bias set for the ReLU density. */
static void up_proj(struct syn_list *x, const char *name, bool bias)
{
    char w[64];
    snprintf(w, sizeof w, "%s.weight", name);
    mat(x, w, x->ff, x->d, x->sd);
    if (x->shaped)
        x->t[x->n - 1].fill = FILL_SPECTRAL;
    if (!bias)
        return;
    /* With LayerNorm weights 1 and biases 0 the FFN input has |x|^2 = d, so
     * up_i . x with weights uniform in +-1/sqrt(d) has variance exactly 1/3
     * and is close to normal: a bias of sigma * quantile(D) makes it
     * positive with probability D. */
    float up_bias = x->density > 0 ? (float)(normal_quantile(x->density) / sqrt(3.0)) : 0.0f;
    snprintf(w, sizeof w, "%s.bias", name);
    vec(x, w, x->ff, up_bias);
    /* A shaped spectrum gives neurons rows of different norms (row i of U
     * weighted by sigma; trained models' rows differ too), and a neuron's
     * pre-activation has standard deviation |row| for an input of norm
     * sqrt(d) in no particular direction: its bias is quantile(D) times its
     * own row norm. (Uniform rows all have |row| close to 1/sqrt(3), hence
     * the one bias above, kept so that flat models stay as they were.) */
    if (x->shaped && x->density > 0) {
        x->t[x->n - 1].fill = FILL_ROW_BIAS;
        x->t[x->n - 1].base = (float)normal_quantile(x->density);
    }
}

/* The down projection name.weight [d_model, d_ff] and its bias when asked. */
static void down_proj(struct syn_list *x, const char *name, bool bias)
{
    char w[64];
    snprintf(w, sizeof w, "%s.weight", name);
    mat(x, w, x->d, x->ff, x->sf);
    snprintf(w, sizeof w, "%s.bias", name);
    if (bias)
        vec(x, w, x->d, 0);
}

/* ---- one layer per architecture, in the order the tensors are written ---- */

static void opt_layer(struct syn_list *x, const struct model_shape *s)
{
    (void)s;
    layernorm(x, "self_attn_layer_norm", x->d);
    linear(x, "self_attn.q_proj", x->d, true);
    linear(x, "self_attn.k_proj", x->d, true);
    linear(x, "self_attn.v_proj", x->d, true);
    linear(x, "self_attn.out_proj", x->d, true);
    layernorm(x, "final_layer_norm", x->d);
    up_proj(x, "fc1", true);
    down_proj(x, "fc2", true);
}

/* The Llama family: Qwen2's q/k/v biases (qkv_bias), Qwen3's per-head
 * q_norm and k_norm (qk_norm) and head_dim (o_proj reads n_heads x
 * head_dim). */
static void llama_layer(struct syn_list *x, const struct model_shape *s)
{
    uint64_t q = s->n_heads * x->hd, kv = s->n_kv_heads * x->hd;
    vec(x, "input_layernorm.weight", x->d, 1);
    linear(x, "self_attn.q_proj", q, s->qkv_bias);
    linear(x, "self_attn.k_proj", kv, s->qkv_bias);
    linear(x, "self_attn.v_proj", kv, s->qkv_bias);
    if (s->qk_norm) {
        vec(x, "self_attn.q_norm.weight", x->hd, 1);
        vec(x, "self_attn.k_norm.weight", x->hd, 1);
    }
    mat(x, "self_attn.o_proj.weight", x->d, q, 1.0f / sqrtf((float)q));
    vec(x, "post_attention_layernorm.weight", x->d, 1);
    /* the gate decides which neurons are near zero: shaped alike */
    up_proj(x, "mlp.gate_proj", false);
    up_proj(x, "mlp.up_proj", false);
    down_proj(x, "mlp.down_proj", false);
}

/* Phi-3's fused qkv_proj (q rows, then k, then v) and gate_up_proj (the
 * gate's rows, then up's: one tensor, shaped as a whole when shaped). */
static void phi3_layer(struct syn_list *x, const struct model_shape *s)
{
    uint64_t kv = s->n_kv_heads * x->hd;
    vec(x, "input_layernorm.weight", x->d, 1);
    linear(x, "self_attn.qkv_proj", x->d + 2 * kv, false);
    linear(x, "self_attn.o_proj", x->d, false);
    vec(x, "post_attention_layernorm.weight", x->d, 1);
    mat(x, "mlp.gate_up_proj.weight", 2 * x->ff, x->d, x->sd);
    if (x->shaped)
        x->t[x->n - 1].fill = FILL_SPECTRAL;
    down_proj(x, "mlp.down_proj", false);
}

/* Falcon's fused query_key_value: all query heads then one key and one
 * value head (multi-query), or [head][q, k, v] (as many key/value heads as
 * query heads): (n_heads + 2 n_kv) heads of rows either way. */
static void falcon_layer(struct syn_list *x, const struct model_shape *s)
{
    layernorm(x, "input_layernorm", x->d);
    linear(x, "self_attention.query_key_value", (s->n_heads + 2ull * s->n_kv_heads) * x->hd, false);
    linear(x, "self_attention.dense", x->d, false);
    up_proj(x, "mlp.dense_h_to_4h", false);
    down_proj(x, "mlp.dense_4h_to_h", false);
}

/* Persimmon's fused query_key_value is [head][q, k, v][head_dim], with a bias. */
static void persimmon_layer(struct syn_list *x, const struct model_shape *s)
{
    layernorm(x, "input_layernorm", x->d);
    linear(x, "self_attn.query_key_value", 3 * x->d, true);
    if (s->qk_norm) {
        layernorm(x, "self_attn.q_layernorm", x->hd);
        layernorm(x, "self_attn.k_layernorm", x->hd);
    }
    linear(x, "self_attn.dense", x->d, true);
    layernorm(x, "post_attention_layernorm", x->d);
    up_proj(x, "mlp.dense_h_to_4h", true);
    down_proj(x, "mlp.dense_4h_to_h", true);
}

static void phi_layer(struct syn_list *x, const struct model_shape *s)
{
    uint64_t kv = s->n_kv_heads * x->hd;
    layernorm(x, "input_layernorm", x->d);
    linear(x, "self_attn.q_proj", x->d, true);
    linear(x, "self_attn.k_proj", kv, true);
    linear(x, "self_attn.v_proj", kv, true);
    linear(x, "self_attn.dense", x->d, true);
    up_proj(x, "mlp.fc1", true);
    down_proj(x, "mlp.fc2", true);
}

/* ---- the architectures ---- */

struct syn_arch {
    const char *name, *hf_class;
    const char *embeddings; /* the token embedding's name */
    const char *layers;     /* layer L's prefix: layers then "L." */
    const char *final_norm; /* name.weight (and .bias for a LayerNorm) */
    const char *d_ff_key;   /* config.json's name for d_ff */
    void (*layer)(struct syn_list *x, const struct model_shape *s);
    /* why shape s cannot be this architecture, or NULL */
    const char *(*check)(const struct model_shape *s);
    void (*config)(cJSON *c, const struct model_shape *s); /* the architecture's own keys */
};

/* A plain (not gated) FFN's activation, as Falcon, Persimmon and Phi take. */
static const char *plain_activation(const struct model_shape *s)
{
    static const char *const ok[] = {"relu", "squared_relu", "gelu", "gelu_tanh"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(s->ffn_activation, ok[i]))
            return NULL;
    return "its FFN activation is not one of relu, squared_relu, gelu, gelu_tanh";
}

/* What every architecture but OPT (learned positions) needs. */
static const char *rope_layernorm(const struct model_shape *s)
{
    if (strcmp(s->position, "rope") != 0)
        return "needs RoPE positions";
    return strcmp(s->norm, "layernorm") != 0 ? "needs LayerNorm" : NULL;
}

static const char *opt_check(const struct model_shape *s)
{
    return s->ffn_kind != FFN_RELU || !s->biases || s->parallel_block || strcmp(s->ffn_activation, "relu") != 0
               ? "OPT has a ReLU FFN with biases in sequential blocks"
               : NULL;
}

/* What the Llama family shares: a GLU FFN, no o/MLP biases, sequential
 * RMSNorm blocks, RoPE on whole heads. */
static const char *llama_family_check(const struct model_shape *s)
{
    if (s->ffn_kind != FFN_GLU || s->biases || s->parallel_block || s->rope_fraction != 1.0 || s->output_bias ||
        strcmp(s->norm, "rmsnorm") != 0 || strcmp(s->position, "rope") != 0)
        return "the Llama family has a GLU FFN, no o or MLP biases, sequential RMSNorm blocks and RoPE on whole heads";
    const char *a = s->ffn_activation;
    return strcmp(a, "swiglu") && strcmp(a, "relu") && strcmp(a, "fatrelu") ? "Llama's activation is silu, relu or fatrelu"
                                                                             : NULL;
}

static const char *llama_check(const struct model_shape *s)
{
    if (s->qk_norm || s->qkv_bias || s->sliding_window)
        return "Llama has no q/k norms, no q/k/v biases and no sliding window";
    return llama_family_check(s);
}

static const char *mistral_check(const struct model_shape *s)
{
    return s->qk_norm || s->qkv_bias ? "Mistral has no q/k norms and no q/k/v biases" : llama_family_check(s);
}

static const char *qwen2_check(const struct model_shape *s)
{
    if (s->qk_norm || !s->qkv_bias || s->sliding_window)
        return "Qwen2 has q/k/v biases, no q/k norms and (here) no sliding window";
    return llama_family_check(s);
}

static const char *qwen3_check(const struct model_shape *s)
{
    if (!s->qk_norm || s->qkv_bias || s->sliding_window)
        return "Qwen3 has q/k norms, no q/k/v biases and (here) no sliding window";
    return llama_family_check(s);
}

static const char *bamboo_check(const struct model_shape *s)
{
    if (s->ffn_kind != FFN_GLU || s->biases || s->qkv_bias || s->sliding_window || s->parallel_block ||
        s->rope_fraction != 1.0 || s->qk_norm || s->output_bias || strcmp(s->norm, "rmsnorm") != 0)
        return "Bamboo has a GLU FFN, RMSNorm, no biases, no sliding window, sequential blocks and RoPE on "
               "whole heads";
    return strcmp(s->ffn_activation, "drelu") ? "Bamboo's FFN is dReLU (relu on gate and up)" : NULL;
}

static const char *phi3_check(const struct model_shape *s)
{
    if (s->ffn_kind != FFN_GLU || s->biases || s->qkv_bias || s->parallel_block ||
        s->rope_fraction != 1.0 || s->qk_norm || s->output_bias || strcmp(s->norm, "rmsnorm") != 0)
        return "Phi-3 has a GLU FFN, RMSNorm, no biases, sequential blocks and RoPE on "
               "whole heads";
    /* config.json carries longrope's factor as max_position_embeddings /
     * original_max_position_embeddings (import_hf_longrope.c) */
    if (s->rope_scaling[0] &&
        (strcmp(s->rope_scaling, "longrope") || s->rope_factor != (double)s->max_positions / s->rope_original_max_positions))
        return "Phi-3's rope_scaling is longrope, its rope_factor max_positions / rope_original_max_positions";
    const char *a = s->ffn_activation;
    return strcmp(a, "swiglu") && strcmp(a, "relu") && strcmp(a, "gelu") && strcmp(a, "gelu_tanh")
               ? "Phi-3's activation is silu, relu, gelu or gelu_new"
               : NULL;
}

static const char *falcon_check(const struct model_shape *s)
{
    if (s->ffn_kind != FFN_RELU || s->biases || !s->parallel_block || s->rope_fraction != 1.0 || s->qk_norm ||
        s->output_bias)
        return "Falcon-7B's decoder has a plain FFN, no biases, parallel blocks and RoPE on whole heads";
    if (s->n_kv_heads != 1 && s->n_kv_heads != s->n_heads)
        return "Falcon-7B's fused query_key_value has one key/value head (multi_query) or one per query head";
    if (!strcmp(s->ffn_activation, "squared_relu"))
        return "Falcon's activation is gelu, relu or gelu_new";
    return plain_activation(s) ? plain_activation(s) : rope_layernorm(s);
}

static const char *persimmon_check(const struct model_shape *s)
{
    if (s->ffn_kind != FFN_RELU || !s->biases || s->parallel_block || s->n_kv_heads != s->n_heads ||
        s->output_bias)
        return "Persimmon has a plain FFN with biases, sequential blocks and one key/value head per query head";
    return plain_activation(s) ? plain_activation(s) : rope_layernorm(s);
}

static const char *phi_check(const struct model_shape *s)
{
    if (s->ffn_kind != FFN_RELU || !s->biases || !s->parallel_block || !s->output_bias || s->qk_norm)
        return "Phi has a plain FFN with biases, parallel blocks, an LM head bias and no q/k LayerNorm";
    return plain_activation(s) ? plain_activation(s) : rope_layernorm(s);
}

static void opt_config(cJSON *c, const struct model_shape *s)
{
    cJSON_AddNumberToObject(c, "word_embed_proj_dim", s->d_model);
    cJSON_AddBoolToObject(c, "do_layer_norm_before", 1);
    cJSON_AddStringToObject(c, "activation_function", "relu");
    cJSON_AddBoolToObject(c, "enable_bias", 1);
}

static void rope_scaling_config(cJSON *c, const struct model_shape *s);

static void llama_config(cJSON *c, const struct model_shape *s)
{
    cJSON_AddNumberToObject(c, "num_key_value_heads", s->n_kv_heads);
    cJSON_AddNumberToObject(c, "rms_norm_eps", s->norm_eps);
    cJSON_AddNumberToObject(c, "rope_theta", s->rope_theta);
    cJSON_AddStringToObject(c, "hidden_act", hf_act_from_flashbed(s->ffn_activation));
    /* transformers has no FATReLU: the importer's own key (import_hf_llama.c) */
    if (!strcmp(s->ffn_activation, "fatrelu"))
        cJSON_AddNumberToObject(c, "flashbed_fatrelu_threshold", s->fatrelu_threshold);
    if (s->head_dim) /* stated only where it is not hidden_size / num_attention_heads */
        cJSON_AddNumberToObject(c, "head_dim", s->head_dim);
    rope_scaling_config(c, s);
}

/* The shape's RoPE scaling as transformers' rope_scaling object. */
static void rope_scaling_config(cJSON *c, const struct model_shape *s)
{
    if (!s->rope_scaling[0]) {
        cJSON_AddNullToObject(c, "rope_scaling");
        return;
    }
    cJSON *r = cJSON_AddObjectToObject(c, "rope_scaling");
    cJSON_AddStringToObject(r, "rope_type", s->rope_scaling);
    cJSON_AddNumberToObject(r, "factor", s->rope_factor);
    if (strcmp(s->rope_scaling, "llama3") != 0)
        return;
    cJSON_AddNumberToObject(r, "low_freq_factor", s->rope_low_freq_factor);
    cJSON_AddNumberToObject(r, "high_freq_factor", s->rope_high_freq_factor);
    cJSON_AddNumberToObject(r, "original_max_position_embeddings", s->rope_original_max_positions);
}

static void mistral_config(cJSON *c, const struct model_shape *s)
{
    llama_config(c, s);
    if (s->sliding_window)
        cJSON_AddNumberToObject(c, "sliding_window", s->sliding_window);
    else
        cJSON_AddNullToObject(c, "sliding_window");
}

/* Qwen2 and Qwen3: no sliding window (use_sliding_window false). */
static void qwen_config(cJSON *c, const struct model_shape *s)
{
    llama_config(c, s);
    cJSON_AddBoolToObject(c, "use_sliding_window", 0);
    cJSON_AddNumberToObject(c, "max_window_layers", s->n_layers);
    if (s->qk_norm)
        cJSON_AddBoolToObject(c, "attention_bias", 0);
}

static void phi3_config(cJSON *c, const struct model_shape *s)
{
    cJSON_AddNumberToObject(c, "num_key_value_heads", s->n_kv_heads);
    cJSON_AddNumberToObject(c, "rms_norm_eps", s->norm_eps);
    cJSON_AddNumberToObject(c, "rope_theta", s->rope_theta);
    cJSON_AddStringToObject(c, "hidden_act", hf_act_from_flashbed(s->ffn_activation));
    if (!strcmp(s->rope_scaling, "longrope")) { /* Phi3Config's three keys, the original context beside them */
        cJSON *r = cJSON_AddObjectToObject(c, "rope_scaling");
        cJSON_AddStringToObject(r, "type", "longrope");
        json_add_exact_doubles(r, "short_factor", s->rope_short_factor, s->rope_pairs);
        json_add_exact_doubles(r, "long_factor", s->rope_long_factor, s->rope_pairs);
        cJSON_AddNumberToObject(c, "original_max_position_embeddings", s->rope_original_max_positions);
    } else
        cJSON_AddNullToObject(c, "rope_scaling");
    if (s->sliding_window)
        cJSON_AddNumberToObject(c, "sliding_window", s->sliding_window);
    else
        cJSON_AddNullToObject(c, "sliding_window");
}

static void falcon_config(cJSON *c, const struct model_shape *s)
{
    cJSON_AddNumberToObject(c, "num_kv_heads", s->n_kv_heads);
    cJSON_AddBoolToObject(c, "multi_query", s->n_kv_heads == 1);
    cJSON_AddBoolToObject(c, "new_decoder_architecture", 0);
    cJSON_AddBoolToObject(c, "parallel_attn", 1);
    cJSON_AddBoolToObject(c, "alibi", 0);
    cJSON_AddBoolToObject(c, "bias", 0);
    cJSON_AddNumberToObject(c, "layer_norm_epsilon", s->norm_eps);
    cJSON_AddNumberToObject(c, "rope_theta", s->rope_theta);
    /* transformers' FalconConfig key (GELU when absent, as in Falcon-7B's
     * own config): "relu" for the relufied Falcon the paper runs */
    cJSON_AddStringToObject(c, "activation", hf_act_from_flashbed(s->ffn_activation));
}

/* Persimmon's and Phi's shared keys. */
static void partial_rope_config(cJSON *c, const struct model_shape *s)
{
    cJSON_AddNumberToObject(c, "layer_norm_eps", s->norm_eps);
    cJSON_AddNumberToObject(c, "rope_theta", s->rope_theta);
    cJSON_AddNumberToObject(c, "partial_rotary_factor", s->rope_fraction);
    cJSON_AddBoolToObject(c, "qk_layernorm", s->qk_norm);
    cJSON_AddStringToObject(c, "hidden_act", hf_act_from_flashbed(s->ffn_activation));
}

static void persimmon_config(cJSON *c, const struct model_shape *s)
{
    partial_rope_config(c, s);
}

static void phi_config(cJSON *c, const struct model_shape *s)
{
    cJSON_AddNumberToObject(c, "num_key_value_heads", s->n_kv_heads);
    partial_rope_config(c, s);
}

static const struct syn_arch archs[] = {
    {"opt", "OPTForCausalLM", "model.decoder.embed_tokens.weight", "model.decoder.layers.",
     "model.decoder.final_layer_norm", "ffn_dim", opt_layer, opt_check, opt_config},
    {"llama", "LlamaForCausalLM", "model.embed_tokens.weight", "model.layers.", "model.norm", "intermediate_size",
     llama_layer, llama_check, llama_config},
    {"falcon", "FalconForCausalLM", "transformer.word_embeddings.weight", "transformer.h.", "transformer.ln_f",
     "ffn_hidden_size", falcon_layer, falcon_check, falcon_config},
    {"persimmon", "PersimmonForCausalLM", "model.embed_tokens.weight", "model.layers.", "model.final_layernorm",
     "intermediate_size", persimmon_layer, persimmon_check, persimmon_config},
    {"phi", "PhiForCausalLM", "model.embed_tokens.weight", "model.layers.", "model.final_layernorm",
     "intermediate_size", phi_layer, phi_check, phi_config},
    {"mistral", "MistralForCausalLM", "model.embed_tokens.weight", "model.layers.", "model.norm", "intermediate_size",
     llama_layer, mistral_check, mistral_config},
    {"qwen2", "Qwen2ForCausalLM", "model.embed_tokens.weight", "model.layers.", "model.norm", "intermediate_size",
     llama_layer, qwen2_check, qwen_config},
    {"qwen3", "Qwen3ForCausalLM", "model.embed_tokens.weight", "model.layers.", "model.norm", "intermediate_size",
     llama_layer, qwen3_check, qwen_config},
    {"phi3", "Phi3ForCausalLM", "model.embed_tokens.weight", "model.layers.", "model.norm", "intermediate_size",
     phi3_layer, phi3_check, phi3_config},
    /* TurboSparse-Mistral's: Llama's tensors, hidden_act relu (dReLU in BambooMLP) */
    {"bamboo", "BambooForCausalLM", "model.embed_tokens.weight", "model.layers.", "model.norm", "intermediate_size",
     llama_layer, bamboo_check, llama_config},
};

static const struct syn_arch *find(const struct model_shape *s)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i].name, s->arch))
            return &archs[i];
    return NULL;
}

int syn_hf_check(const struct model_shape *s, char *why, size_t len)
{
    const struct syn_arch *a = find(s);
    const char *bad = !a ? "not an architecture the writer knows (opt, llama, falcon, persimmon, phi, mistral, qwen2, "
                           "qwen3, phi3, bamboo)"
                         : a->check(s);
    if (!bad && !hf_act_from_flashbed(s->ffn_activation))
        bad = "its FFN activation has no Hugging Face name";
    if (bad)
        snprintf(why, len, "%s", bad);
    return bad ? -1 : 0;
}

int syn_hf_capacity(const struct model_shape *s)
{
    return 8 + 24 * (int)s->n_layers;
}

int syn_hf_tensors(const struct model_shape *s, double density, bool shaped, struct syn_tensor *t)
{
    const struct syn_arch *a = find(s);
    struct syn_list x = {.t = t, .d = s->d_model, .ff = s->d_ff, .hd = model_shape_head_dim(s),
                         .sd = 1.0f / sqrtf((float)s->d_model), .sf = 1.0f / sqrtf((float)s->d_ff),
                         .shaped = shaped, .density = density};
    add(&x, "", a->embeddings, 2, s->vocab_size, s->d_model, 1.0f, 0);
    if (!strcmp(s->position, "learned"))
        add(&x, "", "model.decoder.embed_positions.weight", 2, s->max_positions + s->position_offset, s->d_model,
            0.5f, 0);
    for (uint32_t l = 0; l < s->n_layers; l++) {
        snprintf(x.pre, sizeof x.pre, "%s%u.", a->layers, l);
        a->layer(&x, s);
    }
    x.pre[0] = '\0';
    if (!strcmp(s->norm, "layernorm"))
        layernorm(&x, a->final_norm, s->d_model);
    else
        add(&x, a->final_norm, ".weight", 1, s->d_model, 0, 0, 1);
    if (!s->tied_embeddings)
        add(&x, "", "lm_head.weight", 2, s->vocab_size, s->d_model, x.sd, 0);
    if (s->output_bias)
        add(&x, "", "lm_head.bias", 1, s->vocab_size, 0, 0, 0);
    return x.n;
}

cJSON *syn_hf_config(const struct model_shape *s, const char *torch_dtype)
{
    const struct syn_arch *a = find(s);
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model_type", s->arch);
    cJSON *classes = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(classes, cJSON_CreateString(a->hf_class));
    cJSON_AddNumberToObject(c, "hidden_size", s->d_model);
    cJSON_AddNumberToObject(c, a->d_ff_key, s->d_ff);
    cJSON_AddNumberToObject(c, "num_hidden_layers", s->n_layers);
    cJSON_AddNumberToObject(c, "num_attention_heads", s->n_heads);
    cJSON_AddNumberToObject(c, "vocab_size", s->vocab_size);
    cJSON_AddNumberToObject(c, "max_position_embeddings", s->max_positions);
    cJSON_AddBoolToObject(c, "tie_word_embeddings", s->tied_embeddings);
    cJSON_AddNumberToObject(c, "bos_token_id", 1);
    cJSON_AddNumberToObject(c, "eos_token_id", 2);
    cJSON_AddStringToObject(c, "torch_dtype", torch_dtype);
    a->config(c, s);
    return c;
}
