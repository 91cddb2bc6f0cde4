/* Activation names: Hugging Face's (transformers' ACT2FN keys, as
 * config.json spells them) against flashbed's (common/model_shape.h). One
 * table for the importer and the synthetic writer, so that what one
 * writes the other reads back. */
#ifndef FLASHBED_ENGINE_HF_ACT_H
#define FLASHBED_ENGINE_HF_ACT_H

/* flashbed's name for HF activation hf, or NULL when none matches:
 * relu, relu2 (squared_relu), gelu (exact, erf), gelu_new and
 * gelu_pytorch_tanh (gelu_tanh), silu (swiglu: the engine computes it on
 * a GLU's gate), fatrelu (flashbed's own: transformers has none). */
const char *hf_act_to_flashbed(const char *hf);

/* The HF name config.json gets for flashbed activation fb, or NULL. */
const char *hf_act_from_flashbed(const char *fb);

/* The HF names hf_act_to_flashbed knows, for messages ("relu, relu2, ..."). */
const char *hf_act_known(void);

#endif
