/* The block formats' compute path: the activation quantizers, the integer
 * dot products (engine/compute/quant_dot.h) and the CPU kernels' block
 * path built on them (cpu_kernels.h: matvec, the FFN, axpy_rows, embed).
 *
 * - q8_k (no gguf-py reference): the largest-magnitude element becomes
 *   -127, every element round-trips within half a step (|x - d q| <=
 *   |d| (1/2 + 2^-13): the step's half, plus the f32 roundings of x / d
 *   and of d itself, a few ulps of |d q| <= 127 |d|), the sums of 16 are
 *   the q's, a block of zeros is all zeros. q8_1: q8_0's d and q (which
 *   test_quant_decode checks against gguf-py) and s = half(d * sum q).
 * - Each weight type's dot product against decode(w) . decode(a) in
 *   double, on random blocks (random bytes, scales and mins moderate
 *   halves), 8 blocks of 256 or 64 of 32 elements. Tolerance: the dot
 *   product rounds each block's term (an exact integer sum times the
 *   scales' product, a few f32 roundings) and sums the terms in f32,
 *   while the reference rounds each decoded weight in f32: both are
 *   within (n_blocks + 8) * 4 * 2^-24 of M = sum |a_i| (|scale part_i| +
 *   |min part_i|) (the magnitudes before the min's cancellation), which
 *   for 64 blocks is under 2^-14 M: the bound used, 2^-14 M. q4_1 and q5_1
 *   add their activation's s, a half: m * s is off by up to 2^-11 of
 *   |m d_a sum q| <= 2^-11 M; their bound is 2^-14 M + 2^-11 M.
 * - A NaN or an infinity in x makes every type's dot product NaN.
 * - Where the build has a vector form of a dot product (AVX2: every type
 *   but q2_k and q3_k; AArch64 NEON: every type), it equals the portable form bit
 *   for bit (the same exact integer sums, the same f32 steps after them),
 *   on whole groups of eight blocks and on tails; the form compiled
 *   (quant_dot_form) is printed with the count (tools/check-arm.sh).
 * - The CPU kernels on the block types: matvec equals the dot product
 *   row by row, bit for bit, on 1 and 2 threads, and stays within the
 *   bound of decode + a double matvec; axpy_rows equals y += a * decode(w)
 *   in f32 (its definition); embed equals decode; the FFN equals its
 *   definition on the dot products (up, gate, act, then down decoded). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/settings.h"
#include "common/wtype.h"
#include "engine/compute/activation.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/compute/quant_dot.h"
#include "engine/model/dtype.h"
#include "engine/model/dtype_quant.h"

enum { N = 2048 }; /* elements of a row: 8 K-blocks, 64 blocks of 32 */

static uint64_t rng_state = 0x0123456789ABCDEFull;
static int identical, compared; /* dot products equal to the portable form's, for the report line */

static uint64_t next64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static float unit(void) { return (float)((double)(next64() >> 11) * 0x1p-52 - 1.0); }

/* A moderate half: +-[1, 2) * 2^-(0..8). */
static uint16_t moderate_half(void)
{
    uint64_t r = next64();
    float v = ldexpf(1.0f + (float)(r & 0xFFFF) / 65536.0f, -(int)((r >> 16) % 9));
    return f32_to_f16((r >> 32) & 1 ? -v : v);
}

/* rows of n elements of t: random bytes, each half moderate */
static uint8_t *random_rows(enum fb_dtype t, int rows, int n)
{
    size_t bytes = wtype_row_bytes(t, (uint64_t)n) * (size_t)rows, bb = wtype_block_bytes(t);
    uint8_t *w = malloc(bytes);
    if (!w)
        return NULL;
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)next64();
    int off[2], halves = quant_block_halves(t, off);
    for (size_t b = 0; b < bytes / bb; b++)
        for (int k = 0; k < halves; k++) {
            uint16_t h = moderate_half();
            memcpy(w + b * bb + off[k], &h, 2);
        }
    return w;
}

/* x: each block of 32 at its own scale, some blocks zeros */
static void random_x(float *x, int n)
{
    for (int b = 0; b < n / 32; b++) {
        float s = ldexpf(1.0f, (int)(next64() % 7) - 3);
        for (int j = 0; j < 32; j++)
            x[b * 32 + j] = b % 11 == 10 ? 0.0f : s * unit();
    }
}

