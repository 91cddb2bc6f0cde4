/* The block encoders (dtype_encode.h): ggml's reference quantizers of the
 * 32-element types, block by block. */
#include "engine/model/dtype_encode.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "engine/model/dtype.h"

static void put_half(uint8_t *p, float v)
{
    uint16_t h = f32_to_f16(v);
    p[0] = (uint8_t)h, p[1] = (uint8_t)(h >> 8);
}

/* The signed value of the first element of largest magnitude. */
static float signed_max(const float *x)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

static void min_max(const float *x, float *min, float *max)
{
    *min = *max = x[0];
    for (int j = 1; j < 32; j++) {
        *min = fminf(*min, x[j]);
        *max = fmaxf(*max, x[j]);
    }
}

/* q[j] = trunc(v_j * id + offset) clamped to [0, top], v_j = x[j] - base */
static void truncated(const float *x, float base, float id, float offset, int top, int q[32])
{
    for (int j = 0; j < 32; j++) {
        int v = (int)((x[j] - base) * id + offset);
        q[j] = v < 0 ? 0 : v > top ? top : v;
    }
}

/* nibbles (element j low of byte j, j + 16 high) at qs; fifth bits at qh */
static void pack(const int q[32], uint8_t *qs, uint8_t *qh)
{
    uint32_t h = 0;
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)((q[j] & 0xF) | (q[j + 16] & 0xF) << 4);
    for (int j = 0; j < 32; j++)
        h |= (uint32_t)(q[j] >> 4 & 1) << j;
    if (qh)
        for (int k = 0; k < 4; k++)
            qh[k] = (uint8_t)(h >> 8 * k);
}

static float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

/* q4_0 and q5_0: d = max / -(2^(bits-1)); q4_1 and q5_1: the range */
static void block_symmetric(uint8_t *b, const float *x, int bits)
{
    float half_range = (float)(1 << (bits - 1)), d = signed_max(x) / -half_range;
    int q[32];
    truncated(x, 0.0f, inverse(d), half_range + 0.5f, (1 << bits) - 1, q);
    put_half(b, d);
    pack(q, b + (bits == 5 ? 6 : 2), bits == 5 ? b + 2 : NULL);
}

static void block_ranged(uint8_t *b, const float *x, int bits)
{
    float min, max;
    min_max(x, &min, &max);
    float d = (max - min) / (float)((1 << bits) - 1);
    int q[32];
    truncated(x, min, inverse(d), 0.5f, (1 << bits) - 1, q);
    put_half(b, d);
    put_half(b + 2, min);
    pack(q, b + (bits == 5 ? 8 : 4), bits == 5 ? b + 4 : NULL);
}

static void block_q8_0(uint8_t *b, const float *x)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127, id = inverse(d);
    put_half(b, d);
    for (int j = 0; j < 32; j++)
        b[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
}

bool quant_encode_supports(enum fb_dtype t)
{
    switch (t) {
    case DTYPE_Q4_0:
    case DTYPE_Q4_1:
    case DTYPE_Q5_0:
    case DTYPE_Q5_1:
    case DTYPE_Q8_0:
        return true;
    case DTYPE_F32:
    case DTYPE_F16:
    case DTYPE_BF16:
    case DTYPE_Q2_K:
    case DTYPE_Q3_K:
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
    case DTYPE_Q6_K:
        return false;
    }
    return false;
}

static void encode_block(uint8_t *b, enum fb_dtype t, const float *x)
{
    if (t == DTYPE_Q4_0 || t == DTYPE_Q5_0)
        block_symmetric(b, x, t == DTYPE_Q4_0 ? 4 : 5);
    else if (t == DTYPE_Q4_1 || t == DTYPE_Q5_1)
        block_ranged(b, x, t == DTYPE_Q4_1 ? 4 : 5);
    else
        block_q8_0(b, x);
}

int quant_encode(void *dst, enum fb_dtype t, const float *src, size_t n)
{
    if (!quant_encode_supports(t))
        return QUANT_ENCODE_NO_ENCODER;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(src[i]))
            return QUANT_ENCODE_NOT_FINITE;
    size_t bytes = wtype_block_bytes(t);
    for (size_t i = 0; i < n / 32; i++)
        encode_block((uint8_t *)dst + i * bytes, t, src + 32 * i);
    return 0;
}
