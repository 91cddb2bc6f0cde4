/* The opencl backend on whatever OpenCL device is here (PoCL's CPU device
 * on a machine without a GPU) against the CPU kernels: every op on random
 * inputs of awkward sizes (1, 7, 129 rows; 3, 65, 1000 columns; not
 * multiples of a group) in f32, f16 and bf16, every activation, at
 * non-zero offsets into its buffers, within a tolerance per op and dtype
 * (the table printed at the end is what was measured); move_rows in order,
 * and a move outside its rows reported by the next wait; events, pinned
 * and registered memory, a refused allocation; a program that does not
 * build, reported with its build log; and whole forward passes of small
 * models of five architectures, the opencl engine against the cpu one:
 * the same greedy token at every position, logits within a bound.
 * Exits 77 (skipped) when there is no OpenCL here. With the argument
 * no-platform (and the ICD loader shown no vendors), checks instead that
 * create says in one line what to install. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch_fixture.h"
#include "check.h"
#include "test_rng.h"
#include "engine/compute/backend.h"
#include "engine/compute/backend_opencl.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/ffn/ffn_probe.h"
#include "engine/forward/engine.h"
#include "model_fixture.h"

static const struct backend_ops *const O = &backend_opencl;
static struct backend *ob;
static struct cpu_kernels *ck;
static char err[1024];
static int ops_called; /* ops enqueued on ob: its launch count */

/* ---- inputs ---- */


static float *randoms(size_t n, float scale)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = scale * uniform();
    return v;
}

/* n random weights stored as t */
static void *weights(enum fb_dtype t, size_t n)
{
    float *v = randoms(n, 1.0f);
    void *w = malloc(wtype_row_bytes(t, n ? n : 1));
    dtype_from_f32(w, t, v, n);
    free(v);
    return w;
}

/* ---- device buffers: each op reads and writes at a non-zero offset ---- */

#define PAD 52 /* bytes before every operand: 4-aligned, not 64-aligned */
static struct dev_buf *held[64];
static int n_held;

static struct dev_ref room(size_t bytes)
{
    struct dev_buf *buf = NULL;
    CHECK(O->alloc(ob, bytes + PAD, BUF_DEVICE, &buf) == 0);
    held[n_held++] = buf;
    return (struct dev_ref){buf, PAD};
}

static struct dev_ref put(const void *p, size_t bytes)
{
    struct dev_ref r = room(bytes);
    CHECK(O->upload(ob, r, p, bytes) == 0);
    return r;
}

/* Downloads, waits, and frees every buffer of the case. */
static void take(void *dst, struct dev_ref r, size_t bytes)
{
    CHECK(O->download(ob, dst, r, bytes) == 0);
    CHECK(O->sync(ob) == 0);
    while (n_held)
        O->buf_free(ob, held[--n_held]);
}

/* ---- what was measured: the largest difference from the CPU kernels,
 * relative to the largest |value| of the CPU's result (at least 1) ---- */

struct tally {
    const char *op;
    enum fb_dtype t;
    double tol, worst;
    int cases;
};
static struct tally tallies[32];
static int n_tallies;

static void record(const char *op, enum fb_dtype t, double tol, const float *got, const float *want, size_t n,
                   const char *what)
{
    double scale = 1, worst = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]) / scale;
        if (isnan(d) || d > worst)
            worst = isnan(d) ? INFINITY : d;
    }
    if (!(worst <= tol))
        fprintf(stderr, "%s %s %s: off by %.3g (tolerance %.3g)\n", op, wtype_name(t), what, worst, tol);
    CHECK(worst <= tol);
    int i = 0;
    while (i < n_tallies && !(tallies[i].op == op && tallies[i].t == t))
        i++;
    if (i == n_tallies)
        tallies[n_tallies++] = (struct tally){op, t, tol, 0, 0};
    tallies[i].worst = fmax(tallies[i].worst, worst);
    tallies[i].cases++;
}

