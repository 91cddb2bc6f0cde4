/* The one list of backend tests, run for every backend present:
 *
 *   test_backend_ops NAME      (cpu, sim, opencl, cuda)
 *
 * Each op of engine/compute/backend.h against the CPU kernels on host
 * copies (backend_fixture.h: guarded buffers, the reference beside), on
 * random inputs of awkward sizes (1, 3, 17, 65, 257, 1000: not multiples
 * of a group size): matvec over f32/f16/bf16 with and without a bias; the
 * FFN over compact rows for every activation, plain and GLU, and over
 * id-selected rows (an id past the bundles: cpu and sim refuse it, the
 * device backends skip it, as bk_check_ffn_ids says); attention with
 * multi-head, grouped and multi-query caches; RMS and LayerNorm with and
 * without a bias (and in place); RoPE whole and partial; add; ffn_act for
 * every activation, plain and GLU, in place or not; embed per dtype, plain
 * and scaled; the
 * block formats (q4_0 ... q6_k: matvec, the FFN over rows, embed on random
 * blocks, the devices against the decode and the op in double;
 * test_block_types); batched row moves, chained; copies round trip; events ordering
 * the host's reuse of its buffers; the queue's counts; event_elapsed
 * (> 0 over a 64 MiB upload, its refusals, no count changed); NaN and infinity
 * propagated as the CPU kernels do; a ref past its buffer refused with a
 * message and the backend usable after; the forward pass of each
 * architecture (test_forward_case, on arch_fixture.h's models); calibrate's
 * timing loop. A case of an op the backend says it lacks for a type
 * (backend.h's supports) is skipped and counted, as ggml's test-backend-ops
 * does; cpu lacks none.
 *
 * cpu and sim must give the CPU kernels' bits. The device backends must
 * come within a relative tolerance of the op's own scale, stated per op
 * and dtype below. A backend this build or machine lacks (its create
 * fails and it is not cpu or sim) exits 77, one line saying why: CTest
 * reports it skipped, unless FLASHBED_REQUIRE_BACKENDS names it (a machine
 * that must have it: tools/gpu-check.sh). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "arch_fixture.h"
#include "backend_fixture.h"
#include "check.h"
#include "common/fsutil.h"
#include "engine/compute/activation.h"
#include "engine/forward/engine.h"
#include "engine/forward/sampler.h"
#include "engine/import/import.h"
#include "engine/model/dtype_quant.h"
#include "harness/calibrate.h"

/* ---- tolerances of the backends that are not bit-identical ----
 * Each is relative: times a scale computed per output from the operands
 * (double precision), the size of what rounding can move. Arithmetic is
 * f32 on every backend (f16 and bf16 are storage only, widened exactly),
 * so the dtype changes the scale's terms, not the rounding; the tables
 * keep one entry per dtype (f32, f16, bf16) all the same. */
static const double tol_matvec[3] = {1e-5, 1e-5, 1e-5}; /* x (sum |w x| + |bias|) */
static const double tol_ffn[3] = {1e-5, 1e-5, 1e-5};    /* x sum_r (|h_r| + dh_r) |down_r,i|, ffn_scale */
static const double tol_attention = 1e-5;               /* x (1 + 2 max_p sum |q k_p| / sqrt(hd)) max_p |v_p,i| */
static const double tol_norm = 1e-5;                    /* x (|w_i| (|x_i| + |mean|) / sigma + |b_i|) */
static const double tol_act = 1e-5;                     /* x (1 + |g_i|)^2 (1 + |z_i|)^2: one activation of g, of z */
static const double tol_rope = 1e-6;                    /* x (1 + pos) (|v_i| + |v_pair|): the angle grows with pos */
static const double tol_logits = 2e-5;                  /* forward pass: x max(1, max |logit|), f32 and f16 */
/* add, embed, row moves and copies: exact on every backend */

static const int sizes[] = {1, 3, 17, 65, 257, 1000};
enum { N_SIZES = sizeof sizes / sizeof sizes[0] };

/* ---- matvec ---- */

static void test_matvec(struct bt *t, enum fb_dtype dt, int rows, int cols, bool with_bias)
{
    if (!bt_has(t, BACKEND_OP_MATVEC, dt))
        return;
    size_t n = (size_t)rows * cols;
    float *wv = malloc(n * sizeof *wv), *x = malloc((size_t)cols * 4), *b = malloc((size_t)rows * 4);
    float *want = malloc((size_t)rows * 4), *got = malloc((size_t)rows * 4);
    double *tol = malloc((size_t)rows * sizeof *tol);
    bt_fill(wv, n, 1, 0), bt_fill(x, (size_t)cols, 1, 0), bt_fill(b, (size_t)rows, 1, 0);
    void *w = bt_weights(dt, wv, n);
    struct gbuf gw, gx, gb, go;
    gb_new(t, wtype_row_bytes(dt, n), w, &gw);
    gb_floats(t, x, (size_t)cols, &gx);
    gb_floats(t, b, (size_t)rows, &gb);
    gb_new(t, (size_t)rows * 4, NULL, &go);
    char what[96];
    snprintf(what, sizeof what, "matvec %s %dx%d%s", wtype_name(dt), rows, cols, with_bias ? " + bias" : "");
    struct dev_ref bias = with_bias ? gb.at : (struct dev_ref){0};
    bt_ok(t, t->ops->matvec(t->b, go.at, gw.at, dt, gx.at, bias, rows, cols), what);
    gb_read(t, &go, got);
    ck_matvec(t->ref, want, w, dt, x, with_bias ? b : NULL, rows, cols);
    for (int r = 0; r < rows; r++) {
        double s = with_bias ? fabs(b[r]) : 0;
        for (int i = 0; i < cols; i++)
            s += fabs((double)wv[(size_t)r * cols + i] * x[i]);
        tol[r] = tol_matvec[dt] * s;
    }
    bt_compare(t, what, got, want, tol, (size_t)rows);
    gb_done(t, &gw, w, what), gb_done(t, &gx, x, what), gb_done(t, &gb, b, what), gb_done(t, &go, NULL, what);
    free(wv), free(x), free(b), free(want), free(got), free(tol), free(w);
}

static void test_matvecs(struct bt *t)
{
    for (int dt = 0; dt < 3; dt++)
        for (int r = 0; r < N_SIZES - 1; r++) /* 1000 rows adds nothing 257 does not */
            for (int c = 0; c < N_SIZES; c++)
                test_matvec(t, (enum fb_dtype)dt, sizes[r], sizes[c], (r + c + dt) % 2 == 0);
}

/* ---- the FFN over bundles ---- */

/* Bundles of up | gate | down (gate with a GLU), rounded to dtype dt, at
 * stride apart (the padding the guard pattern); vals gets the values. */
struct bundles {
    int n, d, parts;
    enum fb_dtype dt;
    size_t bundle, stride;
    float *vals;  /* [n][parts * d] */
    uint8_t *mem; /* n * stride bytes */
};

static void bundles_make(struct bundles *B, int n, int d, enum fb_dtype dt, const struct arch *a, bool padded)
{
    *B = (struct bundles){.n = n, .d = d, .parts = a->glu ? 3 : 2, .dt = dt};
    B->bundle = (size_t)B->parts * wtype_row_bytes(dt, (uint64_t)d);
    B->stride = padded ? (B->bundle + 63) / 64 * 64 + 36 : B->bundle;
    B->vals = malloc(((size_t)n * B->parts * d + 1) * sizeof *B->vals);
    B->mem = malloc((size_t)n * B->stride + 1);
    for (size_t i = 0; i < (size_t)n * B->stride; i++)
        B->mem[i] = bt_pattern(i);
    for (int r = 0; r < n; r++) {
        float *v = B->vals + (size_t)r * B->parts * d;
        bt_fill(v, (size_t)B->parts * d, 2.5f / sqrtf((float)d), 0); /* up and gate: spread the activation's input */
        bt_fill(v + (size_t)(B->parts - 1) * d, (size_t)d, 1, 0);
        void *w = bt_weights(dt, v, (size_t)B->parts * d);
        memcpy(B->mem + (size_t)r * B->stride, w, B->bundle);
        free(w);
    }
}

static void bundles_free(struct bundles *B)
{
    free(B->vals);
    free(B->mem);
}

/* The scale of each output's rounding: sum over the bundles listed (ids,
 * or 0..n-1) of (|h_r| + dh_r) |down_r,i|, dh_r bounding how far h moves
 * with its sums' rounding (the activation's slope taken as 2 + 2|v|), all
 * times rtol. */
static void ffn_scale(const struct bundles *B, const struct arch *a, const int32_t *ids, int n, const float *x,
                      const float *bias, double rtol, double *tol)
{
    int d = B->d;
    memset(tol, 0, (size_t)d * sizeof *tol);
    for (int k = 0; k < n; k++) {
        int r = ids ? ids[k] : k;
        const float *up = B->vals + (size_t)r * B->parts * d, *gate = up + d, *down = up + (size_t)(B->parts - 1) * d;
        double z = bias ? bias[r] : 0, zm = bias ? fabs(bias[r]) : 0, g = 0, gm = 0;
        for (int j = 0; j < d; j++) {
            z += (double)up[j] * x[j], zm += fabs((double)up[j] * x[j]);
            if (a->glu)
                g += (double)gate[j] * x[j], gm += fabs((double)gate[j] * x[j]);
        }
        double v = a->glu ? g : z, act = activation_apply_t((float)v, a->act, a->fatrelu_threshold);
        double up_v = a->act_on_up ? activation_apply_t((float)z, a->act, a->fatrelu_threshold) : z;
        double h = a->glu ? act * up_v : act;
        double dh = a->glu ? (2 + 2 * fabs(g)) * fabs(z) * gm + fabs(act) * zm : (2 + 2 * fabs(z)) * zm;
        for (int i = 0; i < d; i++)
            tol[i] += rtol * (fabs(h) + dh) * fabs(down[i]);
    }
}

static const char *act_name(enum activation act)
{
    static const char *names[] = {"relu", "silu", "gelu", "gelu_tanh", "squared_relu", "fatrelu"};
    return (unsigned)act < sizeof names / sizeof names[0] ? names[act] : "?";
}

