/* Synthetic models: real shapes (configs/models), random weights scaled so
 * activations stay finite, for benchmarks and traces at paper scale. */
#ifndef FLASHBED_ENGINE_SYNTHETIC_H
#define FLASHBED_ENGINE_SYNTHETIC_H

#include <stddef.h>
#include <stdint.h>

#include "common/model_shape.h"
#include "common/progress.h"
#include "engine/import/spectrum.h"
#include "engine/model/dtype.h"

/* Writes out_dir/model.bin (llama2.c checkpoint, f32) and out_dir/tokenizer.bin
 * (a synthetic SentencePiece vocabulary of the shape's size: specials, the
 * 256 byte tokens, then letter pieces), so other engines can run the same
 * weights. Llama-architecture shapes only. 0, or -1 with the reason in err
 * and nothing left behind. */
int synthetic_llama2c(const struct model_shape *s, uint64_t seed, const char *out_dir,
                      const struct progress_report *progress, char *err, size_t errlen);

/* Writes a Hugging Face style folder: config.json, model.safetensors (dtype
 * f32, f16 or bf16) and a tokenizer.json of the SentencePiece kind over the
 * synthetic vocabulary. Llama and OPT shapes. relu_density in (0, 1) sets
 * OPT's up-projection biases so that about that fraction of FFN neurons
 * fires per token (negative: biases 0, about half). up_spectrum (NULL:
 * flat) shapes the singular values of every layer's up projection and,
 * for GLU shapes, of its gate (engine/import/spectrum.h); flat is the iid uniform
 * fill, every other spectrum keeps its Frobenius norm, takes the seed's
 * same random stream (the other tensors equal the flat model's) and is
 * recorded in config.json as "flashbed_up_spectrum"; with a density each
 * neuron's bias is scaled by its own row norm. 0, or -1 with the reason in
 * err and nothing left behind. Both report their progress to progress (may
 * be NULL). */
int synthetic_hf(const struct model_shape *s, enum fb_dtype t, uint64_t seed, double relu_density,
                 const struct spectrum *up_spectrum, const char *out_dir, const struct progress_report *progress,
                 char *err, size_t errlen);

/* Whether synthetic_hf takes relu_density for shape s (negative: none
 * asked, always fine): 0, or -1 with the reason in err. Callers that check
 * first can say which of their options is at fault. */
int synthetic_relu_density_check(const struct model_shape *s, double relu_density, char *err, size_t errlen);

/* Piece i of the synthetic vocabulary (see synthetic.c). */
void synthetic_piece(uint32_t i, char *p, size_t len);

#endif
