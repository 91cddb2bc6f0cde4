/* The K-quants' eight rows at once (quant_dot_k8.h): one block column
 * at a time, each row's block as vector lanes of partial integer sums
 * (the scales decoded in a few word operations and applied by shuffles,
 * no scalar per sub-block), the eight rows' partials reduced together
 * (quant_rows8.h), then lane k takes row k's f32 step of the one-row
 * form (quant_dot.c's dot_k4, dot_6k) in block order. One row's f32 sum
 * is a chain of one add per 256 elements; what eight rows save is the
 * per-row scalar work: the scale decode, the mins' sum, the horizontal
 * sums, and the short rows' missing hardware prefetch. The NEON form
 * (AArch64) follows the same plan, four rows to a float32x4, each row's
 * integer sums quant_neon.h's one-row pieces (its scales applied per
 * sub-block by multiply-adds on int32 lanes). */
#include "engine/compute/quant_dot_k8.h"

#include <stdbool.h>
#include <string.h>

#include "engine/compute/quant_rows8.h"

/* a q4_k/q5_k block's 12 scale bytes s as its eight scales (byte j of
 * sc[0], then of sc[1], scale j or j + 4) and eight mins (m's likewise):
 * quant_k4_scale_min's values in a few word operations (j < 4 the low six
 * bits of bytes j and j + 4; j >= 4 a nibble of byte j + 4 with the top
 * two bits of bytes j - 4 and j above it) */
static inline void k4_scale_words(const uint8_t *s, uint32_t sc[2], uint32_t m[2])
{
    uint32_t w0, w1, w2;
    memcpy(&w0, s, 4);
    memcpy(&w1, s + 4, 4);
    memcpy(&w2, s + 8, 4);
    sc[0] = w0 & 0x3F3F3F3Fu, m[0] = w1 & 0x3F3F3F3Fu;
    sc[1] = (w2 & 0x0F0F0F0Fu) | ((w0 >> 6) & 0x03030303u) << 4;
    m[1] = ((w2 >> 4) & 0x0F0F0F0Fu) | ((w1 >> 6) & 0x03030303u) << 4;
}

#ifdef QUANT_ROWS8_AVX2
/* the eight scales *sc and mins *m as 16-bit lanes */
static inline void k4_scales_mins(const uint8_t *s, __m128i *sc, __m128i *m)
{
    uint32_t scw[2], mw[2];
    k4_scale_words(s, scw, mw);
    *sc = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)scw[1], (int)scw[0]));
    *m = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)mw[1], (int)mw[0]));
}

/* shuffle bytes that copy 16-bit element j of each 128-bit half to all
 * its elements */
static inline __m128i pick16(int j) { return _mm_set1_epi16((short)(0x0100 + 0x0202 * j)); }

/* u (unsigned, at most 63: a maddubs pair stays within int16) times the
 * 32 activations at a, each pair's sum times the 16-bit scale the
 * shuffle picks from sc2 (its 128-bit halves' own picks) */
static inline __m256i scaled_run(__m256i u, const int8_t *a, __m256i sc2, __m256i pick)
{
    __m256i p = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)a));
    return _mm256_madd_epi16(p, _mm256_shuffle_epi8(sc2, pick));
}

/* One q4_k/q5_k row's block b (hbits: q5_k's fifth bits, NULL for q4_k;
 * qs its nibbles) against a: *s's lanes sum to sum_j sc_j (q_j . a_j),
 * *mins's to sum_j m_j (a's sums of 16, paired: pairs) */
static inline __attribute__((always_inline)) void k4_row(const uint8_t *b, const uint8_t *hbits, const uint8_t *qs,
                                                         const int8_t *a, __m128i pairs, __m256i *s, __m128i *mins)
{
    __m128i sc, m;
    k4_scales_mins(b + 4, &sc, &m);
    *mins = _mm_madd_epi16(m, pairs);
    __m256i sc2 = _mm256_broadcastsi128_si256(sc), acc = _mm256_setzero_si256();
    __m256i hb = hbits ? _mm256_loadu_si256((const __m256i *)hbits) : acc;
    for (int c = 0; c < 4; c++) {
        __m256i lo, hi;
        k4_nibbles(qs, hb, hbits != NULL, c, &lo, &hi);
        acc = _mm256_add_epi32(acc, scaled_run(lo, a + 64 * c, sc2, _mm256_broadcastsi128_si256(pick16(2 * c))));
        acc = _mm256_add_epi32(acc,
                               scaled_run(hi, a + 64 * c + 32, sc2, _mm256_broadcastsi128_si256(pick16(2 * c + 1))));
    }
    *s = acc;
}

