/* The activation quantizers of the block types' dot products
 * (quant_dot.h's contract): q8_0, q8_1 and q8_k as ggml's
 * quantize_row_*_ref write them. */
#include "engine/compute/quant_dot.h"

#include <math.h>
#include <string.h>

#include "engine/model/dtype.h"

/* A 32-element block's scale and roundf(x / scale), as q8_0 and q8_1 keep
 * them (ggml's quantize_row_q8_0_ref: lroundf rounds as roundf does, and
 * leaves no undefined conversion for a value out of range); the scale is
 * returned. A NaN or infinite x makes the scale NaN, so that every dot
 * product with the block is NaN, as the float path's would be (ggml's
 * result there depends on where in the block the NaN is). */
static float q8_block(const float *x, uint16_t *d_half, int8_t *q)
{
    float amax = 0.0f;
    bool finite = true;
    for (int j = 0; j < 32; j++) {
        amax = fmaxf(amax, fabsf(x[j]));
        finite = finite && isfinite(x[j]);
    }
    float d = finite ? amax / 127 : NAN, id = d != 0.0f && finite ? 1.0f / d : 0.0f;
    *d_half = f32_to_f16(d);
    for (int j = 0; j < 32; j++)
        q[j] = (int8_t)lroundf(x[j] * id);
    return d;
}

void quant_q8_0(struct q8_0_block *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n / 32; i++)
        q8_block(x + 32 * i, &y[i].d, y[i].q);
}

void quant_q8_1(struct q8_1_block *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n / 32; i++) {
        float d = q8_block(x + 32 * i, &y[i].d, y[i].q);
        int sum = 0;
        for (int j = 0; j < 32; j++)
            sum += y[i].q[j];
        y[i].s = f32_to_f16((float)sum * d);
    }
}

void quant_q8_k(struct q8_k_block *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n / 256; i++, x += 256) {
        float max = 0.0f, amax = 0.0f;
        bool finite = true;
        for (int j = 0; j < 256; j++) {
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
            finite = finite && isfinite(x[j]);
        }
        memset(&y[i], 0, sizeof y[i]);
        if (!finite) { /* NaN through every dot product (as q8_block) */
            y[i].d = NAN;
            continue;
        }
        if (amax == 0.0f)
            continue;
        float iscale = -127.0f / max;
        for (int j = 0; j < 256; j++) {
            long v = lrintf(iscale * x[j]); /* nearest, ties to even: ggml's nearest_int */
            y[i].q[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < 16; j++) {
            int sum = 0;
            for (int k = 0; k < 16; k++)
                sum += y[i].q[16 * j + k];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

void quant_decode_q8_k(float *out, const struct q8_k_block *y, size_t n_blocks)
{
    for (size_t i = 0; i < n_blocks; i++)
        for (int j = 0; j < 256; j++)
            *out++ = y[i].d * (float)y[i].q[j];
}

size_t quant_act_bytes(enum quant_act a, size_t n)
{
    switch (a) {
    case QUANT_ACT_Q8_0:
        return n / 32 * sizeof(struct q8_0_block);
    case QUANT_ACT_Q8_1:
        return n / 32 * sizeof(struct q8_1_block);
    case QUANT_ACT_Q8_K:
        return n / 256 * sizeof(struct q8_k_block);
    }
    return 0;
}

void quant_act_from_f32(void *y, enum quant_act a, const float *x, size_t n)
{
    switch (a) {
    case QUANT_ACT_Q8_0:
        quant_q8_0(y, x, n);
        break;
    case QUANT_ACT_Q8_1:
        quant_q8_1(y, x, n);
        break;
    case QUANT_ACT_Q8_K:
        quant_q8_k(y, x, n);
        break;
    }
}