/* ---- the ops ---- */

static const double TOL_SUM = 1e-5; /* sums over up to 1000 terms, in another order */

static void test_matvec(enum fb_dtype t, int rows, int cols, bool bias)
{
    void *w = weights(t, (size_t)rows * cols);
    float *x = randoms((size_t)cols, 1), *b = randoms((size_t)rows, 1), *want = malloc(rows * sizeof *want);
    float *got = malloc(rows * sizeof *got);
    ck_matvec(ck, want, w, t, x, bias ? b : NULL, rows, cols);
    struct dev_ref out = room(rows * sizeof(float)), bias_ref = bias ? put(b, rows * sizeof(float)) : (struct dev_ref){0};
    CHECK(O->matvec(ob, out, put(w, (size_t)rows * wtype_row_bytes(t, (uint64_t)cols)), t, put(x, cols * sizeof(float)), bias_ref,
                    rows, cols) == 0);
    ops_called++;
    take(got, out, rows * sizeof(float));
    char what[64];
    snprintf(what, sizeof what, "%d x %d%s", rows, cols, bias ? " + bias" : "");
    record("matvec", t, TOL_SUM, got, want, (size_t)rows, what);
    free(w), free(x), free(b), free(want), free(got);
}

/* n bundles (up | gate | down) of dtype t, stride padded past a bundle */
static void *bundles(enum fb_dtype t, int n, int d, const struct arch *a, size_t *stride)
{
    size_t bundle = wtype_row_bytes(t, (uint64_t)d) * (a->glu ? 3 : 2);
    *stride = (bundle + 63) / 64 * 64 + 64;
    char *rows = calloc((size_t)n ? (size_t)n : 1, *stride);
    for (int r = 0; r < n; r++) {
        void *w = weights(t, (size_t)d * (a->glu ? 3 : 2));
        memcpy(rows + (size_t)r * *stride, w, bundle);
        free(w);
    }
    return rows;
}

static const struct arch ffn_archs[] = {
    {.act = ACT_RELU},
    {.act = ACT_SILU, .glu = true},
    {.act = ACT_GELU},
    {.act = ACT_GELU_TANH, .glu = true},
    {.act = ACT_SQUARED_RELU},
    {.act = ACT_FATRELU, .fatrelu_threshold = 0.1f},
    {.act = ACT_FATRELU, .glu = true, .fatrelu_threshold = 0.05f},
    {.act = ACT_SILU},
    {.act = ACT_RELU, .glu = true, .act_on_up = true}, /* dReLU */
};
enum { N_FFN_ARCHS = sizeof ffn_archs / sizeof ffn_archs[0] };

static void test_ffn_rows(enum fb_dtype t, int n, int d, const struct arch *a, bool bias)
{
    size_t stride;
    void *rows = bundles(t, n, d, a, &stride);
    float *x = randoms((size_t)d, 1), *ub = randoms((size_t)n, 0.3f);
    float *want = malloc(d * sizeof *want), *got = malloc(d * sizeof *got);
    ck_ffn_rows(ck, want, rows, stride, n, bias ? ub : NULL, x, d, t, a);
    struct dev_ref out = room(d * sizeof(float)), ub_ref = bias ? put(ub, n * sizeof(float)) : (struct dev_ref){0};
    CHECK(O->ffn_rows(ob, out, put(rows, n * stride), stride, n, ub_ref, put(x, d * sizeof(float)), d, t, a) == 0);
    ops_called++;
    take(got, out, d * sizeof(float));
    char what[64];
    snprintf(what, sizeof what, "%d x %d act %d%s%s", n, d, (int)a->act, a->glu ? " glu" : "", bias ? " bias" : "");
    record("ffn_rows", t, TOL_SUM, got, want, (size_t)d, what);
    free(rows), free(x), free(ub), free(want), free(got);
}

