/* Issue 31: the cost model's data-movement terms (sim/device_terms.h) are
 * exactly what a device is given. The flash FFN runs on sim for every mode
 * (naive, hybrid, predictor, window, all) x every neuron source (the
 * oracle, a trace's true and predicted sets, an activation predictor, the
 * gate on a GLU model), plain, with --check and with --record, and under
 * budgets that move rows (matrix_fixture.h), on small synthetic models of
 * every shape the terms distinguish: OPT (learned positions, up and down
 * biases), a llama with FATReLU (GLU, GQA, rope, no biases), falcon
 * (parallel block, multi-query, no biases), persimmon (qk LayerNorm,
 * partial rope, biases) and phi (parallel block, partial rope, biases);
 * per token, sim's counted bytes up, down and moved, copies, launches and
 * syncs must equal dev_terms_token's over the same token's volumes (rows
 * inserted, row moves, the FFN's groups and batches as ffn_flash counted
 * them) and the case's shape (host_reads_x as matrix_fixture.h's
 * mx_reads_x says), and the run loop's per-token counts (run.json's
 * d2h_bytes, launches, syncs) must be sim's. The paths are exercised:
 * rows staged, appended and moved, x downloaded and not, rows sent up in
 * runs from the staging ring, the device waited for during reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flash_run_fixture.h"
#include "matrix_fixture.h"
#include "model_fixture.h"
#include "policy_text.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/forward/engine.h"
#include "engine/run/run_exec.h"
#include "engine/run/run_setup.h"
#include "sim/device_terms.h"
#include "traces/trace.h"



struct watch {
    struct engine *e;
    struct dev_shape shape;
    struct backend_counts last;
    int n;
    const char *what;
    uint64_t staged, appended, batches, runs, ring_waits, read_waits; /* over the runs */
    uint64_t x_cases[2];                         /* cases whose host does not, does read x */
};


/* The device's view of m under case c. */
static struct dev_shape shape_of(const struct model *m, const struct mx_case *c)
{
    const struct model_shape *s = &m->shape;
    return (struct dev_shape){
        .n_layers = s->n_layers, .d_model = s->d_model, .vocab = s->vocab_size, .n_heads = s->n_heads,
        .n_kv_heads = s->n_kv_heads, .row_stride = m->bundle_stride, .up_bias = m->layers[0].ffn_up_bias != NULL,
        .down_bias = m->layers[0].ffn_down_bias != NULL, .pos_embedding = m->pos_embedding != NULL,
        .rope = m->arch.position == POSITION_ROPE, .qk_norm = m->arch.qk_norm,
        .parallel_block = m->arch.parallel_block, .host_reads_x = mx_reads_x(c),
        .device_predictor = mx_device_predictor(c), .d_ff = s->d_ff};
}

static void on_row(void *ctx, const struct decode_step *s, const struct token_row *r)
{
    (void)s;
    struct watch *w = ctx;
    struct backend_counts c;
    w->e->be_ops->counts(w->e->be, &c);
    struct dev_volumes v = {(uint64_t)r->rows_inserted, (uint64_t)r->row_moves, (uint64_t)r->staged_groups,
                            (uint64_t)r->append_groups, (uint64_t)r->move_batches, (uint64_t)r->upload_runs,
                            (uint64_t)r->ring_waits, (uint64_t)r->read_waits, (uint64_t)r->step_waits};
    struct dev_terms t;
    dev_terms_token(&w->shape, &v, &t);
    int before = check_failures;
    CHECK_U64(c.bytes_up - w->last.bytes_up, t.bytes_up);
    CHECK_U64(c.bytes_down - w->last.bytes_down, t.bytes_down);
    CHECK_U64(c.bytes_moved - w->last.bytes_moved, t.bytes_moved);
    CHECK_U64(c.copies - w->last.copies, t.copies);
    CHECK_U64(c.launches - w->last.launches, t.launches);
    CHECK_U64(c.syncs - w->last.syncs, t.syncs);
    /* the run loop's own counts, run.json's */
    CHECK_U64((uint64_t)r->d2h_bytes, t.bytes_down);
    CHECK_U64((uint64_t)r->launches, t.launches);
    CHECK_U64((uint64_t)r->syncs, t.syncs);
    CHECK_U64((uint64_t)r->h2d_bytes, t.bytes_up);
    if (check_failures != before)
        fprintf(stderr, "  in %s, token %d\n", w->what, w->n);
    w->staged += v.staged_groups;
    w->appended += v.append_groups;
    w->batches += v.move_batches;
    w->runs += v.upload_runs;
    w->ring_waits += v.ring_waits;
    w->read_waits += v.read_waits;
    w->last = c;
    w->n++;
}


