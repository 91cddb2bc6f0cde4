/* The integer dot products (quant_dot.h; the activation quantizers are
 * quant_act.c): per block an exact integer sum, then ggml's scale arithmetic in f32.
 * The weights' integers come from the layouts' one reading
 * (engine/model/dtype_quant.h). The block sums of every type but q2_k
 * and q3_k have an AVX2 form, and every type's an AArch64 NEON form
 * (quant_neon.h), each built where the compiler targets it, chosen at compile time as
 * the CPU kernels' are; an integer sum is exact either way and the f32 steps
 * after it are shared, so both forms give the same bits (the portable
 * ones stay built beside them: quant_dot_portable, for the test). */
#include "engine/compute/quant_dot.h"

#include <string.h>

#include "engine/compute/quant_dot_k8.h"
#include "engine/compute/quant_neon.h"
#include "engine/compute/quant_rows8.h"
#include "engine/model/dtype_quant.h"

#ifdef QUANT_ROWS8_AVX2
#define HAVE_AVX2 1
#define HAVE_ROWS8 1
#elif defined(QUANT_NEON)
#define HAVE_NEON 1
#define HAVE_ROWS8 1
#endif

/* ---- the dot products ---- */

static int isum(const int8_t *w, const int8_t *a, int n)
{
    int s = 0;
    for (int j = 0; j < n; j++)
        s += w[j] * a[j];
    return s;
}

/* ---- the 32-element blocks' integer sums ---- */

typedef int (*block_isum_fn)(const uint8_t *block, const int8_t *a);

static int isum_q4_0(const uint8_t *b, const int8_t *a)
{
    int8_t q[32];
    quant_ints_q4_0(b, q);
    return isum(q, a, 32);
}

static int isum_q4_1(const uint8_t *b, const int8_t *a)
{
    int8_t q[32];
    quant_ints_q4_1(b, q);
    return isum(q, a, 32);
}

static int isum_q5_0(const uint8_t *b, const int8_t *a)
{
    int8_t q[32];
    quant_ints_q5_0(b, q);
    return isum(q, a, 32);
}

static int isum_q5_1(const uint8_t *b, const int8_t *a)
{
    int8_t q[32];
    quant_ints_q5_1(b, q);
    return isum(q, a, 32);
}

static int isum_q8_0(const uint8_t *b, const int8_t *a) { return isum((const int8_t *)(b + 2), a, 32); }

#ifdef HAVE_AVX2
static inline int hsum_i32x8(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* w * a over 32 bytes as eight int32 partial sums, w unsigned (at most
 * 31: no pair of products reaches maddubs's int16 saturation), a signed;
 * with VNNI one instruction (sums of four products, exact in int32: the
 * same lanes' totals) */
static inline __m256i part_uv(__m256i w, __m256i a)
{
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, a);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1));
#endif
}

static inline __m256i part_u32(__m256i w, const int8_t *a)
{
    return part_uv(w, _mm256_loadu_si256((const __m256i *)a));
}

/* the same for w signed: |w| times a with w's sign (|a| <= 127, as the
 * quantizers write it, so a pair stays within int16) */
static inline __m256i part_s32(__m256i w, const int8_t *a)
{
    __m256i av = _mm256_loadu_si256((const __m256i *)a);
    return part_uv(_mm256_sign_epi8(w, w), _mm256_sign_epi8(av, w));
}

/* 16 bytes of nibbles: elements 0..15 the low ones, 16..31 the high */
static inline __m256i nibbles32(const uint8_t *p)
{
    __m128i b = _mm_loadu_si128((const __m128i *)p), m = _mm_set1_epi8(0xF);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

/* 0x10 in byte j where bit j of the 32 at qh is set: the fifth bits */
static inline __m256i fifth_bits(const uint8_t *qh)
{
    uint32_t h;
    memcpy(&h, qh, 4);
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                                            3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), spread);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
}

/* Each type's block as partial sums against the activation block a. */
typedef __m256i (*block_part_fn)(const uint8_t *block, const int8_t *a);

static inline __m256i part_q4_0(const uint8_t *b, const int8_t *a)
{
    return part_s32(_mm256_sub_epi8(nibbles32(b + 2), _mm256_set1_epi8(8)), a);
}

static inline __m256i part_q4_1(const uint8_t *b, const int8_t *a) { return part_u32(nibbles32(b + 4), a); }

static inline __m256i part_q5_0(const uint8_t *b, const int8_t *a)
{
    __m256i q = _mm256_or_si256(nibbles32(b + 6), fifth_bits(b + 2));
    return part_s32(_mm256_sub_epi8(q, _mm256_set1_epi8(16)), a);
}