/* decode(a): the activation as its blocks hold it */
static void decode_act(float *out, const void *a, enum quant_act act, int n)
{
    switch (act) {
    case QUANT_ACT_Q8_0:
        quant_decode_q8_0(out, a, (size_t)n / 32);
        break;
    case QUANT_ACT_Q8_1:
        for (int b = 0; b < n / 32; b++)
            for (int j = 0; j < 32; j++)
                out[b * 32 + j] = f16_to_f32(((const struct q8_1_block *)a)[b].d) *
                                  (float)((const struct q8_1_block *)a)[b].q[j];
        break;
    case QUANT_ACT_Q8_K:
        quant_decode_q8_k(out, a, (size_t)n / 256);
        break;
    }
}

/* M of the header for one row: the scale part decoded with the min's
 * half zeroed, the min part the difference. */
static double magnitude(const uint8_t *row, enum fb_dtype t, const float *a, int n, const float *w)
{
    int off[2], halves = quant_block_halves(t, off);
    bool has_min = t == DTYPE_Q4_1 || t == DTYPE_Q5_1 || t == DTYPE_Q2_K || t == DTYPE_Q4_K || t == DTYPE_Q5_K;
    size_t bytes = wtype_row_bytes(t, (uint64_t)n), bb = wtype_block_bytes(t);
    uint8_t *copy = malloc(bytes);
    float *scale_part = malloc((size_t)n * sizeof *scale_part);
    double m = 0.0;
    if (copy && scale_part) {
        memcpy(copy, row, bytes);
        for (size_t b = 0; has_min && halves == 2 && b < bytes / bb; b++)
            memset(copy + b * bb + off[1], 0, 2);
        dtype_to_f32(scale_part, copy, t, (size_t)n);
        for (int i = 0; i < n; i++)
            m += fabs((double)a[i]) * (fabs((double)scale_part[i]) + fabs((double)scale_part[i] - w[i]));
    }
    free(copy);
    free(scale_part);
    return m;
}

struct dot_case {
    quant_dot_fn dot, portable;
    enum quant_act act;
    void *xq;        /* x quantized */
    float *a, *w;    /* decode(xq), decode(row) */
};

/* One weight type's dot products on `rows` random rows; the worst
 * |error| / M into *worst. */
static void check_dot_type(enum fb_dtype t, int rows, double *worst)
{
    struct dot_case c;
    float x[N];
    enum quant_act act2;
    CHECK(quant_dot_of(t, &c.dot, &c.act) == 0);
    CHECK(quant_dot_portable(t, &c.portable, &act2) == 0 && act2 == c.act);
    uint8_t *w = random_rows(t, rows, N);
    c.xq = malloc(quant_act_bytes(c.act, N));
    c.a = malloc(N * sizeof *c.a);
    c.w = malloc(N * sizeof *c.w);
    CHECK(w && c.xq && c.a && c.w);
    if (w && c.xq && c.a && c.w) {
        random_x(x, N);
        quant_act_from_f32(c.xq, c.act, x, N);
        decode_act(c.a, c.xq, c.act, N);
        double bound = 0x1p-14 + (c.act == QUANT_ACT_Q8_1 ? 0x1p-11 : 0.0);
        for (int r = 0; r < rows; r++) {
            const uint8_t *row = w + (size_t)r * wtype_row_bytes(t, N);
            dtype_to_f32(c.w, row, t, N);
            double ref = 0.0, m = magnitude(row, t, c.a, N, c.w);
            for (int i = 0; i < N; i++)
                ref += (double)c.w[i] * (double)c.a[i];
            float got = c.dot(row, c.xq, N), portable = c.portable(row, c.xq, N);
            double err = fabs((double)got - ref);
            CHECK(err <= bound * m);
            CHECK(memcmp(&got, &portable, sizeof got) == 0); /* the vector form's bits are the portable one's */
            identical += memcmp(&got, &portable, sizeof got) == 0;
            int part = N - 3 * (int)wtype_block_elems(t); /* a count of blocks no multiple of 8: the tails */
            got = c.dot(row, c.xq, part), portable = c.portable(row, c.xq, part);
            CHECK(memcmp(&got, &portable, sizeof got) == 0);
            identical += memcmp(&got, &portable, sizeof got) == 0;
            compared += 2;
            *worst = fmax(*worst, m > 0 ? err / m : 0.0);
        }
    }
    free(w);
    free(c.xq);
    free(c.a);
    free(c.w);
}

