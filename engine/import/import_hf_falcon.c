/* Falcon folders (transformers' modeling_falcon.py, configuration_falcon.py):
 * the Falcon-7B decoder, attention and FFN in parallel on one LayerNorm,
 * RoPE, a fused query_key_value, multi-query (one key/value head) or
 * multi-head. Refused, each naming its key: ALiBi, the Falcon-40B decoder
 * (new_decoder_architecture: two LayerNorms per layer), sequential blocks
 * (parallel_attn false), linear biases (bias true). */
#include "engine/import/import_hf_arch.h"

#include <stdio.h>

#include "common/errbuf.h"

/* Older Falcon configs (RefinedWeb) spell the sizes n_embed, n_head, n_layer. */
static const char *const hidden_keys[] = {"hidden_size", "n_embed", NULL};
static const char *const heads_keys[] = {"num_attention_heads", "n_head", NULL};
static const char *const layers_keys[] = {"num_hidden_layers", "n_layer", NULL};
static const char *const kv_keys[] = {"num_kv_heads", "n_head_kv", NULL};

static int falcon_refusals(const struct config *c)
{
    if (cfg_refuse_true(c, "alibi", 0, "ALiBi positions; flashbed runs Falcon with RoPE") ||
        cfg_refuse_true(c, "new_decoder_architecture", 0,
                        "the Falcon-40B/180B decoder, with its grouped query_key_value and two LayerNorms") ||
        cfg_refuse_true(c, "bias", 0, "Falcon with linear biases (Falcon-RW)") || cfg_refuse_rope_scaling(c))
        return -1;
    if (!cfg_bool(c->json, "parallel_attn", 1))
        return err_set(c->err, c->errlen,
                       "%s: \"parallel_attn\": false is not supported (sequential Falcon blocks)", c->path);
    uint32_t n_ln = 1;
    if (cfg_uint(c, "num_ln_in_parallel_attn", &n_ln, 0))
        return -1;
    if (n_ln != 1)
        return err_set(c->err, c->errlen,
                       "%s: \"num_ln_in_parallel_attn\": %u is not supported (one LayerNorm per layer)", c->path,
                       n_ln);
    return 0;
}

/* Key/value heads: one with multi_query (the default), else
 * num_kv_heads, which the fused [head][q, k, v] layout needs equal to the
 * attention heads. */
static int falcon_kv_heads(const struct config *c, struct model_shape *s)
{
    if (cfg_bool(c->json, "multi_query", 1)) {
        s->n_kv_heads = 1;
        return 0;
    }
    s->n_kv_heads = s->n_heads;
    if (cfg_uint_any(c, kv_keys, &s->n_kv_heads, 0))
        return -1;
    if (s->n_kv_heads != s->n_heads)
        return err_set(c->err, c->errlen,
                       "%s: \"num_kv_heads\" %u: without multi_query Falcon needs as many as its %u attention heads",
                       c->path, s->n_kv_heads, s->n_heads);
    return 0;
}

static int falcon_shape(const struct config *c, struct model_shape *s)
{
    snprintf(s->arch, sizeof s->arch, "falcon");
    s->max_positions = 2048;
    if (cfg_uint_any(c, hidden_keys, &s->d_model, 1) || cfg_uint_any(c, heads_keys, &s->n_heads, 1) ||
        cfg_uint_any(c, layers_keys, &s->n_layers, 1) || cfg_uint(c, "vocab_size", &s->vocab_size, 1) ||
        cfg_uint(c, "max_position_embeddings", &s->max_positions, 0) || falcon_refusals(c) ||
        falcon_kv_heads(c, s))
        return -1;
    s->d_ff = 4 * s->d_model;
    /* "activation" and "ffn_hidden_size" came with later transformers;
     * Falcon-7B's config has neither (GELU, 4 x hidden). A relufied Falcon
     * (model make's) says "activation": "relu". */
    if (cfg_uint(c, "ffn_hidden_size", &s->d_ff, 0) ||
        cfg_activation(c, "activation", "gelu", "gelu, relu, gelu_new, gelu_pytorch_tanh", s))
        return -1;
    s->ffn_kind = FFN_RELU;
    snprintf(s->norm, sizeof s->norm, "layernorm");
    s->norm_eps = cfg_num(c->json, "layer_norm_epsilon", 1e-5);
    snprintf(s->position, sizeof s->position, "rope");
    s->rope_theta = cfg_num(c->json, "rope_theta", 10000);
    s->parallel_block = true;
    s->tied_embeddings = cfg_bool(c->json, "tie_word_embeddings", 1);
    return 0;
}

static int falcon_layer(struct hf_ctx *c, uint32_t l)
{
    const struct model_shape *s = c->s;
    uint64_t d = s->d_model, hd = hf_head_dim(s);
    uint64_t fused_rows = (s->n_heads + 2ull * s->n_kv_heads) * hd;
    char pre[64];
    snprintf(pre, sizeof pre, "transformer.h.%u.", l);
    if (hf_layer_norm(c, pre, l, "input_layernorm", "attn_norm"))
        return -1;
    float *q, *k, *v;
    if (hf_split_qkv(c, hf_layer_read(c, pre, "self_attention.query_key_value.weight", 2, fused_rows, d), d, &q, &k,
                     &v) ||
        hf_put_qkv(c, l, q, k, v, d))
        return -1;
    if (hf_layer_copy(c, pre, l, "self_attention.dense.weight", "attn.wo", 2, d, d))
        return -1;
    return hf_ffn(c, pre, l, "mlp.dense_h_to_4h.weight", NULL, "mlp.dense_4h_to_h.weight");
}

static int falcon_embeddings(struct hf_ctx *c)
{
    return hf_copy(c, "transformer.word_embeddings.weight", "tok_embedding", 2, c->s->vocab_size, c->s->d_model);
}

static int falcon_head(struct hf_ctx *c)
{
    return hf_head_copy(c, "transformer.ln_f.weight", "transformer.ln_f.bias");
}

const struct hf_arch hf_arch_falcon = {"falcon", 11, 11, falcon_shape, falcon_embeddings, falcon_layer,
                                       falcon_head};