static inline __m256i part_q5_1(const uint8_t *b, const int8_t *a)
{
    return part_u32(_mm256_or_si256(nibbles32(b + 8), fifth_bits(b + 4)), a);
}

static inline __m256i part_q8_0(const uint8_t *b, const int8_t *a)
{
    return part_s32(_mm256_loadu_si256((const __m256i *)(b + 2)), a);
}

/* Eight consecutive blocks' integer sums, lane k block k: the partial
 * sums reduced together (three rounds of pairwise adds) instead of one
 * horizontal sum per block. Integer: exact in any order. */
static inline __attribute__((always_inline)) __m256i isums8(const uint8_t *b, size_t bytes, const uint8_t *a,
                                                            size_t a_stride, block_part_fn part)
{
    __m256i v[8];
    for (int k = 0; k < 8; k++)
        v[k] = part(b + k * bytes, (const int8_t *)(a + k * a_stride));
    return lane_sums8(v);
}

/* Eight halves at p, stride bytes apart, widened (exactly, as f16_to_f32) */
static inline __m256 halves8(const uint8_t *p, size_t stride)
{
    uint16_t h[8];
    for (int k = 0; k < 8; k++)
        memcpy(&h[k], p + k * stride, 2);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}

/* dot_scaled and dot_min_32 (below) eight blocks at a time: each block's
 * term computed with the same f32 operations in the same order, then
 * added to the sum in block order, so the bits are the portable form's. */
static inline __attribute__((always_inline)) float dot_scaled8(const uint8_t *b, const struct q8_0_block *a, int n,
                                                               size_t bytes, block_part_fn part, bool q4_0_order)
{
    float sum = 0.0f, terms[8];
    int i = 0;
    for (; i + 8 <= n / 32; i += 8, b += 8 * bytes) {
        __m256 s = _mm256_cvtepi32_ps(isums8(b, bytes, (const uint8_t *)a[i].q, sizeof *a, part));
        __m256 dw = halves8(b, bytes), da = halves8((const uint8_t *)&a[i].d, sizeof *a);
        _mm256_storeu_ps(terms, q4_0_order ? _mm256_mul_ps(_mm256_mul_ps(s, dw), da)
                                           : _mm256_mul_ps(_mm256_mul_ps(dw, da), s));
        for (int k = 0; k < 8; k++)
            sum += terms[k];
    }
    for (; i < n / 32; i++, b += bytes) {
        float s = (float)hsum_i32x8(part(b, a[i].q)), dw = quant_half_at(b), da = f16_to_f32(a[i].d);
        sum += q4_0_order ? s * dw * da : (dw * da) * s;
    }
    return sum;
}

static inline __attribute__((always_inline)) float dot_min8(const uint8_t *b, const struct q8_1_block *a, int n,
                                                            size_t bytes, block_part_fn part)
{
    float sum = 0.0f, terms[8];
    int i = 0;
    for (; i + 8 <= n / 32; i += 8, b += 8 * bytes) {
        __m256 s = _mm256_cvtepi32_ps(isums8(b, bytes, (const uint8_t *)a[i].q, sizeof *a, part));
        __m256 dd = _mm256_mul_ps(halves8(b, bytes), halves8((const uint8_t *)&a[i].d, sizeof *a));
        __m256 ms = _mm256_mul_ps(halves8(b + 2, bytes), halves8((const uint8_t *)&a[i].s, sizeof *a));
        _mm256_storeu_ps(terms, _mm256_add_ps(_mm256_mul_ps(dd, s), ms));
        for (int k = 0; k < 8; k++)
            sum += terms[k];
    }
    for (; i < n / 32; i++, b += bytes)
        sum += (quant_half_at(b) * f16_to_f32(a[i].d)) * (float)hsum_i32x8(part(b, a[i].q)) +
               quant_half_at(b + 2) * f16_to_f32(a[i].s);
    return sum;
}

/* Eight rows at once (row k at b + k * stride), one block column at a
 * time: isums8 with the activation block shared gives lane k row k's
 * integer sum, and lane k's f32 steps are the portable form's for row k,
 * in block order; the eight rows' sums are independent chains (one
 * row's sum is a chain of dependent adds, the single-row form's limit).
 * The rows after the next eight are prefetched (quant_rows8.h). */
