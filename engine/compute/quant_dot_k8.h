/* The K-quants' eight-row dot products (quant_dot.h's quant_dot8_fn);
 * internal to engine/compute, reached through quant_dot8_of.
 *
 * Contract:
 * - quant_dot8_k(t): q4_k's, q5_k's or q6_k's eight-row form where the
 *   build targets AVX2 (quant_rows8.h), else NULL (the portable build,
 *   every other type). Each output has the bits of the type's portable
 *   one-row dot product of its row: per row the same integer block
 *   sums (exact in any order) and the same f32 steps in block order, the
 *   eight rows side by side in vector lanes. */
#ifndef FLASHBED_ENGINE_QUANT_DOT_K8_H
#define FLASHBED_ENGINE_QUANT_DOT_K8_H

#include "engine/compute/quant_dot.h"

quant_dot8_fn quant_dot8_k(enum fb_dtype t);

#endif
