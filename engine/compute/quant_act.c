/* The activation quantizers of the block types' dot products
 * (quant_dot.h's contract): q8_0, q8_1 and q8_k as ggml's
 * quantize_row_*_ref write them. */
#include "engine/compute/quant_dot.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "engine/model/dtype.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

/* A 32-element block's scale and roundf(x / scale), as q8_0 and q8_1 keep
 * them (ggml's quantize_row_q8_0_ref: lroundf rounds as roundf does, and
 * leaves no undefined conversion for a value out of range); the scale is
 * returned. A NaN or infinite x makes the scale NaN, so that every dot
 * product with the block is NaN, as the float path's would be (ggml's
 * result there depends on where in the block the NaN is). The portable
 * form, and the vector form's for a block that is not finite. */
static float q8_block_portable(const float *x, uint16_t *d_half, int8_t *q)
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

#if defined(__AVX2__)
/* Below this largest magnitude a block's scale would be subnormal (or its
 * inverse infinite): rounded so coarsely that a value could quantize
 * beyond 127, which the portable forms wrap as lroundf's long converted
 * and the vector forms would saturate. Such a block takes the portable
 * form: never a different byte. */
#define VECTOR_AMAX_MIN 1e-35f

/* The same bits as q8_block_portable, eight lanes at a time (a decode
 * step quantizes every matrix-vector product's input: lroundf's call per
 * element was a tenth of a small model's step). For finite x: the largest
 * |x| is the same whatever the order; x * id is the same product; and
 * roundf(v) = trunc(v) + sign(v) where |v - trunc(v)| >= 1/2, v - trunc(v)
 * being exact (Sterbenz). The block's values round into [-127, 127], so
 * the saturating packs change none. */
static float q8_block(const float *x, uint16_t *d_half, int8_t *q)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(FLT_MAX);
    __m256 v[4], amax = _mm256_setzero_ps();
    int finite = 0xFF;
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        __m256 a = _mm256_andnot_ps(sign, v[k]);
        finite &= _mm256_movemask_ps(_mm256_cmp_ps(a, big, _CMP_LE_OQ));
        amax = _mm256_max_ps(amax, a);
    }
    float lanes[8], m = 0.0f;
    _mm256_storeu_ps(lanes, amax);
    for (int k = 0; k < 8; k++)
        m = lanes[k] > m ? lanes[k] : m;
    if (finite != 0xFF || (m != 0.0f && m < VECTOR_AMAX_MIN))
        return q8_block_portable(x, d_half, q);
    float d = m / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
    *d_half = f32_to_f16(d);
    const __m256 vid = _mm256_set1_ps(id), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    __m256i n[4];
    for (int k = 0; k < 4; k++) {
        __m256 s = _mm256_mul_ps(v[k], vid);
        __m256 t = _mm256_round_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m256 up = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(s, t)), half, _CMP_GE_OQ);
        __m256 step = _mm256_and_ps(up, _mm256_or_ps(one, _mm256_and_ps(sign, s)));
        n[k] = _mm256_cvttps_epi32(_mm256_add_ps(t, step));
    }
    __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
    bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(void *)q, bytes);
    return d;
}
#else
#define q8_block q8_block_portable
#endif

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

/* A q8_K block's sums of each 16 and its scale, once its q are written
 * (both forms of the quantizer). */
static void q8k_finish(struct q8_k_block *y, float iscale)
{
    for (int j = 0; j < 16; j++) {
        int sum = 0;
        for (int k = 0; k < 16; k++)
            sum += y->q[16 * j + k];
        y->bsums[j] = (int16_t)sum;
    }
    y->d = 1.0f / iscale;
}

/* A 256-element q8_k block as ggml's quantize_row_q8_K_ref writes it:
 * the scale from the first element of the largest magnitude (its sign
 * too), each q nearest with ties to even (ggml's nearest_int), at most
 * 127. The portable form, and the vector form's for a block that is not
 * finite. */
static void q8k_block_portable(struct q8_k_block *y, const float *x)
{
    float max = 0.0f, amax = 0.0f;
    bool finite = true;
    for (int j = 0; j < 256; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
        finite = finite && isfinite(x[j]);
    }
    memset(y, 0, sizeof *y);
    if (!finite) { /* NaN through every dot product (as q8_block) */
        y->d = NAN;
        return;
    }
    if (amax == 0.0f)
        return;
    float iscale = -127.0f / max;
    for (int j = 0; j < 256; j++) {
        long v = lrintf(iscale * x[j]); /* nearest, ties to even: ggml's nearest_int */
        y->q[j] = (int8_t)(v < 127 ? v : 127);
    }
    q8k_finish(y, iscale);
}

#if defined(__AVX2__)
/* The largest |x[j]| of a finite block of 256 into *amax (any order finds
 * the same), and whether the block is finite. */
static bool q8_k_amax(const float *x, float *amax)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(FLT_MAX);
    __m256 m = _mm256_setzero_ps();
    int finite = 0xFF;
    for (int k = 0; k < 256; k += 8) {
        __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k));
        finite &= _mm256_movemask_ps(_mm256_cmp_ps(a, big, _CMP_LE_OQ));
        m = _mm256_max_ps(m, a);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, m);
    *amax = 0.0f;
    for (int k = 0; k < 8; k++)
        *amax = lanes[k] > *amax ? lanes[k] : *amax;
    return finite == 0xFF;
}

/* The same bits as q8k_block_portable, eight lanes at a time: the first
 * element whose magnitude is the largest gives the scale, and rounding
 * in the current direction is lrintf's. */
static void q8k_block(struct q8_k_block *y, const float *x)
{
    float amax;
    if (!q8_k_amax(x, &amax) || amax < VECTOR_AMAX_MIN) {
        q8k_block_portable(y, x);
        return;
    }
    const __m256 sign = _mm256_set1_ps(-0.0f), vamax = _mm256_set1_ps(amax);
    int first = 0;
    for (int k = 0; k < 256; k += 8) {
        int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)), vamax, _CMP_EQ_OQ));
        if (hit) {
            first = k + __builtin_ctz((unsigned)hit);
            break;
        }
    }
    float iscale = -127.0f / x[first];
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int k = 0; k < 256; k += 32) {
        __m256i n[4];
        for (int l = 0; l < 4; l++) {
            __m256 r = _mm256_round_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(x + k + 8 * l)), _MM_FROUND_CUR_DIRECTION);
            n[l] = _mm256_min_epi32(_mm256_cvtps_epi32(r), top);
        }
        __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
        _mm256_storeu_si256((__m256i *)(void *)(y->q + k), _mm256_permutevar8x32_epi32(bytes, order));
    }
    q8k_finish(y, iscale);
}
#else
#define q8k_block q8k_block_portable
#endif

void quant_q8_k(struct q8_k_block *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n / 256; i++)
        q8k_block(&y[i], x + 256 * i);
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

