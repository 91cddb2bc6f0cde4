/* Phi folders (transformers' modeling_phi.py, configuration_phi.py; Phi-1,
 * 1.5 and 2): attention and FFN in parallel on one LayerNorm, separate
 * q/k/v projections with biases, RoPE on part of each head, an LM head
 * with a bias. qk_layernorm is refused: transformers applies Phi's
 * [head_dim] LayerNorm to the whole projection, which only runs with one
 * head, and no released Phi sets it. */
#include "engine/import/import_hf_arch.h"

#include <stdio.h>

static int phi_shape(const struct config *c, struct model_shape *s)
{
    snprintf(s->arch, sizeof s->arch, "phi");
    if (cfg_uint(c, "hidden_size", &s->d_model, 1) || cfg_uint(c, "intermediate_size", &s->d_ff, 1) ||
        cfg_uint(c, "num_hidden_layers", &s->n_layers, 1) ||
        cfg_uint(c, "num_attention_heads", &s->n_heads, 1) ||
        cfg_uint(c, "num_key_value_heads", &s->n_kv_heads, 0) || cfg_uint(c, "vocab_size", &s->vocab_size, 1) ||
        cfg_uint(c, "max_position_embeddings", &s->max_positions, 1) ||
        cfg_activation(c, "hidden_act", "gelu_new", "gelu_new, gelu_pytorch_tanh, gelu, relu, relu2", s) ||
        cfg_refuse_true(c, "qk_layernorm", 0, "Phi's q/k LayerNorm") || cfg_refuse_rope_scaling(c))
        return -1;
    s->ffn_kind = FFN_RELU;
    snprintf(s->norm, sizeof s->norm, "layernorm");
    s->norm_eps = cfg_num(c->json, "layer_norm_eps", 1e-5);
    snprintf(s->position, sizeof s->position, "rope");
    s->rope_theta = cfg_num(c->json, "rope_theta", 10000);
    s->rope_fraction = cfg_num(c->json, "partial_rotary_factor", 0.5);
    s->biases = true;
    s->parallel_block = true;
    s->output_bias = true;
    s->tied_embeddings = cfg_bool(c->json, "tie_word_embeddings", 0);
    return 0;
}

/* q_proj, k_proj and v_proj: weights (cols d_model) or biases (cols 1). */
static int qkv(struct hf_ctx *c, const char *pre, uint32_t l, uint64_t cols)
{
    const struct model_shape *s = c->s;
    uint64_t hd = hf_head_dim(s), rows[3] = {s->n_heads * hd, s->n_kv_heads * hd, s->n_kv_heads * hd};
    static const char *const names[3] = {"q_proj", "k_proj", "v_proj"};
    float *t[3] = {NULL, NULL, NULL};
    char src[200];
    for (int i = 0; i < 3 && (i == 0 || t[i - 1]); i++) {
        snprintf(src, sizeof src, "%sself_attn.%s.%s", pre, names[i], cols == 1 ? "bias" : "weight");
        t[i] = hf_read(c, src, cols == 1 ? 1 : 2, rows[i], cols == 1 ? 0 : cols);
    }
    return hf_put_qkv(c, l, t[0], t[1], t[2], cols);
}

static int phi_layer(struct hf_ctx *c, uint32_t l)
{
    uint64_t d = c->s->d_model, ff = c->s->d_ff;
    char pre[64];
    snprintf(pre, sizeof pre, "model.layers.%u.", l);
    if (hf_layer_norm(c, pre, l, "input_layernorm", "attn_norm") || qkv(c, pre, l, d) ||
        qkv(c, pre, l, 1) || hf_layer_copy(c, pre, l, "self_attn.dense.weight", "attn.wo", 2, d, d) ||
        hf_layer_copy(c, pre, l, "self_attn.dense.bias", "attn.bo", 1, d, 0) ||
        hf_layer_copy(c, pre, l, "mlp.fc1.bias", "ffn.up_bias", 1, ff, 0) ||
        hf_layer_copy(c, pre, l, "mlp.fc2.bias", "ffn.down_bias", 1, d, 0))
        return -1;
    return hf_ffn(c, pre, l, "mlp.fc1.weight", NULL, "mlp.fc2.weight");
}

static int phi_head(struct hf_ctx *c)
{
    if (hf_head_copy(c, "model.final_layernorm.weight", "model.final_layernorm.bias"))
        return -1;
    /* the bias is the head's own even when its weight is tied */
    return hf_copy(c, "lm_head.bias", "output.bias", 1, c->s->vocab_size, 0);
}

const struct hf_arch hf_arch_phi = {"phi", 1, 2, phi_shape, hf_embed_tokens, phi_layer, phi_head};
