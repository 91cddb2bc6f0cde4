/* The activation quantizers (quant_dot.h's quant_q8_0, quant_q8_1,
 * quant_q8_k): the library's blocks equal, byte for byte, ggml's
 * reference formulas written out plainly here (quantize_row_q8_0_ref and
 * q8_1's: scale amax / 127 as a half, q = roundf(x / scale), halves away
 * from zero; q8_K's: the first element of the largest magnitude sets the
 * scale -127 / max, q nearest with ties to even, at most 127, block sums
 * of 16). Whatever form the build computes them in (AVX2 lanes, or the
 * portable loops), on blocks that exercise each rule: random values over
 * 2^-30 .. 2^30, exact halves after scaling (both tie rules), the
 * largest magnitude twice with both signs, all zeros, tiny and subnormal
 * values (a subnormal scale), values near FLT_MAX, and NaN and
 * infinities (the scale NaN). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "engine/compute/quant_dot.h"
#include "engine/model/dtype.h"

static uint64_t rng_state = 0xAC7AC7AC7AC7AC71ull;

static uint64_t next64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float unit(void) /* uniform in [-1, 1) */
{
    return (float)((double)(next64() >> 11) * 0x1p-52 - 1.0);
}

enum { N = 256, KINDS = 9 };

/* block kind k of 256 values into x */
static void fill(float *x, int kind)
{
    float s = ldexpf(1.0f, (int)(next64() % 61) - 30);
    for (int j = 0; j < N; j++) {
        switch (kind) {
        case 0: x[j] = s * unit(); break;
        case 1: x[j] = (float)((int)(next64() % 254) - 127) + 0.5f; break; /* halves at scale 1 */
        case 2: x[j] = 0.0f; break;
        case 3: x[j] = 1e-38f * unit(); break;  /* a subnormal scale */
        case 4: x[j] = 1e-40f * unit(); break;  /* subnormal values */
        case 5: x[j] = 3e-36f * unit(); break;  /* near the smallest normal scale */
        case 6: x[j] = FLT_MAX * unit(); break;
        case 7: x[j] = s * unit(); break;
        case 8: x[j] = (float)((int)(next64() % 255) - 127); break; /* integers: q8_K's ties come from them */
        default: x[j] = 0.0f; break;
        }
    }
    if (kind == 1 || kind == 8) { /* the largest magnitude 127 exactly, first negative, then positive */
        x[next64() % 128] = -127.0f;
        x[128 + next64() % 128] = 127.0f;
    }
    if (kind == 8) /* halves at q8_K's scale -127 / -127 = 1 too */
        for (int j = 0; j < N; j += 3)
            x[j] = x[j] == -127.0f || x[j] == 127.0f ? x[j] : (float)((int)(next64() % 250) - 125) + 0.5f;
    if (kind == 7) { /* a NaN, an infinity of each sign, one block of 32 each */
        static const float odd[3] = {NAN, INFINITY, -INFINITY};
        for (int b = 0; b < 3; b++)
            x[32 * (int)(next64() % 8)] = odd[b];
    }
}

static void ref_q8_block(const float *x, uint16_t *d_half, int8_t *q, float *d_out)
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
    *d_out = d;
}

static void ref_q8_k(struct q8_k_block *y, const float *x)
{
    float max = 0.0f, amax = 0.0f;
    bool finite = true;
    for (int j = 0; j < N; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
        finite = finite && isfinite(x[j]);
    }
    memset(y, 0, sizeof *y);
    if (!finite) {
        y->d = NAN;
        return;
    }
    if (amax == 0.0f)
        return;
    float iscale = -127.0f / max;
    for (int j = 0; j < N; j++) {
        long v = lrintf(iscale * x[j]);
        y->q[j] = (int8_t)(v < 127 ? v : 127);
    }
    for (int j = 0; j < 16; j++) {
        int sum = 0;
        for (int k = 0; k < 16; k++)
            sum += y->q[16 * j + k];
        y->bsums[j] = (int16_t)sum;
    }
    y->d = 1.0f / iscale;
}

/* one block of 256 in each activation type: the count of types whose
 * bytes differ from the reference's */
static int check_block(const float *x)
{
    struct q8_0_block got0[N / 32], want0[N / 32];
    struct q8_1_block got1[N / 32], want1[N / 32];
    struct q8_k_block gotk, wantk;
    memset(want0, 0, sizeof want0);
    memset(want1, 0, sizeof want1);
    memset(got0, 0, sizeof got0);
    memset(got1, 0, sizeof got1);
    for (int b = 0; b < N / 32; b++) {
        float d;
        ref_q8_block(x + 32 * b, &want0[b].d, want0[b].q, &d);
        ref_q8_block(x + 32 * b, &want1[b].d, want1[b].q, &d);
        int sum = 0;
        for (int j = 0; j < 32; j++)
            sum += want1[b].q[j];
        want1[b].s = f32_to_f16((float)sum * d);
    }
    ref_q8_k(&wantk, x);
    quant_q8_0(got0, x, N);
    quant_q8_1(got1, x, N);
    quant_q8_k(&gotk, x, N);
    return (memcmp(got0, want0, sizeof got0) != 0) + (memcmp(got1, want1, sizeof got1) != 0) +
           (memcmp(&gotk, &wantk, sizeof gotk) != 0);
}

int main(void)
{
    static float x[N];
    int bad[KINDS] = {0};
    for (int round = 0; round < 400; round++)
        for (int kind = 0; kind < KINDS; kind++) {
            fill(x, kind);
            bad[kind] += check_block(x);
        }
    for (int kind = 0; kind < KINDS; kind++)
        CHECK_U64(bad[kind], 0);
    /* the tie rules themselves, on one block of 32 at scale 1 */
    for (int j = 0; j < N; j++)
        x[j] = 0.0f;
    x[0] = 127.0f, x[1] = 2.5f, x[2] = -2.5f, x[3] = 3.5f;
    struct q8_0_block b0[N / 32];
    quant_q8_0(b0, x, N);
    CHECK(b0[0].q[1] == 3 && b0[0].q[2] == -3 && b0[0].q[3] == 4);
    x[0] = -127.0f; /* q8_K's scale -127 / -127 = 1: ties to even */
    struct q8_k_block bk;
    quant_q8_k(&bk, x, N);
    CHECK(bk.q[1] == 2 && bk.q[2] == -2 && bk.q[3] == 4);
    return check_report("test_quant_act");
}