static inline __attribute__((always_inline)) void dot_scaled_rows8(const uint8_t *b, size_t stride,
                                                                   const struct q8_0_block *a, int n, size_t bytes,
                                                                   block_part_fn part, bool q4_0_order, float *out)
{
    __m256 sum = _mm256_setzero_ps();
    const uint8_t *b0 = b;
    for (int i = 0; i < n / 32; i++, b += bytes) {
        prefetch_next8(b0, stride, bytes, i);
        __m256 s = _mm256_cvtepi32_ps(isums8(b, stride, (const uint8_t *)a[i].q, 0, part));
        __m256 dw, unused, da = _mm256_set1_ps(_cvtsh_ss(a[i].d));
        halves_of_words(words8(b, stride), &dw, &unused);
        sum = _mm256_add_ps(sum, q4_0_order ? _mm256_mul_ps(_mm256_mul_ps(s, dw), da)
                                            : _mm256_mul_ps(_mm256_mul_ps(dw, da), s));
    }
    _mm256_storeu_ps(out, sum);
}

static inline __attribute__((always_inline)) void dot_min_rows8(const uint8_t *b, size_t stride,
                                                                const struct q8_1_block *a, int n, size_t bytes,
                                                                block_part_fn part, float *out)
{
    __m256 sum = _mm256_setzero_ps();
    const uint8_t *b0 = b;
    for (int i = 0; i < n / 32; i++, b += bytes) {
        prefetch_next8(b0, stride, bytes, i);
        __m256 s = _mm256_cvtepi32_ps(isums8(b, stride, (const uint8_t *)a[i].q, 0, part));
        __m256 dw, mw;
        halves_of_words(words8(b, stride), &dw, &mw);
        __m256 dd = _mm256_mul_ps(dw, _mm256_set1_ps(_cvtsh_ss(a[i].d)));
        __m256 ms = _mm256_mul_ps(mw, _mm256_set1_ps(_cvtsh_ss(a[i].s)));
        sum = _mm256_add_ps(sum, _mm256_add_ps(_mm256_mul_ps(dd, s), ms));
    }
    _mm256_storeu_ps(out, sum);
}
#endif

#ifdef HAVE_NEON
/* 16 bytes of nibbles: *lo elements 0..15 (the low nibbles), *hi 16..31 */
static inline void nibbles32(const uint8_t *p, uint8x16_t *lo, uint8x16_t *hi)
{
    uint8x16_t b = vld1q_u8(p);
    *lo = vandq_u8(b, vdupq_n_u8(0xF));
    *hi = vshrq_n_u8(b, 4);
}

/* 0x10 or'ed into element j of *lo (0..15), *hi (16..31) where bit j of
 * the 32 at qh is set: each of qh's bytes spread over its eight elements,
 * then tested against bits 1, 2, 4, ... 128 */
static inline void or_fifth_bits(const uint8_t *qh, uint8x16_t *lo, uint8x16_t *hi)
{
    const uint8x16_t bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull)), five = vdupq_n_u8(0x10);
    uint8x16_t s_lo = vcombine_u8(vdup_n_u8(qh[0]), vdup_n_u8(qh[1]));
    uint8x16_t s_hi = vcombine_u8(vdup_n_u8(qh[2]), vdup_n_u8(qh[3]));
    *lo = vorrq_u8(*lo, vandq_u8(vtstq_u8(s_lo, bit), five));
    *hi = vorrq_u8(*hi, vandq_u8(vtstq_u8(s_hi, bit), five));
}

/* Each type's block as int32 lanes summing to its integer sum against
 * the activation block a (quant_neon.h's dot32). */
typedef int32x4_t (*block_part_fn)(const uint8_t *block, const int8_t *a);

static inline int32x4_t offset_part(uint8x16_t lo, uint8x16_t hi, int offset, const int8_t *a)
{
    int8x16_t o = vdupq_n_s8((int8_t)offset);
    return dot32(vsubq_s8(as_s8(lo), o), vsubq_s8(as_s8(hi), o), a);
}

static inline int32x4_t part_q4_0(const uint8_t *b, const int8_t *a)
{
    uint8x16_t lo, hi;
    nibbles32(b + 2, &lo, &hi);
    return offset_part(lo, hi, 8, a);
}

static inline int32x4_t part_q4_1(const uint8_t *b, const int8_t *a)
{
    uint8x16_t lo, hi;
    nibbles32(b + 4, &lo, &hi);
    return dot32(as_s8(lo), as_s8(hi), a);
}

static inline int32x4_t part_q5_0(const uint8_t *b, const int8_t *a)
{
    uint8x16_t lo, hi;
    nibbles32(b + 6, &lo, &hi);
    or_fifth_bits(b + 2, &lo, &hi);
    return offset_part(lo, hi, 16, a);
}

