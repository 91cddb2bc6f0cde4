/* The cuda backend against the CPU kernels: where no CUDA device (or no
 * CUDA in this build) is here, create fails with one line naming why and
 * the test exits 77 (CTest: skipped). On a GPU, each op (matvec in f32,
 * f16 and bf16 with and without a bias, the FFN over rows and over ids
 * with ids it must skip, attention with grouped kv heads, both norms in
 * place, partial RoPE, add, embed) on random inputs of sizes that are not
 * multiples of a group, at an offset inside a buffer with guard zones
 * around it, against ck_* on the same inputs; move_rows against its
 * definition, and a move outside the rows failing the next sync; the
 * counts of copies and launches. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "engine/compute/backend.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/model/dtype.h"

enum { GUARD = 256, MAX_DIM = 1024, MAX_SEQ = 64, MAX_HEADS = 8 };

static const struct backend_ops *ops = &backend_cuda;
static struct backend *be;
static struct cpu_kernels *ck;
static int launches, copies; /* what this test enqueued */

static float *randoms(size_t n)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = uniform();
    return v;
}

/* n values of dtype t from random floats */
static void *weights(enum fb_dtype t, size_t n)
{
    float *f = randoms(n);
    void *w = malloc(wtype_row_bytes(t, n));
    dtype_from_f32(w, t, f, n);
    free(f);
    return w;
}

/* bytes of host on the device, GUARD bytes into a buffer with GUARD bytes
 * of 0xa5 on each side */
static struct dev_ref put(const void *host, size_t bytes)
{
    struct dev_buf *buf = NULL;
    CHECK(ops->alloc(be, GUARD + bytes + GUARD, BUF_DEVICE, &buf) == 0);
    unsigned char *img = malloc(GUARD + bytes + GUARD);
    memset(img, 0xa5, GUARD + bytes + GUARD);
    if (host)
        memcpy(img + GUARD, host, bytes);
    CHECK(ops->upload(be, (struct dev_ref){buf, 0}, img, GUARD + bytes + GUARD) == 0);
    CHECK(ops->sync(be) == 0);
    copies++;
    free(img);
    return (struct dev_ref){buf, GUARD};
}

/* The bytes at r back into host; the guards must be as put left them. */
static void get(void *host, struct dev_ref r, size_t bytes)
{
    unsigned char *img = malloc(GUARD + bytes + GUARD);
    CHECK(ops->download(be, img, (struct dev_ref){r.buf, 0}, GUARD + bytes + GUARD) == 0);
    CHECK(ops->sync(be) == 0);
    copies++;
    int spoilt = 0;
    for (size_t i = 0; i < GUARD; i++)
        spoilt += (img[i] != 0xa5) + (img[GUARD + bytes + i] != 0xa5);
    CHECK(spoilt == 0);
    memcpy(host, img + GUARD, bytes);
    free(img);
}

static void drop(struct dev_ref r)
{
    ops->buf_free(be, r.buf);
}

/* got against want over n floats, within tol of the larger of 1 and want's
 * largest magnitude (sums in another order round differently) */
static void close_to(const float *got, const float *want, int n, float tol, const char *what)
{
    float most = 1.0f;
    for (int i = 0; i < n; i++)
        most = fmaxf(most, fabsf(want[i]));
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += !(fabsf(got[i] - want[i]) <= tol * most);
    if (bad)
        fprintf(stderr, "%s: %d of %d values off\n", what, bad, n);
    CHECK(bad == 0);
}

static void test_matvec(enum fb_dtype t, int rows, int cols, bool with_bias)
{
    void *w = weights(t, (size_t)rows * cols);
    float *x = randoms((size_t)cols), *bias = randoms((size_t)rows);
    float *want = malloc((size_t)rows * sizeof *want), *got = malloc((size_t)rows * sizeof *got);
    ck_matvec(ck, want, w, t, x, with_bias ? bias : NULL, rows, cols);
    struct dev_ref dw = put(w, (size_t)rows * wtype_row_bytes(t, (uint64_t)cols)), dx = put(x, (size_t)cols * sizeof(float));
    struct dev_ref db = put(bias, (size_t)rows * sizeof(float)), dout = put(NULL, (size_t)rows * sizeof(float));
    CHECK(ops->matvec(be, dout, dw, t, dx, with_bias ? db : (struct dev_ref){0}, rows, cols) == 0);
    launches++;
    get(got, dout, (size_t)rows * sizeof(float));
    char what[64];
    snprintf(what, sizeof what, "matvec %s %dx%d%s", wtype_name(t), rows, cols, with_bias ? " + bias" : "");
    close_to(got, want, rows, 1e-5f * sqrtf((float)cols), what);
    drop(dw), drop(dx), drop(db), drop(dout);
    free(w), free(x), free(bias), free(want), free(got);
}