/* ids into n bundles, some repeated, with ids outside them mixed in: the
 * device skips those (the CPU is given the others only) */
static void test_ffn_ids(enum fb_dtype t, int n, int d, const struct arch *a)
{
    size_t stride;
    void *rows = bundles(t, n, d, a, &stride);
    float *x = randoms((size_t)d, 1), *ub = randoms((size_t)n, 0.3f);
    float *want = malloc(d * sizeof *want), *got = malloc(d * sizeof *got);
    int32_t ids[40], valid[40];
    int n_ids = 0, n_valid = 0;
    for (int i = 0; i < 36; i++) {
        int32_t any = (int32_t)((uniform() + 1.0f) * 0.5f * (float)n) % n;
        int32_t id = i == 3 ? -1 : i == 10 ? n : i == 20 ? n + 5 : any;
        ids[n_ids++] = id;
        if (id >= 0 && id < n)
            valid[n_valid++] = id;
    }
    ck_ffn_ids(ck, want, rows, stride, valid, n_valid, ub, x, d, t, a);
    struct dev_ref out = room(d * sizeof(float));
    CHECK(O->ffn_ids(ob, out, put(rows, n * stride), stride, put(ids, sizeof ids), n_ids, put(ub, n * sizeof(float)),
                     put(x, d * sizeof(float)), d, t, a) == 0);
    ops_called++;
    take(got, out, d * sizeof(float));
    char what[64];
    snprintf(what, sizeof what, "%d ids of %d x %d act %d%s", n_ids, n, d, (int)a->act, a->glu ? " glu" : "");
    record("ffn_ids", t, TOL_SUM, got, want, (size_t)d, what);
    free(rows), free(x), free(ub), free(want), free(got);
}

static void test_attention(int n_pos, int heads, int kv_heads, int head_dim)
{
    size_t qd = (size_t)heads * head_dim, kv = (size_t)n_pos * kv_heads * head_dim;
    float *q = randoms(qd, 1), *k = randoms(kv, 1), *v = randoms(kv, 1);
    float *want = malloc(qd * sizeof *want), *got = malloc(qd * sizeof *got);
    ck_attention(ck, want, q, k, v, n_pos, heads, kv_heads, head_dim);
    struct dev_ref out = room(qd * sizeof(float));
    CHECK(O->attention(ob, out, put(q, qd * sizeof(float)), put(k, kv * sizeof(float)), put(v, kv * sizeof(float)),
                       n_pos, heads, kv_heads, head_dim) == 0);
    ops_called++;
    take(got, out, qd * sizeof(float));
    char what[64];
    snprintf(what, sizeof what, "%d positions, %d/%d heads of %d", n_pos, heads, kv_heads, head_dim);
    record("attention", DTYPE_F32, 1e-5, got, want, qd, what);
    free(q), free(k), free(v), free(want), free(got);
}

/* in_place: out is x (the final norm's way) */
static void test_norm(int d, enum norm_kind kind, bool bias, bool in_place)
{
    float *x = randoms((size_t)d, 2), *w = randoms((size_t)d, 1), *b = randoms((size_t)d, 1);
    float *want = malloc(d * sizeof *want), *got = malloc(d * sizeof *got);
    for (int i = 0; i < d; i++)
        x[i] += 0.5f; /* a mean LayerNorm takes away */
    ck_norm(ck, want, x, w, bias ? b : NULL, d, kind, 1e-5f);
    struct dev_ref xr = put(x, d * sizeof(float)), out = in_place ? xr : room(d * sizeof(float));
    CHECK(O->norm(ob, out, xr, put(w, d * sizeof(float)), bias ? put(b, d * sizeof(float)) : (struct dev_ref){0}, d,
                  kind, 1e-5f) == 0);
    ops_called++;
    take(got, out, d * sizeof(float));
    char what[64];
    snprintf(what, sizeof what, "%s d %d%s%s", kind == NORM_LAYER ? "layer" : "rms", d, bias ? " bias" : "",
             in_place ? " in place" : "");
    record("norm", DTYPE_F32, 1e-5, got, want, (size_t)d, what);
    free(x), free(w), free(b), free(want), free(got);
}