static inline int32x4_t part_q5_1(const uint8_t *b, const int8_t *a)
{
    uint8x16_t lo, hi;
    nibbles32(b + 8, &lo, &hi);
    or_fifth_bits(b + 4, &lo, &hi);
    return dot32(as_s8(lo), as_s8(hi), a);
}

static inline int32x4_t part_q8_0(const uint8_t *b, const int8_t *a)
{
    return dot32(vld1q_s8((const int8_t *)(b + 2)), vld1q_s8((const int8_t *)(b + 18)), a);
}

/* the one-row block sums (dot_scaled's and dot_min_32's block_isum_fn) */
static int nsum_q4_0(const uint8_t *b, const int8_t *a) { return vaddvq_s32(part_q4_0(b, a)); }
static int nsum_q4_1(const uint8_t *b, const int8_t *a) { return vaddvq_s32(part_q4_1(b, a)); }
static int nsum_q5_0(const uint8_t *b, const int8_t *a) { return vaddvq_s32(part_q5_0(b, a)); }
static int nsum_q5_1(const uint8_t *b, const int8_t *a) { return vaddvq_s32(part_q5_1(b, a)); }
static int nsum_q8_0(const uint8_t *b, const int8_t *a) { return vaddvq_s32(part_q8_0(b, a)); }

/* Rows r0 .. r0 + 3 (r0 + k at b + k * stride) against one activation
 * block: lane k row r0 + k's integer sum, as f32 (rounded as (float)
 * rounds the int) */
static inline __attribute__((always_inline)) float32x4_t isums4(const uint8_t *b, size_t stride, const int8_t *a,
                                                                block_part_fn part)
{
    int32x4_t v[4];
    for (int k = 0; k < 4; k++)
        v[k] = part(b + k * stride, a);
    return vcvtq_f32_s32(lane_sums4(v));
}

/* Eight rows at once (row k at b + k * stride), one block column at a
 * time, as two vectors of four rows: lane k's f32 steps are the portable
 * form's for its row, in block order (the AVX2 form's plan, quant_rows8.h's
 * prefetch of the rows after the next eight too). */
static inline __attribute__((always_inline)) void dot_scaled_rows8(const uint8_t *b, size_t stride,
                                                                   const struct q8_0_block *a, int n, size_t bytes,
                                                                   block_part_fn part, bool q4_0_order, float *out)
{
    float32x4_t sum[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    const uint8_t *b0 = b;
    for (int i = 0; i < n / 32; i++, b += bytes) {
        prefetch_next8(b0, stride, bytes, i);
        float32x4_t da = vdupq_n_f32(f16_to_f32(a[i].d));
        for (int h = 0; h < 2; h++) {
            const uint8_t *r = b + 4 * h * stride;
            float32x4_t s = isums4(r, stride, a[i].q, part), dw = halves4(r, stride);
            sum[h] = vaddq_f32(sum[h], q4_0_order ? vmulq_f32(vmulq_f32(s, dw), da) : vmulq_f32(vmulq_f32(dw, da), s));
        }
    }
    vst1q_f32(out, sum[0]);
    vst1q_f32(out + 4, sum[1]);
}

static inline __attribute__((always_inline)) void dot_min_rows8(const uint8_t *b, size_t stride,
                                                                const struct q8_1_block *a, int n, size_t bytes,
                                                                block_part_fn part, float *out)
{
    float32x4_t sum[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    const uint8_t *b0 = b;
    for (int i = 0; i < n / 32; i++, b += bytes) {
        prefetch_next8(b0, stride, bytes, i);
        float32x4_t da = vdupq_n_f32(f16_to_f32(a[i].d)), sa = vdupq_n_f32(f16_to_f32(a[i].s));
        for (int h = 0; h < 2; h++) {
            const uint8_t *r = b + 4 * h * stride;
            float32x4_t s = isums4(r, stride, a[i].q, part);
            float32x4_t dd = vmulq_f32(halves4(r, stride), da), ms = vmulq_f32(halves4(r + 2, stride), sa);
            sum[h] = vaddq_f32(sum[h], vaddq_f32(vmulq_f32(dd, s), ms));
        }
    }
    vst1q_f32(out, sum[0]);
    vst1q_f32(out + 4, sum[1]);
}
#endif

/* ---- the 32-element types' dot products ---- */

/* q4_0, q5_0, q8_0: sum of d_w d_a isum, in ggml's order of the
 * products (q4_0: (isum d_w) d_a; the others isum (d_w d_a)) */
static inline __attribute__((always_inline)) float dot_scaled(const uint8_t *b, const struct q8_0_block *a, int n,
                                                              size_t bytes, block_isum_fn isum_of, bool q4_0_order)
{
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++, b += bytes) {
        float s = (float)isum_of(b, a[i].q), dw = quant_half_at(b), da = f16_to_f32(a[i].d);
        sum += q4_0_order ? s * dw * da : (dw * da) * s;
    }
    return sum;
}

/* q4_1 and q5_1: d_w d_a isum + m_w s_a */
static inline __attribute__((always_inline)) float dot_min_32(const uint8_t *b, const struct q8_1_block *a, int n,
                                                              size_t bytes, block_isum_fn isum_of)
{
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++, b += bytes)
        sum += (quant_half_at(b) * f16_to_f32(a[i].d)) * (float)isum_of(b, a[i].q) +
               quant_half_at(b + 2) * f16_to_f32(a[i].s);
    return sum;
}

