/* The transposed layout's replay (input sparsity, cache/transposed.h): exact
 * counts of its two streams under naive, lru and window on a trace with
 * channel sets worked out by hand, the budget split, feasibility per
 * stream, rows padded to an alignment (the engine's strides) with each
 * stream's counts per token, the report's stream columns, and the refusals
 * (transposed without channel sets, a neuron layout with them, a read
 * alignment that does not divide the rows'). */
#include "check.h"
#include "policy_text.h"
#include "trace_fixture.h"

#include "cache/cache.h"
#include "common/model_shape.h"
#include "sim/replay.h"
#include "sim/replay_report.h"
#include "sim/replay_study.h"
#include "sim/trace_volumes.h"

/* One layer, d_model 4, d_ff 6, ReLU, f16 weights (2 bytes each): a channel
 * bundle is an up column of 12 bytes, a row of down 8 bytes; each stream is
 * 48 bytes, the FFN 96. Per token:
 *   channels  t0 {0}    t1 {1}  t2 {0}    t3 {2}  t4 {1}      (5 in all)
 *   down      t0 {0,1}  t1 {2}  t2 {0,3}  t3 {4}  t4 {2,3}    (8 in all) */
static const int d0[] = {0, 1, -1}, d1[] = {2, -1}, d2[] = {0, 3, -1}, d3[] = {4, -1}, d4[] = {2, 3, -1};
static const int *const down_sets[] = {d0, d1, d2, d3, d4};
static const uint32_t chan_ids[] = {0, 1, 0, 2, 1};

static struct trace tr, plain;

static void make_traces(void)
{
    fixture_trace(&tr, 1, 4, 6, FFN_RELU, 5, down_sets);
    fixture_trace(&plain, 1, 4, 6, FFN_RELU, 5, down_sets);
    tr.meta.has_channels = true;
    trace_meta_set_units(&tr.meta); /* rows of down, beside the channel bundles */
    tr.chan_off = calloc(6, sizeof *tr.chan_off);
    tr.chan_ids = malloc(sizeof chan_ids);
    memcpy(tr.chan_ids, chan_ids, sizeof chan_ids);
    for (int t = 0; t < 5; t++)
        tr.chan_off[t + 1] = (uint64_t)t + 1;
}

static struct replay_result run(const struct trace *t, const char *policy, const char *layout, uint64_t budget,
                                char *err)
{
    struct replay_result r;
    struct replay_spec spec = {POLICY(policy), LAYOUT(layout), budget, false, budget > 0, 0, 0};
    if (replay_run(t, &spec, &r, err, 256) != 0)
        memset(&r, 0, sizeof r);
    return r;
}

#define CHECK_STREAM(st, w_reads, w_bytes, w_hits, w_needed, w_ins, w_del) \
    do {                                                                  \
        CHECK_U64((st).total.reads, w_reads);                             \
        CHECK_U64((st).total.bytes, w_bytes);                             \
        CHECK_U64((st).total.hits, w_hits);                               \
        CHECK_U64((st).total.needed, w_needed);                           \
        CHECK_U64((st).total.inserted, w_ins);                            \
        CHECK_U64((st).total.deleted, w_del);                             \
    } while (0)

/* naive reads every row of both streams each token, keeps none:
 * channels 4 x 5 = 20 reads of 12 bytes, down 6 x 5 = 30 of 8 bytes. */
static void naive_counts(void)
{
    char err[256] = "";
    struct replay_result r = run(&tr, "naive", "transposed", 48, err);
    CHECK(r.transposed);
    CHECK_STREAM(r.chan, 20, 240, 0, 5, 20, 20);
    CHECK_STREAM(r.down, 30, 240, 0, 8, 30, 30);
    CHECK_STREAM(r, 50, 480, 0, 13, 50, 50);
    CHECK(r.feasible);
    CHECK_U64(r.per_token[2].bytes, 96);
    replay_result_free(&r);
}

/* lru at 48 bytes (half the FFN): channels get 48 * 48/96 = 24 bytes, 2
 * bundles; down 24 bytes, 3 rows.
 * channels: t0 miss 0 {0}; t1 miss 1 {0,1}; t2 hit 0; t3 miss 2, evict 1
 *   (last used t1) {0,2}; t4 miss 1, evict 0 (t2) {2,1}: 4 reads, 1 hit, 2 deleted.
 * down: t0 miss 0,1; t1 miss 2 {0,1,2}; t2 hit 0, miss 3, evict 1 (t0);
 *   t3 miss 4, evict 2 (t1) {0,3,4}; t4 hit 3, miss 2, evict 0 (t2):
 *   6 reads, 2 hits, 3 deleted.
 * DRAM while a token is computed (sim/replay.h's DRAM peak): the rows evicted
 * to make room leave before the misses take their slots, so t3 holds 2
 * bundles (24) + 3 rows (24) = 48 bytes, the budget (issue 47: counting the
 * evicted rows beside the misses, as after a token's loads, said 68 bytes,
 * over the budget of a feasible row). */
