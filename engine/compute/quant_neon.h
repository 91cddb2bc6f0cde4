/* The Arm NEON pieces of the integer dot products: quant_dot.c's one-row
 * block sums (every block type) and eight-row 32-element forms,
 * quant_dot_k8.c's eight-row K-quants; internal to engine/compute.
 *
 * Contract:
 * - QUANT_NEON is defined where the compiler targets little-endian AArch64
 *   with Advanced SIMD (__ARM_NEON: every -march=armv8-a and later unless
 *   +nosimd); QUANT_NEON_DOTPROD besides where it has the dot-product
 *   instructions (__ARM_FEATURE_DOTPROD: armv8.2-a+dotprod, armv8.4-a
 *   on). Without QUANT_NEON this header declares nothing.
 * - Each function here gives int32 lanes whose total is the exact integer
 *   stated (the two forms split the total across lanes differently), or
 *   halves widened exactly (as f16_to_f32), so the f32 steps the callers
 *   take after them are the portable form's and give its bits, as long
 *   as the compiler fuses no multiply and add: the build's C11 mode keeps
 *   gcc at -ffp-contract=off; clang contracts by default (its eight-row
 *   outputs then differ from the portable form's in the last bit: seen
 *   under qemu) and needs -ffp-contract=off.
 * - Weight integers are within [-128, 127], activation integers within
 *   [-127, 127] (as quant_act.c writes them; a block with a NaN has
 *   unspecified q, but d NaN, and so its term is NaN whatever they sum
 *   to). */
#ifndef FLASHBED_ENGINE_QUANT_NEON_H
#define FLASHBED_ENGINE_QUANT_NEON_H

#if defined(__aarch64__) && defined(__ARM_NEON) && !defined(__ARM_BIG_ENDIAN)
#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define QUANT_NEON 1
#ifdef __ARM_FEATURE_DOTPROD
#define QUANT_NEON_DOTPROD 1
#endif

/* acc plus w . a over 16 bytes. Without the dot-product instruction: two
 * products per int16 lane (each at most 128 * 127 in magnitude, a pair
 * at most 32512: no wrap), then pairwise into the int32 lanes. */
static inline int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t a)
{
#ifdef QUANT_NEON_DOTPROD
    return vdotq_s32(acc, w, a);
#else
    int16x8_t p = vmull_s8(vget_low_s8(w), vget_low_s8(a));
    p = vmlal_high_s8(p, w, a);
    return vpadalq_s16(acc, p);
#endif
}

/* w (32 integers as two runs of 16) . the 32 activations at a */
static inline int32x4_t dot32(int8x16_t w_lo, int8x16_t w_hi, const int8_t *a)
{
    return dot16(dot16(vdupq_n_s32(0), w_lo, vld1q_s8(a)), w_hi, vld1q_s8(a + 16));
}

static inline int8x16_t as_s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

/* Four rows' int32 lanes reduced together, lane k the total of v[k]
 * (two rounds of pairwise adds) */
static inline int32x4_t lane_sums4(const int32x4_t v[4])
{
    return vpaddq_s32(vpaddq_s32(v[0], v[1]), vpaddq_s32(v[2], v[3]));
}

/* The halves at p + k * stride, k = 0..3, widened to f32 (exactly) */
static inline float32x4_t halves4(const uint8_t *p, size_t stride)
{
    uint16_t h[4];
    for (int k = 0; k < 4; k++)
        memcpy(&h[k], p + k * stride, 2);
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

/* The fifth bits of 32 elements at *lo, *hi (runs 0..15, 16..31): with
 * bit b of hb's bytes set, 0x10 (bit 4) or'ed into the element */
static inline void k_fifth_bits(uint8x16_t hb_lo, uint8x16_t hb_hi, int b, uint8x16_t *lo, uint8x16_t *hi)
{
    const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << b)), five = vdupq_n_u8(0x10);
    *lo = vorrq_u8(*lo, vandq_u8(vtstq_u8(hb_lo, bit), five));
    *hi = vorrq_u8(*hi, vandq_u8(vtstq_u8(hb_hi, bit), five));
}

/* One q4_k/q5_k block's sum over its eight sub-blocks j of sc[j] (q_j .
 * a_j): qs its 128 bytes of nibbles (chunk c's low nibbles sub-block 2c,
 * high ones 2c + 1), hbits q5_k's fifth bits (bit j of byte l for
 * element 32 j + l) or NULL for q4_k */