static float dot_q4_0_portable(const void *w, const void *a, int n) { return dot_scaled(w, a, n, 18, isum_q4_0, true); }
static float dot_q5_0_portable(const void *w, const void *a, int n) { return dot_scaled(w, a, n, 22, isum_q5_0, false); }
static float dot_q8_0_portable(const void *w, const void *a, int n) { return dot_scaled(w, a, n, 34, isum_q8_0, false); }
static float dot_q4_1_portable(const void *w, const void *a, int n) { return dot_min_32(w, a, n, 20, isum_q4_1); }
static float dot_q5_1_portable(const void *w, const void *a, int n) { return dot_min_32(w, a, n, 24, isum_q5_1); }

#ifdef HAVE_AVX2
static float dot_q4_0(const void *w, const void *a, int n) { return dot_scaled8(w, a, n, 18, part_q4_0, true); }
static float dot_q5_0(const void *w, const void *a, int n) { return dot_scaled8(w, a, n, 22, part_q5_0, false); }
static float dot_q8_0(const void *w, const void *a, int n) { return dot_scaled8(w, a, n, 34, part_q8_0, false); }
static float dot_q4_1(const void *w, const void *a, int n) { return dot_min8(w, a, n, 20, part_q4_1); }
static float dot_q5_1(const void *w, const void *a, int n) { return dot_min8(w, a, n, 24, part_q5_1); }
#elif defined(HAVE_NEON)
static float dot_q4_0(const void *w, const void *a, int n) { return dot_scaled(w, a, n, 18, nsum_q4_0, true); }
static float dot_q5_0(const void *w, const void *a, int n) { return dot_scaled(w, a, n, 22, nsum_q5_0, false); }
static float dot_q8_0(const void *w, const void *a, int n) { return dot_scaled(w, a, n, 34, nsum_q8_0, false); }
static float dot_q4_1(const void *w, const void *a, int n) { return dot_min_32(w, a, n, 20, nsum_q4_1); }
static float dot_q5_1(const void *w, const void *a, int n) { return dot_min_32(w, a, n, 24, nsum_q5_1); }
#endif

#ifdef HAVE_ROWS8
/* the eight-row forms (AVX2 or NEON: the same plan, each its own parts) */
static void rows8_q4_0(const void *w, size_t stride, const void *a, int n, float *out)
{
    dot_scaled_rows8(w, stride, a, n, 18, part_q4_0, true, out);
}
static void rows8_q5_0(const void *w, size_t stride, const void *a, int n, float *out)
{
    dot_scaled_rows8(w, stride, a, n, 22, part_q5_0, false, out);
}
static void rows8_q8_0(const void *w, size_t stride, const void *a, int n, float *out)
{
    dot_scaled_rows8(w, stride, a, n, 34, part_q8_0, false, out);
}
static void rows8_q4_1(const void *w, size_t stride, const void *a, int n, float *out)
{
    dot_min_rows8(w, stride, a, n, 20, part_q4_1, out);
}
static void rows8_q5_1(const void *w, size_t stride, const void *a, int n, float *out)
{
    dot_min_rows8(w, stride, a, n, 24, part_q5_1, out);
}
#endif

#if !defined(HAVE_AVX2) && !defined(HAVE_NEON)
#define dot_q4_0 dot_q4_0_portable
#define dot_q5_0 dot_q5_0_portable
#define dot_q8_0 dot_q8_0_portable
#define dot_q4_1 dot_q4_1_portable
#define dot_q5_1 dot_q5_1_portable
#endif

/* ---- the K-quants ---- */

