/* Llama and OPT folders: config.json keys and tensor names
 * (transformers' modeling_llama.py and modeling_opt.py). */
#include "engine/import/import_hf_arch.h"

#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"

/* FATReLU's threshold: transformers has no FATReLU. ProSparse's Llama 2
 * (SparseLLM/prosparse-llama-2-7b) says hidden_act "fatrelu" with the
 * threshold in "hidden_act_param" (0.01), for its own modelling code
 * (auto_map), whose one change to Llama's computation is that FATReLU on
 * the gate: act_fn(gate_proj(x)) * up_proj(x). flashbed model make writes
 * its own key, FATRELU_KEY. Either names it; both must agree. */
#define FATRELU_KEY "flashbed_fatrelu_threshold"
#define PROSPARSE_KEY "hidden_act_param"

static int fatrelu_threshold(const struct config *c, const char *key, double *t)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->json, key);
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 1e30)
        return err_set(c->err, c->errlen, "%s: \"%s\" must be a number >= 0 (FATReLU's threshold)", c->path, key);
    *t = v->valuedouble;
    return 1;
}

static int llama_activation(const struct config *c, struct model_shape *s)
{
    if (cfg_activation(c, "hidden_act", "silu", "silu, relu, fatrelu", s))
        return -1;
    if (strcmp(s->ffn_activation, "fatrelu") != 0)
        return 0;
    double ours = 0, theirs = 0;
    int has_ours = fatrelu_threshold(c, FATRELU_KEY, &ours), has_theirs = fatrelu_threshold(c, PROSPARSE_KEY, &theirs);
    if (has_ours < 0 || has_theirs < 0)
        return -1;
    if (!has_ours && !has_theirs)
        return err_set(c->err, c->errlen,
                       "%s: hidden_act \"fatrelu\" needs its threshold: \"" PROSPARSE_KEY "\" (ProSparse's) or "
                       "\"" FATRELU_KEY "\", a number >= 0",
                       c->path);
    if (has_ours && has_theirs && ours != theirs)
        return err_set(c->err, c->errlen, "%s: \"" PROSPARSE_KEY "\" %g and \"" FATRELU_KEY "\" %g disagree", c->path,
                       theirs, ours);
    s->fatrelu_threshold = has_theirs ? theirs : ours;
    return 0;
}

/* head_dim, kept in the shape only where it is not hidden_size /
 * num_attention_heads (Qwen3), so that other shapes stay as they were. */
static int llama_head_dim(const struct config *c, struct model_shape *s)
{
    uint32_t head_dim = 0;
    if (cfg_uint(c, "head_dim", &head_dim, 0))
        return -1;
    if (head_dim && (s->d_model % s->n_heads || head_dim != s->d_model / s->n_heads))
        s->head_dim = head_dim;
    return 0;
}

int hf_llama_block(const struct config *c, struct model_shape *s, const char *arch, double eps)
{
    snprintf(s->arch, sizeof s->arch, "%s", arch);
    if (cfg_uint(c, "hidden_size", &s->d_model, 1) || cfg_uint(c, "intermediate_size", &s->d_ff, 1) ||
        cfg_uint(c, "num_hidden_layers", &s->n_layers, 1) ||
        cfg_uint(c, "num_attention_heads", &s->n_heads, 1) ||
        cfg_uint(c, "num_key_value_heads", &s->n_kv_heads, 0) || cfg_uint(c, "vocab_size", &s->vocab_size, 1) ||
        cfg_uint(c, "max_position_embeddings", &s->max_positions, 1) || llama_head_dim(c, s))
        return -1;
    s->rope_theta = cfg_num(c->json, "rope_theta", 10000);
    s->ffn_kind = FFN_GLU;
    snprintf(s->norm, sizeof s->norm, "rmsnorm");
    s->norm_eps = cfg_num(c->json, "rms_norm_eps", eps);
    snprintf(s->position, sizeof s->position, "rope");
    s->tied_embeddings = cfg_bool(c->json, "tie_word_embeddings", 0);
    return 0;
}

int hf_refuse_head_dim(const struct config *c, const struct model_shape *s)
{
    if (!s->head_dim)
        return 0;
    return err_set(c->err, c->errlen,
                   "%s: \"head_dim\" %u other than hidden_size / num_attention_heads is not supported for %s (its "
                   "modelling code takes hidden_size / num_attention_heads)",
                   c->path, s->head_dim, s->arch);
}

