/* The CPU kernels' matvec and FFN against double-precision sums, over
 * shapes that reach every path of the kernels (paired rows and an odd last
 * row, the 32-wide steps, the 8-wide and scalar tails, biases, short row
 * chunks taken by other threads), in f32, f16 and bf16, the FFN with every
 * activation (plain and GLU); and the same bits whatever the number of
 * threads; RoPE, whole and partial, against its formula; and the read loop
 * behind --bandwidth reads every byte of its buffer once, whatever the
 * number of workers. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/compute/membw.h"
#include "engine/model/dtype.h"


/* n weights of type t, and their values as f32 */
static void *weights(enum fb_dtype t, size_t n, float *val)
{
    void *w = malloc(wtype_row_bytes(t, n));
    for (size_t i = 0; i < n; i++) {
        float v = uniform();
        if (t == DTYPE_F32) {
            ((float *)w)[i] = v;
        } else {
            uint16_t h = t == DTYPE_F16 ? f32_to_f16(v) : f32_to_bf16(v);
            ((uint16_t *)w)[i] = h;
            v = t == DTYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h);
        }
        val[i] = v;
    }
    return w;
}

/* The activations in double, written from their definitions. */
static double act_ref(double v, enum activation act, double t)
{
    switch (act) {
    case ACT_RELU:
        return v > 0 ? v : 0;
    case ACT_SILU:
        return v / (1.0 + exp(-v));
    case ACT_GELU:
        return v * 0.5 * erfc(-v / sqrt(2.0));
    case ACT_GELU_TANH:
        return 0.5 * v * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * pow(v, 3))));
    case ACT_SQUARED_RELU:
        return v > 0 ? v * v : 0;
    case ACT_FATRELU:
        return v > t ? v : 0;
    }
    return NAN;
}

static const int max_threads = 3;

/* Every call on the thread team, however small. */
static struct fb_settings team_settings(void)
{
    struct fb_settings set = fb_settings_defaults();
    set.min_parallel_work = 0;
    return set;
}

static void test_matvec(enum fb_dtype t, int rows, int cols, bool bias)
{
    const struct fb_settings set = team_settings();
    float *val = malloc((size_t)rows * cols * sizeof *val), *x = malloc((size_t)cols * sizeof *x);
    float *b = malloc((size_t)rows * sizeof *b);
    void *w = weights(t, (size_t)rows * cols, val);
    for (int i = 0; i < cols; i++)
        x[i] = uniform();
    for (int r = 0; r < rows; r++)
        b[r] = uniform();
    float *out[4];
    for (int th = 1; th <= max_threads; th++) {
        struct cpu_kernels *be = ck_create(&set, th, (size_t)cols, 1, 1, NULL, 0);
        CHECK(be != NULL);
        out[th] = malloc((size_t)rows * sizeof *out[th]);
        ck_matvec(be, out[th], w, t, x, bias ? b : NULL, rows, cols);
        ck_destroy(be);
    }
    int bad = 0, differ = 0;
    for (int r = 0; r < rows; r++) {
        double want = bias ? b[r] : 0.0, mag = 1.0;
        for (int i = 0; i < cols; i++) {
            want += (double)val[(size_t)r * cols + i] * x[i];
            mag += fabs((double)val[(size_t)r * cols + i] * x[i]);
        }
        if (!(fabs(out[1][r] - want) <= 1e-6 * mag))
            bad++;
        for (int th = 2; th <= max_threads; th++)
            if (memcmp(&out[1][r], &out[th][r], sizeof(float)))
                differ++;
    }
    if (bad || differ)
        fprintf(stderr, "matvec %s %dx%d%s: %d rows off, %d differ between thread counts\n", wtype_name(t),
                rows, cols, bias ? " + bias" : "", bad, differ);
    CHECK(bad == 0);
    CHECK(differ == 0);
    for (int th = 1; th <= max_threads; th++)
        free(out[th]);
    free(w);
    free(val);
    free(x);
    free(b);
}

/* The FFN over n_rows bundles of values val (up | gate | down) in double
 * precision into want, with the sum of the terms' magnitudes into mag
 * (the scale of the rounding to allow); ub: the up biases or NULL. */