/* n bundles (stride padded past the bundle) over d; by ids when ids is
 * not NULL (n_ids of them, bad ones skipped on the device and left out of
 * want's ck_ffn_ids, which gets good[0..n_good)). */
static void test_ffn(enum fb_dtype t, int n, int d, const struct arch *a, bool with_bias, const int32_t *ids,
                     int n_ids, const int32_t *good, int n_good)
{
    size_t stride = wtype_row_bytes(t, (uint64_t)d) * (a->glu ? 3 : 2) + 40;
    void *rows = weights(t, stride * (size_t)n / wtype_row_bytes(t, 1));
    float *x = randoms((size_t)d), *ub = randoms((size_t)n);
    float *want = malloc((size_t)d * sizeof *want), *got = malloc((size_t)d * sizeof *got);
    const float *bias = with_bias ? ub : NULL;
    if (ids)
        ck_ffn_ids(ck, want, rows, stride, good, n_good, bias, x, d, t, a);
    else
        ck_ffn_rows(ck, want, rows, stride, n, bias, x, d, t, a);
    struct dev_ref dr = put(rows, stride * (size_t)n), dx = put(x, (size_t)d * sizeof(float));
    struct dev_ref db = with_bias ? put(ub, (size_t)n * sizeof(float)) : (struct dev_ref){0};
    struct dev_ref dout = put(NULL, (size_t)d * sizeof(float));
    struct dev_ref di = put(ids, ids ? (size_t)n_ids * sizeof(int32_t) : 4);
    int rc = ids ? ops->ffn_ids(be, dout, dr, stride, di, n_ids, db, dx, d, t, a)
                 : ops->ffn_rows(be, dout, dr, stride, n, db, dx, d, t, a);
    CHECK(rc == 0);
    launches++;
    get(got, dout, (size_t)d * sizeof(float));
    char what[96];
    snprintf(what, sizeof what, "ffn %s %s %d x %d act %d%s%s", ids ? "ids" : "rows", wtype_name(t), n, d, (int)a->act,
             a->glu ? " glu" : "", with_bias ? " bias" : "");
    close_to(got, want, d, 1e-4f, what);
    drop(dr), drop(dx), drop(dout), drop(di);
    if (with_bias)
        drop(db);
    free(rows), free(x), free(ub), free(want), free(got);
}

static void test_attention(int n_pos, int n_heads, int n_kv_heads, int head_dim)
{
    size_t qd = (size_t)n_heads * head_dim, kv = (size_t)n_pos * n_kv_heads * head_dim;
    float *q = randoms(qd), *k = randoms(kv), *v = randoms(kv);
    float *want = malloc(qd * sizeof *want), *got = malloc(qd * sizeof *got);
    ck_attention(ck, want, q, k, v, n_pos, n_heads, n_kv_heads, head_dim);
    struct dev_ref dq = put(q, qd * sizeof(float)), dk = put(k, kv * sizeof(float)), dv = put(v, kv * sizeof(float));
    struct dev_ref dout = put(NULL, qd * sizeof(float));
    CHECK(ops->attention(be, dout, dq, dk, dv, n_pos, n_heads, n_kv_heads, head_dim) == 0);
    launches++;
    get(got, dout, qd * sizeof(float));
    char what[64];
    snprintf(what, sizeof what, "attention %d positions, %d/%d heads of %d", n_pos, n_heads, n_kv_heads, head_dim);
    close_to(got, want, (int)qd, 1e-5f, what);
    drop(dq), drop(dk), drop(dv), drop(dout);
    free(q), free(k), free(v), free(want), free(got);
}