int hf_llama_config(const struct config *c, struct model_shape *s, const char *arch)
{
    if (hf_llama_block(c, s, arch, 1e-6))
        return -1;
    /* pretraining_tp > 1 splits each matmul into slices that transformers
     * sums again: the same function, so it is not refused */
    if (llama_activation(c, s) || cfg_rope_scaling(c, s) ||
        cfg_refuse_true(c, "mlp_bias", 0, "MLP biases"))
        return -1;
    /* transformers' rope utilities read partial_rotary_factor from any
     * config; these attentions rotate whole heads */
    double partial = cfg_num(c->json, "partial_rotary_factor", 1.0);
    if (partial != 1.0)
        return err_set(c->err, c->errlen,
                       "%s: \"partial_rotary_factor\" %g is not supported for %s (whole heads rotate)", c->path, partial,
                       arch);
    return 0;
}

static int llama_shape(const struct config *c, struct model_shape *s)
{
    return hf_llama_config(c, s, "llama") ||
                   cfg_refuse_true(c, "attention_bias", 0, "Llama with attention biases: q, k, v and o")
               ? -1
               : 0;
}

static int opt_shape(const struct config *c, struct model_shape *s)
{
    snprintf(s->arch, sizeof s->arch, "opt");
    uint32_t proj = 0;
    if (cfg_uint(c, "hidden_size", &s->d_model, 1) || cfg_uint(c, "ffn_dim", &s->d_ff, 1) ||
        cfg_uint(c, "num_hidden_layers", &s->n_layers, 1) ||
        cfg_uint(c, "num_attention_heads", &s->n_heads, 1) || cfg_uint(c, "vocab_size", &s->vocab_size, 1) ||
        cfg_uint(c, "max_position_embeddings", &s->max_positions, 1) ||
        cfg_uint(c, "word_embed_proj_dim", &proj, 0))
        return -1;
    const char *act = cfg_str(c->json, "activation_function");
    if (act && strcmp(act, "relu") != 0)
        return err_set(c->err, c->errlen, "%s: activation_function \"%s\" is not supported for opt (relu)",
                       c->path, act);
    if (!cfg_bool(c->json, "do_layer_norm_before", 1) || (proj && proj != s->d_model))
        return err_set(c->err, c->errlen,
                       "%s: post-LayerNorm or projected-embedding OPT variants (opt-350m) are not supported",
                       c->path);
    if (!cfg_bool(c->json, "enable_bias", 1))
        return err_set(c->err, c->errlen, "%s: OPT without biases is not supported", c->path);
    s->ffn_kind = FFN_RELU;
    snprintf(s->ffn_activation, sizeof s->ffn_activation, "relu");
    snprintf(s->norm, sizeof s->norm, "layernorm");
    snprintf(s->position, sizeof s->position, "learned");
    s->position_offset = 2;
    s->rope_fraction = 0; /* no RoPE, as configs/models/opt-*.json say */
    s->rope_theta = 0;
    s->biases = true;
    s->tied_embeddings = cfg_bool(c->json, "tie_word_embeddings", 1);
    return 0;
}

/* q, k and v biases (Qwen2), q's and k's rotated rows reordered as
 * their weights'. */
static int llama_qkv_bias(struct hf_ctx *c, const char *pre, uint32_t l)
{
    const struct model_shape *s = c->s;
    uint64_t hd = hf_head_dim(s), q = s->n_heads * hd, kv = s->n_kv_heads * hd;
    float *bq = hf_layer_read(c, pre, "self_attn.q_proj.bias", 1, q, 0);
    float *bk = bq ? hf_layer_read(c, pre, "self_attn.k_proj.bias", 1, kv, 0) : NULL;
    float *bv = bk ? hf_layer_read(c, pre, "self_attn.v_proj.bias", 1, kv, 0) : NULL;
    return hf_put_qkv(c, l, bq, bk, bv, 1);
}

/* Qwen3's q_norm and k_norm ([head_dim] RMSNorm weights), reordered like
 * q's and k's rows (the norm commutes with a reordering). */
static int llama_qk_norms(struct hf_ctx *c, const char *pre, uint32_t l)
{
    uint64_t hd = hf_head_dim(c->s);
    return hf_put_rope(c, l, "attn.q_norm.weight", hf_layer_read(c, pre, "self_attn.q_norm.weight", 1, hd, 0), 1, 1) ||
                   hf_put_rope(c, l, "attn.k_norm.weight", hf_layer_read(c, pre, "self_attn.k_norm.weight", 1, hd, 0),
                               1, 1)
               ? -1
               : 0;
}