/* kind: the frequencies' kind (theta, scaling), its rope_dims set here */
static void test_rope(int heads, int head_dim, int rot, int pos, const struct arch *kind)
{
    struct arch a = *kind;
    a.rope_dims = (uint32_t)rot;
    float freq[80] = {0}, scale;
    arch_rope_freqs(&a, freq, &scale);
    size_t n = (size_t)heads * head_dim;
    float *want = randoms(n, 1), *got = malloc(n * sizeof *got);
    struct dev_ref vec = put(want, n * sizeof(float)), dfreq = put(freq, sizeof freq);
    CHECK(O->rope(ob, vec, heads, head_dim, rot, pos, dfreq, scale) == 0);
    ops_called++;
    take(got, vec, n * sizeof(float));
    ck_rope(ck, want, heads, head_dim, rot, pos, freq, scale);
    char what[64];
    snprintf(what, sizeof what, "%d heads x %d, %d rotated, pos %d", heads, head_dim, rot, pos);
    record("rope", DTYPE_F32, 1e-5, got, want, n, what);
    bool rest = true; /* the dims past rot are the input's bits */
    for (int h = 0; h < heads; h++)
        for (int i = rot; i < head_dim; i++)
            rest &= got[h * head_dim + i] == want[h * head_dim + i];
    CHECK(rest);
    free(want), free(got);
}

static void test_add_embed(enum fb_dtype t, int d)
{
    int r = d % 5, rows = 5;
    void *table = weights(t, (size_t)rows * d);
    float *want = malloc(d * sizeof *want), *got = malloc(d * sizeof *got), *x = randoms((size_t)d, 1);
    ck_embed(ck, want, table, t, r, d);
    struct dev_ref out = room(d * sizeof(float));
    CHECK(O->embed(ob, out, put(table, (size_t)rows * wtype_row_bytes(t, (uint64_t)d)), t, r, d, 1.0f) == 0);
    ops_called++;
    take(got, out, d * sizeof(float));
    record("embed", t, 0, got, want, (size_t)d, "a row");
    if (t == DTYPE_F32) {
        struct dev_ref y = put(want, d * sizeof(float));
        CHECK(O->add(ob, y, put(x, d * sizeof(float)), d) == 0);
        ops_called++;
        take(got, y, d * sizeof(float));
        ck_add(ck, want, x, d);
        record("add", t, 0, got, want, (size_t)d, "y += x");
    }
    free(table), free(want), free(got), free(x);
}

