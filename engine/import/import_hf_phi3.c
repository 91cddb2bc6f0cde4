/* Phi-3 folders (transformers 4.46.3's modeling_phi3.py and
 * configuration_phi3.py; Phi-3-mini-4k): Llama's block (RMSNorm, RoPE over
 * whole heads, SwiGLU, no biases) with two fused projections, split here:
 * qkv_proj holds q's rows, then k's, then v's; gate_up_proj holds the
 * gate's d_ff rows, then up's (Phi3MLP's chunk(2): gate first).
 *
 * rope_scaling longrope (Phi-3-mini-128k, Phi-3.5; import_hf_longrope.c)
 * becomes the shape's longrope keys. Refused, naming the key:
 * partial_rotary_factor other than 1 (later transformers read it for
 * Phi-4-mini). sliding_window is honoured as Mistral's is: transformers
 * 4.46.3 masks keys at distance >= sliding_window from the query
 * (Phi3Model's causal mask, eager and sdpa alike), so position p attends
 * to p - W + 1 .. p, the engine's window (model_shape.sliding_window).
 * auto_map (Microsoft's remote modeling_phi3.py) is
 * the code transformers took in as its own Phi3; it is not run. */
#include "engine/import/import_hf_arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

static int phi3_rope(const struct config *c, struct model_shape *s)
{
    double partial = cfg_num(c->json, "partial_rotary_factor", 1.0);
    if (partial != 1.0)
        return err_set(c->err, c->errlen, "%s: \"partial_rotary_factor\": %g is not supported for phi3 (1)",
                       c->path, partial);
    return cfg_longrope_scaling(c, s);
}

static int phi3_shape(const struct config *c, struct model_shape *s)
{
    return hf_llama_block(c, s, "phi3", 1e-5) || hf_refuse_head_dim(c, s) ||
                   cfg_activation(c, "hidden_act", "silu", "silu, relu, gelu, gelu_new, gelu_pytorch_tanh", s) ||
                   phi3_rope(c, s) || cfg_uint(c, "sliding_window", &s->sliding_window, 0)
               ? -1
               : 0;
}

/* rows [first, first + n) of a rows x cols matrix, in a new buffer. */
static float *take_rows(const float *m, uint64_t first, uint64_t n, uint64_t cols)
{
    float *out = malloc((size_t)(n * cols) * sizeof *out);
    if (out)
        memcpy(out, m + first * cols, (size_t)(n * cols) * sizeof *out);
    return out;
}

static int phi3_qkv(struct hf_ctx *c, const char *pre, uint32_t l)
{
    const struct model_shape *s = c->s;
    uint64_t d = s->d_model, hd = hf_head_dim(s), q = s->n_heads * hd, kv = s->n_kv_heads * hd;
    float *fused = hf_layer_read(c, pre, "self_attn.qkv_proj.weight", 2, q + 2 * kv, d);
    if (!fused)
        return -1;
    float *wq = take_rows(fused, 0, q, d), *wk = take_rows(fused, q, kv, d), *wv = take_rows(fused, q + kv, kv, d);
    free(fused);
    if (!wq || !wk || !wv) {
        free(wq);
        free(wk);
        free(wv);
        return err_set(c->err, c->errlen, "out of memory splitting layer %u's qkv_proj", l);
    }
    return hf_put_qkv(c, l, wq, wk, wv, d);
}

static int phi3_ffn(struct hf_ctx *c, const char *pre, uint32_t l)
{
    uint64_t d = c->s->d_model, ff = c->s->d_ff;
    float *fused = hf_layer_read(c, pre, "mlp.gate_up_proj.weight", 2, 2 * ff, d);
    float *down = fused ? hf_layer_read(c, pre, "mlp.down_proj.weight", 2, d, ff) : NULL;
    int rc = -1;
    if (fused && down) /* gate is rows [0, ff), up rows [ff, 2 ff) */
        rc = model_writer_ffn_layer(c->w, (int)l, fused + ff * d, fused, down);
    free(fused);
    free(down);
    return rc;
}

static int phi3_layer(struct hf_ctx *c, uint32_t l)
{
    uint64_t d = c->s->d_model, q = c->s->n_heads * (uint64_t)hf_head_dim(c->s);
    char pre[64];
    snprintf(pre, sizeof pre, "model.layers.%u.", l);
    if (hf_layer_copy(c, pre, l, "input_layernorm.weight", "attn_norm.weight", 1, d, 0) || phi3_qkv(c, pre, l) ||
        hf_layer_copy(c, pre, l, "self_attn.o_proj.weight", "attn.wo", 2, d, q) ||
        hf_layer_copy(c, pre, l, "post_attention_layernorm.weight", "ffn_norm.weight", 1, d, 0))
        return -1;
    return phi3_ffn(c, pre, l);
}

static int phi3_head(struct hf_ctx *c)
{
    return hf_head_copy(c, "model.norm.weight", NULL);
}

const struct hf_arch hf_arch_phi3 = {"phi3", 1, 32000, phi3_shape, hf_embed_tokens, phi3_layer, phi3_head};