int hf_llama_layer(struct hf_ctx *c, uint32_t l)
{
    const struct model_shape *s = c->s;
    uint64_t d = s->d_model, hd = hf_head_dim(s), q = s->n_heads * hd, kv = s->n_kv_heads * hd;
    char pre[64];
    snprintf(pre, sizeof pre, "model.layers.%u.", l);
    if (hf_layer_copy(c, pre, l, "input_layernorm.weight", "attn_norm.weight", 1, d, 0))
        return -1;
    /* q and k: rows reordered for the engine's RoPE */
    if (hf_put_rope(c, l, "attn.wq", hf_layer_read(c, pre, "self_attn.q_proj.weight", 2, q, d), s->n_heads, d) ||
        hf_put_rope(c, l, "attn.wk", hf_layer_read(c, pre, "self_attn.k_proj.weight", 2, kv, d), s->n_kv_heads, d) ||
        (s->qkv_bias && llama_qkv_bias(c, pre, l)) || (s->qk_norm && llama_qk_norms(c, pre, l)))
        return -1;
    if (hf_layer_copy(c, pre, l, "self_attn.v_proj.weight", "attn.wv", 2, kv, d) ||
        hf_layer_copy(c, pre, l, "self_attn.o_proj.weight", "attn.wo", 2, d, q) ||
        hf_layer_copy(c, pre, l, "post_attention_layernorm.weight", "ffn_norm.weight", 1, d, 0))
        return -1;
    return hf_ffn(c, pre, l, "mlp.up_proj.weight", "mlp.gate_proj.weight", "mlp.down_proj.weight");
}

static int opt_layer(struct hf_ctx *c, uint32_t l)
{
    uint64_t d = c->s->d_model, ff = c->s->d_ff;
    char pre[64];
    snprintf(pre, sizeof pre, "model.decoder.layers.%u.", l);
    static const struct {
        const char *from, *to;
        int nd;
        char rows, cols; /* 'd' d_model, 'f' d_ff */
    } names[] = {
        {"self_attn_layer_norm.weight", "attn_norm.weight", 1, 'd', 0},
        {"self_attn_layer_norm.bias", "attn_norm.bias", 1, 'd', 0},
        {"self_attn.q_proj.weight", "attn.wq", 2, 'd', 'd'},
        {"self_attn.k_proj.weight", "attn.wk", 2, 'd', 'd'},
        {"self_attn.v_proj.weight", "attn.wv", 2, 'd', 'd'},
        {"self_attn.out_proj.weight", "attn.wo", 2, 'd', 'd'},
        {"self_attn.q_proj.bias", "attn.bq", 1, 'd', 0},
        {"self_attn.k_proj.bias", "attn.bk", 1, 'd', 0},
        {"self_attn.v_proj.bias", "attn.bv", 1, 'd', 0},
        {"self_attn.out_proj.bias", "attn.bo", 1, 'd', 0},
        {"final_layer_norm.weight", "ffn_norm.weight", 1, 'd', 0},
        {"final_layer_norm.bias", "ffn_norm.bias", 1, 'd', 0},
        {"fc1.bias", "ffn.up_bias", 1, 'f', 0},
        {"fc2.bias", "ffn.down_bias", 1, 'd', 0},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (hf_layer_copy(c, pre, l, names[i].from, names[i].to, names[i].nd, names[i].rows == 'f' ? ff : d,
                       names[i].cols == 'f' ? ff : names[i].cols ? d : 0))
            return -1;
    return hf_ffn(c, pre, l, "fc1.weight", NULL, "fc2.weight");
}

static int opt_embeddings(struct hf_ctx *c)
{
    const struct model_shape *s = c->s;
    return hf_copy(c, "model.decoder.embed_tokens.weight", "tok_embedding", 2, s->vocab_size, s->d_model) ||
                   hf_copy(c, "model.decoder.embed_positions.weight", "pos_embedding", 2,
                           s->max_positions + s->position_offset, s->d_model)
               ? -1
               : 0;
}

int hf_llama_head(struct hf_ctx *c)
{
    return hf_head_copy(c, "model.norm.weight", NULL);
}

static int opt_head(struct hf_ctx *c)
{
    return hf_head_copy(c, "model.decoder.final_layer_norm.weight", "model.decoder.final_layer_norm.bias");
}

const struct hf_arch hf_arch_llama = {"llama", 1, 2, llama_shape, hf_embed_tokens, hf_llama_layer, hf_llama_head};
/* ProSparse's published checkpoints (SparseLLM/prosparse-llama-2-7b, -13b)
 * say model_type "sparsellama" (SparseLlamaForCausalLM, remote code): Llama's
 * keys and tensors, its activation FATReLU (read by llama_activation). */
const struct hf_arch hf_arch_sparsellama = {"sparsellama", 1, 2, llama_shape, hf_embed_tokens, hf_llama_layer,
                                            hf_llama_head};
const struct hf_arch hf_arch_opt = {"opt", 1, 2, opt_shape, opt_embeddings, opt_layer, opt_head};
