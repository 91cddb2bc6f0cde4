/* model make --up-spectrum (engine/import/spectrum.h): the text form is read and
 * refused as documented; generated matrices have the asked singular values
 * (measured by a Jacobi eigen-solve of their Gram matrix in double), the
 * flat fill's Frobenius norm, and bytes that depend on the seed alone;
 * synthetic_hf shapes the up projection (and a GLU's gate) and nothing
 * else, scales each neuron's bias by its row norm, and a power law puts far
 * more of the energy in the top directions than the flat fill does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine/import/safetensors.h"
#include "engine/import/spectrum.h"
#include "engine/import/synthetic.h"

static char why[1024];

/* ---- measuring a spectrum ---- */

/* The eigenvalues of the symmetric n x n matrix a (destroyed), by cyclic
 * Jacobi rotations, into ev, largest first. */
static void jacobi_eigenvalues(double *a, int n, double *ev)
{
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++)
                off += a[p * n + q] * a[p * n + q];
        if (off < 1e-30)
            break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                double apq = a[p * n + q];
                if (fabs(apq) < 1e-300)
                    continue;
                double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < n; k++) { /* columns p, q */
                    double kp = a[k * n + p], kq = a[k * n + q];
                    a[k * n + p] = c * kp - s * kq;
                    a[k * n + q] = s * kp + c * kq;
                }
                for (int k = 0; k < n; k++) { /* rows p, q */
                    double pk = a[p * n + k], qk = a[q * n + k];
                    a[p * n + k] = c * pk - s * qk;
                    a[q * n + k] = s * pk + c * qk;
                }
            }
    }
    for (int i = 0; i < n; i++)
        ev[i] = a[i * n + i];
    for (int i = 1; i < n; i++) /* insertion sort, descending */
        for (int j = i; j > 0 && ev[j] > ev[j - 1]; j--) {
            double t = ev[j];
            ev[j] = ev[j - 1];
            ev[j - 1] = t;
        }
}

/* The singular values of w (rows x cols), largest first, min(rows, cols)
 * of them: square roots of the eigenvalues of the smaller Gram matrix. */
static void singular_values(const float *w, int rows, int cols, double *sv)
{
    int n = rows < cols ? rows : cols;
    double *g = calloc((size_t)n * n, sizeof *g);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double x = 0;
            if (rows >= cols) /* W^T W */
                for (int k = 0; k < rows; k++)
                    x += (double)w[k * cols + i] * w[k * cols + j];
            else /* W W^T */
                for (int k = 0; k < cols; k++)
                    x += (double)w[i * cols + k] * w[j * cols + k];
            g[i * n + j] = x;
        }
    jacobi_eigenvalues(g, n, sv);
    for (int i = 0; i < n; i++)
        sv[i] = sqrt(sv[i] > 0 ? sv[i] : 0);
    free(g);
}

/* sum of the r largest sigma^2 / sum of all */
static double top_share(const double *sv, int n, int r)
{
    double top = 0, all = 0;
    for (int i = 0; i < n; i++) {
        all += sv[i] * sv[i];
        if (i < r)
            top += sv[i] * sv[i];
    }
    return top / all;
}

/* ---- the text form ---- */

static void test_parse(void)
{
    struct spectrum sp;
    char text[64];
    CHECK(spectrum_parse("flat", &sp, why, sizeof why) == 0 && sp.kind == SPECTRUM_FLAT);
    CHECK(spectrum_parse("power:1.0", &sp, why, sizeof why) == 0 && sp.kind == SPECTRUM_POWER && sp.alpha == 1);
    spectrum_format(&sp, text, sizeof text);
    CHECK_STR(text, "power:1");
    CHECK(spectrum_parse("power:0.35", &sp, why, sizeof why) == 0);
    spectrum_format(&sp, text, sizeof text);
    CHECK_STR(text, "power:0.35");
    CHECK(spectrum_parse("lowrank:8:0.1", &sp, why, sizeof why) == 0 && sp.kind == SPECTRUM_LOWRANK &&
          sp.rank == 8 && sp.noise == 0.1);
    spectrum_format(&sp, text, sizeof text);
    CHECK_STR(text, "lowrank:8:0.1");
    struct spectrum back;
    CHECK(spectrum_parse(text, &back, why, sizeof why) == 0 && back.rank == 8 && back.noise == 0.1);
    static const char *const bad[] = {"power:-1", "power:17", "power:", "power:x", "power:nan", "lowrank:0:0.1",
                                      "lowrank:8", "lowrank:8:1.5", "lowrank:-2:0.1", "lowrank::0.1",
                                      "foo", "", "Flat", "power"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        int rc = spectrum_parse(bad[i], &sp, why, sizeof why);
        if (rc == 0)
            fprintf(stderr, "'%s' was accepted\n", bad[i]);
        CHECK(rc == -1 && strstr(why, "--") == NULL && why[0] != '\0');
    }
    CHECK(spectrum_parse("lowrank:0:0.1", &sp, why, sizeof why) == -1 && strstr(why, "R must be") != NULL);
    CHECK(spectrum_parse("foo", &sp, why, sizeof why) == -1 && strstr(why, "power:ALPHA") != NULL);
    CHECK(spectrum_parse("lowrank:64:0", &sp, why, sizeof why) == 0);
    CHECK(spectrum_check_shape(&sp, 256, 64, why, sizeof why) == 0);
    sp.rank = 65;
    CHECK(spectrum_check_shape(&sp, 256, 64, why, sizeof why) == -1);
    CHECK(spectrum_check_shape(&sp, 64, 256, why, sizeof why) == -1);
}