static void lru_counts(void)
{
    char err[256] = "";
    struct replay_result r = run(&tr, "lru", "transposed", 48, err);
    CHECK_U64(r.chan.budget_rows, 2);
    CHECK_U64(r.down.budget_rows, 3);
    CHECK_U64(r.chan.row_bytes, 12);
    CHECK_U64(r.down.row_bytes, 8);
    CHECK_STREAM(r.chan, 4, 48, 1, 5, 4, 2);
    CHECK_STREAM(r.down, 6, 48, 2, 8, 6, 3);
    CHECK_STREAM(r, 10, 96, 3, 13, 10, 5);
    CHECK_U64(r.dram_peak_bytes, 48);
    CHECK(r.feasible);
    CHECK_U64(r.transient_rows, 0);
    CHECK(r.chan.hit_ratio == 1.0 / 5 && r.down.hit_ratio == 2.0 / 8);
    CHECK(r.bytes_per_token == 96.0 / 5 && r.chan.reads_per_token == 4.0 / 5);
    replay_result_free(&r);
    /* 24 bytes: 1 bundle and 1 row per layer; a token needs 2 rows of down */
    r = run(&tr, "lru", "transposed", 24, err);
    CHECK(!r.feasible);
    CHECK_STR(r.infeasible, "a token needs up to 2 rows of down in one layer; the budget holds 1 per layer");
    replay_result_free(&r);
    r = run(&tr, "lru", "transposed", 12, err); /* 6 bytes each: no bundle fits */
    CHECK(!r.feasible && strstr(r.infeasible, "channel bundles") != NULL);
    replay_result_free(&r);
}

/* Rows padded to 16 bytes (--row-stride 16 of a trace with channel sets,
 * as the engine pads ffn_t.bin's to 4096): each stream 1 x 4 x 16 or
 * 1 x 6 x 16 = 64 + 96 bytes; at 80 the channels get 80 * 64/160 = 32 bytes,
 * 2 bundles, and down 48, 3 rows: lru_counts' decisions (those capacities),
 * every read 16 bytes. Per token: channel reads 1 1 0 1 1, down reads
 * 2 1 1 1 1; channel hits 0 0 1 0 0, down 0 0 1 0 1. */
static void padded_counts(void)
{
    char err[256] = "";
    struct replay_result r;
    struct replay_spec spec = {POLICY("lru"), LAYOUT("transposed"), 80, false, true, 16, 16};
    CHECK(replay_run(&tr, &spec, &r, err, sizeof err) == 0);
    CHECK_U64(r.chan.row_bytes, 16);
    CHECK_U64(r.down.row_bytes, 16);
    CHECK_U64(r.chan.budget_rows, 2);
    CHECK_U64(r.down.budget_rows, 3);
    CHECK_STREAM(r.chan, 4, 64, 1, 5, 4, 2);
    CHECK_STREAM(r.down, 6, 96, 2, 8, 6, 3);
    const uint64_t chan_reads[] = {1, 1, 0, 1, 1}, down_reads[] = {2, 1, 1, 1, 1};
    const uint64_t chan_hits[] = {0, 0, 1, 0, 0}, down_hits[] = {0, 0, 1, 0, 1};
    for (int t = 0; t < 5; t++) {
        CHECK_U64(r.chan.per_token[t].reads, chan_reads[t]);
        CHECK_U64(r.chan.per_token[t].bytes, 16 * chan_reads[t]);
        CHECK_U64(r.down.per_token[t].reads, down_reads[t]);
        CHECK_U64(r.chan.per_token[t].hits, chan_hits[t]);
        CHECK_U64(r.down.per_token[t].hits, down_hits[t]);
        CHECK_U64(r.per_token[t].reads, chan_reads[t] + down_reads[t]);
    }
    replay_result_free(&r);
    uint64_t align;
    CHECK(replay_row_stride(&tr.meta, "aligned", &align, err, sizeof err) == 0 && align == 4096);
    CHECK(replay_row_stride(&tr.meta, "3", &align, err, sizeof err) == -1);
    CHECK(strstr(err, "a power of two") != NULL);
    CHECK_U64(replay_ffn_bytes(&tr.meta, 16), 160);
    CHECK_U64(replay_ffn_bytes(&tr.meta, 0), 96);
}

/* window:K without a budget: after token t it keeps the rows of tokens
 * t-K+2..t, so that the next token's window holds K tokens (replay.h).
 * window:4 keeps the last 3 tokens' rows:
 * channels: t0, t1 miss; t2 hit 0; t3 miss 2, keeps {1,0,2}; t4 hit 1,
 *   keeps t2..t4 {0,2,1}: 3 reads, 2 hits, nothing deleted.
 * down: t0 miss 0,1; t1 miss 2; t2 hit 0, miss 3, keeps t0..t2; t3 miss 4,
 *   keeps t1..t3 {2,0,3,4}: drops 1; t4 hits 2 and 3, keeps t2..t4, the
 *   same rows: 5 reads, 3 hits, 1 deleted.
 * window:3 keeps the last 2 tokens' rows:
 * channels: t0, t1 miss; t2 hit 0, drops nothing (keeps {1,0}); t3 miss
 *   2, drops 1; t4 miss 1, drops 0: 4 reads, 1 hit, 2 deleted.
 * down: t0 miss 0,1; t1 miss 2; t2 hit 0, miss 3, drops 1; t3 miss 4, drops
 *   2; t4 hit 3, miss 2, drops 0: 6 reads, 2 hits, 3 deleted. */