static float dot_q2_k_portable(const void *w, const void *act, int n)
{
    const uint8_t *b = w;
    const struct q8_k_block *a = act;
    int8_t q[256];
    float sum = 0.0f;
    for (int i = 0; i < n / 256; i++, b += 84) {
        quant_ints_q2_k(b, q);
        int s = 0, mins = 0;
        for (int j = 0; j < 16; j++) {
            s += (b[j] & 0xF) * isum(q + 16 * j, a[i].q + 16 * j, 16);
            mins += a[i].bsums[j] * (b[j] >> 4);
        }
        sum += a[i].d * quant_half_at(b + 80) * (float)s - a[i].d * quant_half_at(b + 82) * (float)mins;
    }
    return sum;
}

static float dot_q3_k_portable(const void *w, const void *act, int n)
{
    const uint8_t *b = w;
    const struct q8_k_block *a = act;
    int8_t q[256];
    int sc[16];
    float sum = 0.0f;
    for (int i = 0; i < n / 256; i++, b += 110) {
        quant_ints_q3_k(b, q);
        quant_q3k_scales(b + 96, sc);
        int s = 0;
        for (int j = 0; j < 16; j++)
            s += sc[j] * isum(q + 16 * j, a[i].q + 16 * j, 16);
        sum += quant_half_at(b + 108) * a[i].d * (float)s;
    }
    return sum;
}

#ifdef HAVE_NEON
/* q2_k and q3_k as the portable forms above, each block's integer sum
 * from quant_neon.h's k2_part (no AVX2 form: the x86 build runs those) */
static float dot_q2_k(const void *w, const void *act, int n)
{
    const uint8_t *b = w;
    const struct q8_k_block *a = act;
    float sum = 0.0f;
    for (int i = 0; i < n / 256; i++, b += 84) {
        int sc[16], mins = 0;
        for (int j = 0; j < 16; j++) {
            sc[j] = b[j] & 0xF;
            mins += a[i].bsums[j] * (b[j] >> 4);
        }
        int s = vaddvq_s32(k2_part(b + 16, NULL, sc, a[i].q));
        sum += a[i].d * quant_half_at(b + 80) * (float)s - a[i].d * quant_half_at(b + 82) * (float)mins;
    }
    return sum;
}

static float dot_q3_k(const void *w, const void *act, int n)
{
    const uint8_t *b = w;
    const struct q8_k_block *a = act;
    float sum = 0.0f;
    for (int i = 0; i < n / 256; i++, b += 110) {
        int sc[16];
        quant_q3k_scales(b + 96, sc);
        int s = vaddvq_s32(k2_part(b + 32, b, sc, a[i].q));
        sum += quant_half_at(b + 108) * a[i].d * (float)s;
    }
    return sum;
}
#else
#define dot_q2_k dot_q2_k_portable
#define dot_q3_k dot_q3_k_portable
#endif

/* The K-quants' block sums with their sub-block scales, sum over j of
 * sc[j] * (q_j . a_j): portable, and AVX2 for q4_k, q5_k and q6_k (an
 * integer either way: the same value). */
typedef int (*k_isum_fn)(const uint8_t *block, const int *sc, const struct q8_k_block *a);

static int k4_isum(const uint8_t *b, const int *sc, const int8_t *a, void (*ints)(const uint8_t *, int8_t *))
{
    int8_t q[256];
    int s = 0;
    ints(b, q);
    for (int j = 0; j < 8; j++)
        s += sc[j] * isum(q + 32 * j, a + 32 * j, 32);
    return s;
}

static int isum_q4_k(const uint8_t *b, const int *sc, const struct q8_k_block *a)
{
    return k4_isum(b, sc, a->q, quant_ints_q4_k);
}

static int isum_q5_k(const uint8_t *b, const int *sc, const struct q8_k_block *a)
{
    return k4_isum(b, sc, a->q, quant_ints_q5_k);
}

static int isum_q6_k(const uint8_t *b, const int *sc, const struct q8_k_block *a)
{
    int8_t q[256];
    int s = 0;
    quant_ints_q6_k(b, q);
    for (int j = 0; j < 16; j++)
        s += sc[j] * isum(q + 16 * j, a->q + 16 * j, 16);
    return s;
}

#ifdef HAVE_AVX2
/* sum over the 32-byte runs k of scale_k * (u_k . a_k), u unsigned (at
 * most 63: a maddubs pair stays within int16), scale_k's two halves the
 * scales of its two sub-blocks of 16 */
static inline __m256i scaled_part(__m256i u, const int8_t *a, int sc_lo, int sc_hi)
{
    __m256i p = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)a));
    return _mm256_madd_epi16(p, _mm256_set_m128i(_mm_set1_epi16((short)sc_hi), _mm_set1_epi16((short)sc_lo)));
}

