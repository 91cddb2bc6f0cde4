/* The sim backend (engine/compute/backend_sim.h) keeps a device's rules
 * strictly and deterministically:
 *
 *   - a download's destination read before its wait is poison (NaN), and
 *     right after it; an event wait runs the queue up to its event only;
 *   - an upload reads its source when the queue runs it: a source the
 *     host overwrites before the wait delivers the overwritten bytes (the
 *     rule backend.h states: reuse a source only after the wait);
 *   - counts are exact, and nothing is counted before the queue runs;
 *   - sim_fail_at = 3 fails the third command at the next wait, the
 *     commands after it are dropped, every later call fails, and destroy
 *     is clean (the ASan build checks it);
 *   - a write past a pinned buffer (through host_ptr, from the host) is
 *     found at the next wait, or after the next command writing that
 *     buffer, naming the side, the size and the offset; an op whose
 *     operand runs past its buffer is refused when it is called (the
 *     device buffers a kernel writes are reached no other way);
 *   - bad ids of ffn_ids and bad rows of move_rows fail the backend when
 *     they run, not the process;
 *   - ops give the cpu backend's bits (matvec, ffn_ids, move_rows here),
 *     and a whole forward pass of every architecture gives the cpu
 *     backend's logits, bit for bit, at every position: f32 and f16, the
 *     dense FFN on the device and a host FFN through the pinned bridge,
 *     with an injected delay too. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch_fixture.h"
#include "check.h"
#include "engine/compute/backend.h"
#include "engine/compute/backend_sim.h"
#include "engine/forward/engine.h"

static char why[1024];

static struct backend *sim_with(const struct fb_settings *set)
{
    struct backend_config cfg = {.set = set, .threads = 2, .max_dim = 256, .max_seq = 16, .max_heads = 4};
    struct backend *b = backend_sim.create(&cfg, why, sizeof why);
    if (!b)
        fprintf(stderr, "sim backend: %s\n", why);
    return b;
}

static struct backend *sim_new(void)
{
    const struct fb_settings set = fb_settings_defaults();
    return sim_with(&set);
}

static struct dev_buf *buf(struct backend *b, size_t bytes, enum buf_kind kind)
{
    struct dev_buf *d = NULL;
    CHECK(backend_sim.alloc(b, bytes, kind, &d) == 0);
    return d;
}

static struct dev_ref at0(struct dev_buf *d)
{
    return (struct dev_ref){d, 0};
}

static bool all_poison(const void *p, size_t bytes)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++)
        if (c[i] != SIM_POISON_BYTE)
            return false;
    return true;
}

/* What it is; a download's destination is poison until its event is
 * waited for; a later download stays poison past an earlier event. */
static void test_download_poison(void)
{
    const struct backend_ops *o = &backend_sim;
    struct backend *b = sim_new();
    struct backend_device info;
    o->info(b, &info);
    CHECK(info.emulated && !info.host_visible);
    CHECK_STR(info.device, "sim (CPU kernels on a queue thread)");
    struct dev_buf *dev = buf(b, 64 * sizeof(float), BUF_DEVICE), *pin = buf(b, 16, BUF_PINNED);
    CHECK(o->host_ptr(b, dev) == NULL);
    CHECK(o->host_ptr(b, pin) != NULL && all_poison(o->host_ptr(b, pin), 16)); /* fresh memory is undefined */
    float src[64], first[64] = {0}, second[64] = {0};
    for (int i = 0; i < 64; i++)
        src[i] = (float)i + 0.5f;
    uint64_t e1, e2;
    CHECK(o->upload(b, at0(dev), src, sizeof src) == 0);
    CHECK(o->download(b, first, at0(dev), sizeof first) == 0);
    CHECK(o->event_record(b, &e1) == 0);
    CHECK(o->download(b, second, at0(dev), sizeof second) == 0);
    CHECK(o->event_record(b, &e2) == 0);
    CHECK(all_poison(first, sizeof first) && isnan(first[0]) && isnan(first[63])); /* read too early */
    CHECK(o->event_wait(b, e1) == 0);
    CHECK(memcmp(first, src, sizeof src) == 0);
    CHECK(all_poison(second, sizeof second)); /* after e1: not run yet */
    CHECK(o->event_wait(b, e2) == 0);
    CHECK(memcmp(second, src, sizeof src) == 0);
    CHECK(o->event_wait(b, e2 + 1) == -1 && strstr(o->error(b), "never recorded") != NULL);
    CHECK(o->sync(b) == 0); /* a refused wait does not fail the backend */
    o->buf_free(b, dev);
    o->buf_free(b, pin);
    o->destroy(b);
}