static void test_ffn_rows(struct bt *t, enum fb_dtype dt, const struct arch *a, int n_rows, int d, bool with_bias)
{
    if (!bt_has(t, BACKEND_OP_FFN_ROWS, dt))
        return;
    struct bundles B;
    bundles_make(&B, n_rows, d, dt, a, (n_rows + d) % 2 == 1);
    float *x = malloc((size_t)d * 4), *ub = malloc((size_t)n_rows * 4 + 4);
    float *want = malloc((size_t)d * 4), *got = malloc((size_t)d * 4);
    double *tol = malloc((size_t)d * sizeof *tol);
    bt_fill(x, (size_t)d, 1, 0), bt_fill(ub, (size_t)n_rows, 0.2f, 0);
    struct gbuf gr, gx, gub, go;
    gb_new(t, (size_t)n_rows * B.stride, B.mem, &gr);
    gb_floats(t, x, (size_t)d, &gx);
    gb_floats(t, ub, (size_t)n_rows, &gub);
    gb_new(t, (size_t)d * 4, NULL, &go);
    char what[128];
    snprintf(what, sizeof what, "ffn_rows %s %s%s %d rows x %d%s%s", wtype_name(dt),
             a->act_on_up ? "glu, act on up too: " : a->glu ? "glu " : "",
             act_name(a->act), n_rows, d, with_bias ? " + up bias" : "", B.stride > B.bundle ? " padded" : "");
    struct dev_ref bias = with_bias ? gub.at : (struct dev_ref){0};
    bt_ok(t, t->ops->ffn_rows(t->b, go.at, gr.at, B.stride, n_rows, bias, gx.at, d, dt, a), what);
    gb_read(t, &go, got);
    ck_ffn_rows(t->ref, want, B.mem, B.stride, n_rows, with_bias ? ub : NULL, x, d, dt, a);
    ffn_scale(&B, a, NULL, n_rows, x, with_bias ? ub : NULL, tol_ffn[dt], tol);
    bt_compare(t, what, got, want, tol, (size_t)d);
    gb_done(t, &gr, B.mem, what), gb_done(t, &gx, x, what), gb_done(t, &gub, ub, what);
    gb_done(t, &go, NULL, what);
    bundles_free(&B);
    free(x), free(ub), free(want), free(got), free(tol);
}

/* Every activation, plain and GLU (FATReLU at two thresholds), and a
 * GLU with act on up too (dReLU; SiLU there only to reach the flag with
 * another function). */
static const struct arch ffn_archs[] = {
    {.act = ACT_RELU},           {.act = ACT_RELU, .glu = true},
    {.act = ACT_SILU},           {.act = ACT_SILU, .glu = true},
    {.act = ACT_GELU},           {.act = ACT_GELU, .glu = true},
    {.act = ACT_GELU_TANH},      {.act = ACT_GELU_TANH, .glu = true},
    {.act = ACT_SQUARED_RELU},   {.act = ACT_SQUARED_RELU, .glu = true},
    {.act = ACT_FATRELU, .fatrelu_threshold = 0.1f}, {.act = ACT_FATRELU, .glu = true, .fatrelu_threshold = 0.05f},
    {.act = ACT_RELU, .glu = true, .act_on_up = true}, {.act = ACT_SILU, .glu = true, .act_on_up = true},
};
enum { N_ARCHS = sizeof ffn_archs / sizeof ffn_archs[0] };

/* ffn_act over n values for arch a, in place (h = z) or not. */
static void test_ffn_act(struct bt *t, const struct arch *a, int n, bool in_place)
{
    if (!bt_has_op(t, BACKEND_OP_FFN_ACT))
        return;
    float *z = malloc((size_t)n * 4), *g = malloc((size_t)n * 4), *want = malloc((size_t)n * 4);
    float *got = malloc((size_t)n * 4);
    double *tol = malloc((size_t)n * sizeof *tol);
    bt_fill(z, (size_t)n, 4, -2), bt_fill(g, (size_t)n, 4, -2);
    ck_ffn_act(t->ref, want, z, a->glu ? g : NULL, n, a);
    for (int i = 0; i < n; i++)
        tol[i] = tol_act * pow(1 + fabs(g[i]), 2) * pow(1 + fabs(z[i]), 2);
    struct gbuf gz, gg, gh;
    gb_floats(t, z, (size_t)n, &gz), gb_floats(t, g, (size_t)n, &gg), gb_new(t, (size_t)n * 4, NULL, &gh);
    struct dev_ref h = in_place ? gz.at : gh.at, gate = a->glu ? gg.at : (struct dev_ref){0};
    char what[96];
    snprintf(what, sizeof what, "ffn_act %s%s%s %d%s", a->glu ? "glu " : "", a->act_on_up ? "act-up " : "",
             act_name(a->act), n, in_place ? " in place" : "");
    bt_ok(t, t->ops->ffn_act(t->b, h, gz.at, gate, n, a), what);
    gb_read(t, in_place ? &gz : &gh, got);
    bt_compare(t, what, got, want, tol, (size_t)n);
    gb_done(t, &gz, in_place ? NULL : z, what), gb_done(t, &gg, g, what), gb_done(t, &gh, NULL, what);
    free(z), free(g), free(want), free(got), free(tol);
}

static void test_ffn_acts(struct bt *t)
{
    for (int a = 0; a < N_ARCHS; a++)
        for (int s = 0; s < N_SIZES; s++)
            test_ffn_act(t, &ffn_archs[a], sizes[s], (a + s) % 2);
}

static void test_ffns_rows(struct bt *t)
{
    static const int shapes[][2] = {{1, 3}, {17, 65}, {257, 17}, {65, 257}, {3, 1000}, {0, 17}};
    for (int a = 0; a < N_ARCHS; a++)
        for (int dt = 0; dt < 3; dt++)
            for (int s = 0; s < 6; s++)
                if (dt == 0 || s % 2 == a % 2) /* f16 and bf16 take half the shapes */
                    test_ffn_rows(t, (enum fb_dtype)dt, &ffn_archs[a], shapes[s][0], shapes[s][1], (a + s) % 2);
}

/* n distinct ids of 0..N-1, in no order. */
static void pick_ids(int32_t *ids, int n, int N)
{
    for (int k = 0; k < n; k++) {
        int32_t id;
        bool seen;
        do {
            id = (int32_t)((bt_uniform() + 1) * 0.5f * N) % N;
            seen = false;
            for (int j = 0; j < k; j++)
                seen |= ids[j] == id;
        } while (seen);
        ids[k] = id;
    }
}

/* The FFN over ids[0..n_ids) of N bundles on backend t->b: into got;
 * the reference and its scale into want and tol (over the ids that are
 * bundles: refs lists them). The call's status. */
struct ids_case {
    struct bundles B;
    const struct arch *a;
    float *x, *ub;
    bool with_bias;
};

static int run_ffn_ids(struct bt *t, struct ids_case *c, const int32_t *ids, int n_ids, float *got, const char *what)
{
    int d = c->B.d, N = c->B.n;
    struct gbuf gr, gx, gub, gid, go;
    gb_new(t, (size_t)N * c->B.stride, c->B.mem, &gr);
    gb_floats(t, c->x, (size_t)d, &gx);
    gb_floats(t, c->ub, (size_t)N, &gub);
    gb_new(t, (size_t)n_ids * 4, ids, &gid);
    gb_new(t, (size_t)d * 4, NULL, &go);
    struct dev_ref bias = c->with_bias ? gub.at : (struct dev_ref){0};
    int rc = t->ops->ffn_ids(t->b, go.at, gr.at, c->B.stride, gid.at, n_ids, bias, gx.at, d, c->B.dt, c->a);
    if (rc == 0)
        rc = t->ops->sync(t->b);
    if (rc == 0) {
        gb_read(t, &go, got);
        gb_check(t, &gr, c->B.mem, what), gb_check(t, &gx, c->x, what), gb_check(t, &gub, c->ub, what);
        gb_check(t, &gid, ids, what), gb_check(t, &go, NULL, what);
    }
    gb_free(t, &gr), gb_free(t, &gx), gb_free(t, &gub), gb_free(t, &gid), gb_free(t, &go);
    return rc;
}

static void ids_case_make(struct ids_case *c, enum fb_dtype dt, const struct arch *a, int N, int d, bool with_bias)
{
    *c = (struct ids_case){.a = a, .with_bias = with_bias};
    bundles_make(&c->B, N, d, dt, a, true);
    c->x = malloc((size_t)d * 4), c->ub = malloc((size_t)N * 4);
    bt_fill(c->x, (size_t)d, 1, 0), bt_fill(c->ub, (size_t)N, 0.2f, 0);
}

static void ids_case_free(struct ids_case *c)
{
    bundles_free(&c->B);
    free(c->x), free(c->ub);
}

static void test_ffn_ids(struct bt *t, enum fb_dtype dt, const struct arch *a, int N, int n_ids, int d)
{
    if (!bt_has(t, BACKEND_OP_FFN_IDS, dt))
        return;
    struct ids_case c;
    ids_case_make(&c, dt, a, N, d, n_ids % 2 == 1);
    int32_t *ids = malloc((size_t)n_ids * 4 + 4);
    pick_ids(ids, n_ids, N);
    float *want = malloc((size_t)d * 4), *got = malloc((size_t)d * 4);
    double *tol = malloc((size_t)d * sizeof *tol);
    char what[128];
    snprintf(what, sizeof what, "ffn_ids %s %s%s %d of %d bundles x %d", wtype_name(dt), a->act_on_up ? "glu, act on up too: " : a->glu ? "glu " : "",
             act_name(a->act), n_ids, N, d);
    bt_ok(t, run_ffn_ids(t, &c, ids, n_ids, got, what), what);
    ck_ffn_ids(t->ref, want, c.B.mem, c.B.stride, ids, n_ids, c.with_bias ? c.ub : NULL, c.x, d, dt, a);
    ffn_scale(&c.B, a, ids, n_ids, c.x, c.with_bias ? c.ub : NULL, tol_ffn[dt], tol);
    bt_compare(t, what, got, want, tol, (size_t)d);
    ids_case_free(&c);
    free(ids), free(want), free(got), free(tol);
}

/* ids -1 and N among good ones: cpu and sim refuse the call (at once or
 * at the next sync, the instance then failed: a spare one is used); the
 * device backends skip them, the result that of the good ids alone. */
