/* The quantized weight types' blocks (common/wtypes.def's WTYPE_QUANT
 * rows) and their decode, block -> f32: the reference decode that
 * dtype_to_f32 answers with, and the per-type decode entries of the CPU
 * kernels' block path (engine/compute/quant_dot.h).
 *
 * Contract:
 * - The layouts are ggml's (its common header's block_q4_0 ...), byte for byte, little-endian,
 *   read through byte offsets (no C struct: no padding to trust). Every
 *   scale stored as a half is widened exactly (f16_to_f32).
 *     q4_0 (32 in 18): d half, 16 bytes of nibbles: element j low nibble
 *          of byte j, element j + 16 its high nibble; w = d * (q - 8).
 *     q4_1 (32 in 20): d, m halves, nibbles as q4_0; w = d * q + m.
 *     q5_0 (32 in 22): d, 4 bytes qh (bit j: element j's fifth bit),
 *          nibbles as q4_0; w = d * (q - 16).
 *     q5_1 (32 in 24): d, m, qh, nibbles; w = d * q + m.
 *     q8_0 (32 in 34): d, 32 int8; w = q * d.
 *     q2_k (256 in 84): 16 scale bytes (low nibble scale, high nibble
 *          min, one per 16 elements), 64 bytes of 2-bit q, d, dmin;
 *          w = (d * sc) * q - dmin * m.
 *     q3_k (256 in 110): 32 bytes hmask (the high bit; clear means
 *          minus 4), 64 bytes of 2-bit q, 12 bytes of sixteen 6-bit
 *          scales (biased by 32), d; w = (d * (sc - 32)) * q.
 *     q4_k (256 in 144): d, dmin, 12 bytes of eight 6-bit scales and
 *          eight 6-bit mins (one each per 32 elements), 128 bytes of
 *          nibbles; w = (d * sc) * q - dmin * m.
 *     q5_k (256 in 176): as q4_k with 32 bytes qh (the fifth bits)
 *          before the nibbles.
 *     q6_k (256 in 210): 128 bytes low nibbles, 64 bytes of 2-bit highs,
 *          16 int8 scales (one per 16 elements), d; w = (d * sc) * (q - 32).
 * - Each decode computes in f32 with the operations in the order written
 *   above (the build keeps -ffp-contract=off), which is ggml's
 *   dequantize_row_* and gguf-py's numpy: bit-identical to both
 *   (tests/unit/test_quant_decode.c against gguf-py's fixtures).
 * - n_blocks whole blocks from blocks into out (n_blocks * block_elems
 *   floats); no alignment asked of either. */
#ifndef FLASHBED_ENGINE_DTYPE_QUANT_H
#define FLASHBED_ENGINE_DTYPE_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/model/dtype.h"

/* The half at p (little-endian, any alignment), widened exactly. */
static inline float quant_half_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return f16_to_f32(h);
}

/* The 6-bit scale and min j (0..7) of a q4_k/q5_k block's 12 scale
 * bytes s: ggml's get_scale_min_k4. */
static inline void quant_k4_scale_min(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* The sixteen 6-bit scales of a q3_k block's 12 scale bytes s, minus
 * their bias of 32. */
void quant_q3k_scales(const uint8_t *s, int out[16]);

/* The byte offsets of the halves (scales, mins) in a block of t into
 * off; their count (0 for the float types, which have none): a block
 * whose half is NaN or infinite decodes to no finite value. */
int quant_block_halves(enum fb_dtype t, int off[2]);

/* A block's integers, the q of the formulas above with their offsets
 * applied (q4_0's q - 8, q5_0's q - 16, q3_k's minus 4 where hmask is
 * clear, q6_k's q - 32), into q[block_elems]: the layout's one reading,
 * shared by the decode below and the integer dot products. */
void quant_ints_q4_0(const uint8_t *block, int8_t q[32]);
void quant_ints_q4_1(const uint8_t *block, int8_t q[32]);
void quant_ints_q5_0(const uint8_t *block, int8_t q[32]);
void quant_ints_q5_1(const uint8_t *block, int8_t q[32]);
void quant_ints_q2_k(const uint8_t *block, int8_t q[256]);
void quant_ints_q3_k(const uint8_t *block, int8_t q[256]);
void quant_ints_q4_k(const uint8_t *block, int8_t q[256]);
void quant_ints_q5_k(const uint8_t *block, int8_t q[256]);
void quant_ints_q6_k(const uint8_t *block, int8_t q[256]);

void quant_decode_q4_0(float *out, const void *blocks, size_t n_blocks);
void quant_decode_q4_1(float *out, const void *blocks, size_t n_blocks);
void quant_decode_q5_0(float *out, const void *blocks, size_t n_blocks);
void quant_decode_q5_1(float *out, const void *blocks, size_t n_blocks);
void quant_decode_q8_0(float *out, const void *blocks, size_t n_blocks);
void quant_decode_q2_k(float *out, const void *blocks, size_t n_blocks);
void quant_decode_q3_k(float *out, const void *blocks, size_t n_blocks);
void quant_decode_q4_k(float *out, const void *blocks, size_t n_blocks);
void quant_decode_q5_k(float *out, const void *blocks, size_t n_blocks);
void quant_decode_q6_k(float *out, const void *blocks, size_t n_blocks);

#endif