/* q4_k and q5_k (hbits: q5_k's fifth bits, bit j of byte l for element
 * 32 j + l; NULL for q4_k) */
static inline __attribute__((always_inline)) int k4_isum_avx2(const uint8_t *qs, const uint8_t *hbits,
                                                              const int *sc, const int8_t *a)
{
    __m256i acc = _mm256_setzero_si256(), hb = hbits ? _mm256_loadu_si256((const __m256i *)hbits) : acc;
    for (int c = 0; c < 4; c++) {
        __m256i lo, hi;
        k4_nibbles(qs, hb, hbits != NULL, c, &lo, &hi);
        acc = _mm256_add_epi32(acc, scaled_part(lo, a + 64 * c, sc[2 * c], sc[2 * c]));
        acc = _mm256_add_epi32(acc, scaled_part(hi, a + 64 * c + 32, sc[2 * c + 1], sc[2 * c + 1]));
    }
    return hsum_i32x8(acc);
}

static int isum_q4_k_avx2(const uint8_t *b, const int *sc, const struct q8_k_block *a)
{
    return k4_isum_avx2(b + 16, NULL, sc, a->q);
}

static int isum_q5_k_avx2(const uint8_t *b, const int *sc, const struct q8_k_block *a)
{
    return k4_isum_avx2(b + 48, b + 16, sc, a->q);
}

/* q6_k: u = q + 32 (0..63) against a, less 32 times the scaled sums of a
 * (sum_j sc_j bsums_j: the activation's sums of 16, the same integer) */
static int isum_q6_k_avx2(const uint8_t *b, const int *sc, const struct q8_k_block *act)
{
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *a = act->q;
    __m256i acc = _mm256_setzero_si256();
    int corr = 0;
    for (int j = 0; j < 16; j++)
        corr += sc[j] * act->bsums[j];
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, a += 128, sc += 8) {
        __m256i u[4];
        k6_unpack(ql, qh, u);
        for (int k = 0; k < 4; k++)
            acc = _mm256_add_epi32(acc, scaled_part(u[k], a + 32 * k, sc[2 * k], sc[2 * k + 1]));
    }
    return hsum_i32x8(acc) - 32 * corr;
}
#endif

/* q4_k and q5_k: a scale and a min per 32 elements (the mins against the
 * activation's sums of 16, two each) */
static inline __attribute__((always_inline)) float dot_k4(const uint8_t *b, const struct q8_k_block *a, int n,
                                                          size_t bytes, k_isum_fn isum_of)
{
    float sum = 0.0f;
    for (int i = 0; i < n / 256; i++, b += bytes) {
        int sc[8], m[8], mins = 0;
        for (int j = 0; j < 8; j++) {
            quant_k4_scale_min(b + 4, j, &sc[j], &m[j]);
            mins += m[j] * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);
        }
        int s = isum_of(b, sc, &a[i]);
        sum += quant_half_at(b) * a[i].d * (float)s - quant_half_at(b + 2) * a[i].d * (float)mins;
    }
    return sum;
}

static inline __attribute__((always_inline)) float dot_6k(const uint8_t *b, const struct q8_k_block *a, int n,
                                                          k_isum_fn isum_of)
{
    float sum = 0.0f;
    for (int i = 0; i < n / 256; i++, b += 210) {
        int sc[16];
        for (int j = 0; j < 16; j++)
            sc[j] = ((const int8_t *)(b + 192))[j];
        sum += quant_half_at(b + 208) * a[i].d * (float)isum_of(b, sc, &a[i]);
    }
    return sum;
}

#ifdef HAVE_NEON
static int isum_q4_k_neon(const uint8_t *b, const int *sc, const struct q8_k_block *a)
{
    return vaddvq_s32(k4_part(b + 16, NULL, sc, a->q));
}

static int isum_q5_k_neon(const uint8_t *b, const int *sc, const struct q8_k_block *a)
{
    return vaddvq_s32(k4_part(b + 48, b + 16, sc, a->q));
}

static int isum_q6_k_neon(const uint8_t *b, const int *sc, const struct q8_k_block *a)
{
    return vaddvq_s32(k6_part(b, sc, a->q));
}
#endif

static float dot_q4_k_portable(const void *w, const void *a, int n) { return dot_k4(w, a, n, 144, isum_q4_k); }
static float dot_q5_k_portable(const void *w, const void *a, int n) { return dot_k4(w, a, n, 176, isum_q5_k); }
static float dot_q6_k_portable(const void *w, const void *a, int n) { return dot_6k(w, a, n, isum_q6_k); }

