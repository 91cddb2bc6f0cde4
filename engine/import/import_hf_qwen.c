/* Qwen2 / Qwen2.5 and Qwen3 folders (transformers' modeling_qwen2.py and
 * modeling_qwen3.py): Llama's layout and keys; Qwen2 adds q, k and v
 * biases (no o or MLP biases), Qwen3 an RMSNorm over each head's q and k
 * before RoPE (q_norm, k_norm: [head_dim]) and states its head_dim. */
#include "engine/import/import_hf_arch.h"

#include <string.h>

#include "common/errbuf.h"

/* use_sliding_window: transformers' Qwen attention applies the window to
 * the layers from max_window_layers on with flash attention, to every
 * layer with eager attention (4.46's Qwen2): no single function to
 * follow, so it is refused; false means no window whatever sliding_window
 * and max_window_layers say. Newer configs state layer_types: all must be
 * "full_attention". */
static int qwen_window(const struct config *c)
{
    if (cfg_refuse_true(c, "use_sliding_window", 0,
                        "Qwen's sliding window differs between transformers' attention kernels"))
        return -1;
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(c->json, "layer_types"), *t;
    cJSON_ArrayForEach(t, types) {
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "full_attention") != 0)
            return err_set(c->err, c->errlen, "%s: \"layer_types\": \"%s\" is not supported (full_attention)", c->path,
                           cJSON_IsString(t) ? t->valuestring : "(not a string)");
    }
    return 0;
}

static int qwen2_shape(const struct config *c, struct model_shape *s)
{
    if (hf_llama_config(c, s, "qwen2") || qwen_window(c) ||
        cfg_refuse_true(c, "use_mrope", 0, "Qwen2-VL's multimodal RoPE"))
        return -1;
    s->qkv_bias = true;
    return 0;
}

static int qwen3_shape(const struct config *c, struct model_shape *s)
{
    if (hf_llama_config(c, s, "qwen3") || qwen_window(c) ||
        cfg_refuse_true(c, "attention_bias", 0, "Qwen3 with attention biases: q, k, v and o"))
        return -1;
    s->qk_norm = true;
    return 0;
}

const struct hf_arch hf_arch_qwen2 = {"qwen2", 151643, 151643, qwen2_shape, hf_embed_tokens, hf_llama_layer,
                                      hf_llama_head};
const struct hf_arch hf_arch_qwen3 = {"qwen3", 151643, 151645, qwen3_shape, hf_embed_tokens, hf_llama_layer,
                                      hf_llama_head};
