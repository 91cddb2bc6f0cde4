/* run's measuring loop (engine/run/run_exec.h) on a small synthetic OPT,
 * through run's own setup (engine/run/run_setup.h):
 *   - dense, the flash FFN under the oracle (recording its trace), and the
 *     flash FFN driven by a trace under lru: a row per computed position,
 *     prompt + generated - 1 of them, each with its token and whether it
 *     was generated, compute = total - io - mem and attention the rest,
 *     the hook told of each row once, in order;
 *   - the oracle's tokens are dense's, and its record holds a token per
 *     row, flagged as run tells the flash FFN (sequence start, generated),
 *     with the sets it needed;
 *   - the trace-driven run reads, per token, exactly what sim's replay of
 *     the same trace counts at the run's stride, alignment and cache;
 *   - what stops it: a configuration decode_run refuses (nothing to
 *     report), a flash read failing (the rows so far, the failure said),
 *     an interruption; a dense run has nothing to record. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "model_fixture.h"
#include "policy_text.h"
#include "trace_file_fixture.h"
#include "common/interrupt.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/forward/engine.h"
#include "engine/run/run_exec.h"
#include "engine/run/run_setup.h"
#include "sim/replay.h"

enum { N_PROMPT = 4, N_GEN = 6, MAX_SEQ = N_PROMPT + N_GEN, N_ROWS = MAX_SEQ - 1, TRACE_TOKENS = 12 };

/* What the hook was told. */
struct told {
    int n;
    int pos[MAX_SEQ], token[MAX_SEQ], sampled[MAX_SEQ];
    const struct token_row *row[MAX_SEQ];
};

static void on_row(void *ctx, const struct decode_step *s, const struct token_row *r)
{
    struct told *t = ctx;
    if (t->n < MAX_SEQ) {
        t->pos[t->n] = s->pos;
        t->token[t->n] = s->token;
        t->sampled[t->n] = s->sampled;
        t->row[t->n] = r;
    }
    t->n++;
}

/* The greedy run of N_GEN tokens after the prompt, told to t. */
static struct run_exec_config config(const int *prompt, bool dense, struct told *t)
{
    memset(t, 0, sizeof *t);
    struct decode_config d = {.prompt = prompt, .n_prompt = N_PROMPT, .n = N_GEN, .ignore_eos = true};
    return (struct run_exec_config){.decode = d, .dense = dense, .token = on_row, .ctx = t};
}

/* What every complete run gives: the rows, their tokens, the hook, the split. */
static void check_rows(const struct run_outcome *out, const struct told *t, const int *prompt)
{
    CHECK_U64(out->n_rows, N_ROWS); /* the N_GEN-th token sampled is not fed back */
    CHECK(out->n_prompt == N_PROMPT && out->n_gen == N_GEN);
    CHECK_STR(out->stop, "length");
    CHECK_STR(out->error, "");
    CHECK_U64(t->n, N_ROWS);
    for (int i = 0; i < out->n_rows && i < t->n; i++) {
        const struct token_row *r = &out->rows[i];
        CHECK(t->row[i] == r && t->pos[i] == i && t->token[i] == r->id);
        CHECK(r->id == (i < N_PROMPT ? prompt[i] : t->sampled[i - 1])); /* generated: sampled the step before */
        CHECK(r->generated == (i >= N_PROMPT));
        CHECK(i < N_PROMPT - 1 ? t->sampled[i] == -1 : t->sampled[i] >= 0); /* sampled from the last prompt token on */
        CHECK(r->total_ms >= 0 && r->io_ms >= 0 && r->mem_ms >= 0);
        CHECK(r->compute_ms == r->total_ms - r->io_ms - r->mem_ms);
        CHECK(r->attention_ms == r->compute_ms - r->ffn_ms - r->predictor_ms - r->check_ms);
    }
}

