/* The flash FFN on a device whose memory is not the host's (issue 31's
 * first slice: the neuron cache's rows in device memory), against the cpu
 * backend, for every mode (naive, hybrid, predictor, window, all) and a
 * budgeted window and lru, the oracle choosing, on a small synthetic OPT:
 *   - the same greedy tokens; on sim the same logits bit for bit (sim
 *     computes with the CPU kernels, and the device path sums the same
 *     groups of rows in the same order), on another device within 1e-4 of
 *     cpu's scale;
 *   - per token, the same flash reads (bytes and reads), rows inserted and
 *     row moves as the cpu run: the policy decides on the host;
 *   - per token, the bytes uploaded (h2d_bytes) are exactly what the
 *     policy's insertions imply: a row stride and an up bias per row
 *     inserted, 8 bytes per row move; 0 on cpu;
 *   - the backend's own counts agree: its bytes uploaded per token are
 *     h2d_bytes (nothing else crosses per token), its bytes moved are a
 *     row and a bias per row move;
 *   - the paths are exercised: rows staged and rows moved in the runs.
 * Usage: test_ffn_flash_device BACKEND (sim, opencl, cuda); a backend that
 * cannot start here exits 77 (sim always starts). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flash_run_fixture.h"
#include "model_fixture.h"
#include "policy_text.h"
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

static void on_row(void *ctx, const struct decode_step *s, const struct token_row *r)
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

static void watch_free(struct watch *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->t[i].logits);
}




/* The prompt through the flash engine on be, every token watched; 0 or -1
 * (the engine did not start: err says why). */
static int run_on(const struct backend_ops *be, const struct model *m, const struct run_case *c, const int *prompt,
                  struct watch *w, char *err, size_t errlen)
{
    const struct fb_settings set = fb_settings_defaults();
    struct run_setup p;
    struct engine e;
    memset(w, 0, sizeof *w);
    CHECK(setup(&set, m, c, &p) == 0);
    if (run_engine_init(&e, &set, m, be, &p, 1, MAX_SEQ, err, errlen) != 0) {
        run_setup_free(&p);
        return -1;
    }
    w->e = &e;
    w->vocab = (int)m->shape.vocab_size;
    e.be_ops->counts(e.be, &w->last); /* the weights' and hybrid's resident rows' uploads are set-up */
    w->dram = ffn_flash_dram_bytes(&e.ffn, NULL);
    w->device = ffn_flash_device_bytes(&e.ffn, &w->pinned);
    w->staging = (uint64_t)p.cfg.staging_rows * m->bundle_stride;
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        w->cache += (uint64_t)p.plan.layer_rows[l] * m->bundle_stride;
    struct decode_config d = {.prompt = prompt, .n_prompt = N_PROMPT, .n = N_GEN, .ignore_eos = true};
    struct run_exec_config rc = {.decode = d, .token = on_row, .ctx = w};
    struct run_outcome out;
    CHECK(run_exec(&e, &rc, &out, err, errlen) == 0);
    CHECK_STR(out.error, "");
    CHECK_U64(w->n, N_ROWS);
    free(out.rows);
    engine_free(&e);
    run_setup_free(&p);
    return 0;
}

/* The worst |device - cpu| over a token's logits, against cpu's largest |logit|. */
static double logit_error(const float *dev, const float *cpu, int n, double *scale)
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
static void compare_token(const char *what, const struct tok *d, const struct tok *c, int vocab, bool exact,
                          uint64_t bundle, uint64_t stride)
{
    CHECK(d->id == c->id);
    CHECK_U64(d->r.bytes_read, c->r.bytes_read);
    CHECK_U64(d->r.reads, c->r.reads);
    CHECK_U64(d->r.rows_inserted, c->r.rows_inserted);
    CHECK_U64(d->r.row_moves, c->r.row_moves);
    CHECK_U64(c->r.h2d_bytes, 0);
    /* the reads' exposed part: all of them on cpu, at most all on a device;
     * the uploads' device time: none on cpu */
    CHECK(c->r.exposed_io_ms == c->r.io_ms && c->r.h2d_ms == 0);
    CHECK(d->r.exposed_io_ms >= 0 && d->r.exposed_io_ms <= d->r.io_ms + 1e-9);
    CHECK(isfinite(d->r.h2d_ms) && d->r.h2d_ms >= 0 && (d->r.h2d_bytes > 0 || d->r.h2d_ms == 0));
    uint64_t want = (uint64_t)d->r.rows_inserted * bundle + (uint64_t)d->r.row_moves * sizeof(struct row_move);
    CHECK_U64(d->r.h2d_bytes, want);
    CHECK_U64(d->up, d->r.h2d_bytes);
    CHECK_U64(d->moved, (uint64_t)d->r.row_moves * (stride + (bundle - stride)));
    if (!d->logits || !c->logits)
        return;
    double scale, worst = logit_error(d->logits, c->logits, vocab, &scale);
    bool ok = exact ? memcmp(d->logits, c->logits, (size_t)vocab * sizeof(float)) == 0 : worst <= 1e-4 * scale;
    if (!ok)
        fprintf(stderr, "%s: logits off by %g (scale %g)\n", what, worst, scale);
    CHECK(ok);
}