/* The upload's source is read when the queue runs it, at the wait. */
static void test_upload_reads_late(void)
{
    const struct backend_ops *o = &backend_sim;
    struct backend *b = sim_new();
    struct dev_buf *dev = buf(b, 32, BUF_DEVICE);
    unsigned char src[32], back[32];
    memset(src, 1, sizeof src);
    CHECK(o->upload(b, at0(dev), src, sizeof src) == 0);
    memset(src, 2, sizeof src); /* reused before the wait: wrong by the rules */
    CHECK(o->sync(b) == 0);
    CHECK(o->download(b, back, at0(dev), sizeof back) == 0);
    CHECK(o->sync(b) == 0);
    for (int i = 0; i < 32; i++)
        CHECK(back[i] == 2);
    /* destroyed with commands still queued: they are dropped, not run
     * on memory gone (the ASan build checks it) */
    unsigned char *gone = malloc(32);
    CHECK(o->upload(b, at0(dev), gone, 32) == 0 && o->download(b, back, at0(dev), 32) == 0);
    free(gone);
    o->destroy(b); /* dev still live: destroy frees it */
}

/* 2 uploads (100 and 40 bytes), a matvec, a download of 20 bytes, one
 * sync: exact counts, none before the sync; the matvec's bits are the
 * CPU kernel's. */
static void test_counts(void)
{
    const struct backend_ops *o = &backend_sim;
    const struct fb_settings set = fb_settings_defaults();
    struct backend *b = sim_new();
    struct dev_buf *w = buf(b, 100, BUF_DEVICE), *x = buf(b, 40, BUF_DEVICE), *out = buf(b, 20, BUF_DEVICE);
    float wv[25], xv[10], got[5], want[5];
    for (int i = 0; i < 25; i++)
        wv[i] = 0.1f * (float)i - 1.3f;
    for (int i = 0; i < 10; i++)
        xv[i] = 0.7f - 0.3f * (float)i;
    CHECK(o->upload(b, at0(w), wv, sizeof wv) == 0);
    CHECK(o->upload(b, at0(x), xv, sizeof xv) == 0);
    CHECK(o->matvec(b, at0(out), at0(w), DTYPE_F32, at0(x), (struct dev_ref){0}, 5, 5) == 0);
    CHECK(o->download(b, got, at0(out), sizeof got) == 0);
    struct backend_counts c;
    o->counts(b, &c);
    CHECK_U64(c.copies + c.launches + c.bytes_up + c.bytes_down + c.syncs, 0); /* nothing ran yet */
    CHECK(o->sync(b) == 0);
    o->counts(b, &c);
    CHECK_U64(c.bytes_up, 140);
    CHECK_U64(c.bytes_down, 20);
    CHECK_U64(c.bytes_moved, 0);
    CHECK_U64(c.copies, 3);
    CHECK_U64(c.launches, 1);
    CHECK_U64(c.syncs, 1);
    struct cpu_kernels *k = ck_create(&set, 1, 16, 1, 1, why, sizeof why);
    ck_matvec(k, want, wv, DTYPE_F32, xv, NULL, 5, 5);
    CHECK(memcmp(got, want, sizeof want) == 0);
    ck_destroy(k);
    o->buf_free(b, w);
    o->buf_free(b, x);
    o->buf_free(b, out);
    o->destroy(b);
}

/* sim_fail_at = 3: the calls succeed, the sync reports command 3, the
 * fourth was dropped, and every call after fails with the reason. */