static void test_ffn_bad_ids(struct bt *t)
{
    struct backend *main_b = t->b;
    if (!(t->b = bt_spare(t))) {
        CHECK(0);
        t->b = main_b;
        return;
    }
    struct ids_case c;
    enum { N = 40, D = 65 };
    ids_case_make(&c, DTYPE_F32, &ffn_archs[3], N, D, true);
    const int32_t ids[] = {3, N, 17, -1, 0}, good[] = {3, 17, 0};
    float got[D], want[D];
    double tol[D];
    int rc = run_ffn_ids(t, &c, ids, 5, got, "ffn_ids with bad ids");
    if (t->exact) {
        CHECK(rc == -1);
        CHECK(strlen(t->ops->error(t->b)) > 0);
    } else if (bt_ok(t, rc, "ffn_ids with bad ids: skipped, not refused") == 0) {
        ck_ffn_ids(t->ref, want, c.B.mem, c.B.stride, good, 3, c.ub, c.x, D, DTYPE_F32, c.a);
        ffn_scale(&c.B, c.a, good, 3, c.x, c.ub, tol_ffn[0], tol);
        bt_compare(t, "ffn_ids past the bundles: the good ids'", got, want, tol, D);
    }
    ids_case_free(&c);
    t->ops->destroy(t->b);
    t->b = main_b;
}

static void test_ffns_ids(struct bt *t)
{
    static const int shapes[][3] = {{1, 1, 3}, {40, 17, 65}, {300, 257, 17}, {65, 0, 33}, {20, 3, 1000}};
    for (int a = 0; a < N_ARCHS; a += 3)
        for (int dt = 0; dt < 3; dt++)
            for (int s = 0; s < 5; s++)
                test_ffn_ids(t, (enum fb_dtype)dt, &ffn_archs[a + dt % 2], shapes[s][0], shapes[s][1], shapes[s][2]);
    test_ffn_bad_ids(t);
}

/* ---- attention ---- */

static void attention_scale(const float *q, const float *k, const float *v, int n_pos, int n_heads, int n_kv, int hd,
                            double *tol)
{
    int kv_dim = n_kv * hd, group = n_heads / n_kv;
    for (int h = 0; h < n_heads; h++) {
        const float *qh = q + (size_t)h * hd;
        size_t off = (size_t)(h / group) * hd;
        double s = 0;
        for (int p = 0; p < n_pos; p++) {
            double sp = 0;
            for (int j = 0; j < hd; j++)
                sp += fabs((double)qh[j] * k[(size_t)p * kv_dim + off + j]);
            s = fmax(s, sp / sqrt((double)hd));
        }
        for (int i = 0; i < hd; i++) {
            double vmax = 0;
            for (int p = 0; p < n_pos; p++)
                vmax = fmax(vmax, fabs(v[(size_t)p * kv_dim + off + i]));
            tol[(size_t)h * hd + i] = tol_attention * (1 + 2 * s) * vmax;
        }
    }
}

static void test_attention(struct bt *t, int n_pos, int n_heads, int n_kv, int hd)
{
    if (!bt_has_op(t, BACKEND_OP_ATTENTION))
        return;
    size_t qd = (size_t)n_heads * hd, cache = (size_t)n_pos * n_kv * hd;
    float *q = malloc(qd * 4), *k = malloc(cache * 4), *v = malloc(cache * 4), *want = malloc(qd * 4);
    float *got = malloc(qd * 4);
    double *tol = malloc(qd * sizeof *tol);
    bt_fill(q, qd, 2, 0), bt_fill(k, cache, 2, 0), bt_fill(v, cache, 1, 0);
    struct gbuf gq, gk, gv, go;
    gb_floats(t, q, qd, &gq), gb_floats(t, k, cache, &gk), gb_floats(t, v, cache, &gv);
    gb_new(t, qd * 4, NULL, &go);
    char what[96];
    snprintf(what, sizeof what, "attention %d positions, %d heads over %d kv heads of %d", n_pos, n_heads, n_kv, hd);
    bt_ok(t, t->ops->attention(t->b, go.at, gq.at, gk.at, gv.at, n_pos, n_heads, n_kv, hd), what);
    gb_read(t, &go, got);
    ck_attention(t->ref, want, q, k, v, n_pos, n_heads, n_kv, hd);
    attention_scale(q, k, v, n_pos, n_heads, n_kv, hd, tol);
    bt_compare(t, what, got, want, tol, qd);
    gb_done(t, &gq, q, what), gb_done(t, &gk, k, what), gb_done(t, &gv, v, what), gb_done(t, &go, NULL, what);
    free(q), free(k), free(v), free(want), free(got), free(tol);
}

static void test_attentions(struct bt *t)
{
    test_attention(t, 1, 1, 1, 1);
    test_attention(t, 3, 4, 4, 17);   /* multi-head */
    test_attention(t, 17, 8, 2, 65);  /* grouped-query */
    test_attention(t, 65, 6, 1, 3);   /* multi-query */
    test_attention(t, 257, 4, 2, 33);
    test_attention(t, 300, 16, 4, 18); /* the most positions and heads the instance holds */
}

/* ---- norm ---- */