static inline __attribute__((always_inline)) int32x4_t k4_part(const uint8_t *qs, const uint8_t *hbits,
                                                               const int *sc, const int8_t *a)
{
    const uint8x16_t m4 = vdupq_n_u8(0xF);
    uint8x16_t hb_lo = hbits ? vld1q_u8(hbits) : m4, hb_hi = hbits ? vld1q_u8(hbits + 16) : m4;
    int32x4_t acc = vdupq_n_s32(0);
    for (int c = 0; c < 4; c++, qs += 32, a += 64) {
        uint8x16_t q0 = vld1q_u8(qs), q1 = vld1q_u8(qs + 16);
        uint8x16_t lo0 = vandq_u8(q0, m4), lo1 = vandq_u8(q1, m4), hi0 = vshrq_n_u8(q0, 4), hi1 = vshrq_n_u8(q1, 4);
        if (hbits) {
            k_fifth_bits(hb_lo, hb_hi, 2 * c, &lo0, &lo1);
            k_fifth_bits(hb_lo, hb_hi, 2 * c + 1, &hi0, &hi1);
        }
        acc = vmlaq_n_s32(acc, dot32(as_s8(lo0), as_s8(lo1), a), sc[2 * c]);
        acc = vmlaq_n_s32(acc, dot32(as_s8(hi0), as_s8(hi1), a + 32), sc[2 * c + 1]);
    }
    return acc;
}

/* u (6-bit, 0..63) less 32: q6_k's integers */
static inline int8x16_t k6_signed(uint8x16_t u) { return vsubq_s8(as_s8(u), vdupq_n_s8(32)); }

/* One q6_k block's sum over its sixteen sub-blocks j of sc[j] (q_j .
 * a_j), in dtype_quant.h's reading: element 32 r + l of half h takes
 * nibble r / 2 of byte 32 (r % 2) + l of ql = b + 64 h and bits 2 r,
 * 2 r + 1 of byte l of qh = b + 128 + 32 h; each run of 16 is one
 * sub-block. */
static inline __attribute__((always_inline)) int32x4_t k6_part(const uint8_t *b, const int *sc, const int8_t *a)
{
    const uint8x16_t m4 = vdupq_n_u8(0xF), m30 = vdupq_n_u8(0x30);
    int32x4_t acc = vdupq_n_s32(0);
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l += 16) { /* sub-blocks 8 h + 2 r + l / 16 */
            const uint8_t *ql = b + 64 * h + l;
            uint8x16_t q0 = vld1q_u8(ql), q1 = vld1q_u8(ql + 32), qh = vld1q_u8(b + 128 + 32 * h + l);
            uint8x16_t u[4] = {vorrq_u8(vandq_u8(q0, m4), vandq_u8(vshlq_n_u8(qh, 4), m30)),
                               vorrq_u8(vandq_u8(q1, m4), vandq_u8(vshlq_n_u8(qh, 2), m30)),
                               vorrq_u8(vshrq_n_u8(q0, 4), vandq_u8(qh, m30)),
                               vorrq_u8(vshrq_n_u8(q1, 4), vandq_u8(vshrq_n_u8(qh, 2), m30))};
            for (int r = 0; r < 4; r++) {
                int e = 128 * h + 32 * r + l;
                acc = vmlaq_n_s32(acc, dot16(vdupq_n_s32(0), k6_signed(u[r]), vld1q_s8(a + e)), sc[e / 16]);
            }
        }
    return acc;
}
/* One q2_k/q3_k block's sum over its sixteen sub-blocks j of sc[j] (q_j .
 * a_j): qs its 64 bytes of 2-bit fields (element 128 h + 32 s + l bits
 * 2 s, 2 s + 1 of qs[32 h + l]), hmask q3_k's 32 bytes of high bits
 * (element 32 k + l less 4 where bit k of hmask[l] is clear) or NULL for
 * q2_k: dtype_quant.h's reading */
static inline __attribute__((always_inline)) int32x4_t k2_part(const uint8_t *qs, const uint8_t *hmask,
                                                               const int *sc, const int8_t *a)
{
    const uint8x16_t m3 = vdupq_n_u8(3), four = vdupq_n_u8(4);
    uint8x16_t hm_lo = hmask ? vld1q_u8(hmask) : m3, hm_hi = hmask ? vld1q_u8(hmask + 16) : m3;
    int32x4_t acc = vdupq_n_s32(0);
    for (int h = 0; h < 2; h++) {
        uint8x16_t q0 = vld1q_u8(qs + 32 * h), q1 = vld1q_u8(qs + 32 * h + 16);
        for (int s = 0; s < 4; s++, q0 = vshrq_n_u8(q0, 2), q1 = vshrq_n_u8(q1, 2)) {
            int8x16_t u0 = as_s8(vandq_u8(q0, m3)), u1 = as_s8(vandq_u8(q1, m3));
            if (hmask) {
                uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << (4 * h + s)));
                u0 = vsubq_s8(u0, as_s8(vbicq_u8(four, vtstq_u8(hm_lo, bit))));
                u1 = vsubq_s8(u1, as_s8(vbicq_u8(four, vtstq_u8(hm_hi, bit))));
            }
            int e = 128 * h + 32 * s;
            acc = vmlaq_n_s32(acc, dot16(vdupq_n_s32(0), u0, vld1q_s8(a + e)), sc[e / 16]);
            acc = vmlaq_n_s32(acc, dot16(vdupq_n_s32(0), u1, vld1q_s8(a + e + 16)), sc[e / 16 + 1]);
        }
    }
    return acc;
}
#endif

#endif