/* four rows' four int32 lanes each reduced, lane k row k's total */
static inline __m128i lane_sums4(const __m128i v[4])
{
    return _mm_hadd_epi32(_mm_hadd_epi32(v[0], v[1]), _mm_hadd_epi32(v[2], v[3]));
}

/* q4_k and q5_k: per block, per row sum += (d_w d_a) isum - (dmin_w d_a) mins */
static inline __attribute__((always_inline)) void k4_rows8(const uint8_t *b, size_t stride,
                                                           const struct q8_k_block *a, int n, size_t bytes, bool q5,
                                                           float *out)
{
    __m256 sum = _mm256_setzero_ps();
    const uint8_t *b0 = b;
    for (int i = 0; i < n / 256; i++, b += bytes) {
        prefetch_next8(b0, stride, bytes, i);
        __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)a[i].bsums),
                                       _mm_loadu_si128((const __m128i *)(a[i].bsums + 8)));
        __m256i s[8];
        __m128i m[8];
        for (int k = 0; k < 8; k++) {
            const uint8_t *r = b + k * stride;
            k4_row(r, q5 ? r + 16 : NULL, r + (q5 ? 48 : 16), a[i].q, pairs, &s[k], &m[k]);
        }
        __m256 dw, dmin, ad = _mm256_set1_ps(a[i].d);
        halves_of_words(words8(b, stride), &dw, &dmin);
        __m256 sf = _mm256_cvtepi32_ps(lane_sums8(s));
        __m256 mf = _mm256_cvtepi32_ps(_mm256_set_m128i(lane_sums4(m + 4), lane_sums4(m)));
        sum = _mm256_add_ps(sum, _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(dw, ad), sf),
                                               _mm256_mul_ps(_mm256_mul_ps(dmin, ad), mf)));
    }
    _mm256_storeu_ps(out, sum);
}

/* One q6_k row's block b against act: lanes summing to sum_j sc_j
 * (q_j . a_j), as u = q + 32 (0..63) against a less 32 sum_j sc_j
 * bsums_j (the same integer) */
static inline __attribute__((always_inline)) __m256i q6k_row(const uint8_t *b, const struct q8_k_block *act)
{
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *a = act->q;
    __m128i sc8 = _mm_loadu_si128((const __m128i *)(b + 192));
    __m128i sc[2] = {_mm_cvtepi8_epi16(sc8), _mm_cvtepi8_epi16(_mm_srli_si128(sc8, 8))};
    __m128i corr = _mm_add_epi32(_mm_madd_epi16(sc[0], _mm_loadu_si128((const __m128i *)act->bsums)),
                                 _mm_madd_epi16(sc[1], _mm_loadu_si128((const __m128i *)(act->bsums + 8))));
    __m256i acc = _mm256_inserti128_si256(_mm256_setzero_si256(), _mm_sub_epi32(_mm_setzero_si128(),
                                                                                _mm_slli_epi32(corr, 5)), 0);
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, a += 128) {
        __m256i sc2 = _mm256_broadcastsi128_si256(sc[half]);
        __m256i u[4];
        k6_unpack(ql, qh, u);
        for (int k = 0; k < 4; k++) /* run k: sub-blocks 2 k and 2 k + 1 of the half, one per 128 bits */
            acc = _mm256_add_epi32(acc, scaled_run(u[k], a + 32 * k, sc2,
                                                   _mm256_set_m128i(pick16(2 * k + 1), pick16(2 * k))));
    }
    return acc;
}

/* q6_k: per block, per row sum += (d_w d_a) isum; d_w the high half of
 * the word at 206 (a word at 208 would read past the last block) */
void quant_rows8_q6_k(const void *w, size_t stride, const void *act, int n, float *out)
{
    const uint8_t *b = w, *b0 = w;
    const struct q8_k_block *a = act;
    __m256 sum = _mm256_setzero_ps();
    for (int i = 0; i < n / 256; i++, b += 210) {
        prefetch_next8(b0, stride, 210, i);
        __m256i s[8];
        for (int k = 0; k < 8; k++)
            s[k] = q6k_row(b + k * stride, &a[i]);
        __m256 unused, dw;
        halves_of_words(words8(b + 206, stride), &unused, &dw);
        sum = _mm256_add_ps(sum, _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(a[i].d)),
                                               _mm256_cvtepi32_ps(lane_sums8(s))));
    }
    _mm256_storeu_ps(out, sum);
}
#endif