static void test_fail_at(void)
{
    const struct backend_ops *o = &backend_sim;
    struct fb_settings set = fb_settings_defaults();
    set.sim_fail_at = 3;
    struct backend *b = sim_with(&set);
    struct dev_buf *w = buf(b, 16, BUF_DEVICE), *x = buf(b, 8, BUF_DEVICE), *out = buf(b, 8, BUF_DEVICE);
    float v[4] = {1, 2, 3, 4}, got[2] = {0};
    CHECK(o->upload(b, at0(w), v, sizeof v) == 0);
    CHECK(o->upload(b, at0(x), v, 8) == 0);
    CHECK(o->matvec(b, at0(out), at0(w), DTYPE_F32, at0(x), (struct dev_ref){0}, 2, 2) == 0);
    CHECK(o->download(b, got, at0(out), sizeof got) == 0);
    CHECK(o->sync(b) == -1);
    CHECK(strstr(o->error(b), "command 3 (matvec)") != NULL && strstr(o->error(b), "injected") != NULL);
    CHECK(all_poison(got, sizeof got)); /* the download after it never ran */
    struct backend_counts c;
    o->counts(b, &c);
    CHECK_U64(c.copies, 2);
    CHECK_U64(c.launches, 0);
    CHECK_U64(c.bytes_down, 0);
    uint64_t e;
    struct dev_buf *more = NULL;
    CHECK(o->upload(b, at0(w), v, sizeof v) == -1);
    CHECK(o->add(b, at0(out), at0(x), 2) == -1);
    CHECK(o->event_record(b, &e) == -1);
    CHECK(o->alloc(b, 8, BUF_DEVICE, &more) == -1 && more == NULL);
    CHECK(o->sync(b) == -1);
    CHECK(strstr(o->error(b), "command 3 (matvec)") != NULL);
    o->buf_free(b, w);
    o->buf_free(b, x);
    o->destroy(b); /* out is still live: destroy frees it */
}

/* One byte written at offset off of a pinned buffer of 40 bytes, through
 * host_ptr; then the next sync (or, with an upload into it before the
 * sync, that command) reports where. */
static void one_overrun(long off, bool upload_after, const char *want_side, const char *want_when)
{
    const struct backend_ops *o = &backend_sim;
    struct backend *b = sim_new();
    struct dev_buf *pin = buf(b, 40, BUF_PINNED);
    unsigned char *p = o->host_ptr(b, pin), src[8] = {0};
    p[off] ^= 0x5a; /* inside the guard zone: memory the sim owns */
    if (upload_after)
        CHECK(o->upload(b, at0(pin), src, sizeof src) == 0);
    CHECK(o->sync(b) == -1);
    char want[160];
    snprintf(want, sizeof want, "the guard zone %s a pinned buffer of 40 bytes is broken at offset %ld", want_side,
             off);
    CHECK(strstr(o->error(b), want) != NULL && strstr(o->error(b), want_when) != NULL);
    if (!strstr(o->error(b), want))
        fprintf(stderr, "got: %s\n", o->error(b));
    CHECK(o->upload(b, at0(pin), src, sizeof src) == -1);
    o->buf_free(b, pin);
    o->destroy(b);
}

static void test_guard_zones(void)
{
    one_overrun(40, false, "after", "at sync");
    one_overrun(40 + SIM_GUARD_BYTES - 1, false, "after", "at sync");
    one_overrun(-1, false, "before", "at sync");
    one_overrun(-SIM_GUARD_BYTES, false, "before", "at sync");
    one_overrun(43, true, "after", "after command 1 (upload)");
    /* a kernel's operands are checked against their buffers on the call */
    const struct backend_ops *o = &backend_sim;
    struct backend *b = sim_new();
    struct dev_buf *w = buf(b, 64, BUF_DEVICE), *x = buf(b, 16, BUF_DEVICE), *out = buf(b, 12, BUF_DEVICE);
    CHECK(o->matvec(b, at0(out), at0(w), DTYPE_F32, at0(x), (struct dev_ref){0}, 4, 4) == -1);
    CHECK(strstr(o->error(b), "matvec out: 16 bytes at offset 0 run past its buffer of 12 bytes") != NULL);
    CHECK(o->add(b, (struct dev_ref){out, 8}, at0(x), 2) == -1);
    CHECK(o->sync(b) == 0); /* refused calls leave the backend working */
    o->buf_free(b, w);
    o->buf_free(b, x);
    o->buf_free(b, out);
    o->destroy(b);
}