static void test_ops(void)
{
    static const enum fb_dtype types[] = {DTYPE_F32, DTYPE_F16, DTYPE_BF16};
    static const int rows[] = {1, 7, 129}, cols[] = {3, 65, 1000};
    for (int ti = 0; ti < 3; ti++)
        for (int ri = 0; ri < 3; ri++)
            for (int ci = 0; ci < 3; ci++) {
                test_matvec(types[ti], rows[ri], cols[ci], (ri + ci) % 2 == 0);
                for (int v = 0; v < N_FFN_ARCHS; v++)
                    if (v < 2 || ci == 1)
                        test_ffn_rows(types[ti], rows[ri], cols[ci], &ffn_archs[v], (v + ri) % 2 == 0);
                if (ri > 0)
                    test_ffn_ids(types[ti], rows[ri], cols[ci], &ffn_archs[(ri + ci + ti) % N_FFN_ARCHS]);
                test_add_embed(types[ti], cols[ci]);
            }
    test_ffn_rows(DTYPE_F32, 0, 65, &ffn_archs[0], false); /* no rows: zeros */
    static const int attn[][4] = {{1, 4, 4, 16}, {7, 8, 2, 3}, {33, 4, 1, 65}, {129, 2, 2, 8}};
    for (int i = 0; i < 4; i++)
        test_attention(attn[i][0], attn[i][1], attn[i][2], attn[i][3]);
    static const int dims[] = {1, 3, 65, 1000};
    for (int i = 0; i < 4; i++)
        for (int v = 0; v < 4; v++)
            test_norm(dims[i], v % 2 ? NORM_LAYER : NORM_RMS, v >= 2, (i + v) % 2 == 0);
    const struct arch plain = {.rope_theta = 10000}, wide = {.rope_theta = 500000}, p25k = {.rope_theta = 25000};
    const struct arch llama3 = {.rope_theta = 500000, .rope_scaling = ROPE_LLAMA3, .rope_factor = 8,
                                .rope_low_freq_factor = 1, .rope_high_freq_factor = 4,
                                .rope_original_max_positions = 64};
    test_rope(4, 16, 16, 7, &plain);
    test_rope(4, 16, 8, 7, &p25k);
    test_rope(3, 20, 8, 13, &plain);
    test_rope(2, 8, 2, 200, &plain);
    test_rope(3, 10, 0, 5, &plain);
    test_rope(5, 130, 128, 101, &wide);
    test_rope(5, 130, 128, 101, &llama3);
}

/* ---- move_rows ---- */

/* rows of row_bytes at byte offset off into the buffer (row_bytes and off
 * both multiples of 4, or not: the kernel's word and byte paths) */
static void test_move_rows(size_t row_bytes, size_t off)
{
    enum { ROWS = 9 };
    static const struct row_move moves[] = {{1, 3}, {3, 0}, {0, 1}, {2, 2}, {8, 4}, {4, 8}, {5, 0}};
    int n = (int)(sizeof moves / sizeof moves[0]);
    size_t bytes = ROWS * row_bytes;
    unsigned char *want = malloc(bytes), *got = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        want[i] = (unsigned char)(i * 7 + 1);
    struct dev_ref base = room(bytes + off);
    base.off += off;
    CHECK(O->upload(ob, base, want, bytes) == 0);
    CHECK(O->move_rows(ob, base, row_bytes, put(moves, sizeof moves), n) == 0);
    CHECK(O->move_rows(ob, base, row_bytes, put(moves, sizeof moves), 0) == 0);
    take(got, base, bytes);
    for (int i = 0; i < n; i++) /* in order: a move reads what the ones before it wrote */
        memmove(want + moves[i].dst * row_bytes, want + moves[i].src * row_bytes, row_bytes);
    CHECK(memcmp(got, want, bytes) == 0);
    free(want), free(got);
}

/* A move outside the rows: nothing is said when it is enqueued, the wait
 * behind it fails, and so does every later call. */
static void test_move_fault(const struct backend_config *cfg)
{
    struct backend *b = O->create(cfg, err, sizeof err);
    CHECK(b != NULL);
    if (!b)
        return;
    struct dev_buf *buf = NULL, *mv = NULL;
    struct row_move moves[] = {{0, 1}, {1, 4}};
    uint64_t before, after;
    CHECK(O->alloc(b, 4 * 16, BUF_DEVICE, &buf) == 0 && O->alloc(b, sizeof moves, BUF_DEVICE, &mv) == 0);
    CHECK(O->upload(b, (struct dev_ref){mv, 0}, moves, sizeof moves) == 0);
    CHECK(O->event_record(b, &before) == 0);
    CHECK(O->move_rows(b, (struct dev_ref){buf, 0}, 16, (struct dev_ref){mv, 0}, 2) == 0);
    CHECK(O->event_wait(b, before) == 0); /* before the move: not its verdict yet */
    CHECK(O->event_record(b, &after) == 0);
    CHECK(O->event_wait(b, after) == -1);
    CHECK(strstr(O->error(b), "move_rows: move 1 ") != NULL);
    CHECK(O->sync(b) == -1);
    CHECK(O->upload(b, (struct dev_ref){mv, 0}, moves, sizeof moves) == -1);
    O->buf_free(b, buf);
    O->buf_free(b, mv);
    O->destroy(b);
}