#ifdef QUANT_NEON
/* One q4_k/q5_k row's block r against a (pairs: a's sums of 16 added in
 * pairs, one per sub-block of 32): *s's lanes sum to sum_j sc_j (q_j .
 * a_j), *mins's to sum_j m_j pairs_j (m_j <= 63, |pairs_j| <= 4064:
 * products within int32) */
static inline __attribute__((always_inline)) void k4_row(const uint8_t *r, bool q5, const int8_t *a,
                                                         int16x8_t pairs, int32x4_t *s, int32x4_t *mins)
{
    uint32_t scw[2], mw[2];
    k4_scale_words(r + 4, scw, mw);
    int sc[8];
    for (int j = 0; j < 8; j++)
        sc[j] = (int)(scw[j / 4] >> (8 * (j % 4)) & 0xFF);
    int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vcreate_u8(mw[0] | (uint64_t)mw[1] << 32)));
    *mins = vmlal_high_s16(vmull_s16(vget_low_s16(m), vget_low_s16(pairs)), m, pairs);
    *s = k4_part(r + (q5 ? 48 : 16), q5 ? r + 16 : NULL, sc, a);
}

/* q4_k and q5_k: per block, per row sum += (d_w d_a) isum - (dmin_w d_a)
 * mins, four rows to a vector (quant_dot.c's NEON plan) */
static inline __attribute__((always_inline)) void k4_rows8(const uint8_t *b, size_t stride,
                                                           const struct q8_k_block *a, int n, size_t bytes, bool q5,
                                                           float *out)
{
    float32x4_t sum[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    const uint8_t *b0 = b;
    for (int i = 0; i < n / 256; i++, b += bytes) {
        prefetch_next8(b0, stride, bytes, i);
        int16x8_t pairs = vpaddq_s16(vld1q_s16(a[i].bsums), vld1q_s16(a[i].bsums + 8));
        float32x4_t ad = vdupq_n_f32(a[i].d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *r = b + 4 * h * stride;
            int32x4_t s[4], m[4];
            for (int k = 0; k < 4; k++)
                k4_row(r + k * stride, q5, a[i].q, pairs, &s[k], &m[k]);
            float32x4_t sf = vcvtq_f32_s32(lane_sums4(s)), mf = vcvtq_f32_s32(lane_sums4(m));
            float32x4_t dw = halves4(r, stride), dmin = halves4(r + 2, stride);
            sum[h] = vaddq_f32(sum[h], vsubq_f32(vmulq_f32(vmulq_f32(dw, ad), sf), vmulq_f32(vmulq_f32(dmin, ad), mf)));
        }
    }
    vst1q_f32(out, sum[0]);
    vst1q_f32(out + 4, sum[1]);
}

/* One q6_k row's block r against a: lanes summing to sum_j sc_j (q_j . a_j) */
static inline __attribute__((always_inline)) int32x4_t q6k_row(const uint8_t *r, const int8_t *a)
{
    int sc[16];
    for (int j = 0; j < 16; j++)
        sc[j] = ((const int8_t *)(r + 192))[j];
    return k6_part(r, sc, a);
}

/* q6_k: per block, per row sum += (d_w d_a) isum */
void quant_rows8_q6_k(const void *w, size_t stride, const void *act, int n, float *out)
{
    const uint8_t *b = w, *b0 = w;
    const struct q8_k_block *a = act;
    float32x4_t sum[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    for (int i = 0; i < n / 256; i++, b += 210) {
        prefetch_next8(b0, stride, 210, i);
        float32x4_t ad = vdupq_n_f32(a[i].d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *r = b + 4 * h * stride;
            int32x4_t s[4];
            for (int k = 0; k < 4; k++)
                s[k] = q6k_row(r + k * stride, a[i].q);
            sum[h] = vaddq_f32(sum[h], vmulq_f32(vmulq_f32(halves4(r + 208, stride), ad), vcvtq_f32_s32(lane_sums4(s))));
        }
    }
    vst1q_f32(out, sum[0]);
    vst1q_f32(out + 4, sum[1]);
}
#endif

#if defined(QUANT_ROWS8_AVX2) || defined(QUANT_NEON)
void quant_rows8_q4_k(const void *w, size_t stride, const void *a, int n, float *out)
{
    k4_rows8(w, stride, a, n, 144, false, out);
}

void quant_rows8_q5_k(const void *w, size_t stride, const void *a, int n, float *out)
{
    k4_rows8(w, stride, a, n, 176, true, out);
}
#endif