/* More commands than the ring holds: a full ring runs its older half
 * (exactly SIM_QUEUE_COMMANDS / 2 commands), the rest waits for sync. */
static void test_full_ring(void)
{
    const struct backend_ops *o = &backend_sim;
    struct backend *b = sim_new();
    struct dev_buf *y = buf(b, 4, BUF_DEVICE), *x = buf(b, 4, BUF_DEVICE);
    float zero = 0, one = 1, got = 0;
    enum { ADDS = SIM_QUEUE_COMMANDS + SIM_QUEUE_COMMANDS / 2 - 50 };
    CHECK(o->upload(b, at0(y), &zero, 4) == 0);
    CHECK(o->upload(b, at0(x), &one, 4) == 0);
    int refused = 0;
    for (int i = 0; i < ADDS; i++)
        refused += o->add(b, at0(y), at0(x), 1) != 0;
    CHECK(refused == 0);
    struct backend_counts c;
    o->counts(b, &c);
    CHECK_U64(c.copies + c.launches, SIM_QUEUE_COMMANDS / 2);
    CHECK(o->download(b, &got, at0(y), 4) == 0 && o->sync(b) == 0);
    o->counts(b, &c);
    CHECK_U64(c.launches, ADDS);
    CHECK(got == (float)ADDS);
    o->buf_free(b, y);
    o->buf_free(b, x);
    o->destroy(b);
}

/* ---- ffn_ids and move_rows: the cpu backend's bits, and bad ids ---- */

enum { D = 33, BUNDLES = 9 };

/* Bundles (up | gate | down, f16, SiLU GLU) with up biases and an input,
 * in host memory the cpu backend computes on in place. */
struct ids_case {
    struct arch a;
    size_t stride;
    unsigned char *rows;
    float bias[BUNDLES], x[D];
};

static void ids_case_init(struct ids_case *c)
{
    c->a = (struct arch){.act = ACT_SILU, .glu = true};
    c->stride = (3 * D * 2 + 63) / 64 * 64;
    c->rows = calloc(BUNDLES, c->stride);
    for (int r = 0; r < BUNDLES; r++)
        for (int i = 0; i < 3 * D; i++)
            ((uint16_t *)(c->rows + (size_t)r * c->stride))[i] = f32_to_f16(0.01f * (float)((r * 7 + i * 3) % 41) - 0.2f);
    for (int r = 0; r < BUNDLES; r++)
        c->bias[r] = 0.05f * (float)r - 0.2f;
    for (int i = 0; i < D; i++)
        c->x[i] = 0.03f * (float)(i % 11) - 0.15f;
}

/* On the cpu backend: out = ffn over ids, then the moves applied to the
 * rows (in place in c->rows). */
static void ids_on_cpu(struct ids_case *c, const int32_t *ids, int n_ids, const struct row_move *mv, int n_mv,
                       float *out)
{
    const struct fb_settings set = fb_settings_defaults();
    struct cpu_kernels *k = ck_create(&set, 2, 256, 16, 4, why, sizeof why);
    struct backend_config cfg = {.set = &set, .threads = 2, .max_dim = 256, .max_seq = 16, .max_heads = 4, .host = k};
    const struct backend_ops *o = &backend_cpu;
    struct backend *b = o->create(&cfg, why, sizeof why);
    struct dev_buf *r = NULL, *bi = NULL, *x = NULL, *id = NULL, *o_ = NULL, *m = NULL;
    CHECK(o->register_host(b, c->rows, BUNDLES * c->stride, &r) == 0 &&
          o->register_host(b, c->bias, sizeof c->bias, &bi) == 0 && o->register_host(b, c->x, sizeof c->x, &x) == 0 &&
          o->register_host(b, (void *)ids, (size_t)n_ids * 4, &id) == 0 &&
          o->register_host(b, out, D * sizeof(float), &o_) == 0 &&
          o->register_host(b, (void *)mv, (size_t)n_mv * sizeof *mv, &m) == 0);
    CHECK(o->ffn_ids(b, at0(o_), at0(r), c->stride, at0(id), n_ids, at0(bi), at0(x), D, DTYPE_F16, &c->a) == 0);
    CHECK(o->move_rows(b, at0(r), c->stride, at0(m), n_mv) == 0 && o->sync(b) == 0);
    struct dev_buf *all[] = {r, bi, x, id, o_, m};
    for (int i = 0; i < 6; i++)
        o->buf_free(b, all[i]);
    o->destroy(b);
    ck_destroy(k);
}