/* ---- memory and the queue ---- */

static void test_events(void)
{
    enum { N = 1000 };
    float *src = randoms(N, 1), *dst = calloc(N, sizeof *dst);
    struct dev_ref r = put(src, N * sizeof(float));
    uint64_t first, e;
    CHECK(O->event_record(ob, &first) == 0);
    CHECK(O->download(ob, dst, r, N * sizeof(float)) == 0);
    CHECK(O->event_record(ob, &e) == 0);
    CHECK(e == first + 1);
    CHECK(O->event_wait(ob, e) == 0);
    CHECK(memcmp(src, dst, N * sizeof(float)) == 0);
    for (int i = 0; i < 100; i++) /* past the ring the backend keeps */
        CHECK(O->event_record(ob, &e) == 0);
    CHECK(O->event_wait(ob, first) == 0);
    CHECK(O->event_wait(ob, e) == 0);
    CHECK(O->event_wait(ob, e + 1) == -1);
    CHECK(strstr(O->error(ob), "never recorded") != NULL);
    CHECK(O->event_wait(ob, 0) == -1);
    take(dst, r, sizeof(float));
    free(src), free(dst);
}

/* Pinned memory the host reads a download in; host memory registered
 * and computed on in place; an allocation the device refuses, after
 * which the instance still works. */
static void test_memory(void)
{
    enum { ROWS = 7, COLS = 65 };
    float *w = randoms(ROWS * COLS, 1), *x = randoms(COLS, 1), want[ROWS], got[ROWS];
    struct dev_buf *pinned, *reg, *huge = NULL;
    CHECK(O->alloc(ob, ROWS * sizeof(float), BUF_PINNED, &pinned) == 0);
    float *host = O->host_ptr(ob, pinned);
    CHECK(host != NULL);
    CHECK(O->register_host(ob, w, ROWS * COLS * sizeof(float), &reg) == 0);
    CHECK(O->host_ptr(ob, reg) == w);
    struct dev_ref out = room(ROWS * sizeof(float));
    CHECK(O->matvec(ob, out, (struct dev_ref){reg, 0}, DTYPE_F32, put(x, COLS * sizeof(float)), (struct dev_ref){0},
                    ROWS, COLS) == 0);
    ops_called++;
    CHECK(O->download(ob, host, out, ROWS * sizeof(float)) == 0);
    CHECK(O->sync(ob) == 0);
    memcpy(got, host, sizeof got);
    ck_matvec(ck, want, w, DTYPE_F32, x, NULL, ROWS, COLS);
    record("matvec", DTYPE_F32, TOL_SUM, got, want, ROWS, "registered weights, pinned result");
    CHECK(O->alloc(ob, (size_t)1 << 62, BUF_DEVICE, &huge) == -1);
    CHECK(huge == NULL);
    CHECK(strstr(O->error(ob), "refuses a buffer") != NULL);
    take(got, out, sizeof got);
    O->buf_free(ob, pinned);
    O->buf_free(ob, reg);
    free(w), free(x);
}

static void test_build_failure(void)
{
    char log[1024];
    CHECK(opencl_build_source("__kernel void ok(__global float *x) { x[0] = 1.0f; }", log, sizeof log) == 0);
    CHECK(opencl_build_source("__kernel void bad(__global float *x) { x[0] = ; }", log, sizeof log) == -1);
    printf("a kernel with a syntax error: %s\n", log);
    CHECK(strstr(log, "building the kernels failed") != NULL);
    CHECK(strstr(log, "error") != NULL);
    CHECK(strchr(log, '\n') == NULL);
}