#ifdef HAVE_AVX2
static float dot_q4_k(const void *w, const void *a, int n) { return dot_k4(w, a, n, 144, isum_q4_k_avx2); }
static float dot_q5_k(const void *w, const void *a, int n) { return dot_k4(w, a, n, 176, isum_q5_k_avx2); }
static float dot_q6_k(const void *w, const void *a, int n) { return dot_6k(w, a, n, isum_q6_k_avx2); }
#elif defined(HAVE_NEON)
static float dot_q4_k(const void *w, const void *a, int n) { return dot_k4(w, a, n, 144, isum_q4_k_neon); }
static float dot_q5_k(const void *w, const void *a, int n) { return dot_k4(w, a, n, 176, isum_q5_k_neon); }
static float dot_q6_k(const void *w, const void *a, int n) { return dot_6k(w, a, n, isum_q6_k_neon); }
#else
#define dot_q4_k dot_q4_k_portable
#define dot_q5_k dot_q5_k_portable
#define dot_q6_k dot_q6_k_portable
#endif

/* The dot product of t, the compiled-for form or the portable one. */
static int pick(enum fb_dtype t, bool portable, quant_dot_fn *dot, enum quant_act *act)
{
    switch (t) {
    case DTYPE_F32:
    case DTYPE_F16:
    case DTYPE_BF16:
        return -1;
    case DTYPE_Q4_0:
        *dot = portable ? dot_q4_0_portable : dot_q4_0, *act = QUANT_ACT_Q8_0;
        return 0;
    case DTYPE_Q4_1:
        *dot = portable ? dot_q4_1_portable : dot_q4_1, *act = QUANT_ACT_Q8_1;
        return 0;
    case DTYPE_Q5_0:
        *dot = portable ? dot_q5_0_portable : dot_q5_0, *act = QUANT_ACT_Q8_0;
        return 0;
    case DTYPE_Q5_1:
        *dot = portable ? dot_q5_1_portable : dot_q5_1, *act = QUANT_ACT_Q8_1;
        return 0;
    case DTYPE_Q8_0:
        *dot = portable ? dot_q8_0_portable : dot_q8_0, *act = QUANT_ACT_Q8_0;
        return 0;
    case DTYPE_Q2_K:
        *dot = portable ? dot_q2_k_portable : dot_q2_k, *act = QUANT_ACT_Q8_K;
        return 0;
    case DTYPE_Q3_K:
        *dot = portable ? dot_q3_k_portable : dot_q3_k, *act = QUANT_ACT_Q8_K;
        return 0;
    case DTYPE_Q4_K:
        *dot = portable ? dot_q4_k_portable : dot_q4_k, *act = QUANT_ACT_Q8_K;
        return 0;
    case DTYPE_Q5_K:
        *dot = portable ? dot_q5_k_portable : dot_q5_k, *act = QUANT_ACT_Q8_K;
        return 0;
    case DTYPE_Q6_K:
        *dot = portable ? dot_q6_k_portable : dot_q6_k, *act = QUANT_ACT_Q8_K;
        return 0;
    }
    return -1;
}

int quant_dot_of(enum fb_dtype t, quant_dot_fn *dot, enum quant_act *act) { return pick(t, false, dot, act); }

int quant_dot_portable(enum fb_dtype t, quant_dot_fn *dot, enum quant_act *act) { return pick(t, true, dot, act); }

const char *quant_dot_form(void)
{
#if defined(HAVE_AVX2) && defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return "avx2+vnni";
#elif defined(HAVE_AVX2)
    return "avx2";
#elif defined(QUANT_NEON_DOTPROD)
    return "neon+dotprod";
#elif defined(HAVE_NEON)
    return "neon";
#else
    return "portable";
#endif
}

quant_dot8_fn quant_dot8_of(enum fb_dtype t)
{
#ifdef HAVE_ROWS8
    switch (t) {
    case DTYPE_Q4_0:
        return rows8_q4_0;
    case DTYPE_Q4_1:
        return rows8_q4_1;
    case DTYPE_Q5_0:
        return rows8_q5_0;
    case DTYPE_Q5_1:
        return rows8_q5_1;
    case DTYPE_Q8_0:
        return rows8_q8_0;
    case DTYPE_Q4_K:
        return quant_rows8_q4_k;
    case DTYPE_Q5_K:
        return quant_rows8_q5_k;
    case DTYPE_Q6_K:
        return quant_rows8_q6_k;
    case DTYPE_F32:
    case DTYPE_F16:
    case DTYPE_BF16:
    case DTYPE_Q2_K:
    case DTYPE_Q3_K:
        return NULL;
    }
#endif
    (void)t;
    return NULL;
}