/* The same on sim, its buffers uploaded; rows gets the moved rows back.
 * 0, or -1 with the sync's error in why. */
static int ids_on_sim(const struct ids_case *c, const int32_t *ids, int n_ids, const struct row_move *mv, int n_mv,
                      float *out, unsigned char *rows)
{
    const struct backend_ops *o = &backend_sim;
    struct backend *b = sim_new();
    struct dev_buf *r = buf(b, BUNDLES * c->stride, BUF_DEVICE), *bi = buf(b, sizeof c->bias, BUF_DEVICE);
    struct dev_buf *x = buf(b, sizeof c->x, BUF_DEVICE), *id = buf(b, (size_t)n_ids * 4, BUF_DEVICE);
    struct dev_buf *o_ = buf(b, D * sizeof(float), BUF_DEVICE), *m = buf(b, (size_t)n_mv * sizeof *mv, BUF_PINNED);
    memcpy(o->host_ptr(b, m), mv, (size_t)n_mv * sizeof *mv); /* pinned: the host writes the moves in place */
    CHECK(o->upload(b, at0(r), c->rows, BUNDLES * c->stride) == 0 &&
          o->upload(b, at0(bi), c->bias, sizeof c->bias) == 0 && o->upload(b, at0(x), c->x, sizeof c->x) == 0 &&
          o->upload(b, at0(id), ids, (size_t)n_ids * 4) == 0);
    CHECK(o->ffn_ids(b, at0(o_), at0(r), c->stride, at0(id), n_ids, at0(bi), at0(x), D, DTYPE_F16, &c->a) == 0);
    CHECK(o->download(b, out, at0(o_), D * sizeof(float)) == 0);
    CHECK(o->move_rows(b, at0(r), c->stride, at0(m), n_mv) == 0);
    CHECK(o->download(b, rows, at0(r), BUNDLES * c->stride) == 0);
    int rc = o->sync(b);
    snprintf(why, sizeof why, "%s", o->error(b));
    struct dev_buf *all[] = {r, bi, x, id, o_, m};
    for (int i = 0; i < 6; i++)
        o->buf_free(b, all[i]);
    o->destroy(b);
    return rc;
}

static void test_ids_and_moves(void)
{
    struct ids_case c;
    ids_case_init(&c);
    const int32_t ids[] = {4, 0, 8, 3, 4};
    const struct row_move mv[] = {{0, 8}, {8, 2}, {3, 3}, {2, 5}};
    float want[D], got[D], before_bad[D];
    unsigned char *rows = malloc(BUNDLES * c.stride);
    const struct row_move bad_mv[] = {{1, 2}, {0, BUNDLES}};
    CHECK(ids_on_sim(&c, ids, 5, bad_mv, 2, before_bad, rows) == -1);
    CHECK(strstr(why, "move 1 (0 <- 9) is outside the 9 rows") != NULL);
    const int32_t bad_ids[] = {1, BUNDLES};
    CHECK(ids_on_sim(&c, bad_ids, 2, mv, 1, got, rows) == -1);
    CHECK(strstr(why, "id 9 (at 1) is outside the 9 bundles") != NULL);
    CHECK(all_poison(got, sizeof got)); /* the commands after the bad one were dropped */
    CHECK(ids_on_sim(&c, ids, 5, mv, 4, got, rows) == 0);
    CHECK(memcmp(got, before_bad, sizeof got) == 0); /* the ffn before the bad move ran */
    ids_on_cpu(&c, ids, 5, mv, 4, want); /* moves c.rows */
    CHECK(memcmp(got, want, sizeof want) == 0);
    CHECK(memcmp(rows, c.rows, BUNDLES * c.stride) == 0);
    free(rows);
    free(c.rows);
}

int main(void)
{
    test_download_poison();
    test_upload_reads_late();
    test_counts();
    test_fail_at();
    test_guard_zones();
    test_ids_and_moves();
    test_full_ring();
    return check_report("test_backend_sim");
}