/* run's defaults, reading through the page cache (a test's /tmp may be tmpfs). */
static struct run_options options(const struct fb_settings *set, const char *active)
{
    return (struct run_options){.cmd = "run", .mode = "all", .window = 5, .active = active, .use = "auto",
                                .io_engine = "psync", .io_threads = 1, .iodepth = 1, .direct = false,
                                .settings = set};
}

/* The flash engine over setup p runs the prompt through run_exec, its rows
 * checked (check_rows); e and out are the caller's to free. */
static void run_flash(const struct fb_settings *set, const struct model *m, struct run_setup *p, const int *prompt,
                      struct engine *e, struct run_outcome *out)
{
    char err[1024];
    struct told t;
    CHECK(run_engine_init(e, set, m, &backend_cpu, p, 1, MAX_SEQ, err, sizeof err) == 0);
    CHECK(strcmp(e->ffn.ops->name, "flash") == 0);
    struct run_exec_config c = config(prompt, false, &t);
    CHECK(run_exec(e, &c, out, err, sizeof err) == 0);
    check_rows(out, &t, prompt);
    /* what run.json records of the flash engine: its DRAM, its alignment */
    struct run_report_extra x = {.held_bytes = 1};
    run_engine_extra(e, m, p, &x);
    uint64_t oracle;
    CHECK(x.held_bytes == ffn_flash_dram_bytes(&e->ffn, &oracle) && x.held_bytes > 0 && x.oracle_bytes == oracle);
    CHECK(x.read_align == ffn_flash_read_align(&e->ffn) && x.read_align > 0);
}

/* run's setup of o on the flash model, within budget (0: none), as
 * cli/cmd_run.c sets it up; 0 or -1. */
