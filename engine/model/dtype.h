/* Weight storage types' values. Compute is always f32; weights may be
 * stored as f32, f16 (IEEE half) or bf16 (the top half of an f32) to halve
 * the bytes every token must stream from memory. The types themselves,
 * their names and what a row of each takes are common/wtype.h's table;
 * here are the conversions and each type's reference decode. */
#ifndef FLASHBED_ENGINE_DTYPE_H
#define FLASHBED_ENGINE_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "common/wtype.h" /* enum fb_dtype, its names and its rows' bytes */

uint16_t f32_to_f16(float f);  /* round to nearest even, overflow to inf */
uint16_t f32_to_bf16(float f); /* round to nearest even, NaN stays NaN */

/* Exact for every half, NaN payloads kept (assumes subnormal floats are
 * not flushed to zero, the default). Inline and free of branches, so that
 * a loop widening a block of halves vectorizes: it is the portable
 * kernels' load (NEON, or x86 without F16C). */
static inline float f16_to_f32(uint16_t h)
{
    union { uint32_t u; float f; } v = {.u = (uint32_t)(h & 0x7fffu) << 13};
    v.f *= 0x1p112f; /* rebias the exponent by 2^(127-15): exact, subnormal halves included */
    v.u |= (0u - (uint32_t)(v.f >= 65536.0f)) & 0x7f800000u; /* past the largest half: inf, NaN */
    v.u |= (uint32_t)(h & 0x8000u) << 16;
    return v.f;
}

static inline float bf16_to_f32(uint16_t b)
{
    union { uint32_t u; float f; } v = {.u = (uint32_t)b << 16};
    return v.f;
}

/* dst (n elements of type t, a whole number of its blocks) from src f32,
 * and back: the reference decode of every type (a row to f32), which the
 * kernels' per-type entries are tested against; a quantized type's is
 * dtype_quant.h's. dtype_from_f32 encodes the float types (0); it has no
 * encoder for a quantized one (-1, dst untouched): those come as stored. */
int dtype_from_f32(void *dst, enum fb_dtype t, const float *src, size_t n);
void dtype_to_f32(float *dst, const void *src, enum fb_dtype t, size_t n);

#endif
