/* A flash-FFN run watched token by token, and one device run's token
 * against the cpu run's, for the tests that compare a device with cpu
 * (test_ffn_flash_device, test_ffn_flash_matrix):
 *   - the same greedy token; on sim the same logits bit for bit, on
 *     another device within 1e-4 of cpu's largest |logit|;
 *   - the same flash reads (bytes and reads), rows inserted and row moves,
 *     neurons needed and --check's counts: the policy decides on the host;
 *   - the bytes uploaded (h2d_bytes) exactly what the policy's insertions
 *     imply: a row stride and an up bias per row inserted, 8 bytes per row
 *     move; 0 on cpu; the backend's own counts agree (its bytes up are
 *     h2d_bytes, its bytes moved a row and a bias per row move).
 * Tests only: CHECK's failures count, nothing else is printed but the
 * reason a run failed. */
#ifndef FLASHBED_TEST_DEVICE_RUN_FIXTURE_H
#define FLASHBED_TEST_DEVICE_RUN_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flash_run_fixture.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/forward/engine.h"
#include "engine/run/run_exec.h"
#include "engine/run/run_setup.h"
#include "traces/trace.h"

/* What one token gave. */
struct tok {
    int id;
    struct token_row r;
    uint64_t up, moved; /* the backend's counts over the token */
    float *logits;
};

struct watch {
    struct engine *e;
    int n, vocab;
    struct tok t[N_ROWS];
    struct backend_counts last;
    /* the memory the flash FFN holds: in DRAM, on the device (pinned: its ring
     * is); the plan's cache rows and staging area, in bytes */
    uint64_t dram, device, cache, staging;
    bool pinned;
};

static inline void on_row(void *ctx, const struct decode_step *s, const struct token_row *r)
{
    (void)s;
    struct watch *w = ctx;
    if (w->n >= N_ROWS)
        return;
    struct tok *t = &w->t[w->n++];
    t->id = r->id;
    t->r = *r;
    struct backend_counts c;
    w->e->be_ops->counts(w->e->be, &c);
    t->up = c.bytes_up - w->last.bytes_up;
    t->moved = c.bytes_moved - w->last.bytes_moved;
    w->last = c;
    t->logits = malloc((size_t)w->vocab * sizeof(float));
    if (t->logits)
        memcpy(t->logits, w->e->s.logits, (size_t)w->vocab * sizeof(float));
}

static inline void watch_free(struct watch *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->t[i].logits);
}

/* The prompt through engine e, every token watched. */
static inline void run_watched(struct engine *e, const struct model *m, const int *prompt, struct watch *w)
{
    w->e = e;
    w->vocab = (int)m->shape.vocab_size;
    run_prompt(e, prompt, on_row, w, &w->last);
    CHECK_U64(w->n, N_ROWS);
}

/* Case c on be, every token watched, recording to record when not NULL;
 * 0, or -1 (the engine did not start: err says why). */
static inline int run_on_rec(const struct backend_ops *be, const struct model *m, const struct run_case *c,
                      const int *prompt, const char *record, struct watch *w, char *err, size_t errlen)
{
    const struct fb_settings set = fb_settings_defaults();
    struct run_setup p;
    struct engine e;
    struct trace_writer *tw = NULL;
    struct trace_sink sink;
    memset(w, 0, sizeof *w);
    CHECK(setup(&set, m, c, &p) == 0);
    if (record) {
        tw = run_record_open(NULL, record, m, &p, err, errlen);
        CHECK(tw != NULL);
        sink = trace_writer_sink(tw);
        p.cfg.record = tw ? &sink : NULL;
    }
    if (run_engine_init(&e, &set, m, be, &p, 1, MAX_SEQ, err, errlen) != 0) {
        if (tw)
            trace_writer_abort(tw);
        run_setup_free(&p);
        return -1;
    }
    w->dram = ffn_flash_dram_bytes(&e.ffn, NULL);
    w->device = ffn_flash_device_bytes(&e.ffn, &w->pinned);
    w->staging = (uint64_t)p.cfg.stream.staging_rows * m->bundle_stride;
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        w->cache += (uint64_t)p.plan.layer_rows[l] * m->bundle_stride;
    run_watched(&e, m, prompt, w);
    engine_free(&e);
    if (tw)
        CHECK(trace_writer_close(tw, err, errlen) == 0);
    run_setup_free(&p);
    return 0;
}

