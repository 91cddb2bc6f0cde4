/* The pieces the eight-row dot products share (quant_dot.c's
 * 32-element types, quant_dot_k8.c's K-quants): the prefetch of later
 * rows (plain C, the AVX2 and NEON forms' both), and the AVX2 ones;
 * internal to engine/compute (the NEON ones are quant_neon.h).
 *
 * Contract:
 * - QUANT_ROWS8_AVX2 is defined where the compiler targets AVX2 and F16C
 *   (the hot files' flags, engine/CMakeLists.txt); without it this header
 *   declares only prefetch_next8.
 * - Rows lie stride bytes apart, stride under 2^28 (quant_dot8_fn's
 *   bound): eight rows' offsets fit a gather's int32 indices.
 * - Nothing here rounds: integer sums are exact in any order, and halves
 *   widen to f32 exactly (as f16_to_f32), so each lane's f32 steps, done
 *   by the caller, are the one-row form's. */
#ifndef FLASHBED_ENGINE_QUANT_ROWS8_H
#define FLASHBED_ENGINE_QUANT_ROWS8_H

#include <stddef.h>
#include <stdint.h>

/* Eight short rows are eight short streams the hardware prefetchers
 * barely start on; each block column (i, of bytes bytes) prefetches its
 * share of the eight rows after the next eight from b, the group's first
 * row (where a matvec's rows lie; two groups ahead measured best, on an
 * EPYC, against one, three, four and six). A prefetch past the matrix
 * reads nothing. */
static inline void prefetch_next8(const uint8_t *b, size_t stride, size_t bytes, int i)
{
    const char *next = (const char *)b + 16 * stride + (size_t)i * 8 * bytes;
    for (size_t off = 0; off < 8 * bytes; off += 64)
        __builtin_prefetch(next + off, 0, 3);
}

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>

#define QUANT_ROWS8_AVX2 1

/* Chunk c (0..3) of a q4_k block's 128 bytes qs: lo its low nibbles
 * (sub-block 2c), hi its high ones (2c + 1); with five (q5_k), each
 * nibble's fifth bit from hb (bit j of byte l for element 32 j + l). The
 * one-row and eight-row K-quant dot products both unpack so. */
static inline void k4_nibbles(const uint8_t *qs, __m256i hb, int five, int c, __m256i *lo, __m256i *hi)
{
    const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
    __m256i bytes = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
    *lo = _mm256_and_si256(bytes, m4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
    if (five) {
        __m128i j0 = _mm_cvtsi32_si128(2 * c), j1 = _mm_cvtsi32_si128(2 * c + 1);
        *lo = _mm256_or_si256(*lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hb, j0), one), 4));
        *hi = _mm256_or_si256(*hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hb, j1), one), 4));
    }
}

/* Half h of a q6_k block (ql: its 64 low-nibble bytes, qh: its 32 high-bit
 * bytes) as four runs of 32 unsigned 6-bit values, u[k] the elements
 * 32 k .. 32 k + 31 of the half. The one-row and eight-row q6_k dot
 * products both unpack so. */
static inline void k6_unpack(const uint8_t *ql, const uint8_t *qh, __m256i u[4])
{
    const __m256i m4 = _mm256_set1_epi8(0xF), m30 = _mm256_set1_epi8(0x30);
    __m256i q0 = _mm256_loadu_si256((const __m256i *)ql), q1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
    __m256i h = _mm256_loadu_si256((const __m256i *)qh);
    u[0] = _mm256_or_si256(_mm256_and_si256(q0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
    u[1] = _mm256_or_si256(_mm256_and_si256(q1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
    u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q0, 4), m4), _mm256_and_si256(h, m30));
    u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
}

/* The eight rows' 32-bit words at p (row k's at p + k * stride), in one
 * gather: a block's scale half and the two bytes after it */
static inline __m256i words8(const uint8_t *p, size_t stride)
{
    __m256i at = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)stride));
    return _mm256_i32gather_epi32((const int *)(const void *)p, at, 1);
}

/* eight words' low halves widened to f32 into *lo, their high halves into
 * *hi (exactly, as f16_to_f32) */
static inline void halves_of_words(__m256i w, __m256 *lo, __m256 *hi)
{
    __m256i l = _mm256_and_si256(w, _mm256_set1_epi32(0xFFFF)), h = _mm256_srli_epi32(w, 16);
    __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(l, h), _MM_SHUFFLE(3, 1, 2, 0));
    *lo = _mm256_cvtph_ps(_mm256_castsi256_si128(p));
    *hi = _mm256_cvtph_ps(_mm256_extracti128_si256(p, 1));
}

/* Eight vectors of int32 partial sums reduced together, lane k the sum
 * of v[k]'s lanes (three rounds of pairwise adds instead of one
 * horizontal sum each) */
static inline __m256i lane_sums8(const __m256i v[8])
{
    __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
}
#endif

#endif