/* ---- spectrum_matrix ---- */

/* w has sp's spectrum at Frobenius norm^2 frob2, within float rounding. */
static void check_matrix(const struct spectrum *sp, int rows, int cols)
{
    int r = rows < cols ? rows : cols;
    float *w = malloc((size_t)rows * cols * sizeof *w);
    double *want = malloc((size_t)r * sizeof *want), *got = malloc((size_t)r * sizeof *got);
    double frob2 = rows / 3.0;
    CHECK(spectrum_matrix(sp, (uint64_t)rows, (uint64_t)cols, frob2, 42, w, why, sizeof why) == 0);
    spectrum_sigmas(sp, (uint64_t)r, frob2, want);
    singular_values(w, rows, cols, got);
    double f = 0, worst = 0;
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        f += (double)w[i] * w[i];
    for (int i = 0; i < r; i++)
        worst = fmax(worst, fabs(got[i] - want[i]) / want[0]);
    printf("%d x %d: ||W||_F^2 %.6f (asked %.6f), largest singular value error %.2e of sigma_0\n", rows, cols, f,
           frob2, worst);
    CHECK_NEAR(f / frob2, 1, 1e-4);
    CHECK(worst < 1e-4);
    /* the same seed gives the same bytes; another seed other factors */
    float *again = malloc((size_t)rows * cols * sizeof *again);
    CHECK(spectrum_matrix(sp, (uint64_t)rows, (uint64_t)cols, frob2, 42, again, why, sizeof why) == 0);
    CHECK(memcmp(w, again, (size_t)rows * cols * sizeof *w) == 0);
    CHECK(spectrum_matrix(sp, (uint64_t)rows, (uint64_t)cols, frob2, 43, again, why, sizeof why) == 0);
    CHECK(memcmp(w, again, (size_t)rows * cols * sizeof *w) != 0);
    free(again);
    free(w);
    free(want);
    free(got);
}

/* No row or column is special: the factors spread every direction over
 * all neurons, so with a flat spectrum (power:0) every row has about the
 * same norm, and no entry stands out. */
static void check_mixing(void)
{
    const int rows = 256, cols = 64;
    struct spectrum flat0 = {.kind = SPECTRUM_POWER, .alpha = 0};
    float *w = malloc((size_t)rows * cols * sizeof *w);
    CHECK(spectrum_matrix(&flat0, rows, cols, rows / 3.0, 7, w, why, sizeof why) == 0);
    double lo = 1e9, hi = 0, peak = 0;
    for (int i = 0; i < rows; i++) {
        double q = 0;
        for (int j = 0; j < cols; j++) {
            q += (double)w[i * cols + j] * w[i * cols + j];
            peak = fmax(peak, fabs(w[i * cols + j]));
        }
        lo = fmin(lo, q);
        hi = fmax(hi, q);
    }
    /* rows of a Haar U (256 x 64) have |u_i|^2 ~ Beta(32, 96): 0.25 +- 0.04;
     * the row norms^2 here are (1/3) * 256 / 64 * |u_i|^2 */
    printf("power:0 row norms^2 between %.3f and %.3f (mean 1/3), largest |w| %.3f\n", lo, hi, peak);
    CHECK(lo > 0.15 && hi < 0.55);
    CHECK(peak < 0.4);
    free(w);
}

/* ---- synthetic_hf ---- */

struct hf {
    struct st_set st;
    char dir[600];
};