static int setup(const struct run_options *o, const struct model *m, uint64_t budget_pct, struct run_setup *p)
{
    char err[2048];
    memset(p, 0, sizeof *p);
    if (run_setup_plan(o, m, p, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        return -1;
    }
    run_setup_sizes(p, m, MAX_SEQ);
    p->budget = p->model_bytes * budget_pct / 100;
    if (run_setup_fit(o, m, p, N_ROWS, err, sizeof err) != 0) {
        fprintf(stderr, "fit: %s\n", err);
        return -1;
    }
    return 0;
}

static void test_dense(const struct model *m, const int *prompt, int *ids)
{
    const struct fb_settings set = fb_settings_defaults();
    struct engine e;
    struct told t;
    struct run_outcome out;
    char err[512];
    CHECK(engine_init(&e, &set, m, &backend_cpu, &ffn_dense, 1, MAX_SEQ, err, sizeof err) == 0);
    struct run_exec_config c = config(prompt, true, &t);
    CHECK(run_exec(&e, &c, &out, err, sizeof err) == 0);
    check_rows(&out, &t, prompt);
    for (int i = 0; i < out.n_rows; i++) {
        const struct token_row *r = &out.rows[i];
        CHECK(r->io_ms == 0 && r->bytes_read == 0 && r->reads == 0 && r->compute_ms == r->total_ms);
        ids[i] = r->id;
    }
    { /* a dense run records no flash engine: every extra 0 */
        struct run_setup dense = {.dense = true};
        struct run_report_extra x = {.held_bytes = 1, .read_align = 1, .predictor_bytes = 1};
        run_engine_extra(&e, m, &dense, &x);
        CHECK(x.held_bytes == 0 && x.oracle_bytes == 0 && x.read_align == 0 && x.predictor_bytes == 0 &&
              x.predictor_madds == 0);
    }
    free(out.rows);
    engine_free(&e);
}

/* The oracle, recording: dense's tokens, and a record of the run's tokens
 * with the flags run_exec told the flash FFN and the sets each row needed. */
static void test_oracle_record(const struct model *m, const char *dir, const int *prompt, const int *dense_ids)
{
    const struct fb_settings set = fb_settings_defaults();
    struct run_options o = options(&set, "oracle");
    struct run_setup p;
    char err[1024], path[700];
    CHECK(setup(&o, m, 0, &p) == 0);
    snprintf(path, sizeof path, "%s/rec.trace", dir);
    struct trace_writer *w = run_record_open(NULL, path, m, &p, err, sizeof err);
    CHECK(w != NULL);
    struct trace_sink sink = trace_writer_sink(w);
    p.cfg.record = &sink;
    struct engine e;
    struct run_outcome out;
    run_flash(&set, m, &p, prompt, &e, &out);
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
    struct trace tr;
    CHECK(trace_load(path, &tr, err, sizeof err) == 0);
    CHECK_U64(tr.n_tokens, out.n_rows);
    CHECK(strstr(tr.meta.source, "\"active\": \"oracle\", \"active_sets\": \"true activations\"") != NULL);
    CHECK(!tr.meta.has_predicted);
    for (int i = 0; i < out.n_rows && (uint64_t)i < tr.n_tokens; i++) {
        const struct token_row *r = &out.rows[i];
        CHECK(r->id == dense_ids[i]); /* the oracle computes every active neuron */
        CHECK(r->bytes_read > 0 || r->rows_inserted == 0);
        unsigned want = (i == 0 ? TRACE_TOKEN_SEQ_START : 0u) | (i >= N_PROMPT ? TRACE_TOKEN_GENERATED : 0u);
        CHECK_U64(tr.token_flags[i], want);
        uint32_t n, needed = 0;
        for (uint32_t l = 0; l < tr.meta.n_layers; l++) {
            trace_set(&tr, 0, (uint64_t)i, l, &n);
            needed += n;
        }
        CHECK_U64((uint64_t)r->needed, needed);
    }
    CHECK(out.rows[0].bytes_read > 0);
    trace_free(&tr);
    free(out.rows);
    engine_free(&e);
    run_setup_free(&p);
    /* a dense run looks at no activations: nothing to record, no file */
    memset(&p, 0, sizeof p);
    p.dense = true;
    snprintf(path, sizeof path, "%s/dense.trace", dir);
    CHECK(run_record_open(NULL, path, m, &p, err, sizeof err) == NULL);
    CHECK_STR(err, "the dense mode does not look at activations; use --mode all (or another flash mode)");
    CHECK(access(path, F_OK) != 0);
}

/* The trace drives lru under a budget: per token, the reads, bytes and rows
 * inserted that replay counts for the same trace at the run's row stride,
 * read alignment and cache (what tests/integration/run_flash.sh checks
 * through the binary). */
static void test_trace_lru(const struct model *m, const char *dir, const int *prompt)
{
    const struct fb_settings set = fb_settings_defaults();
    char path[700], active[720], err[1024];
    snprintf(path, sizeof path, "%s/lru.trace", dir);
    snprintf(active, sizeof active, "trace:%s", path);
    CHECK(write_mod16_trace(path, m, TRACE_TOKENS) == 0); /* 48 of 256 neurons per layer */
    struct run_options o = options(&set, active);
    o.policy = POLICY("lru");
    o.layout = LAYOUT("bundled");
    struct run_setup p;
    CHECK(setup(&o, m, 60, &p) == 0);
    CHECK(p.plan.capacity_rows > 0 && p.plan.capacity_rows < m->shape.d_ff);
    struct engine e;
    struct run_outcome out;
    run_flash(&set, m, &p, prompt, &e, &out);
    struct replay_spec spec = {.policy = p.plan.policy, .layout = p.layout,
                               .dram_budget = p.plan.capacity_rows * m->shape.n_layers * m->bundle_stride,
                               .budget_binds = true, .row_stride = m->bundle_stride,
                               .read_align = ffn_flash_read_align(&e.ffn)};
    struct replay_result rr;
    CHECK(replay_run(&p.trace, &spec, &rr, err, sizeof err) == 0);
    CHECK_U64(rr.capacity_rows, p.plan.capacity_rows);
    double hits = 0;
    for (int i = 0; i < out.n_rows && (uint64_t)i < rr.n_tokens; i++) {
        const struct token_row *r = &out.rows[i];
        const struct replay_token *want = &rr.per_token[i];
        CHECK_U64((uint64_t)r->reads, want->reads);
        CHECK_U64((uint64_t)r->bytes_read, want->bytes);
        CHECK_U64((uint64_t)r->rows_inserted, want->inserted);
        CHECK_U64((uint64_t)r->needed, want->needed);
        hits += r->needed - r->rows_inserted;
    }
    CHECK(out.rows[0].reads > 0 && hits > 0); /* both reads and hits: the counts compared are not trivial */
    replay_result_free(&rr);
    free(out.rows);
    engine_free(&e);
    run_setup_free(&p);
}

/* What stops the loop: a configuration decode_run refuses leaves nothing to
 * report; a failing read, the rows so far and why (ffn.bin is cut short
 * under the engine: the last test to read it); an interruption, before the
 * first pass. */
static void test_stops(const struct model *m, const char *model_dir, const int *prompt)
{
    const struct fb_settings set = fb_settings_defaults();
    struct run_options o = options(&set, "oracle");
    struct run_setup p;
    struct engine e;
    struct told t;
    struct run_outcome out;
    char err[1024] = "", path[700];
    CHECK(setup(&o, m, 0, &p) == 0);
    CHECK(engine_init_with(&e, &set, m, &backend_cpu, &ffn_flash, &p.cfg, 1, MAX_SEQ, err, sizeof err) == 0);
    struct run_exec_config c = config(prompt, false, &t);
    c.decode.n = MAX_SEQ; /* more positions than the engine holds */
    CHECK(run_exec(&e, &c, &out, err, sizeof err) == -1);
    CHECK(out.rows == NULL && out.n_rows == 0 && t.n == 0 && strstr(err, "positions") != NULL);

    snprintf(path, sizeof path, "%s/ffn.bin", model_dir);
    CHECK(truncate(path, 0) == 0);
    c = config(prompt, false, &t);
    CHECK(run_exec(&e, &c, &out, err, sizeof err) == 0);
    CHECK_U64(out.n_rows, 1); /* the first token's reads fail */
    CHECK(t.n == 0);          /* the failed row is not told */
    CHECK_STR(out.stop, "error");
    CHECK(strstr(out.error, "ffn.bin") != NULL);
    CHECK(out.rows[0].id == prompt[0] && out.rows[0].compute_ms == 0 && out.rows[0].attention_ms == 0);
    free(out.rows);

    interrupt_install();
    fflush(stderr);
    raise(SIGINT);
    c = config(prompt, false, &t);
    CHECK(run_exec(&e, &c, &out, err, sizeof err) == 0);
    CHECK(out.n_rows == 0 && out.n_gen == 0 && out.n_prompt == N_PROMPT && t.n == 0 && out.rows != NULL);
    CHECK_STR(out.stop, "interrupted");
    CHECK_STR(out.error, "");
    free(out.rows);
    engine_free(&e);
    run_setup_free(&p);
}

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-run-exec-XXXXXX";
    char err[512], dir[600];
    struct model dense, flash;
    CHECK(fixture_dense_and_flash(tmp, dir, sizeof dir, &dense, &flash, err, sizeof err) == 0);
    int prompt[N_PROMPT] = {dense.bos_id, 300, 421, 77}, ids[MAX_SEQ];
    test_dense(&dense, prompt, ids);
    test_oracle_record(&flash, tmp, prompt, ids);
    test_trace_lru(&flash, tmp, prompt);
    test_stops(&flash, dir, prompt);
    model_close(&dense);
    model_close(&flash);
    CHECK(fixture_remove(tmp) == 0);
    return check_report("test_run_exec");
}