/* Case c on be against cpu; *staged and *moved grow by the rows uploaded
 * and moved. 77 when be cannot start here, else 0. */
static int compare_case(const struct backend_ops *be, const struct model *m, const struct run_case *c,
                        const int *prompt, uint64_t *rows, uint64_t *moves)
{
    struct watch *dev = calloc(1, sizeof *dev), *cpu = calloc(1, sizeof *cpu);
    char err[1024];
    CHECK(dev && cpu && run_on(&backend_cpu, m, c, prompt, cpu, err, sizeof err) == 0);
    if (dev && run_on(be, m, c, prompt, dev, err, sizeof err) != 0) {
        printf("test_ffn_flash_device: %s cannot start here (%s): skipped\n", be->name, err);
        watch_free(cpu);
        free(cpu);
        free(dev);
        return 77;
    }
    bool bias = m->layers[0].ffn_up_bias != NULL;
    uint64_t bundle = m->bundle_stride + (bias ? sizeof(float) : 0);
    /* on the device the caches' rows are the device's and the staging is a
     * pinned ring of two slots: DRAM holds the cache rows less, a staging more */
    CHECK(dev->pinned && cpu->pinned && cpu->device == 0);
    CHECK_U64(dev->dram + cpu->cache, cpu->dram + cpu->staging);
    CHECK(dev->device >= cpu->cache + cpu->staging);
    char what[200];
    for (int i = 0; dev && cpu && i < dev->n && i < cpu->n; i++) {
        snprintf(what, sizeof what, "%s %s, token %d", be->name, c->policy ? c->policy : c->mode, i);
        compare_token(what, &dev->t[i], &cpu->t[i], dev->vocab, strcmp(be->name, "sim") == 0, bundle,
                      m->bundle_stride);
        *rows += (uint64_t)dev->t[i].r.rows_inserted;
        *moves += (uint64_t)dev->t[i].r.row_moves;
    }
    watch_free(cpu);
    watch_free(dev);
    free(cpu);
    free(dev);
    return 0;
}

static const struct run_case cases[] = {
    {"naive", NULL, NULL, 0, false},
    {"hybrid", NULL, NULL, 0, false},
    {"predictor", NULL, NULL, 0, false},
    {"window", NULL, NULL, 0, false},
    {"all", NULL, NULL, 0, false},
    {"window", "window:3", "split", 45, false},
    {"all", "lru", "bundled", 45, false},
    {"all", "belady", "bundled", 30, true},
    {"all", "lfu", "bundled", 30, true},
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s BACKEND (%s)\n", argv[0], backend_names());
        return 2;
    }
    const struct backend_ops *be = backend_find(argv[1]);
    if (!be) {
        fprintf(stderr, "%s: unknown backend\n", argv[1]);
        return 2;
    }
    char tmp[] = "/tmp/flashbed-test-ffn-flash-device-XXXXXX";
    char err[512], dir[600];
    struct model dense, flash;
    CHECK(fixture_dense_and_flash(tmp, dir, sizeof dir, &dense, &flash, err, sizeof err) == 0);
    int prompt[N_PROMPT] = {dense.bos_id, 300, 421, 77, 12};
    snprintf(trace_path, sizeof trace_path, "%s/sets.trace", tmp);
    snprintf(trace_active, sizeof trace_active, "trace:%s", trace_path);
    CHECK(write_mod16_trace(trace_path, &flash, MAX_SEQ) == 0);
    uint64_t rows[2] = {0}, moves[2] = {0}; /* no cache (naive, hybrid's streamed, predictor); caches */
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < sizeof cases / sizeof cases[0]; k++) {
        bool cached = k >= 3;
        rc = compare_case(be, &flash, &cases[k], prompt, &rows[cached], &moves[cached]);
    }
    if (rc == 0) { /* the paths compared are not trivial: rows staged, rows kept and moved */
        CHECK(rows[0] > 0 && rows[1] > 0 && moves[1] > 0);
        printf("test_ffn_flash_device %s: %llu rows staged, %llu cached and %llu moved\n", be->name,
               (unsigned long long)rows[0], (unsigned long long)rows[1], (unsigned long long)moves[1]);
    }
    model_close(&dense);
    model_close(&flash);
    CHECK(fixture_remove(tmp) == 0);
    if (rc == 77 && strcmp(be->name, "sim") != 0)
        return 77;
    return check_report("test_ffn_flash_device");
}