/* ---- whole forward passes ---- */

static int argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

/* The model in dir on the cpu and the opencl backends (ffn: dense, or a
 * host FFN reached through the pinned bridge), fed the cpu engine's
 * greedy tokens: the same argmax at every position, logits within tol. */
static void forward_case(const char *label, const char *dir, const struct ffn_ops *ffn, const void *cfg, double tol)
{
    enum { POSITIONS = 12 };
    const struct fb_settings set = fb_settings_defaults();
    struct model m;
    struct engine ec, eo;
    CHECK(model_open(&m, dir, err, sizeof err) == 0);
    CHECK(engine_init_with(&ec, &set, &m, &backend_cpu, ffn, cfg, 1, 32, err, sizeof err) == 0);
    CHECK(engine_init_with(&eo, &set, &m, O, ffn, cfg, 1, 32, err, sizeof err) == 0);
    int vocab = (int)m.shape.vocab_size, tok = 1, same = 0;
    double worst = 0;
    for (int p = 0; p < POSITIONS; p++) {
        CHECK(engine_forward(&ec, tok, p) == 0);
        CHECK(engine_forward(&eo, tok, p) == 0);
        for (int i = 0; i < vocab; i++)
            worst = fmax(worst, fabs(ec.s.logits[i] - eo.s.logits[i]));
        int want = argmax(ec.s.logits, vocab);
        same += argmax(eo.s.logits, vocab) == want;
        tok = want;
    }
    printf("forward %-22s %d/%d greedy tokens the same, max |logit diff| %.3g (bound %g)\n", label, same, POSITIONS,
           worst, tol);
    CHECK(same == POSITIONS);
    CHECK(worst <= tol);
    engine_free(&ec);
    engine_free(&eo);
    model_close(&m);
}

/* A model of configs/models/shape in dtype t, written as dir. */
static int write_model(const char *shape, const char *act, enum fb_dtype t, const char *dir, const char *tok)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct fx_model f;
    if (model_shape_load(&set, shape, &s, err, sizeof err) != 0)
        return -1;
    if (act)
        snprintf(s.ffn_activation, sizeof s.ffn_activation, "%s", act);
    if (act && !strcmp(act, "fatrelu"))
        s.fatrelu_threshold = 0.3;
    int rc = fx_init(&f, &s, 11, 2.5f) || fx_write_tokenizer(tok, s.vocab_size) || fx_write(&f, dir, t, tok, err, sizeof err);
    fx_free(&f);
    return rc ? -1 : 0;
}

static void test_forward(void)
{
    char tmp[] = "/tmp/flashbed-test-opencl-XXXXXX", dir[600], tok[600];
    struct model_shape shape;
    CHECK(fixture_opt_tiny(tmp, dir, sizeof dir, 5, 0.15, &shape, err, sizeof err) == 0);
    forward_case("opt-tiny f32", dir, &ffn_dense, NULL, 1e-4);
    struct ffn_probe_config probe = {.target = PREDICT_RELU};
    forward_case("opt-tiny f32, host FFN", dir, &ffn_probe, &probe, 1e-4);
    static const struct {
        const char *shape, *act;
        enum fb_dtype t;
    } models[] = {
        {"llama-tiny", NULL, DTYPE_F16},      {"phi-tiny", "gelu_tanh", DTYPE_BF16},
        {"persimmon-tiny", NULL, DTYPE_F32},  {"falcon-tiny", "gelu", DTYPE_F16},
        {"llama-relu-tiny", "fatrelu", DTYPE_BF16},
    };
    snprintf(tok, sizeof tok, "%s/tok.bin", tmp);
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char label[64];
        snprintf(dir, sizeof dir, "%s/%s-%s", tmp, models[i].shape, wtype_name(models[i].t));
        snprintf(label, sizeof label, "%s %s", models[i].shape, wtype_name(models[i].t));
        CHECK(write_model(models[i].shape, models[i].act, models[i].t, dir, tok) == 0);
        forward_case(label, dir, &ffn_dense, NULL, 1e-4);
    }
    CHECK(fixture_remove(tmp) == 0);
}

