/* The K-quants' eight-row dot products (quant_dot.h's quant_dot8_fn);
 * internal to engine/compute, reached through quant_dot8_of.
 *
 * Contract:
 * - quant_rows8_q4_k, _q5_k, _q6_k: declared only where the build
 *   targets AVX2 (QUANT_ROWS8_AVX2, quant_rows8.h) or AArch64 NEON
 *   (QUANT_NEON, quant_neon.h); the portable build has none. Each
 *   output has the bits of the type's portable one-row dot product of
 *   its row: per row the same integer block
 *   sums (exact in any order) and the same f32 steps in block order, the
 *   eight rows side by side in vector lanes. */
#ifndef FLASHBED_ENGINE_QUANT_DOT_K8_H
#define FLASHBED_ENGINE_QUANT_DOT_K8_H

#include "engine/compute/quant_dot.h"
#include "engine/compute/quant_neon.h"
#include "engine/compute/quant_rows8.h"

#if defined(QUANT_ROWS8_AVX2) || defined(QUANT_NEON)
void quant_rows8_q4_k(const void *w, size_t stride, const void *act, int n, float *out);
void quant_rows8_q5_k(const void *w, size_t stride, const void *act, int n, float *out);
void quant_rows8_q6_k(const void *w, size_t stride, const void *act, int n, float *out);
#endif

#endif