static void window_counts(void)
{
    char err[256] = "";
    struct replay_result r = run(&tr, "window:4", "transposed", 0, err);
    CHECK_STREAM(r.chan, 3, 36, 2, 5, 3, 0);
    CHECK_STREAM(r.down, 5, 40, 3, 8, 5, 1);
    CHECK_STREAM(r, 8, 76, 5, 13, 8, 1);
    replay_result_free(&r);
    r = run(&tr, "window:3", "transposed", 0, err);
    CHECK_STREAM(r.chan, 4, 48, 1, 5, 4, 2);
    CHECK_STREAM(r.down, 6, 48, 2, 8, 6, 3);
    CHECK_STREAM(r, 10, 96, 3, 13, 10, 5);
    replay_result_free(&r);
}

/* The cost model's volumes of the lru replay (sim/trace_volumes.h), per
 * token at 2 bytes per weight (the trace's own f16): channels 48 bytes / 12
 * = 4 bundles read over 5 tokens (0.8), 2 deleted (0.4), 5 needed (1.0, held
 * and computed: lru computes its needed rows); down 48 / 8 = 6 rows (1.2), 3 deleted (0.6),
 * 8 needed (1.6). */
static void cost_volumes(void)
{
    char err[256] = "";
    struct replay_result r = run(&tr, "lru", "transposed", 48, err);
    struct token_volumes v;
    trace_volumes_of_replay(&r, "hand", 2, DTYPE_F16, &v);
    CHECK(v.transposed && v.replayed);
    const double got[] = {v.chan.rows_loaded, v.chan.reads, v.chan.read_bytes, v.chan.rows_deleted, v.chan.computed,
                          v.chan.cache_rows, v.down.rows_loaded, v.down.read_bytes, v.down.rows_deleted,
                          v.down.computed, v.down.cache_rows};
    const double want[] = {0.8, 0.8, 9.6, 0.4, 1.0, 1.0, 1.2, 9.6, 0.6, 1.6, 1.6};
    for (int i = 0; i < 11; i++)
        CHECK_NEAR(got[i], want[i], 1e-12);
    replay_result_free(&r);
}

static void refusals(void)
{
    char err[256] = "";
    struct replay_result r = run(&plain, "lru", "transposed", 48, err);
    CHECK(strstr(err, "layout transposed needs a trace with channel sets") != NULL);
    r = run(&tr, "lru", "bundled", 48, err);
    CHECK(strstr(err, "the trace has channel sets (input sparsity), which only layout transposed reads") != NULL);
    r = run(&tr, "naive", "split", 48, err);
    CHECK(strstr(err, "a neuron layout would read every bundle") != NULL);
    struct replay_spec spec = {POLICY("lru"), LAYOUT("transposed"), 48, false, true, 16, 32};
    CHECK(replay_run(&tr, &spec, &r, err, sizeof err) == -1);
    CHECK(strstr(err, "--read-align 32 must divide the alignment its rows are padded to (--row-stride 16") != NULL);
    spec.row_stride = 0, spec.read_align = 4;
    CHECK(replay_run(&tr, &spec, &r, err, sizeof err) == -1);
    CHECK(strstr(err, "packed: --read-align 0") != NULL);
    r = run(&plain, "lru", "bundled", 48, err); /* the neuron layouts as before */
    CHECK_U64(r.total.needed, 8);
    CHECK(!r.transposed);
    replay_result_free(&r);
}

/* The CSV has each stream's columns, the markdown its table. */
static void report_columns(void)
{
    char err[256] = "";
    struct replay_row row = {0};
    row.res = run(&tr, "lru", "transposed", 48, err);
    row.budget = "50%";
    row.budget_share = 0.5;
    char *csv = replay_report_csv(&row, 1);
    CHECK(csv && strstr(csv, "chan_bytes_per_token,chan_reads_per_token,chan_hit_ratio,chan_row_bytes") != NULL);
    CHECK(csv && strstr(csv, "down_bytes_total,down_reads_total") != NULL);
    CHECK(csv && strstr(csv, ",9.6,0.8,0.2,12,2,1,48,4,") != NULL); /* channels: 48 bytes, 4 reads over 5 tokens */
    free(csv);
    struct replay_report_info info = {0};
    info.trace_path = "hand.trace";
    info.model = "";
    info.meta = &tr.meta;
    char *md = replay_report_markdown(&row, 1, &info);
    CHECK(md && strstr(md, "| 50% | lru | 0.00 / 1 | 0.200 | 2 / 1 | 0.00 / 1 | 0.250 | 3 / 2 |") != NULL);
    free(md);
    replay_result_free(&row.res);
}

int main(void)
{
    make_traces();
    naive_counts();
    lru_counts();
    padded_counts();
    window_counts();
    refusals();
    report_columns();
    cost_volumes();
    trace_free(&tr);
    trace_free(&plain);
    return check_report("test_replay_transposed");
}