static int make(struct hf *h, const char *tmp, const char *name, const char *shape, const char *spec,
                double density)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct spectrum sp;
    char err[256];
    snprintf(h->dir, sizeof h->dir, "%s/%s", tmp, name);
    if (model_shape_load(&set, shape, &s, err, sizeof err) != 0 || spectrum_parse(spec, &sp, why, sizeof why) != 0)
        return -1;
    if (synthetic_hf(&s, DTYPE_F32, 11, density, &sp, h->dir, NULL, why, sizeof why) != 0)
        return -1;
    return st_open(&h->st, h->dir, why, sizeof why);
}

static void drop(struct hf *h)
{
    st_close(&h->st);
    const char *files[] = {"config.json", "model.safetensors", "tokenizer.json"};
    char p[700];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", h->dir, files[i]);
        unlink(p);
    }
    rmdir(h->dir);
}

static float *tensor(const struct hf *h, const char *name, uint64_t d0, uint64_t d1)
{
    uint64_t dims[2] = {d0, d1};
    float *t = st_read_f32(&h->st, name, d1 ? 2 : 1, dims, why, sizeof why);
    if (!t)
        fprintf(stderr, "%s\n", why);
    return t;
}

static int same_tensor(const struct hf *a, const struct hf *b, const char *name, uint64_t d0, uint64_t d1)
{
    float *x = tensor(a, name, d0, d1), *y = tensor(b, name, d0, d1);
    int same = x && y && memcmp(x, y, d0 * (d1 ? d1 : 1) * sizeof *x) == 0;
    free(x);
    free(y);
    return same;
}

/* Every layer's fc1 of opt-tiny (256 x 64): the power law's top singular
 * values follow (i+1)^-alpha, and its top-8 energy share beats flat's. */
static void test_opt_tiny(const char *tmp)
{
    static const char *const specs[] = {"flat", "power:0.5", "power:1", "power:2", "lowrank:8:0.1"};
    static const double alpha[] = {-1, 0.5, 1, 2, -1};
    enum { N = sizeof specs / sizeof specs[0], R = 8 };
    struct hf h[N];
    double share[N][2], frob[N][2];
    for (int k = 0; k < N; k++) {
        CHECK(make(&h[k], tmp, specs[k], "opt-tiny", specs[k], -1) == 0);
        for (int l = 0; l < 2; l++) {
            char name[96];
            snprintf(name, sizeof name, "model.decoder.layers.%d.fc1.weight", l);
            float *w = tensor(&h[k], name, 256, 64);
            if (!w)
                continue;
            double sv[64], f = 0;
            singular_values(w, 256, 64, sv);
            for (int i = 0; i < 256 * 64; i++)
                f += (double)w[i] * w[i];
            share[k][l] = top_share(sv, 64, R);
            frob[k][l] = f;
            for (int i = 1; i < 16 && alpha[k] > 0; i++)
                CHECK_NEAR(sv[i] / sv[0], pow(i + 1, -alpha[k]), 1e-4);
            if (k == N - 1) /* lowrank:8:0.1 */
                CHECK_NEAR(sv[R] / sv[R - 1], 0.1, 1e-4);
            free(w);
        }
        printf("opt-tiny fc1 %-14s top-%d energy share %.3f %.3f, ||W||_F^2 %.2f %.2f\n", specs[k], R,
               share[k][0], share[k][1], frob[k][0], frob[k][1]);
    }
    for (int l = 0; l < 2; l++) {
        /* the flat fill's share is about (8/64) * 2: Marchenko-Pastur's spread */
        CHECK(share[0][l] < 0.35);
        CHECK(share[2][l] > share[0][l] + 0.5);
        CHECK(share[1][l] > share[0][l] + 0.15);
        for (int k = 1; k < N; k++) /* asked: the flat fill's mean, 256 / 3 */
            CHECK_NEAR(frob[k][l], 256 / 3.0, 0.01);
        CHECK_NEAR(frob[0][l], 256 / 3.0, 256 / 3.0 * 0.03);
    }
    /* only fc1 differs; the rest is the flat model's of the same seed */
    CHECK(same_tensor(&h[0], &h[2], "model.decoder.embed_tokens.weight", 1024, 64));
    CHECK(same_tensor(&h[0], &h[2], "model.decoder.layers.1.self_attn.q_proj.weight", 64, 64));
    CHECK(same_tensor(&h[0], &h[2], "model.decoder.layers.0.fc1.bias", 256, 0));
    CHECK(same_tensor(&h[0], &h[2], "model.decoder.layers.0.fc2.weight", 64, 256));
    CHECK(same_tensor(&h[0], &h[2], "model.decoder.layers.1.fc2.weight", 64, 256));
    CHECK(!same_tensor(&h[0], &h[2], "model.decoder.layers.1.fc1.weight", 256, 64));
    for (int k = 0; k < N; k++)
        drop(&h[k]);
}

