/* The backend under test (engine/compute/backend.h) beside a reference:
 * the CPU kernels (cpu_kernels.h) on the same thread team and tuning, run
 * on host copies of every operand. Buffers are guarded: each is allocated
 * larger than its payload, the margins filled through upload with a known
 * pattern (a NaN as a float, so a kernel that reads a margin poisons its
 * result), and checked untouched after every op. Payloads start LEAD bytes
 * in: 4-byte aligned as the forward pass's per-head and per-position refs
 * are, and no more (not 16, 32, 64 or 256). Every host buffer an upload
 * reads or a download writes is used only after a sync: a strict device
 * (sim) would catch the test otherwise.
 *
 * Comparison: cpu and sim are bit-identical to the reference; others
 * within a tolerance per output that the caller computes (the op's own
 * magnitudes times a relative tolerance stated per op and dtype in
 * test_backend_ops.c), and a non-finite reference value must come out of
 * the same class (NaN, +inf, -inf). */
#ifndef FLASHBED_TESTS_BACKEND_FIXTURE_H
#define FLASHBED_TESTS_BACKEND_FIXTURE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/compute/backend.h"
#include "engine/model/dtype.h"

enum { BT_LEAD = 68, BT_TRAIL = 60, BT_THREADS = 2, BT_MAX_DIM = 4096, BT_MAX_SEQ = 300, BT_MAX_HEADS = 16 };

struct bt {
    const char *name;
    const struct backend_ops *ops;
    struct backend *b;
    struct cpu_kernels *host; /* the backend's (its config's host kernels) */
    struct cpu_kernels *ref;  /* the reference's: same team, same tuning */
    struct fb_settings set;
    bool exact; /* cpu, sim: bit-identical to the CPU kernels */
    int skipped; /* cases of an op the backend lacks (bt_has) */
};

/* A guarded buffer: payload bytes at `at`, margins around it. */
struct gbuf {
    struct dev_buf *buf;
    size_t bytes;
    struct dev_ref at;
};

static uint32_t bt_rng = 2463534242u;

static inline float bt_uniform(void) /* in [-1, 1) */
{
    bt_rng ^= bt_rng << 13;
    bt_rng ^= bt_rng >> 17;
    bt_rng ^= bt_rng << 5;
    return (float)(bt_rng >> 8) / 8388608.0f - 1.0f;
}

static inline uint8_t bt_byte(void)
{
    bt_uniform();
    return (uint8_t)(bt_rng >> 24);
}

static inline void bt_fill(float *v, size_t n, float scale, float base)
{
    for (size_t i = 0; i < n; i++)
        v[i] = base + scale * bt_uniform();
}

/* The margins' byte i (of the whole buffer): 0x7fa5a5a5 as little-endian
 * words, a NaN. */
static inline uint8_t bt_pattern(size_t i)
{
    return i % 4 == 3 ? 0x7f : 0xa5;
}

/* Starts backend `name` with the reference beside it. 0; 77 when the
 * backend is absent here: its create fails and it is neither cpu nor sim
 * (no device, or this build lacks it), or its table is the stand-in of a
 * backend this build lacks (backend_list.c: create alone; sim, until it
 * is built); 1 on a failure (printed). */
static inline int bt_open(struct bt *t, const char *name)
{
    memset(t, 0, sizeof *t);
    t->name = name;
    t->ops = backend_find(name);
    if (!t->ops) {
        fprintf(stderr, "test_backend_ops: no backend '%s' (known: %s)\n", name, backend_names());
        return 1;
    }
    t->set = fb_settings_defaults();
    t->set.min_parallel_work = 0; /* every call on the thread team, however small */
    char err[2048];
    t->host = ck_create(&t->set, BT_THREADS, BT_MAX_DIM, BT_MAX_SEQ, BT_MAX_HEADS, err, sizeof err);
    t->ref = ck_create(&t->set, BT_THREADS, BT_MAX_DIM, BT_MAX_SEQ, BT_MAX_HEADS, err, sizeof err);
    struct backend_config cfg = {.set = &t->set, .threads = BT_THREADS, .max_dim = BT_MAX_DIM,
                                 .max_seq = BT_MAX_SEQ, .max_heads = BT_MAX_HEADS, .host = t->host};
    t->b = t->host && t->ref ? t->ops->create(&cfg, err, sizeof err) : NULL;
    t->exact = !strcmp(name, "cpu") || !strcmp(name, "sim");
    if (t->b)
        return 0;
    bool absent = t->host && t->ref && (!t->exact || !t->ops->alloc);
    printf("backend_ops_%s: %s: %s\n", name, absent ? "skipped, the backend is absent here" : "cannot start", err);
    ck_destroy(t->host);
    ck_destroy(t->ref);
    return absent ? 77 : 1;
}