/* Engine e (built on sim) through the prompt, every token checked. */
static void run_checked(struct engine *e, const int *prompt, struct watch *w)
{
    w->e = e;
    run_prompt(e, prompt, on_row, w, &w->last);
    CHECK_U64(w->n, N_ROWS);
}

/* Case c of x on sim (recording into x's folder when c says), every token
 * checked; w's totals grow. */
static void run_case(const struct mx_model *x, const struct mx_case *c, const int *prompt, struct watch *w)
{
    const struct fb_settings set = fb_settings_defaults();
    struct run_setup p;
    struct engine e;
    char err[1024], path[700];
    struct trace_writer *tw = NULL;
    struct trace_sink sink;
    w->shape = shape_of(&x->flash, c);
    w->n = 0;
    w->what = c->what;
    w->x_cases[w->shape.host_reads_x]++;
    CHECK(setup(&set, &x->flash, &c->rc, &p) == 0);
    if (c->record) {
        snprintf(path, sizeof path, "%s/rec.trace", x->tmp);
        tw = run_record_open(NULL, path, &x->flash, &p, err, sizeof err);
        CHECK(tw != NULL);
        sink = trace_writer_sink(tw);
        p.cfg.record = tw ? &sink : NULL;
    }
    if (run_engine_init(&e, &set, &x->flash, &backend_sim, &p, 1, MAX_SEQ, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", w->what, err);
        CHECK(false);
    } else {
        run_checked(&e, prompt, w);
        engine_free(&e);
    }
    if (tw)
        CHECK(trace_writer_close(tw, err, sizeof err) == 0);
    run_setup_free(&p);
}

/* Beside the matrix: a trace (its sets as --use auto takes them) under
 * tighter budgets, belady's and lfu's moves, lfu's coalesced reads. */
static const struct run_case more[] = {
    {"all", "belady", "bundled", 30, true, NULL, NULL, false},
    {"all", "lfu", "coalesce:4", 30, true, NULL, NULL, false},
};

/* Every case of shape's model; w's totals grow. */
static void run_shape(const char *shape, struct watch *w)
{
    struct mx_model x;
    char err[1024];
    if (mx_open(shape, &x, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", shape, err);
        CHECK(false);
        return;
    }
    enum { MAX_CASES = 128 };
    static struct mx_case cases[MAX_CASES];
    int n = mx_cases(&x, cases, MAX_CASES - (int)(sizeof more / sizeof more[0]));
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++, n++) {
        cases[n].rc = more[k];
        mx_fill(&x, &cases[n], MX_TRACE_PREDICTED, false, false); /* --use auto: the predicted sets */
        cases[n].rc.active = NULL; /* traced: flash_run_fixture.h's trace_active */
        cases[n].rc.use = NULL;
    }
    int prompt[N_PROMPT] = {x.dense.bos_id, 300, 421, 77, 12};
    for (int k = 0; k < n; k++)
        run_case(&x, &cases[k], prompt, w);
    mx_close(&x);
}

int main(void)
{
    static const char *const shapes[] = {"opt-tiny", "llama-relu-tiny", "falcon-tiny", "persimmon-tiny", "phi-tiny"};
    struct watch w = {0};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        run_shape(shapes[k], &w);
    /* not trivial: groups staged and appended, rows moved in batches and
     * sent up in runs, the device waited for during reads, x downloaded and not */
    CHECK(w.staged > 0 && w.appended > 0 && w.batches > 0 && w.runs > 0 && w.read_waits > 0);
    CHECK(w.x_cases[0] > 0 && w.x_cases[1] > 0);
    printf("test_device_terms: %llu staged groups, %llu appended, %llu move batches, %llu upload runs, %llu ring "
           "waits, %llu read waits; %llu cases read x, %llu do not\n",
           (unsigned long long)w.staged, (unsigned long long)w.appended, (unsigned long long)w.batches,
           (unsigned long long)w.runs, (unsigned long long)w.ring_waits, (unsigned long long)w.read_waits,
           (unsigned long long)w.x_cases[1], (unsigned long long)w.x_cases[0]);
    return check_report("test_device_terms");
}
