/* The integer dot products of the quantized weight types, as llama.cpp
 * computes a matrix-vector product on blocks as stored: the activation
 * vector is quantized once to 8-bit blocks (its "vec_dot type"), and each
 * row's dot product sums integer products per block, times the blocks'
 * scales.
 *
 * Contract:
 * - Activation blocks (ggml's layouts and rules, quantize_row_*_ref):
 *     q8_0 (32 in 34): d = amax / 127 stored as a half, q = roundf(x / d)
 *          (x * (1 / d), halves away from zero): the q4_0, q5_0 and q8_0
 *          weights' partner;
 *     q8_1 (32 in 36): q8_0's d and q, and s = half(d * sum q): the q4_1
 *          and q5_1 weights' partner (their mins times s);
 *     q8_k (256 in 292): d an f32, q = nearest-even(x * -127 / max) with
 *          max the element of largest magnitude (so it becomes -127), d =
 *          1 / that scale, and sixteen sums of 16 q each: the K-quants'.
 *   A block of zeros has d = 0 and q = 0. A block holding a NaN or an
 *   infinity has d = NaN (q unspecified), so the dot products with it are
 *   NaN, as the float types' would be non-finite.
 * - A dot product (quant_dot_fn) of n elements (a whole number of the
 *   weight type's blocks; n / 32 or n / 256 activation blocks) is, per
 *   block, an exact integer sum of weight and activation integers,
 *   times the product of the two blocks' scales (minus the mins' term
 *   for the types with mins), summed over the blocks in order in f32:
 *   ggml's ggml_vec_dot_<type>_<act>_generic, except that the K-quants'
 *   block sums are one integer each where ggml's portable code keeps
 *   eight lanes of partial floats (the same terms, summed in another
 *   order). Against decode(w) . decode(a) in double the error is the
 *   f32 rounding of those terms (tests/unit/test_quant_dot.c states it).
 * - Pure functions, any alignment of w; the activation buffer as
 *   quant_act_from_f32 wrote it (4-byte aligned for q8_k). */
#ifndef FLASHBED_ENGINE_QUANT_DOT_H
#define FLASHBED_ENGINE_QUANT_DOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/wtype.h"

enum quant_act {
    QUANT_ACT_Q8_0,
    QUANT_ACT_Q8_1,
    QUANT_ACT_Q8_K,
};

struct q8_0_block {
    uint16_t d; /* a half */
    int8_t q[32];
};

struct q8_1_block {
    uint16_t d, s; /* halves: the scale, and d * sum q */
    int8_t q[32];
};

struct q8_k_block {
    float d;
    int8_t q[256];
    int16_t bsums[16]; /* sums of q[16 j .. 16 j + 16) */
};

_Static_assert(sizeof(struct q8_0_block) == 34 && sizeof(struct q8_1_block) == 36 &&
                   sizeof(struct q8_k_block) == 292,
               "activation blocks are ggml's sizes");

typedef float (*quant_dot_fn)(const void *w, const void *act, int n);

/* A quantized weight type's dot product and activation type into *dot
 * and *act; 0, or -1 for a float type (which has neither). */
int quant_dot_of(enum fb_dtype t, quant_dot_fn *dot, enum quant_act *act);

/* The same, always the portable form (plain C): what the build without
 * vector units runs; where the build has a vector form (AVX2: every
 * type but q2_k and q3_k; AArch64 NEON: every type), a test compares the
 * two, which give the same bits. */
int quant_dot_portable(enum fb_dtype t, quant_dot_fn *dot, enum quant_act *act);

/* The form quant_dot_of and quant_dot8_of give, as compiled: "avx2",
 * "avx2+vnni" (the AVX-512 VNNI dot product in the AVX2 form), "neon"
 * (armv8-a: widening multiplies), "neon+dotprod" (the dot-product
 * instructions) or "portable". The tests print it, and tools/check-arm.sh
 * checks it names the form each of its builds targets. */
const char *quant_dot_form(void);

/* Eight rows' dot products at once: out[k] = the dot product of the row
 * at w + k * row_bytes against act, the same bits as the type's
 * quant_dot_fn gives that row (each row's f32 steps the same, in block
 * order; the rows are summed side by side in vector lanes; a NaN's sign
 * and payload aside, where a scale is not finite); row_bytes
 * under 2^28. */
typedef void (*quant_dot8_fn)(const void *w, size_t row_bytes, const void *act, int n, float *out);

/* A block type's eight-row form, or NULL where the build has none (the
 * portable build, q2_k, q3_k, the float types): then one row at a time.
 * The AVX2 and the AArch64 NEON builds have it for q4_0, q4_1, q5_0,
 * q5_1, q8_0 (quant_dot.c), q4_k, q5_k and q6_k (quant_dot_k8.c). */
quant_dot8_fn quant_dot8_of(enum fb_dtype t);

/* The bytes n activations take as a (n a multiple of its block). */
size_t quant_act_bytes(enum quant_act a, size_t n);

/* x[n] quantized to a into y (quant_act_bytes(a, n) bytes). */
void quant_act_from_f32(void *y, enum quant_act a, const float *x, size_t n);

/* The three quantizers behind it, and q8_k's decode (d * q: the test's
 * reference operand; q8_0's is dtype_quant.h's, and q8_1 decodes as
 * q8_0 does). */
void quant_q8_0(struct q8_0_block *y, const float *x, size_t n);
void quant_q8_1(struct q8_1_block *y, const float *x, size_t n);
void quant_q8_k(struct q8_k_block *y, const float *x, size_t n);
void quant_decode_q8_k(float *out, const struct q8_k_block *y, size_t n_blocks);

#endif