/* A NaN or an infinity in x: every type's dot product is NaN. */
static void test_nonfinite(void)
{
    static float x[N];
    float poison[] = {NAN, INFINITY, -INFINITY};
    for (int t = WTYPE_FLOAT_COUNT; t < DTYPE_COUNT; t++)
        for (int p = 0; p < 3; p++) {
            quant_dot_fn dot;
            enum quant_act act;
            CHECK(quant_dot_of((enum fb_dtype)t, &dot, &act) == 0);
            random_x(x, N);
            x[300] = poison[p];
            uint8_t *w = random_rows((enum fb_dtype)t, 1, N);
            void *xq = malloc(quant_act_bytes(act, N));
            if (w && xq) {
                quant_act_from_f32(xq, act, x, N);
                CHECK(isnan(dot(w, xq, N)));
            }
            free(w);
            free(xq);
        }
}

static void test_dots(void)
{
    for (int t = WTYPE_FLOAT_COUNT; t < DTYPE_COUNT; t++) {
        double worst = 0.0;
        check_dot_type((enum fb_dtype)t, 16, &worst);
        printf("%-5s dot: worst |error| / M = %.2e\n", wtype_name((enum fb_dtype)t), worst);
    }
    printf("quant_dot form: %s; %d of %d dot products bit-identical to the portable form\n", quant_dot_form(),
           identical, compared);
    quant_dot_fn dot;
    enum quant_act act;
    CHECK(quant_dot_of(DTYPE_F16, &dot, &act) == -1); /* a float type has no block path */
}

static void test_q8_k(void)
{
    float x[512];
    struct q8_k_block y[2];
    for (int i = 0; i < 256; i++)
        x[i] = 3.0f * unit();
    x[77] = -5.0f; /* the largest magnitude */
    memset(x + 256, 0, 256 * sizeof *x);
    quant_q8_k(y, x, 512);
    CHECK(y[0].q[77] == -127);
    int bad = 0;
    for (int i = 0; i < 256; i++)
        bad += !(fabsf(x[i] - y[0].d * (float)y[0].q[i]) <= fabsf(y[0].d) * (0.5f + 0x1p-13f));
    CHECK(bad == 0);
    for (int j = 0; j < 16; j++) {
        int sum = 0;
        for (int k = 0; k < 16; k++)
            sum += y[0].q[16 * j + k];
        CHECK(sum == y[0].bsums[j]);
        CHECK(y[1].bsums[j] == 0);
    }
    CHECK(y[1].d == 0.0f && y[1].q[0] == 0 && y[1].q[255] == 0);
    CHECK_U64(quant_act_bytes(QUANT_ACT_Q8_K, 512), 2 * 292);
}

static void test_q8_1(void)
{
    float x[64];
    random_x(x, 64);
    struct q8_0_block y0[2];
    struct q8_1_block y1[2];
    quant_q8_0(y0, x, 64);
    quant_q8_1(y1, x, 64);
    for (int b = 0; b < 2; b++) {
        float amax = 0.0f;
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            amax = fmaxf(amax, fabsf(x[32 * b + j]));
            sum += y1[b].q[j];
        }
        CHECK(y1[b].d == y0[b].d && memcmp(y1[b].q, y0[b].q, 32) == 0);
        CHECK(y1[b].s == f32_to_f16((float)sum * (amax / 127)));
    }
    CHECK_U64(quant_act_bytes(QUANT_ACT_Q8_1, 64), 72);
}

/* ---- the CPU kernels' block path ---- */

enum { ROWS = 40, BUNDLES = 24 };

/* matvec: each row's dot product against x quantized once, plus bias */
static void check_matvec(struct cpu_kernels *k, enum fb_dtype t, const uint8_t *w, const float *x, const void *xq,
                         quant_dot_fn dot)
{
    float out[ROWS], bias[ROWS];
    for (int r = 0; r < ROWS; r++)
        bias[r] = unit();
    ck_matvec(k, out, w, t, x, bias, ROWS, N);
    int bad = 0;
    for (int r = 0; r < ROWS; r++) {
        float want = dot(w + (size_t)r * wtype_row_bytes(t, N), xq, N) + bias[r];
        bad += memcmp(&want, &out[r], sizeof want) != 0;
    }
    CHECK(bad == 0);
}

