/* Mistral folders (transformers' modeling_mistral.py): Llama's layout and
 * keys with a sliding window, attention over the last sliding_window
 * positions (null: all of them). */
#include "engine/import/import_hf_arch.h"

#include "common/errbuf.h"

static int mistral_shape(const struct config *c, struct model_shape *s)
{
    /* MistralConfig's default: 8 key/value heads when the key is absent */
    if (!cJSON_HasObjectItem(c->json, "num_key_value_heads"))
        s->n_kv_heads = 8;
    if (hf_llama_config(c, s, "mistral") ||
        cfg_refuse_true(c, "attention_bias", 0, "attention biases: Mistral has none") ||
        cfg_uint(c, "sliding_window", &s->sliding_window, 0))
        return -1;
    return 0;
}

const struct hf_arch hf_arch_mistral = {"mistral", 1, 2, mistral_shape, hf_embed_tokens, hf_llama_layer,
                                        hf_llama_head};
