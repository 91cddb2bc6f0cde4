/* Persimmon folders (transformers' modeling_persimmon.py,
 * configuration_persimmon.py): sequential LayerNorm blocks, a fused
 * query_key_value with biases laid out [head][q, k, v][head_dim], a
 * LayerNorm over each head's q and k before RoPE (qk_layernorm), RoPE on
 * part of each head (partial_rotary_factor), squared ReLU ("relu2"). */
#include "engine/import/import_hf_arch.h"

#include <stdio.h>

static int persimmon_shape(const struct config *c, struct model_shape *s)
{
    snprintf(s->arch, sizeof s->arch, "persimmon");
    if (cfg_uint(c, "hidden_size", &s->d_model, 1) || cfg_uint(c, "intermediate_size", &s->d_ff, 1) ||
        cfg_uint(c, "num_hidden_layers", &s->n_layers, 1) ||
        cfg_uint(c, "num_attention_heads", &s->n_heads, 1) || cfg_uint(c, "vocab_size", &s->vocab_size, 1) ||
        cfg_uint(c, "max_position_embeddings", &s->max_positions, 1) ||
        cfg_activation(c, "hidden_act", "relu2", "relu2, relu, gelu, gelu_new, gelu_pytorch_tanh", s) ||
        cfg_refuse_rope_scaling(c))
        return -1;
    s->n_kv_heads = s->n_heads;
    s->ffn_kind = FFN_RELU;
    snprintf(s->norm, sizeof s->norm, "layernorm");
    s->norm_eps = cfg_num(c->json, "layer_norm_eps", 1e-5);
    snprintf(s->position, sizeof s->position, "rope");
    s->rope_theta = cfg_num(c->json, "rope_theta", 25000);
    s->rope_fraction = cfg_num(c->json, "partial_rotary_factor", 0.5);
    s->qk_norm = cfg_bool(c->json, "qk_layernorm", 1);
    s->biases = true;
    s->tied_embeddings = cfg_bool(c->json, "tie_word_embeddings", 0);
    return 0;
}

/* q_layernorm and k_layernorm ([head_dim] weight and bias): their first
 * rotated entries reordered like q's and k's rows (LayerNorm commutes
 * with a reordering of what it normalises). */
static int qk_norms(struct hf_ctx *c, const char *pre, uint32_t l)
{
    static const char *const names[4][2] = {{"self_attn.q_layernorm.weight", "attn.q_norm.weight"},
                                            {"self_attn.q_layernorm.bias", "attn.q_norm.bias"},
                                            {"self_attn.k_layernorm.weight", "attn.k_norm.weight"},
                                            {"self_attn.k_layernorm.bias", "attn.k_norm.bias"}};
    for (int i = 0; i < 4; i++) {
        if (hf_put_rope(c, l, names[i][1], hf_layer_read(c, pre, names[i][0], 1, hf_head_dim(c->s), 0), 1, 1))
            return -1;
    }
    return 0;
}

static int persimmon_layer(struct hf_ctx *c, uint32_t l)
{
    const struct model_shape *s = c->s;
    uint64_t d = s->d_model, ff = s->d_ff;
    char pre[64];
    snprintf(pre, sizeof pre, "model.layers.%u.", l);
    if (hf_layer_norm(c, pre, l, "input_layernorm", "attn_norm"))
        return -1;
    float *q, *k, *v;
    if (hf_split_qkv(c, hf_layer_read(c, pre, "self_attn.query_key_value.weight", 2, 3 * d, d), d, &q, &k, &v) ||
        hf_put_qkv(c, l, q, k, v, d))
        return -1;
    if (hf_split_qkv(c, hf_layer_read(c, pre, "self_attn.query_key_value.bias", 1, 3 * d, 0), 1, &q, &k, &v) ||
        hf_put_qkv(c, l, q, k, v, 1))
        return -1;
    if (hf_layer_copy(c, pre, l, "self_attn.dense.weight", "attn.wo", 2, d, d) || hf_layer_copy(c, pre, l, "self_attn.dense.bias", "attn.bo", 1, d, 0) ||
        (s->qk_norm && qk_norms(c, pre, l)) ||
        hf_layer_norm(c, pre, l, "post_attention_layernorm", "ffn_norm") ||
        hf_layer_copy(c, pre, l, "mlp.dense_h_to_4h.bias", "ffn.up_bias", 1, ff, 0) ||
        hf_layer_copy(c, pre, l, "mlp.dense_4h_to_h.bias", "ffn.down_bias", 1, d, 0))
        return -1;
    return hf_ffn(c, pre, l, "mlp.dense_h_to_4h.weight", NULL, "mlp.dense_4h_to_h.weight");
}

static int persimmon_head(struct hf_ctx *c)
{
    return hf_head_copy(c, "model.final_layernorm.weight", "model.final_layernorm.bias");
}

const struct hf_arch hf_arch_persimmon = {"persimmon", 1, 2, persimmon_shape, hf_embed_tokens,
                                          persimmon_layer, persimmon_head};