static void ffn_reference(const float *val, int n_rows, int d, const struct arch *a, const float *ub,
                          const float *x, double *want, double *mag)
{
    bool glu = a->glu;
    int parts = glu ? 3 : 2;
    for (int r = 0; r < n_rows; r++) {
        const float *v = val + (size_t)r * parts * d;
        double z = ub ? ub[r] : 0.0, g = 0.0;
        for (int i = 0; i < d; i++) {
            z += (double)v[i] * x[i];
            if (glu)
                g += (double)v[d + i] * x[i];
        }
        double h = glu ? act_ref(g, a->act, a->fatrelu_threshold) * z : act_ref(z, a->act, a->fatrelu_threshold);
        const float *down = v + (size_t)(parts - 1) * d;
        for (int i = 0; i < d; i++) {
            want[i] += h * down[i];
            mag[i] += fabs(h * down[i]);
        }
    }
}

/* Bundles of up | gate | down (gate only when a->glu), stride padded. */
static void test_ffn(enum fb_dtype t, int n_rows, int d, const struct arch *a, bool up_bias)
{
    const struct fb_settings set = team_settings();
    bool glu = a->glu;
    int parts = glu ? 3 : 2;
    size_t bundle = (size_t)parts * wtype_row_bytes(t, (uint64_t)d), stride = (bundle + 63) / 64 * 64;
    char *rows = calloc((size_t)n_rows, stride);
    float *val = malloc((size_t)n_rows * parts * d * sizeof *val), *x = malloc((size_t)d * sizeof *x);
    float *ub = malloc((size_t)n_rows * sizeof *ub);
    for (int r = 0; r < n_rows; r++) {
        void *w = weights(t, (size_t)parts * d, val + (size_t)r * parts * d);
        memcpy(rows + (size_t)r * stride, w, bundle);
        free(w);
        ub[r] = 0.2f * uniform();
    }
    for (int i = 0; i < d; i++)
        x[i] = uniform();
    float *out[4];
    for (int th = 1; th <= max_threads; th++) {
        struct cpu_kernels *be = ck_create(&set, th, (size_t)d, 1, 1, NULL, 0);
        CHECK(be != NULL);
        out[th] = malloc((size_t)d * sizeof *out[th]);
        ck_ffn_rows(be, out[th], rows, stride, n_rows, up_bias ? ub : NULL, x, d, t, a);
        ck_destroy(be);
    }
    double *want = calloc((size_t)d, sizeof *want), *mag = calloc((size_t)d, sizeof *mag);
    ffn_reference(val, n_rows, d, a, up_bias ? ub : NULL, x, want, mag);
    int bad = 0, differ = 0;
    for (int i = 0; i < d; i++) {
        /* h carries the rounding of two d-long sums */
        if (!(fabs(out[1][i] - want[i]) <= 1e-5 * (mag[i] + 1.0) * sqrt((double)d)))
            bad++;
        for (int th = 2; th <= max_threads; th++)
            if (memcmp(&out[1][i], &out[th][i], sizeof(float)))
                differ++;
    }
    if (bad || differ)
        fprintf(stderr, "ffn %s %d x %d%s act %d%s: %d outputs off, %d differ between thread counts\n",
                wtype_name(t), n_rows, d, glu ? " glu" : "", (int)a->act, up_bias ? " bias" : "", bad, differ);
    CHECK(bad == 0);
    CHECK(differ == 0);
    for (int th = 1; th <= max_threads; th++)
        free(out[th]);
    free(want);
    free(mag);
    free(rows);
    free(val);
    free(x);
    free(ub);
}

static void test_read_share(void)
{
    const struct fb_settings set = fb_settings_defaults();
    enum { N = 64 * 1000 + 48 }; /* floats (a multiple of 16: aligned_alloc wants whole 64-byte blocks); the last 48 are below a worker's 64-float step */
    float *buf = aligned_alloc(64, N * sizeof *buf);
    for (int i = 0; i < N; i++)
        buf[i] = i < 64 * 1000 ? 1.0f : 1e9f;
    for (int workers = 1; workers <= 3; workers++) {
        double sum = 0;
        for (int w = 0; w < workers; w++)
            sum += membw_read_share(buf, 64 * 1000 * sizeof *buf, w, workers);
        CHECK(sum == 64 * 1000.0);
        struct cpu_kernels *be = ck_create(&set, workers, 8, 1, 1, NULL, 0);
        CHECK(be != NULL);
        double s = ck_read_pass(be, buf, N * sizeof *buf);
        CHECK(s > 0 && s < 10);
        ck_destroy(be);
    }
    free(buf);
}