/* axpy_rows: y += a_r * decode(row r), rows in order, in f32; and embed */
static void check_axpy_embed(struct cpu_kernels *k, enum fb_dtype t, const uint8_t *w)
{
    static float y[N], want[N], row[N];
    const void *rows[ROWS];
    float a[ROWS];
    for (int i = 0; i < N; i++)
        y[i] = want[i] = unit();
    for (int r = 0; r < ROWS; r++) {
        rows[r] = w + (size_t)r * wtype_row_bytes(t, N);
        a[r] = r % 5 == 3 ? 0.0f : unit();
        dtype_to_f32(row, rows[r], t, N);
        for (int i = 0; a[r] != 0.0f && i < N; i++)
            want[i] += a[r] * row[i];
    }
    ck_axpy_rows(k, y, N, rows, a, ROWS, t);
    CHECK(memcmp(y, want, sizeof y) == 0);
    ck_embed(k, y, w, t, 7, N);
    dtype_to_f32(want, rows[7], t, N);
    CHECK(memcmp(y, want, sizeof y) == 0);
}

/* The FFN (GLU, SiLU) by its definition: h_r = silu(gate_r . xq) *
 * (up_r . xq); out = sum over the 16 groups, in order, of each group's
 * sum of h_r * decode(down_r) in order (the kernel's fixed grouping). */
static void check_ffn(struct cpu_kernels *k, enum fb_dtype t, const uint8_t *bundles, const float *x,
                      const void *xq, quant_dot_fn dot)
{
    static float out[N], want[N], part[N], down[N];
    struct arch a = {.act = ACT_SILU, .glu = true};
    size_t row = wtype_row_bytes(t, N), stride = 3 * row;
    ck_ffn_rows(k, out, bundles, stride, BUNDLES, NULL, x, N, t, &a);
    memset(want, 0, sizeof want);
    for (int g = 0; g < 16; g++) {
        memset(part, 0, sizeof part);
        for (int r = BUNDLES * g / 16; r < BUNDLES * (g + 1) / 16; r++) {
            const uint8_t *b = bundles + (size_t)r * stride;
            float z = dot(b, xq, N), h = activation_apply_t(dot(b + row, xq, N), ACT_SILU, 0.0f) * z;
            dtype_to_f32(down, b + 2 * row, t, N);
            for (int i = 0; h != 0.0f && i < N; i++)
                part[i] += h * down[i];
        }
        for (int i = 0; i < N; i++)
            want[i] += part[i];
    }
    CHECK(memcmp(out, want, sizeof out) == 0);
}

static void test_kernels(void)
{
    struct fb_settings set = fb_settings_defaults();
    set.min_parallel_work = 1; /* the team shares out even these small steps */
    char err[256];
    for (int threads = 1; threads <= 2; threads++) {
        struct cpu_kernels *k = ck_create(&set, threads, N, 1, 1, err, sizeof err);
        CHECK(k != NULL);
        for (int i = WTYPE_FLOAT_COUNT; k && i < DTYPE_COUNT; i++) {
            enum fb_dtype t = (enum fb_dtype)i;
            quant_dot_fn dot;
            enum quant_act act;
            static float x[N];
            CHECK(quant_dot_of(t, &dot, &act) == 0);
            random_x(x, N);
            void *xq = malloc(quant_act_bytes(act, N));
            uint8_t *w = random_rows(t, 3 * BUNDLES > ROWS ? 3 * BUNDLES : ROWS, N);
            CHECK(xq && w);
            if (xq && w) {
                quant_act_from_f32(xq, act, x, N);
                check_matvec(k, t, w, x, xq, dot);
                check_axpy_embed(k, t, w);
                check_ffn(k, t, w, x, xq, dot);
            }
            free(xq);
            free(w);
        }
        ck_destroy(k);
    }
}

int main(void)
{
    test_q8_k();
    test_q8_1();
    test_dots();
    test_nonfinite();
    test_kernels();
    return check_report("test_quant_dot");
}
