/* Issue 31: the cost model's data-movement terms (sim/device_terms.h) are
 * exactly what a device is given. The flash FFN runs on sim for every mode
 * (naive, hybrid, predictor, window, all), the oracle or a trace choosing,
 * under budgets that move rows, on a small synthetic OPT; per token, sim's
 * counted bytes up, down and moved, copies, launches and syncs must equal
 * dev_terms_token's over the same token's volumes (rows inserted, row
 * moves, the FFN's groups and batches as ffn_flash counted them), and the
 * run loop's per-token counts (run.json's d2h_bytes, launches, syncs) must
 * be sim's. The paths are exercised: rows staged, appended and moved. */
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
#include "sim/device_terms.h"
#include "traces/trace.h"



struct watch {
    struct engine *e;
    struct dev_shape shape;
    struct backend_counts last;
    int n;
    const char *what;
    uint64_t staged, appended, batches; /* over the run */
};


/* The device's view of m under case c. */
static struct dev_shape shape_of(const struct model *m, const struct run_case *c)
{
    const struct model_shape *s = &m->shape;
    bool cached = strcmp(c->mode, "naive") != 0 && strcmp(c->mode, "hybrid") != 0;
    bool cache = strcmp(c->mode, "naive") != 0 && strcmp(c->mode, "predictor") != 0;
    return (struct dev_shape){
        .n_layers = s->n_layers, .d_model = s->d_model, .vocab = s->vocab_size, .n_heads = s->n_heads,
        .n_kv_heads = s->n_kv_heads, .row_stride = m->bundle_stride, .up_bias = m->layers[0].ffn_up_bias != NULL,
        .down_bias = m->layers[0].ffn_down_bias != NULL, .pos_embedding = m->pos_embedding != NULL,
        .rope = m->arch.position == POSITION_ROPE, .qk_norm = m->arch.qk_norm,
        .parallel_block = m->arch.parallel_block, .host_reads_x = cached && !c->traced,
        .cached_layers = cache ? s->n_layers : 0};
}

static void on_row(void *ctx, const struct decode_step *s, const struct token_row *r)
{
    (void)s;
    struct watch *w = ctx;
    struct backend_counts c;
    w->e->be_ops->counts(w->e->be, &c);
    struct dev_volumes v = {(uint64_t)r->rows_inserted, (uint64_t)r->row_moves, (uint64_t)r->staged_groups,
                            (uint64_t)r->append_groups, (uint64_t)r->move_batches, (uint64_t)r->upload_runs,
                            (uint64_t)r->ring_waits, (uint64_t)r->read_waits, w->n == 0};
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
    w->last = c;
    w->n++;
}


/* Case c on sim, every token checked; w's totals grow. */
static void run_case(const struct model *m, const struct run_case *c, const int *prompt, struct watch *w)
{
    const struct fb_settings set = fb_settings_defaults();
    struct run_setup p;
    struct engine e;
    char err[1024];
    w->shape = shape_of(m, c);
    w->n = 0;
    w->what = c->policy ? c->policy : c->mode;
    CHECK(setup(&set, m, c, &p) == 0);
    if (run_engine_init(&e, &set, m, &backend_sim, &p, 1, MAX_SEQ, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", w->what, err);
        CHECK(false);
        run_setup_free(&p);
        return;
    }
    w->e = &e;
    e.be_ops->counts(e.be, &w->last); /* set-up's uploads are no token's */
    struct decode_config d = {.prompt = prompt, .n_prompt = N_PROMPT, .n = N_GEN, .ignore_eos = true};
    struct run_exec_config rc = {.decode = d, .token = on_row, .ctx = w};
    struct run_outcome out;
    CHECK(run_exec(&e, &rc, &out, err, sizeof err) == 0);
    CHECK_STR(out.error, "");
    CHECK_U64(w->n, N_ROWS);
    free(out.rows);
    engine_free(&e);
    run_setup_free(&p);
}

static const struct run_case cases[] = {
    {"naive", NULL, NULL, 0, false},
    {"hybrid", NULL, NULL, 0, false},
    {"predictor", NULL, NULL, 0, false},
    {"predictor", NULL, NULL, 0, true},
    {"window", NULL, NULL, 0, false},
    {"window", NULL, NULL, 0, true},
    {"all", NULL, NULL, 0, false},
    {"window", "window:3", "split", 45, false},
    {"all", "lru", "bundled", 45, false},
    {"all", "belady", "bundled", 30, true},
    {"all", "lfu", "coalesce:4", 30, true},
};

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-device-terms-XXXXXX";
    char err[512], dir[600];
    struct model dense, flash;
    CHECK(fixture_dense_and_flash(tmp, dir, sizeof dir, &dense, &flash, err, sizeof err) == 0);
    int prompt[N_PROMPT] = {dense.bos_id, 300, 421, 77, 12};
    snprintf(trace_path, sizeof trace_path, "%s/sets.trace", tmp);
    snprintf(trace_active, sizeof trace_active, "trace:%s", trace_path);
    CHECK(write_mod16_trace(trace_path, &flash, MAX_SEQ) == 0);
    struct watch w = {0};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        run_case(&flash, &cases[k], prompt, &w);
    /* not trivial: groups staged and appended, rows moved in batches */
    CHECK(w.staged > 0 && w.appended > 0 && w.batches > 0);
    printf("test_device_terms: %llu staged groups, %llu appended, %llu move batches\n", (unsigned long long)w.staged,
           (unsigned long long)w.appended, (unsigned long long)w.batches);
    model_close(&dense);
    model_close(&flash);
    CHECK(fixture_remove(tmp) == 0);
    return check_report("test_device_terms");
}
