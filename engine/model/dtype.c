#include "engine/model/dtype.h"

#include "engine/model/dtype_quant.h"

#include <string.h>

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t f32_to_f16(float f)
{
    uint32_t x = bits_of(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t abs = x & 0x7fffffff;
    if (abs >= 0x7f800000) /* inf or NaN */
        return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0);
    if (abs >= 0x477ff000) /* rounds to above 65504: overflow */
        return sign | 0x7c00;
    if (abs < 0x38800000) { /* below 2^-14: subnormal half (or zero) */
        /* value * 2^24 rounded to nearest even is the subnormal's bits */
        float scaled = float_of(abs) * 16777216.0f;
        uint32_t m = (uint32_t)scaled;
        float rem = scaled - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1)))
            m++;
        return sign | (uint16_t)m;
    }
    uint32_t mant = abs & 0x7fffff;
    uint32_t exp = (abs >> 23) - 127 + 15;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++; /* may carry into the exponent, which is the right answer */
    return sign | (uint16_t)h;
}

uint16_t f32_to_bf16(float f)
{
    uint32_t x = bits_of(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

int dtype_from_f32(void *dst, enum fb_dtype t, const float *src, size_t n)
{
    uint16_t *d = dst;
    switch (t) {
    case DTYPE_F32:
        memcpy(dst, src, n * sizeof *src);
        return 0;
    case DTYPE_F16:
        for (size_t i = 0; i < n; i++)
            d[i] = f32_to_f16(src[i]);
        return 0;
    case DTYPE_BF16:
        for (size_t i = 0; i < n; i++)
            d[i] = f32_to_bf16(src[i]);
        return 0;
    case DTYPE_Q4_0: /* no encoder: llama.cpp's quantizers search for */
    case DTYPE_Q4_1: /* scales (and the K-quants' mins); these types */
    case DTYPE_Q5_0: /* come as stored, from GGUF files */
    case DTYPE_Q5_1:
    case DTYPE_Q8_0:
    case DTYPE_Q2_K:
    case DTYPE_Q3_K:
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
    case DTYPE_Q6_K:
        return -1;
    }
    return -1;
}

void dtype_to_f32(float *dst, const void *src, enum fb_dtype t, size_t n)
{
    const uint16_t *s = src;
    switch (t) {
    case DTYPE_F32:
        memcpy(dst, src, n * sizeof *dst);
        break;
    case DTYPE_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = f16_to_f32(s[i]);
        break;
    case DTYPE_BF16:
        for (size_t i = 0; i < n; i++)
            dst[i] = bf16_to_f32(s[i]);
        break;
    case DTYPE_Q4_0:
        quant_decode_q4_0(dst, src, n / 32);
        break;
    case DTYPE_Q4_1:
        quant_decode_q4_1(dst, src, n / 32);
        break;
    case DTYPE_Q5_0:
        quant_decode_q5_0(dst, src, n / 32);
        break;
    case DTYPE_Q5_1:
        quant_decode_q5_1(dst, src, n / 32);
        break;
    case DTYPE_Q8_0:
        quant_decode_q8_0(dst, src, n / 32);
        break;
    case DTYPE_Q2_K:
        quant_decode_q2_k(dst, src, n / 256);
        break;
    case DTYPE_Q3_K:
        quant_decode_q3_k(dst, src, n / 256);
        break;
    case DTYPE_Q4_K:
        quant_decode_q4_k(dst, src, n / 256);
        break;
    case DTYPE_Q5_K:
        quant_decode_q5_k(dst, src, n / 256);
        break;
    case DTYPE_Q6_K:
        quant_decode_q6_k(dst, src, n / 256);
        break;
    }
}