/* In place (out is x), as the forward pass's qk norms run. */
static void test_norm(int d, enum norm_kind kind, bool with_bias)
{
    float *x = randoms((size_t)d), *w = randoms((size_t)d), *b = randoms((size_t)d);
    float *want = malloc((size_t)d * sizeof *want), *got = malloc((size_t)d * sizeof *got);
    ck_norm(ck, want, x, w, with_bias ? b : NULL, d, kind, 1e-5f);
    struct dev_ref dx = put(x, (size_t)d * sizeof(float)), dw = put(w, (size_t)d * sizeof(float));
    struct dev_ref db = put(b, (size_t)d * sizeof(float));
    CHECK(ops->norm(be, dx, dx, dw, with_bias ? db : (struct dev_ref){0}, d, kind, 1e-5f) == 0);
    launches++;
    get(got, dx, (size_t)d * sizeof(float));
    close_to(got, want, d, 1e-5f, kind == NORM_LAYER ? "layer norm" : "rms norm");
    drop(dx), drop(dw), drop(db);
    free(x), free(w), free(b), free(want), free(got);
}

/* rope, add and embed: the element-wise ops */
static void test_elementwise(void)
{
    enum { H = 3, HD = 20, ROT = 12, N = 1001, ROWS = 11, D = 77 };
    float *v = randoms(H * HD), *want = malloc(N * sizeof *want), *got = malloc(N * sizeof *got);
    const struct arch llama3 = {.rope_theta = 10000, .rope_dims = ROT, .rope_scaling = ROPE_LLAMA3, .rope_factor = 8,
                                .rope_low_freq_factor = 1, .rope_high_freq_factor = 4,
                                .rope_original_max_positions = 32};
    float freq[ROT / 2], scale;
    arch_rope_freqs(&llama3, freq, &scale);
    struct dev_ref dv = put(v, H * HD * sizeof(float)), dfreq = put(freq, sizeof freq);
    ck_rope(ck, v, H, HD, ROT, 17, freq, scale);
    CHECK(ops->rope(be, dv, H, HD, ROT, 17, dfreq, scale) == 0);
    get(got, dv, H * HD * sizeof(float));
    close_to(got, v, H * HD, 1e-5f, "rope");
    drop(dfreq);
    float *y = randoms(N), *x = randoms(N);
    struct dev_ref dy = put(y, N * sizeof(float)), dx = put(x, N * sizeof(float));
    ck_add(ck, y, x, N);
    CHECK(ops->add(be, dy, dx, N) == 0);
    get(got, dy, N * sizeof(float));
    CHECK(memcmp(got, y, N * sizeof(float)) == 0); /* one rounding each: equal */
    void *table = weights(DTYPE_F16, ROWS * D);
    struct dev_ref dt = put(table, ROWS * D * 2), dout = put(NULL, D * sizeof(float));
    ck_embed(ck, want, table, DTYPE_F16, 7, D);
    CHECK(ops->embed(be, dout, dt, DTYPE_F16, 7, D, 1.0f) == 0);
    get(got, dout, D * sizeof(float));
    CHECK(memcmp(got, want, D * sizeof(float)) == 0); /* widening is exact */
    launches += 3;
    drop(dv), drop(dy), drop(dx), drop(dt), drop(dout);
    free(v), free(want), free(got), free(y), free(x), free(table);
}

/* Moves in order (a later one reads what an earlier one wrote), rows of
 * an odd width (the kernel's byte path), against memmove on the host. */
static void test_move_rows(void)
{
    enum { ROWS = 10, RB = 38 };
    unsigned char *img = malloc(ROWS * RB), *got = malloc(ROWS * RB);
    for (int i = 0; i < ROWS * RB; i++)
        img[i] = (unsigned char)(i * 7 + 3);
    const struct row_move mv[] = {{3, 8}, {8, 3}, {0, 5}, {5, 9}, {9, 0}, {1, 1}};
    int n = (int)(sizeof mv / sizeof mv[0]);
    struct dev_ref base = put(img, ROWS * RB), moves = put(mv, sizeof mv);
    for (int i = 0; i < n; i++)
        memmove(img + mv[i].dst * RB, img + mv[i].src * RB, RB);
    CHECK(ops->move_rows(be, base, RB, moves, n) == 0);
    copies++;
    get(got, base, ROWS * RB);
    CHECK(memcmp(got, img, ROWS * RB) == 0);
    drop(base), drop(moves);
    free(img), free(got);
}