static inline int run_on(const struct backend_ops *be, const struct model *m, const struct run_case *c, const int *prompt,
                  struct watch *w, char *err, size_t errlen)
{
    return run_on_rec(be, m, c, prompt, NULL, w, err, errlen);
}

/* The flash FFN's memory on the device d against cpu c: the caches' rows
 * are the device's and the staging is a pinned ring of two slots, so DRAM
 * holds the cache rows less and a staging area more. */
static inline void compare_memory(const struct watch *d, const struct watch *c)
{
    CHECK(d->pinned && c->pinned && c->device == 0);
    CHECK_U64(d->dram + c->cache, c->dram + c->staging);
    CHECK(d->device >= c->cache + c->staging);
}

/* The worst |device - cpu| over a token's logits, against cpu's largest |logit|. */
static inline double logit_error(const float *dev, const float *cpu, int n, double *scale)
{
    double worst = 0;
    *scale = 0;
    for (int i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)dev[i] - cpu[i]));
        *scale = fmax(*scale, fabs((double)cpu[i]));
    }
    return worst;
}

/* Token i of the device run d against the cpu run c (bundle: a row's
 * upload, its stride and its up bias). */
static inline void compare_token(const char *what, const struct tok *d, const struct tok *c, int vocab, bool exact,
                          uint64_t bundle, uint64_t stride)
{
    int before = check_failures;
    CHECK(d->id == c->id);
    CHECK_U64(d->r.bytes_read, c->r.bytes_read);
    CHECK_U64(d->r.reads, c->r.reads);
    CHECK_U64(d->r.rows_inserted, c->r.rows_inserted);
    CHECK_U64(d->r.row_moves, c->r.row_moves);
    CHECK_U64(d->r.needed, c->r.needed);
    CHECK_U64(d->r.active, c->r.active); /* --check's */
    CHECK_U64(d->r.missed, c->r.missed);
    CHECK_U64(d->r.extra, c->r.extra);
    CHECK_U64(c->r.h2d_bytes, 0);
    /* the reads' own time: none without a read (a batch of nothing adds 0,
     * exactly); the uploads' device time: none on cpu. read_ms against
     * io_ms is not checked: two clocks, whose order under load is the
     * scheduler's (a benchmark's business, not a test's) */
    CHECK(c->r.read_ms >= 0 && c->r.h2d_ms == 0);
    CHECK(c->r.bytes_read > 0 || c->r.read_ms == 0);
    CHECK(d->r.io_ms >= 0 && d->r.read_ms >= 0 && (d->r.bytes_read > 0 || d->r.read_ms == 0));
    CHECK(isfinite(d->r.h2d_ms) && d->r.h2d_ms >= 0 && (d->r.h2d_bytes > 0 || d->r.h2d_ms == 0));
    uint64_t want = (uint64_t)d->r.rows_inserted * bundle + (uint64_t)d->r.row_moves * sizeof(struct row_move);
    CHECK_U64(d->r.h2d_bytes, want);
    CHECK_U64(d->up, d->r.h2d_bytes);
    CHECK_U64(d->moved, (uint64_t)d->r.row_moves * (stride + (bundle - stride)));
    if (d->logits && c->logits) {
        double scale, worst = logit_error(d->logits, c->logits, vocab, &scale);
        bool ok = exact ? memcmp(d->logits, c->logits, (size_t)vocab * sizeof(float)) == 0 : worst <= 1e-4 * scale;
        if (!ok)
            fprintf(stderr, "  logits off by %g (scale %g)\n", worst, scale);
        CHECK(ok);
    }
    if (check_failures != before)
        fprintf(stderr, "  in %s\n", what);
}

#endif
