/* The activation quantizers and the portable integer dot products
 * (quant_dot.h): per block an exact integer sum, then ggml's scale
 * arithmetic in f32. The weights' integers come from the layouts' one
 * reading (engine/model/dtype_quant.h). */
#include "engine/compute/quant_dot.h"

#include <math.h>
#include <string.h>

#include "engine/model/dtype_quant.h"

/* ---- quantizing the activations ---- */

/* A 32-element block's scale and roundf(x / scale), as q8_0 and q8_1 keep
 * them (ggml's quantize_row_q8_0_ref); the scale is returned. */
static float q8_block(const float *x, uint16_t *d_half, int8_t *q)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
    *d_half = f32_to_f16(d);
    for (int j = 0; j < 32; j++)
        q[j] = (int8_t)roundf(x[j] * id);
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
        for (int j = 0; j < 256; j++)
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        memset(&y[i], 0, sizeof y[i]);
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

/* ---- the dot products ---- */

static int isum(const int8_t *w, const int8_t *a, int n)
{
    int s = 0;
    for (int j = 0; j < n; j++)
        s += w[j] * a[j];
    return s;
}

static float dot_q4_0(const void *w, const void *act, int n)
{
    const uint8_t *b = w;
    const struct q8_0_block *a = act;
    int8_t q[32];
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++, b += 18) {
        quant_ints_q4_0(b, q);
        sum += (float)isum(q, a[i].q, 32) * quant_half_at(b) * f16_to_f32(a[i].d);
    }
    return sum;
}

static float dot_q5_0(const void *w, const void *act, int n)
{
    const uint8_t *b = w;
    const struct q8_0_block *a = act;
    int8_t q[32];
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++, b += 22) {
        quant_ints_q5_0(b, q);
        sum += (quant_half_at(b) * f16_to_f32(a[i].d)) * (float)isum(q, a[i].q, 32);
    }
    return sum;
}

static float dot_q8_0(const void *w, const void *act, int n)
{
    const uint8_t *b = w;
    const struct q8_0_block *a = act;
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++, b += 34)
        sum += (float)isum((const int8_t *)(b + 2), a[i].q, 32) * (quant_half_at(b) * f16_to_f32(a[i].d));
    return sum;
}

/* q4_1 and q5_1: d_w d_a sum(q_w q_a) + m_w s_a, bytes a block */
static float dot_min_32(const uint8_t *b, const struct q8_1_block *a, int n, size_t bytes,
                        void (*ints)(const uint8_t *, int8_t *))
{
    int8_t q[32];
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++, b += bytes) {
        ints(b, q);
        sum += (quant_half_at(b) * f16_to_f32(a[i].d)) * (float)isum(q, a[i].q, 32) +
               quant_half_at(b + 2) * f16_to_f32(a[i].s);
    }
    return sum;
}

static float dot_q4_1(const void *w, const void *act, int n) { return dot_min_32(w, act, n, 20, quant_ints_q4_1); }
static float dot_q5_1(const void *w, const void *act, int n) { return dot_min_32(w, act, n, 24, quant_ints_q5_1); }

static float dot_q2_k(const void *w, const void *act, int n)
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

static float dot_q3_k(const void *w, const void *act, int n)
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

/* q4_k and q5_k: a scale and a min per 32 elements (the mins against the
 * activation's sums of 16, two each) */
static float dot_k4(const uint8_t *b, const struct q8_k_block *a, int n, size_t bytes,
                    void (*ints)(const uint8_t *, int8_t *))
{
    int8_t q[256];
    float sum = 0.0f;
    for (int i = 0; i < n / 256; i++, b += bytes) {
        ints(b, q);
        int s = 0, mins = 0;
        for (int j = 0; j < 8; j++) {
            int sc, m;
            quant_k4_scale_min(b + 4, j, &sc, &m);
            s += sc * isum(q + 32 * j, a[i].q + 32 * j, 32);
            mins += m * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);
        }
        sum += quant_half_at(b) * a[i].d * (float)s - quant_half_at(b + 2) * a[i].d * (float)mins;
    }
    return sum;
}

static float dot_q4_k(const void *w, const void *act, int n) { return dot_k4(w, act, n, 144, quant_ints_q4_k); }
static float dot_q5_k(const void *w, const void *act, int n) { return dot_k4(w, act, n, 176, quant_ints_q5_k); }

static float dot_q6_k(const void *w, const void *act, int n)
{
    const uint8_t *b = w;
    const struct q8_k_block *a = act;
    int8_t q[256];
    float sum = 0.0f;
    for (int i = 0; i < n / 256; i++, b += 210) {
        const int8_t *sc = (const int8_t *)(b + 192);
        quant_ints_q6_k(b, q);
        int s = 0;
        for (int j = 0; j < 16; j++)
            s += sc[j] * isum(q + 16 * j, a[i].q + 16 * j, 16);
        sum += quant_half_at(b + 208) * a[i].d * (float)s;
    }
    return sum;
}

int quant_dot_of(enum fb_dtype t, quant_dot_fn *dot, enum quant_act *act)
{
    switch (t) {
    case DTYPE_F32:
    case DTYPE_F16:
    case DTYPE_BF16:
        return -1;
    case DTYPE_Q4_0:
        *dot = dot_q4_0, *act = QUANT_ACT_Q8_0;
        return 0;
    case DTYPE_Q4_1:
        *dot = dot_q4_1, *act = QUANT_ACT_Q8_1;
        return 0;
    case DTYPE_Q5_0:
        *dot = dot_q5_0, *act = QUANT_ACT_Q8_0;
        return 0;
    case DTYPE_Q5_1:
        *dot = dot_q5_1, *act = QUANT_ACT_Q8_1;
        return 0;
    case DTYPE_Q8_0:
        *dot = dot_q8_0, *act = QUANT_ACT_Q8_0;
        return 0;
    case DTYPE_Q2_K:
        *dot = dot_q2_k, *act = QUANT_ACT_Q8_K;
        return 0;
    case DTYPE_Q3_K:
        *dot = dot_q3_k, *act = QUANT_ACT_Q8_K;
        return 0;
    case DTYPE_Q4_K:
        *dot = dot_q4_k, *act = QUANT_ACT_Q8_K;
        return 0;
    case DTYPE_Q5_K:
        *dot = dot_q5_k, *act = QUANT_ACT_Q8_K;
        return 0;
    case DTYPE_Q6_K:
        *dot = dot_q6_k, *act = QUANT_ACT_Q8_K;
        return 0;
    }
    return -1;
}