/* Adjacent pairs (i, i+1) of each head's first rot dims turn by
 * pos * theta^(-i/rot) (the plain table arch_rope_freqs makes, scale 1);
 * the dims past rot are not touched. */
static void test_rope(int heads, int head_dim, int rot, int pos, float theta)
{
    struct arch a = {.position = POSITION_ROPE, .rope_theta = theta, .rope_dims = (uint32_t)rot};
    float freq[32], scale = 0;
    arch_rope_freqs(&a, freq, &scale);
    CHECK(scale == 1.0f);
    const struct fb_settings set = fb_settings_defaults();
    float v[64], orig[64];
    for (int i = 0; i < heads * head_dim; i++)
        v[i] = orig[i] = uniform();
    struct cpu_kernels *be = ck_create(&set, 1, 64, 1, 1, NULL, 0);
    CHECK(be != NULL);
    ck_rope(be, v, heads, head_dim, rot, pos, freq, scale);
    ck_destroy(be);
    double worst = 0;
    bool rest_same = true;
    for (int h = 0; h < heads; h++) {
        const float *o = orig + h * head_dim, *got = v + h * head_dim;
        for (int i = 0; i < rot; i += 2) {
            double a = pos * pow(theta, -(double)i / rot);
            worst = fmax(worst, fabs(got[i] - (o[i] * cos(a) - o[i + 1] * sin(a))));
            worst = fmax(worst, fabs(got[i + 1] - (o[i] * sin(a) + o[i + 1] * cos(a))));
        }
        for (int i = rot; i < head_dim; i++)
            rest_same &= got[i] == o[i];
    }
    if (worst > 1e-5 || !rest_same)
        fprintf(stderr, "rope %d heads x %d, %d rotated, pos %d: off by %g%s\n", heads, head_dim, rot, pos, worst,
                rest_same ? "" : ", unrotated dims changed");
    CHECK(worst <= 1e-5);
    CHECK(rest_same);
}

int main(void)
{
    test_rope(4, 16, 16, 7, 10000.0f);
    test_rope(4, 16, 8, 7, 25000.0f); /* Persimmon: half the head */
    test_rope(3, 20, 8, 13, 10000.0f); /* Phi-2's 40% */
    test_rope(2, 8, 2, 200, 10000.0f);
    test_read_share();
    /* from here on every call is on the thread team (team_settings) */
    const enum fb_dtype types[] = {DTYPE_F32, DTYPE_F16, DTYPE_BF16};
    const int row_counts[] = {1, 2, 3, 17, 33, 100, 257};
    const int col_counts[] = {1, 7, 8, 9, 31, 32, 33, 40, 72, 100, 2053};
    for (int ti = 0; ti < 3; ti++)
        for (size_t ri = 0; ri < sizeof row_counts / sizeof *row_counts; ri++)
            for (size_t ci = 0; ci < sizeof col_counts / sizeof *col_counts; ci++)
                test_matvec(types[ti], row_counts[ri], col_counts[ci], (ri + ci) % 2 == 0);
    const int ffn_rows[] = {1, 5, 16, 17, 100, 300};
    const int ffn_d[] = {8, 33, 64, 100, 520};
    /* every activation, each as a plain FFN or a GLU the architectures use;
     * the kernel's paths are the first three's, so the others take two widths */
    static const struct {
        struct arch a;
        bool bias;
    } ffns[] = {
        {{.act = ACT_SILU, .glu = true}, false},
        {{.act = ACT_RELU}, false},
        {{.act = ACT_SILU, .glu = true}, true},
        {{.act = ACT_GELU}, false},
        {{.act = ACT_GELU_TANH}, true},
        {{.act = ACT_SQUARED_RELU}, true},
        {{.act = ACT_FATRELU, .glu = true, .fatrelu_threshold = 0.05f}, false},
        {{.act = ACT_FATRELU, .fatrelu_threshold = 0.1f}, true},
    };
    for (int ti = 0; ti < 3; ti++)
        for (size_t ri = 0; ri < sizeof ffn_rows / sizeof *ffn_rows; ri++)
            for (size_t di = 0; di < sizeof ffn_d / sizeof *ffn_d; di++)
                for (size_t v = 0; v < sizeof ffns / sizeof *ffns; v++)
                    if (v < 3 || ffn_d[di] == 33 || ffn_d[di] == 100)
                        test_ffn(types[ti], ffn_rows[ri], ffn_d[di], &ffns[v].a, ffns[v].bias);
    return check_report("test_engine_backend");
}
