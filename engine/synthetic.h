/* Synthetic models: real shapes (configs/models), random weights scaled so
 * activations stay finite, for benchmarks and traces at paper scale. */
#ifndef FLASHBED_ENGINE_SYNTHETIC_H
#define FLASHBED_ENGINE_SYNTHETIC_H

#include <stdint.h>

#include "common/model_shape.h"

/* Writes out_dir/model.bin (llama2.c checkpoint, f32) and out_dir/tokenizer.bin
 * (a synthetic SentencePiece vocabulary of the shape's size: specials, the
 * 256 byte tokens, then letter pieces), so other engines can run the same
 * weights. Llama-architecture shapes only. 0, or -1 with the error printed. */
int synthetic_llama2c(const struct model_shape *s, uint64_t seed, const char *out_dir);

#endif