static inline void bt_close(struct bt *t)
{
    if (t->b)
        t->ops->destroy(t->b);
    ck_destroy(t->host);
    ck_destroy(t->ref);
    memset(t, 0, sizeof *t);
}

/* A second instance of the same backend on t's host kernels (for a test
 * that may leave its instance failed). NULL with the reason printed. */
static inline struct backend *bt_spare(const struct bt *t)
{
    char err[2048];
    struct backend_config cfg = {.set = &t->set, .threads = BT_THREADS, .max_dim = BT_MAX_DIM,
                                 .max_seq = BT_MAX_SEQ, .max_heads = BT_MAX_HEADS, .host = t->host};
    struct backend *b = t->ops->create(&cfg, err, sizeof err);
    if (!b)
        fprintf(stderr, "a second %s instance: %s\n", t->name, err);
    return b;
}

/* Whether the backend computes op on weights of type dt (backend.h's
 * supports): when not, the caller skips the case, counted in t->skipped,
 * as ggml's test-backend-ops skips what a backend lacks. */
static inline bool bt_has(struct bt *t, enum backend_op op, enum fb_dtype dt)
{
    if (backend_supports(t->ops, op, dt))
        return true;
    t->skipped++;
    return false;
}

/* The same for an op that reads no weights: whether the backend has it
 * for any type. */
static inline bool bt_has_op(struct bt *t, enum backend_op op)
{
    for (int dt = 0; dt < DTYPE_COUNT; dt++)
        if (backend_supports(t->ops, op, (enum fb_dtype)dt))
            return true;
    t->skipped++;
    return false;
}

/* The same for a forward pass over a model of type dt: every op (the
 * engine's rule, backend.h). */
static inline bool bt_has_type(struct bt *t, enum fb_dtype dt)
{
    for (int op = 0; op < BACKEND_OP_COUNT; op++)
        if (!backend_supports(t->ops, (enum backend_op)op, dt)) {
            t->skipped++;
            return false;
        }
    return true;
}

/* Reports a failed call of the backend (and counts it); rc returned. */
static inline int bt_ok(const struct bt *t, int rc, const char *what)
{
    CHECK(rc == 0);
    if (rc != 0)
        fprintf(stderr, "%s: %s: %s\n", t->name, what, t->ops->error(t->b));
    return rc;
}

/* gb_check, then gb_free. */
static inline void gb_check(struct bt *t, const struct gbuf *g, const void *payload, const char *what);
static inline void gb_free(struct bt *t, struct gbuf *g);
static inline void gb_done(struct bt *t, struct gbuf *g, const void *payload, const char *what)
{
    gb_check(t, g, payload, what);
    gb_free(t, g);
}

/* A guarded buffer of bytes, its payload from init (NULL: the pattern,
 * so that an output left unwritten shows). */
static inline void gb_new(struct bt *t, size_t bytes, const void *init, struct gbuf *g)
{
    size_t total = BT_LEAD + bytes + BT_TRAIL;
    *g = (struct gbuf){.bytes = bytes};
    if (bt_ok(t, t->ops->alloc(t->b, total, BUF_DEVICE, &g->buf), "alloc") != 0)
        return;
    g->at = (struct dev_ref){g->buf, BT_LEAD};
    uint8_t *img = malloc(total);
    for (size_t i = 0; i < total; i++)
        img[i] = bt_pattern(i);
    if (init)
        memcpy(img + BT_LEAD, init, bytes);
    bt_ok(t, t->ops->upload(t->b, (struct dev_ref){g->buf, 0}, img, total), "upload");
    bt_ok(t, t->ops->sync(t->b), "sync after upload");
    free(img);
}

static inline void gb_floats(struct bt *t, const float *init, size_t n, struct gbuf *g)
{
    gb_new(t, n * sizeof(float), init, g);
}

/* The payload into dst (bytes of it), waited for. */
static inline void gb_read(struct bt *t, const struct gbuf *g, void *dst)
{
    bt_ok(t, t->ops->download(t->b, dst, g->at, g->bytes), "download");
    bt_ok(t, t->ops->sync(t->b), "sync after download");
}

/* The margins untouched, and the payload equal to `payload` when given
 * (an input the op must not write). */
