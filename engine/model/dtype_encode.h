/* Encoders of the 32-element block types from f32: a row of floats
 * quantized to q4_0, q4_1, q5_0, q5_1 or q8_0 (the layouts of
 * dtype_quant.h). What the quantized flash units need: a GGUF model's FFN
 * down rows re-quantized along d_model once stored transposed, as
 * PowerInfer's ffn_down_t is (issue 48).
 *
 * Contract:
 * - ggml's reference quantizers (quantize_row_q4_0_ref ...), which
 *   gguf-py's numpy quantize mirrors: per block the scale from the
 *   largest magnitude (q4_0, q5_0: the signed value of the first largest,
 *   d = max / -8 or / -16; q8_0: d = amax / 127) or from the range (q4_1,
 *   q5_1: d = (max - min) / 15 or / 31, m = min); id = 1 / d (0 when d
 *   is 0); q4/q5: q = trunc(x * id + offset) clamped to the type's
 *   range; q8_0: q = roundf(x * id); d and m stored as halves (round to
 *   nearest even). f32 arithmetic in that order, no contraction (C11
 *   mode): bit-identical to gguf-py's (test_quant_decode against
 *   tests/data/quant/quant_ref.txt).
 * - n a multiple of 32; dst holds wtype_row_bytes(t, n) bytes; src is
 *   read only.
 * - Returns 0; QUANT_ENCODE_NO_ENCODER for any other type (the float
 *   types are dtype_from_f32's; the K-quants' quantizers search for their
 *   scales and are not written here) and QUANT_ENCODE_NOT_FINITE for a
 *   NaN or infinite element (a scale from it would poison its block),
 *   dst untouched in both cases. */
#ifndef FLASHBED_ENGINE_DTYPE_ENCODE_H
#define FLASHBED_ENGINE_DTYPE_ENCODE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/wtype.h"

enum { QUANT_ENCODE_NO_ENCODER = -1, QUANT_ENCODE_NOT_FINITE = -2 };

int quant_encode(void *dst, enum fb_dtype t, const float *src, size_t n);

/* Whether quant_encode writes type t. */
bool quant_encode_supports(enum fb_dtype t);

#endif