static void norm_scale(const float *x, const float *w, const float *b, int d, enum norm_kind kind, float eps,
                       double *tol)
{
    double mean = 0, ss = 0;
    for (int i = 0; kind == NORM_LAYER && i < d; i++)
        mean += x[i];
    mean /= d;
    for (int i = 0; i < d; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    double sigma = sqrt(ss / d + eps);
    for (int i = 0; i < d; i++)
        tol[i] = tol_norm * (fabs(w[i]) * (fabs(x[i]) + fabs(mean)) / sigma + (b ? fabs(b[i]) : 0));
}

/* in_place: out is x's buffer (norm allows it). */
static void test_norm(struct bt *t, int d, enum norm_kind kind, bool with_bias, bool in_place)
{
    if (!bt_has_op(t, BACKEND_OP_NORM))
        return;
    float *x = malloc((size_t)d * 4), *w = malloc((size_t)d * 4), *b = malloc((size_t)d * 4);
    float *want = malloc((size_t)d * 4), *got = malloc((size_t)d * 4);
    double *tol = malloc((size_t)d * sizeof *tol);
    bt_fill(x, (size_t)d, 1, kind == NORM_LAYER ? 3.0f : 0.0f); /* a mean to take away */
    bt_fill(w, (size_t)d, 0.2f, 1), bt_fill(b, (size_t)d, 0.1f, 0);
    struct gbuf gx, gw, gb, go;
    gb_floats(t, x, (size_t)d, &gx), gb_floats(t, w, (size_t)d, &gw), gb_floats(t, b, (size_t)d, &gb);
    gb_new(t, (size_t)d * 4, NULL, &go);
    struct gbuf *out = in_place ? &gx : &go;
    char what[96];
    snprintf(what, sizeof what, "norm %s d %d%s%s", kind == NORM_LAYER ? "layer" : "rms", d,
             with_bias ? " + bias" : "", in_place ? " in place" : "");
    struct dev_ref bias = with_bias ? gb.at : (struct dev_ref){0};
    bt_ok(t, t->ops->norm(t->b, out->at, gx.at, gw.at, bias, d, kind, 1e-5f), what);
    gb_read(t, out, got);
    ck_norm(t->ref, want, x, w, with_bias ? b : NULL, d, kind, 1e-5f);
    norm_scale(x, w, with_bias ? b : NULL, d, kind, 1e-5f, tol);
    bt_compare(t, what, got, want, tol, (size_t)d);
    gb_done(t, &gx, in_place ? NULL : x, what), gb_done(t, &gw, w, what), gb_done(t, &gb, b, what);
    gb_done(t, &go, NULL, what);
    free(x), free(w), free(b), free(want), free(got), free(tol);
}

static void test_norms(struct bt *t)
{
    for (int s = 0; s < N_SIZES; s++)
        for (int kind = 0; kind < 2; kind++)
            for (int bias = 0; bias < 2; bias++)
                test_norm(t, sizes[s], kind ? NORM_LAYER : NORM_RMS, bias, s == 3 && bias);
}

/* ---- rope ---- */

/* rot / 2 + 1 frequencies of the arch's kind (theta, scaled as it
 * says) on the backend and in freq; the cos/sin scale in *scale. */
static void rope_table(struct bt *t, const struct arch *a, float *freq, float *scale, struct gbuf *g)
{
    arch_rope_freqs(a, freq, scale);
    gb_floats(t, freq, a->rope_dims / 2 + 1, g);
}

static void test_rope(struct bt *t, int n_heads, int hd, int rot, int pos, const struct arch *kind)
{
    if (!bt_has_op(t, BACKEND_OP_ROPE))
        return;
    struct arch a = *kind;
    a.rope_dims = (uint32_t)rot;
    float freq[80] = {0}, scale;
    struct gbuf gf;
    rope_table(t, &a, freq, &scale, &gf);
    if (a.rope_scaling == ROPE_LINEAR)
        scale = 0.75f; /* a magnitude factor on cos and sin, as longrope's */
    size_t n = (size_t)n_heads * hd;
    float *v = malloc(n * 4), *want = malloc(n * 4), *got = malloc(n * 4);
    double *tol = malloc(n * sizeof *tol);
    bt_fill(v, n, 1, 0);
    memcpy(want, v, n * 4);
    for (size_t i = 0; i < n; i++) {
        size_t in_head = i % (size_t)hd, pair = in_head % 2 ? i - 1 : i + 1;
        tol[i] = in_head < (size_t)rot ? tol_rope * (1 + pos) * (fabs(v[i]) + fabs(v[pair])) : 0;
    }
    struct gbuf gv;
    gb_floats(t, v, n, &gv);
    char what[96];
    snprintf(what, sizeof what, "rope %d heads of %d, %d rotated, position %d, scaling %d", n_heads, hd, rot, pos,
             (int)a.rope_scaling);
    bt_ok(t, t->ops->rope(t->b, gv.at, n_heads, hd, rot, pos, gf.at, scale), what);
    gb_read(t, &gv, got);
    ck_rope(t->ref, want, n_heads, hd, rot, pos, freq, scale);
    bt_compare(t, what, got, want, tol, n);
    gb_done(t, &gv, NULL, what);
    gb_done(t, &gf, freq, what); /* the table is an input: untouched */
    free(v), free(want), free(got), free(tol);
}

static void test_ropes(struct bt *t)
{
    static const int pos[] = {0, 3, 257};
    const struct arch plain = {.rope_theta = 10000}, persimmon = {.rope_theta = 25000};
    /* Llama 3.1's bands at a small original context (all three kinds of
     * pair at head_dim 18), and a linear table: frequencies as data */
    const struct arch llama3 = {.rope_theta = 500000, .rope_scaling = ROPE_LLAMA3, .rope_factor = 8,
                                .rope_low_freq_factor = 1, .rope_high_freq_factor = 4,
                                .rope_original_max_positions = 64};
    const struct arch linear = {.rope_theta = 10000, .rope_scaling = ROPE_LINEAR, .rope_factor = 4};
    for (int p = 0; p < 3; p++) {
        test_rope(t, 1, 2, 2, pos[p], &plain);
        test_rope(t, 3, 18, 18, pos[p], &plain);      /* whole heads */
        test_rope(t, 4, 34, 16, pos[p], &persimmon);  /* Persimmon: about half */
        test_rope(t, 2, 66, 26, pos[p], &plain);      /* Phi-2: 40% */
        test_rope(t, 5, 130, 0, pos[p], &plain);      /* nothing rotated */
        test_rope(t, 3, 18, 18, pos[p], &llama3);
        test_rope(t, 4, 130, 128, pos[p], &llama3);   /* Llama 3.1's head */
        test_rope(t, 2, 34, 34, pos[p], &linear);
    }
}

/* ---- add, embed: exact everywhere ---- */

static void test_add(struct bt *t, int n)
{
    if (!bt_has_op(t, BACKEND_OP_ADD))
        return;
    float *y = malloc((size_t)n * 4), *x = malloc((size_t)n * 4), *want = malloc((size_t)n * 4);
    float *got = malloc((size_t)n * 4);
    bt_fill(y, (size_t)n, 1, 0), bt_fill(x, (size_t)n, 1, 0);
    memcpy(want, y, (size_t)n * 4);
    struct gbuf gy, gx;
    gb_floats(t, y, (size_t)n, &gy), gb_floats(t, x, (size_t)n, &gx);
    char what[64];
    snprintf(what, sizeof what, "add %d", n);
    bt_ok(t, t->ops->add(t->b, gy.at, gx.at, n), what);
    gb_read(t, &gy, got);
    ck_add(t->ref, want, x, n);
    bt_compare(t, what, got, want, NULL, (size_t)n);
    gb_done(t, &gy, NULL, what), gb_done(t, &gx, x, what);
    free(y), free(x), free(want), free(got);
}

static void test_embed(struct bt *t, enum fb_dtype dt, int rows, int d)
{
    if (!bt_has(t, BACKEND_OP_EMBED, dt))
        return;
    size_t n = (size_t)rows * d;
    float *vals = malloc(n * 4), *want = malloc((size_t)d * 4), *got = malloc((size_t)d * 4);
    bt_fill(vals, n, 3, 0);
    void *table = bt_weights(dt, vals, n);
    struct gbuf gt, go;
    gb_new(t, wtype_row_bytes(dt, n), table, &gt);
    gb_new(t, (size_t)d * 4, NULL, &go);
    for (int r = 0; r < rows; r += rows > 2 ? rows / 2 : 1) {
        char what[64];
        snprintf(what, sizeof what, "embed %s row %d of %d x %d", wtype_name(dt), r, rows, d);
        bt_ok(t, t->ops->embed(t->b, go.at, gt.at, dt, r, d, 1.0f), what);
        gb_read(t, &go, got);
        ck_embed(t->ref, want, table, dt, r, d);
        bt_compare(t, what, got, want, NULL, (size_t)d);
        /* scaled (Gemma's sqrt(d_model)): one f32 product each, exact everywhere */
        snprintf(what, sizeof what, "embed %s row %d of %d x %d, scaled", wtype_name(dt), r, rows, d);
        bt_ok(t, t->ops->embed(t->b, go.at, gt.at, dt, r, d, sqrtf(640.0f)), what);
        gb_read(t, &go, got);
        ck_scale(t->ref, want, sqrtf(640.0f), d);
        bt_compare(t, what, got, want, NULL, (size_t)d);
    }
    gb_done(t, &gt, table, "embed table"), gb_done(t, &go, NULL, "embed out");
    free(vals), free(want), free(got), free(table);
}

static void test_adds_embeds(struct bt *t)
{
    for (int s = 0; s < N_SIZES; s++)
        test_add(t, sizes[s]);
    for (int dt = 0; dt < 3; dt++)
        for (int s = 0; s < N_SIZES - 1; s++)
            test_embed(t, (enum fb_dtype)dt, 5, sizes[s]);
}

/* ---- the block formats ----
 * Random blocks (random bytes, the halves finite: +-[0, 1/16)) in every
 * quantized type. cpu and sim give the CPU kernels' bits (their block
 * path: x quantized once to 8-bit blocks, integer dot products). The
 * device kernels multiply the decoded weights by x unquantized, so they
 * are checked against the decode (dtype_to_f32, bit-exact) followed by
 * the op in double precision, within the f32 tolerances the float cases
 * use (tol_matvec, tol_ffn with ffn_scale over the decoded rows); embed
 * is a decode, exact on every backend. The what of each case starts
 * "op/type", so a device's summary gives each op's worst per type. */

/* rows of n elements of type dt, random blocks with finite halves */
static uint8_t *block_rows(enum fb_dtype dt, int rows, int n)
{
    size_t bytes = wtype_row_bytes(dt, (uint64_t)n) * (size_t)rows, bb = wtype_block_bytes(dt);
    uint8_t *w = malloc(bytes + 1);
    int off[2], halves = quant_block_halves(dt, off);
    for (size_t i = 0; i < bytes; i++)
        w[i] = bt_byte();
    for (size_t b = 0; b < bytes / bb; b++)
        for (int k = 0; k < halves; k++) {
            uint16_t h = f32_to_f16(bt_uniform() / 16);
            memcpy(w + b * bb + off[k], &h, 2);
        }
    return w;
}

/* rows packed rows of n elements of dt, decoded */
static float *block_decoded(enum fb_dtype dt, const uint8_t *w, int rows, int n)
{
    float *v = malloc((size_t)rows * n * sizeof *v + 1);
    dtype_to_f32(v, w, dt, (size_t)rows * n);
    return v;
}

/* The device's reference: W x + b in double over the decoded rows, and
 * each output's tolerance, tol_matvec of sum |w x| + |b| */
static void matvec_double(const float *wv, const float *x, const float *b, int rows, int cols, float *want,
                          double *tol)
{
    for (int r = 0; r < rows; r++) {
        const float *row = wv + (size_t)r * cols;
        double s = b[r], mag = fabs(b[r]);
        for (int i = 0; i < cols; i++)
            s += (double)row[i] * x[i], mag += fabs((double)row[i] * x[i]);
        want[r] = (float)s;
        tol[r] = tol_matvec[DTYPE_F32] * mag;
    }
}

static void test_block_matvec(struct bt *t, enum fb_dtype dt, int rows, int cols)
{
    if (!bt_has(t, BACKEND_OP_MATVEC, dt))
        return;
    uint8_t *w = block_rows(dt, rows, cols);
    float *x = malloc((size_t)cols * 4), *b = malloc((size_t)rows * 4);
    float *want = malloc((size_t)rows * 4), *got = malloc((size_t)rows * 4);
    double *tol = malloc((size_t)rows * sizeof *tol);
    bt_fill(x, (size_t)cols, 1, 0), bt_fill(b, (size_t)rows, 1, 0);
    struct gbuf gw, gx, gb, go;
    gb_new(t, wtype_row_bytes(dt, (uint64_t)cols) * (size_t)rows, w, &gw);
    gb_floats(t, x, (size_t)cols, &gx);
    gb_floats(t, b, (size_t)rows, &gb);
    gb_new(t, (size_t)rows * 4, NULL, &go);
    char what[96];
    snprintf(what, sizeof what, "matvec/%s %dx%d + bias", wtype_name(dt), rows, cols);
    bt_ok(t, t->ops->matvec(t->b, go.at, gw.at, dt, gx.at, gb.at, rows, cols), what);
    gb_read(t, &go, got);
    if (t->exact) {
        ck_matvec(t->ref, want, w, dt, x, b, rows, cols);
    } else {
        float *wv = block_decoded(dt, w, rows, cols);
        matvec_double(wv, x, b, rows, cols, want, tol);
        free(wv);
    }
    bt_compare(t, what, got, want, tol, (size_t)rows);
    gb_done(t, &gw, w, what), gb_done(t, &gx, x, what), gb_done(t, &gb, b, what), gb_done(t, &go, NULL, what);
    free(w), free(x), free(b), free(want), free(got), free(tol);
}

/* The device's reference for the FFN over B's rows (B->vals decoded):
 * the dot products and the sum over rows in double, the activation
 * ops.kern's (activation_apply_t on the rounded sums) */
static void ffn_rows_double(const struct bundles *B, const struct arch *a, const float *x, float *want)
{
    int d = B->d;
    double *out = calloc((size_t)d, sizeof *out);
    for (int r = 0; r < B->n; r++) {
        const float *up = B->vals + (size_t)r * B->parts * d, *gate = up + d, *down = up + (size_t)(B->parts - 1) * d;
        double z = 0, g = 0;
        for (int j = 0; j < d; j++)
            z += (double)up[j] * x[j], g += a->glu ? (double)gate[j] * x[j] : 0;
        float th = a->fatrelu_threshold;
        double up_v = a->glu && !a->act_on_up ? z : activation_apply_t((float)z, a->act, th);
        double h = a->glu ? activation_apply_t((float)g, a->act, th) * up_v : up_v;
        for (int i = 0; i < d; i++)
            out[i] += h * down[i];
    }
    for (int i = 0; i < d; i++)
        want[i] = (float)out[i];
    free(out);
}

/* The FFN over n_rows bundles of d (a GLU when a says), the rows packed */
static void test_block_ffn(struct bt *t, enum fb_dtype dt, const struct arch *a, int n_rows, int d)
{
    if (!bt_has(t, BACKEND_OP_FFN_ROWS, dt))
        return;
    int parts = a->glu ? 3 : 2;
    size_t stride = (size_t)parts * wtype_row_bytes(dt, (uint64_t)d);
    uint8_t *rows = block_rows(dt, n_rows * parts, d);
    float *x = malloc((size_t)d * 4), *want = malloc((size_t)d * 4), *got = malloc((size_t)d * 4);
    double *tol = malloc((size_t)d * sizeof *tol);
    bt_fill(x, (size_t)d, 0.25f, 0);
    struct gbuf gr, gx, go;
    gb_new(t, stride * (size_t)n_rows, rows, &gr);
    gb_floats(t, x, (size_t)d, &gx);
    gb_new(t, (size_t)d * 4, NULL, &go);
    char what[96];
    snprintf(what, sizeof what, "ffn_rows/%s %s%s %d rows x %d", wtype_name(dt), a->glu ? "glu " : "",
             act_name(a->act), n_rows, d);
    bt_ok(t, t->ops->ffn_rows(t->b, go.at, gr.at, stride, n_rows, (struct dev_ref){0}, gx.at, d, dt, a), what);
    gb_read(t, &go, got);
    if (t->exact) {
        ck_ffn_rows(t->ref, want, rows, stride, n_rows, NULL, x, d, dt, a);
    } else {
        struct bundles B = {.n = n_rows, .d = d, .parts = parts, .dt = dt};
        B.vals = block_decoded(dt, rows, n_rows * parts, d);
        ffn_rows_double(&B, a, x, want);
        ffn_scale(&B, a, NULL, n_rows, x, NULL, tol_ffn[DTYPE_F32], tol);
        free(B.vals);
    }
    bt_compare(t, what, got, want, tol, (size_t)d);
    gb_done(t, &gr, rows, what), gb_done(t, &gx, x, what), gb_done(t, &go, NULL, what);
    free(rows), free(x), free(want), free(got), free(tol);
}

static void test_block_embed(struct bt *t, enum fb_dtype dt, int rows, int d)
{
    if (!bt_has(t, BACKEND_OP_EMBED, dt))
        return;
    uint8_t *table = block_rows(dt, rows, d);
    float *want = malloc((size_t)d * 4), *got = malloc((size_t)d * 4);
    struct gbuf gt, go;
    gb_new(t, wtype_row_bytes(dt, (uint64_t)d) * (size_t)rows, table, &gt);
    gb_new(t, (size_t)d * 4, NULL, &go);
    char what[64];
    snprintf(what, sizeof what, "embed/%s row %d of %d x %d", wtype_name(dt), rows - 1, rows, d);
    bt_ok(t, t->ops->embed(t->b, go.at, gt.at, dt, rows - 1, d, 1.0f), what);
    gb_read(t, &go, got);
    ck_embed(t->ref, want, table, dt, rows - 1, d);
    bt_compare(t, what, got, want, NULL, (size_t)d); /* a decode: exact on every backend */
    gb_done(t, &gt, table, what), gb_done(t, &go, NULL, what);
    free(table), free(want), free(got);
}

static void test_block_types(struct bt *t)
{
    static const struct arch archs[] = {{.act = ACT_SILU, .glu = true}, {.act = ACT_RELU}};
    for (int dt = WTYPE_FLOAT_COUNT; dt < DTYPE_COUNT; dt++) {
        int block = (int)wtype_block_elems((enum fb_dtype)dt);
        test_block_matvec(t, (enum fb_dtype)dt, 17, block);
        test_block_matvec(t, (enum fb_dtype)dt, 65, 1024);
        test_block_matvec(t, (enum fb_dtype)dt, 3, 3 * block); /* a block count no group size divides */
        for (int a = 0; a < 2; a++)
            test_block_ffn(t, (enum fb_dtype)dt, &archs[a], 33, 512);
        test_block_embed(t, (enum fb_dtype)dt, 5, 768);
    }
}

/* ---- copies: row moves, uploads and downloads ---- */

/* moves[0..n) applied in order, each reading what the ones before it
 * wrote (a chain: the neuron cache's swap-with-last, paper Fig. 6). */
static void test_move_rows(struct bt *t, size_t row_bytes, const struct row_move *moves, int n)
{
    if (!bt_has_op(t, BACKEND_OP_MOVE_ROWS))
        return;
    enum { ROWS = 10 };
    size_t bytes = ROWS * row_bytes;
    uint8_t *rows = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        rows[i] = bt_byte();
    memcpy(want, rows, bytes);
    for (int i = 0; i < n; i++)
        memmove(want + (size_t)moves[i].dst * row_bytes, want + (size_t)moves[i].src * row_bytes, row_bytes);
    struct gbuf gr, gm;
    gb_new(t, bytes, rows, &gr);
    gb_new(t, (size_t)n * sizeof *moves, moves, &gm);
    char what[64];
    snprintf(what, sizeof what, "move_rows %d moves of %zu bytes", n, row_bytes);
    bt_ok(t, t->ops->move_rows(t->b, gr.at, row_bytes, gm.at, n), what);
    gb_read(t, &gr, got);
    bool same = memcmp(got, want, bytes) == 0;
    if (!same)
        fprintf(stderr, "%s %s: rows differ from the moves applied in order\n", t->name, what);
    CHECK(same);
    gb_done(t, &gr, NULL, what), gb_done(t, &gm, moves, what);
    free(rows), free(want), free(got);
}

static void test_moves(struct bt *t)
{
    /* 0 <- 5, then 5 <- 9, then 9 <- 0 (5's old row), a row onto itself, 7 <- 2 */
    static const struct row_move chain[] = {{0, 5}, {5, 9}, {9, 0}, {3, 3}, {7, 2}, {2, 7}, {8, 9}};
    static const size_t row_bytes[] = {4, 12, 68, 1028, 4100};
    for (int r = 0; r < 5; r++) {
        test_move_rows(t, row_bytes[r], chain, 7);
        test_move_rows(t, row_bytes[r], chain, 1);
        test_move_rows(t, row_bytes[r], chain, 0);
    }
}

/* Bytes up and back at awkward sizes, whole and at an odd offset into
 * the payload; a pinned buffer's host address; registered host memory. */
static void test_round_trip(struct bt *t, size_t bytes)
{
    uint8_t *src = malloc(bytes + 8), *got = malloc(bytes + 8), *part = malloc(bytes + 8);
    for (size_t i = 0; i < bytes; i++)
        src[i] = bt_byte(), part[i] = (uint8_t)~src[i];
    struct gbuf g;
    gb_new(t, bytes, src, &g);
    gb_read(t, &g, got);
    CHECK(memcmp(got, src, bytes) == 0);
    size_t lo = bytes / 3, n = bytes - lo - bytes / 5; /* a middle piece at an odd offset */
    bt_ok(t, t->ops->upload(t->b, dev_at(g.at, lo), part + lo, n), "upload of a middle piece");
    memcpy(src + lo, part + lo, n);
    bt_ok(t, t->ops->download(t->b, got + lo, dev_at(g.at, lo), n), "download of a middle piece");
    bt_ok(t, t->ops->sync(t->b), "sync");
    CHECK(memcmp(got, src, bytes) == 0);
    gb_read(t, &g, got);
    CHECK(memcmp(got, src, bytes) == 0);
    char what[64];
    snprintf(what, sizeof what, "upload and download of %zu bytes", bytes);
    gb_done(t, &g, src, what);
    free(src), free(got), free(part);
}

/* Host buffers, as the engine uses them (backend.h): a pinned buffer's host
 * address is the host's side of copies (filled, then uploaded from; read
 * after a download into it); registered memory is read by the device, in
 * place when host_ptr gives the memory back (the flash ring's slots: the
 * host rewrites them between tokens). Neither promises that an upload
 * into the buffer shows at the host address: NVIDIA's OpenCL keeps a
 * device copy of a host-visible buffer, and cuda copies registered memory
 * that does not start on a page. */
static void test_host_buffers(struct bt *t)
{
    enum { N = 1000 };
    uint8_t src[N], mem[N + 3], got[N];
    for (int i = 0; i < N; i++)
        src[i] = bt_byte(), mem[3 + i] = src[i];
    struct dev_buf *pinned = NULL, *reg = NULL, *dev = NULL;
    if (bt_ok(t, t->ops->alloc(t->b, N, BUF_DEVICE, &dev), "a device buffer"))
        return;
    if (bt_ok(t, t->ops->alloc(t->b, N, BUF_PINNED, &pinned), "a pinned buffer") == 0) {
        uint8_t *host = t->ops->host_ptr(t->b, pinned); /* a pinned buffer is the host's to fill and read */
        CHECK(host != NULL);
        if (host) {
            memcpy(host, src, N);
            bt_ok(t, t->ops->upload(t->b, (struct dev_ref){dev, 0}, host, N), "upload from a pinned buffer");
            memset(got, 0, N);
            bt_ok(t, t->ops->download(t->b, got, (struct dev_ref){dev, 0}, N), "download to check it");
            bt_ok(t, t->ops->sync(t->b), "sync");
            CHECK(memcmp(got, src, N) == 0);
            memset(host, 0, N);
            bt_ok(t, t->ops->download(t->b, host, (struct dev_ref){dev, 0}, N), "download into a pinned buffer");
            bt_ok(t, t->ops->sync(t->b), "sync");
            CHECK(memcmp(host, src, N) == 0);
        }
        t->ops->buf_free(t->b, pinned);
    }
    /* registered memory at an odd address: the device reads what it holds */
    if (bt_ok(t, t->ops->register_host(t->b, mem + 3, N, &reg), "register_host") == 0) {
        bt_ok(t, t->ops->download(t->b, got, (struct dev_ref){reg, 0}, N), "download from registered memory");
        bt_ok(t, t->ops->sync(t->b), "sync");
        CHECK(memcmp(got, src, N) == 0);
        if (t->ops->host_ptr(t->b, reg) == mem + 3) { /* in place: the host's later writes reach the device */
            mem[3 + 17] ^= 0xff;
            bt_ok(t, t->ops->download(t->b, got, (struct dev_ref){reg, 0}, N), "download after the host wrote");
            bt_ok(t, t->ops->sync(t->b), "sync");
            CHECK(memcmp(got, mem + 3, N) == 0);
        }
        t->ops->buf_free(t->b, reg);
    }
    t->ops->buf_free(t->b, dev);
}

static void test_copies(struct bt *t)
{
    static const size_t bytes[] = {1, 3, 17, 65, 257, 1000, 65537, 1 << 20};
    for (int i = 0; i < 8; i++)
        test_round_trip(t, bytes[i]);
    test_host_buffers(t);
}

/* ---- the queue: events, and the counts of what went through it ---- */

/* The host reuses an upload's source, and reads a download's
 * destination, only after an event recorded after it was waited on. */
static void test_events(struct bt *t)
{
    enum { N = 4099 };
    float *stage = malloc(N * 4), *first = malloc(N * 4), *out = malloc(N * 4), *x2 = malloc(N * 4);
    bt_fill(stage, N, 1, 0);
    memcpy(first, stage, N * 4);
    struct gbuf a, b;
    gb_new(t, N * 4, NULL, &a), gb_new(t, N * 4, NULL, &b);
    uint64_t e1, e2;
    bt_ok(t, t->ops->upload(t->b, a.at, stage, N * 4), "upload");
    bt_ok(t, t->ops->event_record(t->b, &e1), "event_record");
    bt_ok(t, t->ops->event_wait(t->b, e1), "event_wait");
    bt_fill(stage, N, 1, 0); /* the staging buffer reused: the upload has read it */
    bt_ok(t, t->ops->upload(t->b, b.at, stage, N * 4), "upload");
    bt_ok(t, t->ops->add(t->b, b.at, a.at, N), "add");
    bt_ok(t, t->ops->download(t->b, out, a.at, N * 4), "download");
    bt_ok(t, t->ops->event_record(t->b, &e1), "event_record");
    bt_ok(t, t->ops->download(t->b, x2, b.at, N * 4), "download");
    bt_ok(t, t->ops->event_record(t->b, &e2), "event_record");
    bt_ok(t, t->ops->event_wait(t->b, e2), "event_wait"); /* the later event: all before it is done */
    CHECK(memcmp(out, first, N * 4) == 0);
    ck_add(t->ref, stage, first, N);
    CHECK(memcmp(x2, stage, N * 4) == 0);
    bt_ok(t, t->ops->event_wait(t->b, e1), "event_wait on a passed event");
    gb_done(t, &a, first, "events"), gb_done(t, &b, stage, "events");
    free(stage), free(first), free(out), free(x2);
}

/* Exact counts: bytes each way, copies (uploads, downloads, row moves),
 * launches and synchronisations (syncs and event waits). */
static void test_counts(struct bt *t)
{
    enum { N = 300 };
    float x[N], y[N];
    struct row_move mv[2] = {{0, 1}, {1, 0}};
    bt_fill(x, N, 1, 0);
    struct dev_buf *buf;
    if (bt_ok(t, t->ops->alloc(t->b, 4 * N * 4, BUF_DEVICE, &buf), "alloc") != 0)
        return;
    struct dev_ref r0 = {buf, 0}, r1 = {buf, N * 4}, r2 = {buf, 2 * N * 4}, r3 = {buf, 3 * N * 4};
    bt_ok(t, t->ops->sync(t->b), "sync");
    struct backend_counts c0, c1;
    t->ops->counts(t->b, &c0);
    uint64_t ev;
    bt_ok(t, t->ops->upload(t->b, r0, x, N * 4), "upload");
    bt_ok(t, t->ops->upload(t->b, r1, x, N * 4), "upload");
    bt_ok(t, t->ops->upload(t->b, r2, mv, sizeof mv), "upload");
    bt_ok(t, t->ops->add(t->b, r1, r0, N), "add");
    bt_ok(t, t->ops->norm(t->b, r3, r1, r0, (struct dev_ref){0}, N, NORM_RMS, 1e-5f), "norm");
    bt_ok(t, t->ops->move_rows(t->b, r0, 16, r2, 2), "move_rows");
    bt_ok(t, t->ops->download(t->b, y, r3, N * 4), "download");
    bt_ok(t, t->ops->event_record(t->b, &ev), "event_record");
    bt_ok(t, t->ops->event_wait(t->b, ev), "event_wait");
    bt_ok(t, t->ops->sync(t->b), "sync");
    t->ops->counts(t->b, &c1);
    CHECK_U64(c1.bytes_up - c0.bytes_up, 2 * N * 4 + sizeof mv);
    CHECK_U64(c1.bytes_down - c0.bytes_down, N * 4);
    CHECK_U64(c1.bytes_moved - c0.bytes_moved, 2 * 16);
    CHECK_U64(c1.copies - c0.copies, 5);
    CHECK_U64(c1.launches - c0.launches, 2);
    CHECK_U64(c1.syncs - c0.syncs, 2);
    t->ops->buf_free(t->b, buf);
}

/* ---- event_elapsed: the device's time between two events ---- */

/* rc must be -1 with a one-line reason naming the event, the backend
 * usable after (a refusal is no fault). */
static void elapsed_refused(struct bt *t, uint64_t from, uint64_t to, const char *what)
{
    double ms = -1;
    int rc = t->ops->event_elapsed(t->b, from, to, &ms);
    const char *why = t->ops->error(t->b);
    bool named = why && strstr(why, "event") && !strchr(why, '\n');
    if (rc != -1 || !named)
        fprintf(stderr, "%s event_elapsed %s: returned %d, reason \"%s\"\n", t->name, what, rc, why ? why : "(null)");
    CHECK(rc == -1);
    CHECK(named);
}

static void counts_same(const struct backend_counts *a, const struct backend_counts *b)
{
    CHECK_U64(b->bytes_up, a->bytes_up);
    CHECK_U64(b->bytes_down, a->bytes_down);
    CHECK_U64(b->bytes_moved, a->bytes_moved);
    CHECK_U64(b->copies, a->copies);
    CHECK_U64(b->launches, a->launches);
    CHECK_U64(b->syncs, a->syncs);
}

/* The last of BACKEND_EVENTS_KEPT more events, all passed: `old` is no
 * longer kept and is refused; the oldest kept one still answers. */
static void test_events_recycled(struct bt *t, uint64_t old)
{
    uint64_t last = 0;
    for (int i = 0; i < BACKEND_EVENTS_KEPT; i++)
        bt_ok(t, t->ops->event_record(t->b, &last), "event_record");
    bt_ok(t, t->ops->sync(t->b), "sync");
    elapsed_refused(t, old, last, "of a recycled event");
    double ms = -1;
    bt_ok(t, t->ops->event_elapsed(t->b, last - BACKEND_EVENTS_KEPT + 1, last, &ms), "the oldest kept event");
    CHECK(ms >= 0 && isfinite(ms));
}

/* 64 MiB up between two events: a time > 0 and finite, also when only a
 * later event was waited for; one event twice: 0; refused: the wrong way
 * round, unknown, recycled, and (sim, where it has not run) not waited
 * for. Counts unchanged by event_elapsed. */
static void test_event_times(struct bt *t)
{
    const size_t bytes = (size_t)64 << 20;
    uint8_t *src = malloc(bytes);
    struct dev_buf *buf;
    memset(src, 0x5a, bytes);
    if (bt_ok(t, t->ops->alloc(t->b, bytes, BUF_DEVICE, &buf), "alloc of 64 MiB") != 0) {
        free(src);
        return;
    }
    uint64_t e0, e1, e2;
    bt_ok(t, t->ops->event_record(t->b, &e0), "event_record");
    bt_ok(t, t->ops->upload(t->b, (struct dev_ref){buf, 0}, src, bytes), "upload of 64 MiB");
    bt_ok(t, t->ops->event_record(t->b, &e1), "event_record");
    bt_ok(t, t->ops->event_record(t->b, &e2), "event_record");
    if (!strcmp(t->name, "sim"))
        elapsed_refused(t, e0, e1, "before any wait (sim: not run)");
    bt_ok(t, t->ops->event_wait(t->b, e2), "event_wait"); /* e1 passed with it: the queue is in order */
    struct backend_counts c0, c1;
    t->ops->counts(t->b, &c0);
    double ms = -1, same = -1;
    bt_ok(t, t->ops->event_elapsed(t->b, e0, e1, &ms), "event_elapsed of an upload");
    CHECK(ms > 0 && isfinite(ms));
    bt_ok(t, t->ops->event_elapsed(t->b, e1, e1, &same), "event_elapsed of one event");
    CHECK(same == 0);
    elapsed_refused(t, e1, e0, "the wrong way round");
    elapsed_refused(t, 0, e1, "of event 0");
    elapsed_refused(t, e0, e2 + 1000, "of an event never recorded");
    t->ops->counts(t->b, &c1);
    counts_same(&c0, &c1);
    test_events_recycled(t, e0);
    bt_ok(t, t->ops->upload(t->b, (struct dev_ref){buf, 0}, src, 1000), "upload after the refusals");
    bt_ok(t, t->ops->sync(t->b), "sync after the refusals");
    printf("%s: 64 MiB upload between two events: %.3f ms\n", t->name, ms);
    t->ops->buf_free(t->b, buf);
    free(src);
}

/* ---- refusals: a ref past its buffer ---- */

/* rc must be -1 with a one-line reason naming the overrun. */
static void refused(struct bt *t, int rc, const char *what)
{
    const char *why = t->ops->error(t->b);
    bool named = why && strstr(why, "past") && !strchr(why, '\n');
    if (rc != -1 || !named)
        fprintf(stderr, "%s %s: returned %d, reason \"%s\"\n", t->name, what, rc, why ? why : "(null)");
    CHECK(rc == -1);
    CHECK(named);
}

/* A row stride shorter than one neuron bundle is refused, naming the
 * bundle's bytes, whatever shape came before (the bundle is worked out once
 * per shape): 8 f32 weights x 2 rows (ReLU) = 64 bytes, x 3 (GLU) = 96,
 * f16 x 3 = 48; a stride of a whole bundle is taken. buf: 64 floats (out,
 * x, then the rows). */
static void stride_refusals(struct bt *t, struct dev_ref buf)
{
    const struct backend_ops *o = t->ops;
    float zeros[64] = {0};
    struct dev_ref out = buf, x = {buf.buf, 32}, rows = {buf.buf, 64};
    bt_ok(t, o->upload(t->b, buf, zeros, sizeof zeros), "upload zeros");
    static const struct arch relu = {.act = ACT_RELU}, glu = {.act = ACT_SILU, .glu = true};
    struct dev_ref none = {0};
    struct {
        size_t stride;
        enum fb_dtype type;
        const struct arch *a;
        const char *why; /* NULL: taken */
    } cases[] = {
        {60, DTYPE_F32, &relu, "shorter than a bundle of 64"}, {64, DTYPE_F32, &relu, NULL},
        {64, DTYPE_F32, &glu, "shorter than a bundle of 96"},  {48, DTYPE_F16, &glu, NULL},
        {44, DTYPE_F16, &glu, "shorter than a bundle of 48"},  {60, DTYPE_F32, &relu, "shorter than a bundle of 64"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = o->ffn_rows(t->b, out, rows, cases[i].stride, 1, none, x, 8, cases[i].type, cases[i].a);
        if (cases[i].why) {
            CHECK(rc == -1 && strstr(o->error(t->b), cases[i].why));
        } else {
            bt_ok(t, rc, "ffn_rows, a stride of one bundle");
            bt_ok(t, o->sync(t->b), "sync after ffn_rows");
        }
    }
}

/* Each op and copy with one operand running past its buffer (64 floats),
 * refused before anything is enqueued; then valid calls still compute. */
static void test_refusals(struct bt *t)
{
    enum { N = 64 };
    const struct backend_ops *o = t->ops;
    struct backend *b = t->b;
    struct dev_buf *buf;
    float host[N] = {0};
    if (bt_ok(t, o->alloc(b, N * 4, BUF_DEVICE, &buf), "alloc") != 0)
        return;
    struct dev_ref at0 = {buf, 0}, at1 = {buf, 4}, none = {0}, end = {buf, N * 4 - 4};
    static const struct arch relu = {.act = ACT_RELU};
    refused(t, o->matvec(b, at0, at1, DTYPE_F32, at0, none, 1, N), "matvec weights past");
    refused(t, o->matvec(b, end, at0, DTYPE_F32, at0, at1, 2, 4), "matvec out past");
    refused(t, o->ffn_rows(b, at0, at1, 8 * 2 * 4, 4, none, at0, 8, DTYPE_F32, &relu), "ffn_rows rows past");
    refused(t, o->ffn_ids(b, at0, at0, 8 * 2 * 4, end, 2, none, at0, 8, DTYPE_F32, &relu), "ffn_ids ids past");
    refused(t, o->attention(b, at0, at0, at0, end, 2, 2, 1, 8), "attention v cache past");
    refused(t, o->norm(b, at0, at0, end, none, 8, NORM_RMS, 1e-5f), "norm weight past");
    refused(t, o->rope(b, end, 2, 4, 4, 1, at0, 1), "rope vector past");
    refused(t, o->rope(b, at0, 1, 4, 4, 1, end, 1), "rope frequencies past");
    CHECK(o->rope(b, at0, 1, 4, 4, 1, none, 1) == -1 && strstr(o->error(b), "rope frequencies"));
    refused(t, o->add(b, at0, end, 2), "add x past");
    refused(t, o->embed(b, at0, at0, DTYPE_F32, 8, 8, 1.0f), "embed row past");
    static const struct arch glu = {.act = ACT_SILU, .glu = true};
    refused(t, o->ffn_act(b, at0, end, at0, 2, &glu), "ffn_act z past");
    CHECK(o->ffn_act(b, at0, at0, none, 2, &glu) == -1 && strstr(o->error(b), "a GLU needs its gate"));
    refused(t, o->upload(b, end, host, 8), "upload past");
    refused(t, o->download(b, host, end, 8), "download past");
    refused(t, o->move_rows(b, at0, 16, end, 1), "move_rows moves past");
    stride_refusals(t, at0);
    o->buf_free(b, buf);
    /* still usable */
    test_matvec(t, DTYPE_F16, 17, 65, true);
    test_add(t, 17);
    bt_ok(t, o->sync(b), "sync after the refusals");
}

/* ---- NaN and infinity: propagated as the CPU kernels do ---- */

static void nonfinite_matvec(struct bt *t, float poison, int at, bool in_weights)
{
    enum { R = 17, C = 65 };
    float wv[R * C], x[C], b[R], want[R], got[R];
    bt_fill(wv, R * C, 1, 0), bt_fill(x, C, 1, 0), bt_fill(b, R, 1, 0);
    wv[3 * C + 7] = 0; /* a zero weight against an infinite x: NaN */
    (in_weights ? wv : x)[at] = poison;
    b[5] = NAN;
    struct gbuf gw, gx, gb, go;
    gb_floats(t, wv, R * C, &gw), gb_floats(t, x, C, &gx), gb_floats(t, b, R, &gb);
    gb_new(t, R * 4, NULL, &go);
    bt_ok(t, t->ops->matvec(t->b, go.at, gw.at, DTYPE_F32, gx.at, gb.at, R, C), "matvec, non-finite");
    gb_read(t, &go, got);
    ck_matvec(t->ref, want, wv, DTYPE_F32, x, b, R, C);
    bt_compare_class(t, "matvec with NaN or infinity", got, want, R);
    gb_free(t, &gw), gb_free(t, &gx), gb_free(t, &gb), gb_free(t, &go);
}

static void nonfinite_ffn(struct bt *t, const struct arch *a, float poison)
{
    enum { NR = 17, D = 33 };
    struct bundles B;
    bundles_make(&B, NR, D, DTYPE_F32, a, false);
    float x[D], want[D], got[D];
    bt_fill(x, D, 1, 0);
    x[4] = poison;
    ((float *)B.mem)[(size_t)2 * B.parts * D + (size_t)(B.parts - 1) * D + 1] = INFINITY; /* a down weight */
    struct gbuf gr, gx, go;
    gb_new(t, NR * B.stride, B.mem, &gr), gb_floats(t, x, D, &gx), gb_new(t, D * 4, NULL, &go);
    bt_ok(t, t->ops->ffn_rows(t->b, go.at, gr.at, B.stride, NR, (struct dev_ref){0}, gx.at, D, DTYPE_F32, a),
          "ffn_rows, non-finite");
    gb_read(t, &go, got);
    ck_ffn_rows(t->ref, want, B.mem, B.stride, NR, NULL, x, D, DTYPE_F32, a);
    char what[64];
    snprintf(what, sizeof what, "ffn_rows %s%s with %g", a->glu ? "glu " : "", act_name(a->act), poison);
    bt_compare_class(t, what, got, want, D);
    gb_free(t, &gr), gb_free(t, &gx), gb_free(t, &go);
    bundles_free(&B);
}

static void nonfinite_attention(struct bt *t, float poison, int where)
{
    enum { P = 17, H = 4, KV = 2, HD = 9 };
    float q[H * HD], k[P * KV * HD], v[P * KV * HD], want[H * HD], got[H * HD];
    bt_fill(q, H * HD, 1, 0), bt_fill(k, P * KV * HD, 1, 0), bt_fill(v, P * KV * HD, 1, 0);
    (where == 0 ? q : where == 1 ? k : v)[where == 0 ? 8 : 5 * KV * HD + 3] = poison; /* head 0; position 5 */
    struct gbuf gq, gk, gv, go;
    gb_floats(t, q, H * HD, &gq), gb_floats(t, k, P * KV * HD, &gk), gb_floats(t, v, P * KV * HD, &gv);
    gb_new(t, H * HD * 4, NULL, &go);
    bt_ok(t, t->ops->attention(t->b, go.at, gq.at, gk.at, gv.at, P, H, KV, HD), "attention, non-finite");
    gb_read(t, &go, got);
    ck_attention(t->ref, want, q, k, v, P, H, KV, HD);
    char what[64];
    snprintf(what, sizeof what, "attention with %g in %s", poison, where == 0 ? "q" : where == 1 ? "k" : "v");
    bt_compare_class(t, what, got, want, H * HD);
    gb_free(t, &gq), gb_free(t, &gk), gb_free(t, &gv), gb_free(t, &go);
}

/* norm, rope and add over a vector holding poison at one place */
static void nonfinite_vector_ops(struct bt *t, float poison)
{
    enum { D = 65 };
    float x[D], w[D], want[D], got[D], y[D];
    bt_fill(x, D, 1, 0), bt_fill(w, D, 0.2f, 1), bt_fill(y, D, 1, 0);
    x[9] = poison;
    y[9] = -poison; /* inf + -inf: NaN */
    struct gbuf gx, gw, go, gy;
    gb_floats(t, x, D, &gx), gb_floats(t, w, D, &gw), gb_new(t, D * 4, NULL, &go), gb_floats(t, y, D, &gy);
    for (int kind = 0; kind < 2; kind++) {
        enum norm_kind nk = kind ? NORM_LAYER : NORM_RMS;
        bt_ok(t, t->ops->norm(t->b, go.at, gx.at, gw.at, gw.at, D, nk, 1e-5f), "norm, non-finite");
        gb_read(t, &go, got);
        ck_norm(t->ref, want, x, w, w, D, nk, 1e-5f);
        bt_compare_class(t, kind ? "layer norm with NaN or infinity" : "rms norm with NaN or infinity", got, want, D);
    }
    const struct arch a = {.rope_theta = 10000, .rope_dims = 8};
    float freq[5], scale;
    struct gbuf gf;
    rope_table(t, &a, freq, &scale, &gf);
    bt_ok(t, t->ops->rope(t->b, gx.at, 5, 13, 8, 7, gf.at, scale), "rope, non-finite");
    gb_read(t, &gx, got);
    memcpy(want, x, sizeof want);
    ck_rope(t->ref, want, 5, 13, 8, 7, freq, scale);
    bt_compare_class(t, "rope with NaN or infinity", got, want, D);
    bt_ok(t, t->ops->add(t->b, gy.at, gx.at, D), "add, non-finite");
    gb_read(t, &gy, got);
    memcpy(want, y, sizeof y);
    float xr[D];
    memcpy(xr, x, sizeof xr);
    ck_rope(t->ref, xr, 5, 13, 8, 7, freq, scale);
    ck_add(t->ref, want, xr, D);
    bt_compare_class(t, "add with NaN or infinity", got, want, D);
    gb_free(t, &gx), gb_free(t, &gw), gb_free(t, &go), gb_free(t, &gy), gb_free(t, &gf);
}

/* f16 and bf16 infinities and NaNs widen to f32's */
static void nonfinite_embed(struct bt *t, enum fb_dtype dt)
{
    if (!bt_has(t, BACKEND_OP_EMBED, dt))
        return;
    enum { D = 17 };
    float vals[2 * D], want[D], got[D];
    bt_fill(vals, 2 * D, 1, 0);
    vals[D + 1] = INFINITY, vals[D + 4] = -INFINITY, vals[D + 16] = NAN;
    void *table = bt_weights(dt, vals, 2 * D);
    struct gbuf gt, go;
    gb_new(t, 2 * wtype_row_bytes(dt, D), table, &gt), gb_new(t, D * 4, NULL, &go);
    bt_ok(t, t->ops->embed(t->b, go.at, gt.at, dt, 1, D, 1.0f), "embed, non-finite");
    gb_read(t, &go, got);
    ck_embed(t->ref, want, table, dt, 1, D);
    bt_compare(t, "embed of infinities and NaN", got, want, NULL, D); /* exact where finite */
    gb_free(t, &gt), gb_free(t, &go);
    free(table);
}

static void test_nonfinite(struct bt *t)
{
    const float poisons[] = {NAN, INFINITY, -INFINITY};
    for (int p = 0; p < 3; p++) {
        nonfinite_matvec(t, poisons[p], 7, false);
        nonfinite_matvec(t, poisons[p], 2 * 65 + 3, true);
        for (int a = 0; a < N_ARCHS; a++)
            nonfinite_ffn(t, &ffn_archs[a], poisons[p]);
        for (int where = 0; where < 3; where++)
            nonfinite_attention(t, poisons[p], where);
        nonfinite_vector_ops(t, poisons[p]);
    }
    for (int dt = 0; dt < 3; dt++)
        nonfinite_embed(t, (enum fb_dtype)dt);
}

/* ---- the forward pass: the backend's engine beside the cpu's ---- */

/* Both engines over the prompt, then greedy, each feeding its own
 * argmax: the same tokens, and at every position logits within
 * tol_logits x max(1, max |cpu's logit|) of cpu's (bit for bit on sim). */
static void compare_engines(struct bt *t, const struct model *m, const char *what, const int *prompt, int n_prompt,
                            int n_gen)
{
    struct engine ec, eb;
    char err[2048];
    int positions = n_prompt + n_gen, V = (int)m->shape.vocab_size;
    /* one thread, the default tuning: the ops above took the team's paths */
    const struct fb_settings set = fb_settings_defaults();
    if (engine_init(&ec, &set, m, &backend_cpu, &ffn_dense, 1, positions, err, sizeof err) != 0) {
        fprintf(stderr, "%s: the cpu engine: %s\n", what, err);
        CHECK(0);
        return;
    }
    if (engine_init(&eb, &set, m, t->ops, &ffn_dense, 1, positions, err, sizeof err) != 0) {
        fprintf(stderr, "%s: the %s engine: %s\n", what, t->name, err);
        CHECK(0);
        engine_free(&ec);
        return;
    }
    int tc = prompt[0], tb = prompt[0], p = 0;
    double worst = 0;
    bool bits = true;
    for (; p < positions - 1 && tc == tb; p++) {
        int rc_c = engine_forward(&ec, tc, p), rc_b = engine_forward(&eb, tb, p);
        if (rc_c || rc_b) {
            fprintf(stderr, "%s: %s\n", what, rc_c ? ec.err : eb.err);
            CHECK(0);
            break;
        }
        double scale = 1;
        for (int v = 0; v < V; v++)
            scale = fmax(scale, fabs(ec.s.logits[v]));
        for (int v = 0; v < V; v++)
            worst = fmax(worst, fabs((double)eb.s.logits[v] - ec.s.logits[v]) / scale);
        bits &= memcmp(ec.s.logits, eb.s.logits, (size_t)V * sizeof(float)) == 0;
        tc = p + 1 < n_prompt ? prompt[p + 1] : argmax(ec.s.logits, V);
        tb = p + 1 < n_prompt ? prompt[p + 1] : argmax(eb.s.logits, V);
    }
    char bound[48];
    snprintf(bound, sizeof bound, "bound %g", tol_logits);
    printf("%s on %s: %d positions, greedy tokens %s, max |logit - cpu's| / max(1, max |logit|) = %.3g (%s)\n", what,
           t->name, p, tc == tb ? "equal" : "differ", worst,
           !t->exact ? bound : bits ? "bit-identical, as required" : "not bit-identical");
    if (tc != tb)
        fprintf(stderr, "%s on %s: greedy token %d, cpu's %d, after position %d\n", what, t->name, tb, tc, p - 1);
    CHECK(tc == tb);
    CHECK(t->exact ? bits : worst <= tol_logits);
    engine_free(&eb);
    engine_free(&ec);
}

struct fwd_case {
    const char *label, *shape;
};

/* The architectures' test shapes (and FATReLU Llama), d_ff one more
 * than the shape's and a vocabulary of 1000 or 509: no group size divides
 * them. llama3 turns RoPE by Llama 3.1's scaled frequencies, mistral
 * attends over a window of 6 of the 29 positions (an offset into the
 * cache), qwen2 has q/k/v biases alone, qwen3 per-head q/k RMSNorms and a
 * head_dim twice d_model / n_heads, phi3-longrope Phi-3's longrope (short
 * factors at positions 0-3, long ones from 4: the backend's second table). */
static const struct fwd_case fwd_cases[] = {
    {"opt", "opt-tiny"},         {"llama", "llama-tiny"}, {"falcon", "falcon-tiny"},
    {"persimmon", "persimmon-tiny"}, {"phi", "phi-tiny"}, {"llama-fatrelu", "llama-relu-tiny"},
    {"llama3", "llama3-tiny"},   {"mistral", "mistral-tiny"}, {"qwen2", "qwen2-tiny"}, {"qwen3", "qwen3-tiny"},
    {"phi3-longrope", "phi3-longrope-tiny"},
};

static void test_forward_case(struct bt *t, const struct fwd_case *c, enum fb_dtype dt, const char *tmp)
{
    if (!bt_has_type(t, dt))
        return;
    char dir[600], tok[600], err[4400], what[96];
    snprintf(dir, sizeof dir, "%s/%s-%s", tmp, c->label, wtype_name(dt));
    snprintf(tok, sizeof tok, "%s/tok-%s", tmp, c->label);
    snprintf(what, sizeof what, "forward %s %s", c->label, wtype_name(dt));
    struct model_shape s;
    struct fx_model f;
    struct model m;
    CHECK(model_shape_load(&t->set, c->shape, &s, err, sizeof err) == 0);
    s.d_ff += 1;
    s.vocab_size = !strcmp(c->label, "opt") ? 1000 : 509;
    snprintf(s.name, sizeof s.name, "%s", c->label);
    CHECK(fx_init(&f, &s, 7, 2.5f) == 0);
    CHECK(fx_write_tokenizer(tok, s.vocab_size) == 0);
    int rc = fx_write(&f, dir, dt, tok, err, sizeof err);
    if (rc == 0 && model_open(&m, dir, err, sizeof err) == 0) {
        static const int prompt[] = {1, 260, 265, 3, 269};
        compare_engines(t, &m, what, prompt, 5, 24);
        model_close(&m);
    } else {
        fprintf(stderr, "%s: %s\n", what, err);
        CHECK(0);
    }
    fx_free(&f);
    unlink(tok);
    fs_remove_tree(dir);
}

/* stories260K (a trained model) when the shared data holds it. */
static void test_forward_stories(struct bt *t, const char *tmp)
{
    const char *data = getenv("FLASHBED_DATA");
    char ckpt[4200], tokf[4200], dir[600], err[4400];
    snprintf(ckpt, sizeof ckpt, "%s/models/stories260K/stories260K.bin", data && *data ? data : FLASHBED_DATA_DEFAULT);
    snprintf(tokf, sizeof tokf, "%s/models/stories260K/tok512.bin", data && *data ? data : FLASHBED_DATA_DEFAULT);
    if (!path_exists(ckpt) || !path_exists(tokf)) {
        printf("forward stories260K: skipped, %s not found (set FLASHBED_DATA)\n", ckpt);
        return;
    }
    for (int dt = 0; dt < 2; dt++) {
        if (!bt_has_type(t, (enum fb_dtype)dt))
            continue;
        snprintf(dir, sizeof dir, "%s/stories260K-%d", tmp, dt);
        struct model m;
        if (import_llama2c(ckpt, tokf, dir, (enum fb_dtype)dt, NULL, err, sizeof err) != 0 ||
            model_open(&m, dir, err, sizeof err) != 0) {
            fprintf(stderr, "stories260K: %s\n", err);
            CHECK(0);
            continue;
        }
        int ids[64];
        const char *text = "Once upon a time";
        int n = (int)tokenizer_encode(&m.tok, text, strlen(text), true, ids);
        compare_engines(t, &m, dt ? "forward stories260K f16" : "forward stories260K f32", ids, n, 60);
        model_close(&m);
        fs_remove_tree(dir);
    }
}

static void test_forward(struct bt *t)
{
    char tmp[] = "/tmp/flashbed-backend-ops-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    for (size_t c = 0; c < sizeof fwd_cases / sizeof fwd_cases[0]; c++)
        for (int dt = 0; dt < 2; dt++)
            test_forward_case(t, &fwd_cases[c], (enum fb_dtype)dt, tmp);
    test_forward_stories(t, tmp);
    CHECK(rmdir(tmp) == 0);
}

/* ---- calibrate's timing loop runs on the backend ---- */

static void test_calibrate_loop(struct bt *t)
{
    char err[512];
    double flops = 0;
    for (int dt = 0; dt < 3; dt++) {
        if (!bt_has(t, BACKEND_OP_MATVEC, (enum fb_dtype)dt))
            continue;
        double rate =
            measure_backend_matvec(t->ops, t->b, 65, 257, (enum fb_dtype)dt, 1 << 20, 0.01, &flops, err, sizeof err);
        if (!(rate > 0))
            fprintf(stderr, "%s: calibrate's matvec loop: %s\n", t->name, err);
        CHECK(rate > 0 && flops > 0);
        CHECK(err[0] == '\0');
    }
}

/* A backend absent here is a skip, unless FLASHBED_REQUIRE_BACKENDS
 * (comma-separated names) says this machine must have it. */
static bool required(const char *name)
{
    const char *req = getenv("FLASHBED_REQUIRE_BACKENDS");
    size_t n = strlen(name);
    for (const char *p = req; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        if (strcspn(p, ",") == n && !strncmp(p, name, n))
            return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s BACKEND (%s)\n", argv[0], backend_names());
        return 2;
    }
    struct bt t;
    int rc = bt_open(&t, argv[1]);
    if (rc == 77 && required(argv[1])) {
        printf("backend_ops_%s: FLASHBED_REQUIRE_BACKENDS says this machine has it: a failure\n", argv[1]);
        return 1;
    }
    if (rc != 0)
        return rc;
    test_copies(&t);
    test_moves(&t);
    test_events(&t);
    test_counts(&t);
    test_event_times(&t);
    test_adds_embeds(&t);
    test_matvecs(&t);
    test_ffns_rows(&t);
    test_ffns_ids(&t);
    test_ffn_acts(&t);
    test_attentions(&t);
    test_norms(&t);
    test_ropes(&t);
    test_nonfinite(&t);
    test_refusals(&t);
    test_calibrate_loop(&t);
    test_forward(&t);
    test_block_types(&t); /* last: the cases before it draw the random inputs they drew before it */
    if (!t.exact)
        bt_print_worst(&t);
    /* cpu is the model: every op for every type (backend.h) */
    printf("backend_ops_%s: %d cases skipped (ops the backend lacks for a type)\n", argv[1], t.skipped);
    CHECK(strcmp(argv[1], "cpu") || t.skipped == 0);
    bt_close(&t);
    char name[64];
    snprintf(name, sizeof name, "backend_ops_%s", argv[1]);
    return check_report(name);
}