/* With a density each neuron's bias is quantile(D) times its row norm. */
static void test_row_bias(const char *tmp)
{
    struct hf h;
    CHECK(make(&h, tmp, "bias", "opt-tiny", "power:1", 0.05) == 0);
    float *w = tensor(&h, "model.decoder.layers.1.fc1.weight", 256, 64);
    float *b = tensor(&h, "model.decoder.layers.1.fc1.bias", 256, 0);
    double worst = 0, lo = 1e9, hi = 0;
    for (int i = 0; i < 256 && w && b; i++) {
        double q = 0;
        for (int j = 0; j < 64; j++)
            q += (double)w[i * 64 + j] * w[i * 64 + j];
        worst = fmax(worst, fabs(b[i] - (-1.6448536) * sqrt(q)));
        lo = fmin(lo, sqrt(q));
        hi = fmax(hi, sqrt(q));
    }
    printf("power:1 row norms %.3f .. %.3f (flat: 0.577), biases off quantile x norm by %.1e\n", lo, hi, worst);
    CHECK(worst < 1e-5);
    free(w);
    free(b);
    drop(&h);
}

/* llama-tiny: gate and up shaped alike, down left flat. */
static void test_glu(const char *tmp)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    char err[256];
    CHECK(model_shape_load(&set, "llama-tiny", &s, err, sizeof err) == 0);
    struct hf flat, pw;
    CHECK(make(&flat, tmp, "lflat", "llama-tiny", "flat", -1) == 0);
    CHECK(make(&pw, tmp, "lpow", "llama-tiny", "power:1", -1) == 0);
    int ff = (int)s.d_ff, d = (int)s.d_model;
    static const char *const shaped[] = {"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"};
    double *sv = malloc((size_t)d * sizeof *sv);
    for (int k = 0; k < 2; k++) {
        float *w = tensor(&pw, shaped[k], (uint64_t)ff, (uint64_t)d);
        if (!w)
            continue;
        singular_values(w, ff, d, sv);
        printf("llama-tiny %s: sigma_1/sigma_0 %.4f, top-8 share %.3f\n", shaped[k], sv[1] / sv[0],
               top_share(sv, d, 8));
        CHECK_NEAR(sv[1] / sv[0], 0.5, 1e-4);
        CHECK_NEAR(sv[7] / sv[0], 0.125, 1e-4);
        free(w);
    }
    free(sv);
    CHECK(same_tensor(&flat, &pw, "model.layers.0.mlp.down_proj.weight", (uint64_t)d, (uint64_t)ff));
    CHECK(same_tensor(&flat, &pw, "model.layers.1.self_attn.o_proj.weight", (uint64_t)d, (uint64_t)d));
    CHECK(!same_tensor(&flat, &pw, "model.layers.1.mlp.gate_proj.weight", (uint64_t)ff, (uint64_t)d));
    drop(&flat);
    drop(&pw);
}

/* A rank beyond the matrix is refused before anything is written. */
static void test_refused(const char *tmp)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    char err[256], dir[600];
    CHECK(model_shape_load(&set, "opt-tiny", &s, err, sizeof err) == 0);
    struct spectrum sp = {.kind = SPECTRUM_LOWRANK, .rank = 65, .noise = 0.1};
    snprintf(dir, sizeof dir, "%s/refused", tmp);
    CHECK(synthetic_hf(&s, DTYPE_F16, 1, -1, &sp, dir, NULL, why, sizeof why) == -1);
    CHECK(strstr(why, "rank 65") != NULL);
    CHECK(access(dir, F_OK) != 0);
}

int main(void)
{
    test_parse();
    struct spectrum p1 = {.kind = SPECTRUM_POWER, .alpha = 1}, lr = {.kind = SPECTRUM_LOWRANK, .rank = 5, .noise = 0.2};
    check_matrix(&p1, 256, 64);
    check_matrix(&p1, 64, 256);  /* fewer rows than columns */
    check_matrix(&lr, 100, 37);  /* no power of two */
    check_matrix(&p1, 1, 5);
    check_mixing();
    char tmp[] = "/tmp/flashbed-test-spectrum-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    test_opt_tiny(tmp);
    test_row_bias(tmp);
    test_glu(tmp);
    test_refused(tmp);
    CHECK(rmdir(tmp) == 0);
    return check_report("test_up_spectrum");
}