static inline void gb_check(struct bt *t, const struct gbuf *g, const void *payload, const char *what)
{
    size_t total = BT_LEAD + g->bytes + BT_TRAIL, bad = 0;
    uint8_t *img = malloc(total);
    bt_ok(t, t->ops->download(t->b, img, (struct dev_ref){g->buf, 0}, total), "download");
    bt_ok(t, t->ops->sync(t->b), "sync after download");
    for (size_t i = 0; i < total; i++)
        bad += (i < BT_LEAD || i >= BT_LEAD + g->bytes) && img[i] != bt_pattern(i);
    bool changed = payload && memcmp(img + BT_LEAD, payload, g->bytes) != 0;
    if (bad || changed)
        fprintf(stderr, "%s %s: %zu guard bytes overwritten%s\n", t->name, what, bad,
                changed ? ", and an input's payload changed" : "");
    CHECK(bad == 0);
    CHECK(!changed);
    free(img);
}

static inline void gb_free(struct bt *t, struct gbuf *g)
{
    t->ops->buf_free(t->b, g->buf);
    *g = (struct gbuf){0};
}

/* 0 finite, 1 NaN, 2 +inf, 3 -inf */
static inline int bt_class(float v)
{
    return isnan(v) ? 1 : isinf(v) ? (v > 0 ? 2 : 3) : 0;
}

/* The worst |error| / tolerance seen per op (the first word of what), for
 * the summary a device backend's run prints: how much room each stated
 * tolerance leaves. */
enum { BT_MAX_OPS = 64 }; /* the ops, and the block formats' op/type */
static struct {
    char op[24];
    double worst;
} bt_worst[BT_MAX_OPS];

static inline void bt_note(const char *what, double ratio)
{
    size_t len = strcspn(what, " ");
    for (int i = 0; i < BT_MAX_OPS; i++) {
        if (!bt_worst[i].op[0])
            snprintf(bt_worst[i].op, sizeof bt_worst[i].op, "%.*s", (int)len, what);
        if (strlen(bt_worst[i].op) == len && !strncmp(bt_worst[i].op, what, len)) {
            bt_worst[i].worst = fmax(bt_worst[i].worst, ratio);
            return;
        }
    }
}

static inline void bt_print_worst(const struct bt *t)
{
    for (int i = 0; i < BT_MAX_OPS && bt_worst[i].op[0]; i++)
        printf("%s on %s: worst |error| / tolerance %.3g\n", bt_worst[i].op, t->name, bt_worst[i].worst);
}

/* n outputs against the reference: bit for bit on cpu and sim; else a
 * non-finite reference value in the same class, a finite one within tol[i]
 * (NULL: exactly). The outputs off, the first few printed. */
static inline int bt_compare(const struct bt *t, const char *what, const float *got, const float *want,
                             const double *tol, size_t n)
{
    int off = 0;
    for (size_t i = 0; i < n; i++) {
        bool ok;
        if (t->exact)
            ok = memcmp(&got[i], &want[i], sizeof(float)) == 0;
        else if (!isfinite(want[i]))
            ok = bt_class(got[i]) == bt_class(want[i]);
        else {
            double err = fabs((double)got[i] - want[i]), bound = tol ? tol[i] : 0.0;
            ok = isfinite(got[i]) && err <= bound;
            bt_note(what, err == 0 ? 0 : bound > 0 ? err / bound : INFINITY);
        }
        if (!ok && off++ < 3)
            fprintf(stderr, "%s %s: [%zu] = %.9g, want %.9g (tolerance %g)\n", t->name, what, i, got[i], want[i],
                    t->exact ? 0.0 : tol ? tol[i] : 0.0);
    }
    CHECK(off == 0);
    return off;
}

/* The same for outputs of non-finite inputs: the class of each output
 * only (bit for bit on cpu and sim). */
static inline void bt_compare_class(const struct bt *t, const char *what, const float *got, const float *want,
                                    size_t n)
{
    int off = 0;
    for (size_t i = 0; i < n; i++) {
        bool ok = t->exact ? memcmp(&got[i], &want[i], sizeof(float)) == 0 : bt_class(got[i]) == bt_class(want[i]);
        if (!ok && off++ < 3)
            fprintf(stderr, "%s %s: [%zu] = %g, want %g (the same class: NaN, inf or finite)\n", t->name, what, i,
                    got[i], want[i]);
    }
    CHECK(off == 0);
}

/* n values of type t from f32 vals (rounded to t; vals updated to what
 * t holds). */
static inline void *bt_weights(enum fb_dtype t, float *vals, size_t n)
{
    void *w = malloc(wtype_row_bytes(t, n) + 1);
    dtype_from_f32(w, t, vals, n);
    dtype_to_f32(vals, w, t, n);
    return w;
}

#endif