/* What went through the queue is what this test enqueued. */
static void test_counts(void)
{
    struct backend_counts c;
    ops->counts(be, &c);
    CHECK_U64(c.launches, launches);
    CHECK_U64(c.copies, copies);
    uint64_t ev = 0;
    CHECK(ops->event_record(be, &ev) == 0);
    CHECK(ops->event_wait(be, ev) == 0);
    CHECK(ops->event_wait(be, ev + 1) == -1); /* never recorded */
}

/* A move outside the rows is found where the kernel runs: the next sync
 * fails naming it, and the backend stays failed. Last: it breaks be. */
static void test_move_fault(void)
{
    const struct row_move mv[] = {{0, 1}, {1, 100000}};
    struct dev_ref base = put(NULL, 64), moves = put(mv, sizeof mv);
    CHECK(ops->move_rows(be, base, 16, moves, 2) == 0);
    CHECK(ops->sync(be) == -1);
    CHECK(strstr(ops->error(be), "move 1") != NULL);
    CHECK(ops->sync(be) == -1);
    drop(base), drop(moves);
}

static void test_ops(void)
{
    const enum fb_dtype types[] = {DTYPE_F32, DTYPE_F16, DTYPE_BF16};
    for (int ti = 0; ti < 3; ti++) {
        test_matvec(types[ti], 37, 301, ti != 1);
        test_matvec(types[ti], 1, 1000, ti == 1);
    }
    const struct arch glu = {.act = ACT_SILU, .glu = true}, relu = {.act = ACT_RELU};
    const struct arch fat = {.act = ACT_FATRELU, .fatrelu_threshold = 0.05f};
    test_ffn(DTYPE_F32, 53, 77, &glu, true, NULL, 0, NULL, 0);
    test_ffn(DTYPE_F16, 300, 129, &relu, false, NULL, 0, NULL, 0);
    test_ffn(DTYPE_BF16, 5, 33, &fat, true, NULL, 0, NULL, 0);
    test_ffn(DTYPE_F32, 0, 20, &glu, false, NULL, 0, NULL, 0); /* no rows: zeros */
    const int32_t ids[] = {4, -1, 17, 9, 40, 0, 30}, good[] = {4, 17, 9, 0, 30};
    test_ffn(DTYPE_F16, 31, 65, &glu, true, ids, 7, good, 5); /* -1 and 40: skipped */
    test_ffn(DTYPE_F32, 31, 65, &relu, false, ids, 7, good, 5);
    test_attention(45, 6, 2, 20);
    test_attention(1, 4, 4, 16);
    test_attention(MAX_SEQ, MAX_HEADS, 1, 37);
    test_norm(301, NORM_RMS, false);
    test_norm(1000, NORM_LAYER, true);
    test_elementwise();
    test_move_rows();
    test_counts();
    test_move_fault();
}

int main(void)
{
    const struct fb_settings set = fb_settings_defaults();
    char err[512] = "";
    ck = ck_create(&set, 2, MAX_DIM, MAX_SEQ, MAX_HEADS, err, sizeof err);
    CHECK(ck != NULL);
    struct backend_config cfg = {.set = &set, .threads = 2, .max_dim = MAX_DIM, .max_seq = MAX_SEQ,
                                 .max_heads = MAX_HEADS, .host = ck};
    be = ck ? ops->create(&cfg, err, sizeof err) : NULL;
    if (!be) {
        CHECK(strncmp(err, "cuda backend: ", 14) == 0 && strchr(err, '\n') == NULL);
        printf("test_backend_cuda: skipped: %s\n", err);
        ck_destroy(ck);
        return check_failures ? 1 : 77;
    }
    struct backend_device info;
    ops->info(be, &info);
    printf("test_backend_cuda: on %s (%llu MiB)\n", info.device, (unsigned long long)(info.mem_bytes >> 20));
    CHECK(!info.emulated && !info.host_visible && info.mem_bytes > 0 && info.device[0] != '\0');
    test_ops();
    ops->destroy(be);
    ck_destroy(ck);
    return check_report("test_backend_cuda");
}