/* ---- the instance ---- */

static void test_info_counts(void)
{
    struct backend_device info;
    struct backend_counts c;
    O->info(ob, &info);
    O->counts(ob, &c);
    printf("device: %s (%s), %llu MiB\n", info.device, info.emulated ? "emulated" : "a GPU",
           (unsigned long long)(info.mem_bytes >> 20));
    CHECK(*info.device);
    CHECK(!info.host_visible);
    CHECK(info.mem_bytes > 0);
    CHECK_U64(c.launches, ops_called);
    CHECK(c.copies > 0 && c.bytes_up > 0 && c.bytes_down > 0 && c.syncs > 0);
}

static void print_tallies(void)
{
    printf("%-10s %-5s %6s %12s %12s\n", "op", "dtype", "cases", "worst", "tolerance");
    for (int i = 0; i < n_tallies; i++)
        printf("%-10s %-5s %6d %12.3g %12.3g\n", tallies[i].op, wtype_name(tallies[i].t), tallies[i].cases,
               tallies[i].worst, tallies[i].tol);
}

/* The opencl_device setting picks a device by number, and one past the
 * devices is refused by number. */
static void test_device_choice(const struct backend_config *cfg)
{
    struct fb_settings set = *cfg->set;
    struct backend_config c = *cfg;
    c.set = &set;
    set.opencl_device = 0;
    struct backend *b = O->create(&c, err, sizeof err);
    CHECK(b != NULL);
    if (b)
        O->destroy(b);
    set.opencl_device = 999;
    CHECK(O->create(&c, err, sizeof err) == NULL);
    CHECK(strstr(err, "device 999 is not one of the") != NULL);
}

/* Run with the ICD loader pointed at no vendors (tests/CMakeLists.txt):
 * create fails with the one line that says what to install. */
static int no_platform(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct backend_config cfg = {.set = &set, .threads = 1, .max_dim = 64, .max_seq = 8, .max_heads = 2};
    char log[256];
    CHECK(O->create(&cfg, err, sizeof err) == NULL);
    printf("test_backend_opencl_smoke no-platform: %s\n", err);
    if (strstr(err, "this build has no OpenCL"))
        return 77;
    CHECK_STR(err, "opencl backend: no OpenCL platform (install pocl-opencl-icd for the CPU)");
    CHECK(opencl_build_source("__kernel void ok(void) {}", log, sizeof log) == 1);
    CHECK_STR(log, err);
    return check_report("test_backend_opencl_smoke no-platform");
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "no-platform"))
        return no_platform();
    const struct fb_settings set = fb_settings_defaults();
    /* scratch smaller than the ops ask for: the backend grows it */
    struct backend_config cfg = {.set = &set, .threads = 1, .max_dim = 64, .max_seq = 8, .max_heads = 2};
    ob = O->create(&cfg, err, sizeof err);
    if (!ob) {
        printf("test_backend_opencl_smoke: %s\n", err);
        bool absent = strstr(err, "no OpenCL") || strstr(err, "has no OpenCL");
        CHECK(absent);
        return absent ? 77 : check_report("test_backend_opencl_smoke");
    }
    ck = ck_create(&set, 1, 1024, 256, 16, err, sizeof err);
    CHECK(ck != NULL);
    test_ops();
    test_move_rows(12, 0);
    test_move_rows(6, 2);
    test_move_rows(4096, 0);
    test_events();
    test_memory();
    test_info_counts();
    test_move_fault(&cfg);
    test_device_choice(&cfg);
    test_build_failure();
    print_tallies();
    O->destroy(ob);
    ck_destroy(ck);
    test_forward();
    return check_report("test_backend_opencl_smoke");
}
