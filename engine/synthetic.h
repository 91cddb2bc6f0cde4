/* Synthetic models: real shapes (configs/models), random weights scaled so
 * activations stay finite, for benchmarks and traces at paper scale. */
#ifndef FLASHBED_ENGINE_SYNTHETIC_H
#define FLASHBED_ENGINE_SYNTHETIC_H

#include <stddef.h>
#include <stdint.h>

#include "common/model_shape.h"
#include "engine/dtype.h"

/* Writes out_dir/model.bin (llama2.c checkpoint, f32) and out_dir/tokenizer.bin
 * (a synthetic SentencePiece vocabulary of the shape's size: specials, the
 * 256 byte tokens, then letter pieces), so other engines can run the same
 * weights. Llama-architecture shapes only. 0, or -1 with the error printed. */
int synthetic_llama2c(const struct model_shape *s, uint64_t seed, const char *out_dir);

/* Writes a Hugging Face style folder: config.json, model.safetensors (dtype
 * f32, f16 or bf16) and a tokenizer.json of the SentencePiece kind over the
 * synthetic vocabulary. Llama and OPT shapes. relu_density in (0, 1) sets
 * OPT's up-projection biases so that about that fraction of FFN neurons
 * fires per token (negative: biases 0, about half). */
int synthetic_hf(const struct model_shape *s, enum fb_dtype t, uint64_t seed, double relu_density,
                 const char *out_dir);

/* Piece i of the synthetic vocabulary (see synthetic.c). */
void synthetic_piece(uint32_t i, char *p, size_t len);

#endif
