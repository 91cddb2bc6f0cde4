/* TurboSparse-Mistral folders (model_type "bamboo", BambooForCausalLM:
 * PowerInfer's Bamboo and TurboSparse-Mistral, published with their own
 * modeling_bamboo.py under auto_map): Mistral's layers, tensors named as
 * Llama's, with the dReLU FFN of BambooMLP's forward,
 * down_proj(act_fn(gate_proj(x)) * act_fn(up_proj(x))), act_fn being
 * hidden_act: relu on both branches. That is the one change auto_map's code
 * makes to the computation, and the engine has it as data (shape
 * activation "drelu": arch.act_on_up). The checkpoints' merged predictor
 * tensors (mlp.predictor.*) are not read.
 *
 * sliding_window (4096 in TurboSparse-Mistral, max_position_embeddings
 * 32768) caps max_positions to sliding_window - 1: Mistral's mask, as
 * transformers' versions drew it, leaves every key of such a sequence in
 * the window. Refused, naming the key: hidden_act other than relu,
 * rope_scaling, num_local_experts (TurboSparse-Mixtral's mixture of
 * experts), attention or MLP biases, a head_dim other than hidden_size /
 * num_attention_heads. */
#include "engine/import/import_hf_arch.h"

#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"

int hf_cap_to_sliding_window(const struct config *c, struct model_shape *s, uint32_t short_by)
{
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(c->json, "sliding_window");
    if (!w || cJSON_IsNull(w))
        return 0;
    uint32_t window = 0;
    if (cfg_uint(c, "sliding_window", &window, 1))
        return -1;
    if (window <= short_by)
        return err_set(c->err, c->errlen, "%s: \"sliding_window\" %u leaves no position to run", c->path, window);
    if (window - short_by < s->max_positions)
        s->max_positions = window - short_by;
    return 0;
}

static int bamboo_refusals(const struct config *c)
{
    if (cJSON_HasObjectItem(c->json, "num_local_experts"))
        return err_set(c->err, c->errlen,
                       "%s: \"num_local_experts\": a mixture of experts (TurboSparse-Mixtral) is not supported "
                       "for model_type bamboo",
                       c->path);
    const char *act = cfg_str(c->json, "hidden_act");
    if (!act || strcmp(act, "relu") != 0)
        return err_set(c->err, c->errlen,
                       "%s: \"hidden_act\": %s%s%s is not supported for bamboo (relu: BambooMLP applies it to the "
                       "gate and to up, dReLU)",
                       c->path, act ? "\"" : "", act ? act : "absent", act ? "\"" : "");
    return cfg_refuse_rope_scaling(c) || cfg_refuse_true(c, "attention_bias", 0, "Bamboo with attention biases") ||
                   cfg_refuse_true(c, "mlp_bias", 0, "Bamboo with MLP biases")
               ? -1
               : 0;
}

static int bamboo_shape(const struct config *c, struct model_shape *s)
{
    if (hf_llama_block(c, s, "bamboo", 1e-6) || hf_refuse_head_dim(c, s) || bamboo_refusals(c) ||
        hf_cap_to_sliding_window(c, s, 1))
        return -1;
    snprintf(s->ffn_activation, sizeof s->ffn_activation, "drelu");
    return 0;
}

/* The tensors are Llama's, under the same names. */
static int bamboo_layer(struct hf_ctx *c, uint32_t l)
{
    return hf_arch_llama.layer(c, l);
}

static int bamboo_head(struct hf_ctx *c)
{
    return hf_arch_llama.head(c);
}

const struct hf_arch hf_arch_bamboo = {"bamboo", 1, 2, bamboo_shape, hf_embed_tokens, bamboo_layer, bamboo_head};
