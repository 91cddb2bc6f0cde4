/* Exact bytes, reads, hits and row counts of every policy and layout on
 * small traces worked out by hand (the derivations are in the comments). */
#include "check.h"
#include "policy_text.h"
#include "trace_fixture.h"

#include "cache/cache.h"
#include "cache/mode.h"
#include "common/model_shape.h"
#include "sim/predict_list.h"
#include "sim/replay.h"
#include "sim/replay_price.h"
#include "sim/replay_report.h"
#include "sim/replay_study.h"

/* One layer, d_ff 8, d_model 2, f16 weights (2 bytes each): a vector is 4 bytes, a
 * bundled row 8. Needed sets per token:
 *   t0 {0,1,2}  t1 {1,2,3}  t2 {0,4}  t3 {1,2,5}  t4 {0,1}   (13 in all) */
static const int s0[] = {0, 1, 2, -1}, s1[] = {1, 2, 3, -1}, s2[] = {0, 4, -1}, s3[] = {1, 2, 5, -1},
                 s4[] = {0, 1, -1};
static const int *const sets[] = {s0, s1, s2, s3, s4};

static struct trace tr;

static struct replay_result run_spec(struct replay_spec spec)
{
    struct replay_result r;
    char err[256] = "";
    if (replay_run(&tr, &spec, &r, err, sizeof err) != 0) {
        char name[POLICY_NAME_MAX];
        cache_policy_name(&spec.policy, name, sizeof name);
        fprintf(stderr, "replay %s %s: %s\n", name, LAYOUT_NAME(&spec.layout), err);
        check_failures++;
        memset(&r, 0, sizeof r);
    }
    return r;
}

static struct replay_result run(const char *policy, const char *layout, uint64_t budget)
{
    return run_spec((struct replay_spec){POLICY(policy), LAYOUT(layout), budget, false, false, 0, 0});
}

/* A replay with the budget binding, as every row of a budget study. */
static struct replay_result run_bound(const char *policy, const char *layout, uint64_t budget)
{
    return run_spec((struct replay_spec){POLICY(policy), LAYOUT(layout), budget, false, true, 0, 0});
}

#define CHECK_COUNTS(r, want_reads, want_bytes, want_hits, want_ins, want_del) \
    do {                                                                   \
        CHECK_U64((r).total.reads, want_reads);                            \
        CHECK_U64((r).total.bytes, want_bytes);                            \
        CHECK_U64((r).total.hits, want_hits);                              \
        CHECK_U64((r).total.inserted, want_ins);                           \
        CHECK_U64((r).total.deleted, want_del);                            \
    } while (0)

/* Two results agree in every count. */
static void check_same_counts(const struct replay_result *a, const struct replay_result *b)
{
    CHECK_COUNTS(*a, b->total.reads, b->total.bytes, b->total.hits, b->total.inserted, b->total.deleted);
    CHECK_U64(a->total.needed, b->total.needed);
    CHECK_U64(a->dram_peak_bytes, b->dram_peak_bytes);
    CHECK(a->feasible == b->feasible);
}

#define EXPECT(policy, layout, budget, want_reads, want_bytes, want_hits, want_ins, want_del) \
    do {                                                                            \
        struct replay_result r_ = run(policy, layout, budget);                      \
        CHECK_U64(r_.total.reads, want_reads);                                      \
        CHECK_U64(r_.total.bytes, want_bytes);                                      \
        CHECK_U64(r_.total.hits, want_hits);                                        \
        CHECK_U64(r_.total.needed, 13);                                             \
        CHECK_U64(r_.total.inserted, want_ins);                                     \
        CHECK_U64(r_.total.deleted, want_del);                                      \
        replay_result_free(&r_);                                                    \
    } while (0)

/* Feasibility (sim/replay.h): the sets need at most 3 rows of 8 bytes in
 * the one layer, so a budget under 24 bytes cannot hold a token's rows. */
static void feasibility_tests(void)
{
    /* window:5 in 2 rows: the golden counts above, marked infeasible */
    struct replay_result r = run_bound("window:5", "bundled", 16);
    CHECK_COUNTS(r, 11, 88, 2, 11, 9);
    CHECK(!r.feasible);
    CHECK_U64(r.budget_rows, 2);
    CHECK_U64(r.max_needed_rows, 3);
    CHECK_STR(r.infeasible, "a token needs up to 3 rows in one layer; the budget holds 2 per layer");
    replay_result_free(&r);
    r = run_bound("lru", "bundled", 24);
    CHECK_COUNTS(r, 10, 80, 3, 10, 7);
    CHECK(r.feasible && !r.infeasible[0]);
    replay_result_free(&r);
    /* the predictor ignores the budget, but its rows must fit too */
    r = run_bound("predictor", "bundled", 16);
    CHECK_COUNTS(r, 13, 104, 0, 13, 13);
    CHECK(!r.feasible);
    replay_result_free(&r);
    r = run("predictor", "bundled", 0); /* no budget: nothing to judge */
    CHECK(r.feasible && !r.budget_given);
    replay_result_free(&r);
    /* A budget of 0 (or under one row per layer) binds: lru and window keep
     * nothing and read what the predictor reads; no row fits. */
    const char *keepers[] = {"lru", "window:5", "belady"};
    for (int i = 0; i < 3; i++) {
        r = run_bound(keepers[i], "bundled", 0);
        CHECK_COUNTS(r, 13, 104, 0, 13, 13);
        CHECK(!r.feasible);
        CHECK_STR(r.infeasible, "the budget holds no row per layer (0 bytes < 1 layers x 8-byte rows)");
        replay_result_free(&r);
    }
    r = run("window:5", "bundled", 7); /* 7 bytes: under a row, binding without the flag too */
    CHECK_COUNTS(r, 13, 104, 0, 13, 13);
    CHECK(!r.feasible && r.budget_rows == 0);
    replay_result_free(&r);
    /* without a budget window:5 holds the whole 5-token trace */
    r = run("window:5", "bundled", 0);
    CHECK_COUNTS(r, 6, 48, 7, 6, 0);
    CHECK(r.feasible);
    replay_result_free(&r);
    /* hybrid with nothing resident reads like naive, and streams: feasible */
    r = run_bound("hybrid", "bundled", 0);
    CHECK_COUNTS(r, 40, 320, 0, 40, 40);
    CHECK(r.feasible && r.preload_bytes == 0);
    replay_result_free(&r);
    r = run_bound("naive", "bundled", 8);
    CHECK(r.feasible);
    replay_result_free(&r);
}

/* A budget study: the same policy at two budgets has the counts of two
 * replays at one budget each, rows budget-major. */
static void study_tests(void)
{
    const char *policies[] = {"window:5", "lru"};
    const struct layout_spec layouts[] = {LAYOUT("bundled")};
    const struct policy_spec pols[] = {POLICY(policies[0]), POLICY(policies[1])};
    const struct replay_budget budgets[] = {{"16", 16, 16.0 / 64, false}, {"24", 24, 24.0 / 64, false}};
    struct replay_study st = {&tr, pols, 2, layouts, 1, budgets, 2, false, NULL, 0, 0};
    struct replay_row rows[4];
    memset(rows, 0, sizeof rows);
    size_t done = 0;
    char err[512];
    CHECK(replay_study_run(&st, rows, &done, NULL, NULL, err, sizeof err) == 0);
    CHECK_U64(done, 4);
    CHECK_STR(rows[0].res.policy, "window:5");
    CHECK_STR(rows[1].budget, "16");
    CHECK_STR(rows[2].budget, "24");
    CHECK_NEAR(rows[3].budget_share, 0.375, 1e-12);
    CHECK_COUNTS(rows[0].res, 11, 88, 2, 11, 9); /* window:5 in 16 bytes */
    CHECK_COUNTS(rows[3].res, 10, 80, 3, 10, 7); /* lru in 24 bytes */
    CHECK(!rows[0].res.feasible && !rows[1].res.feasible && rows[2].res.feasible && rows[3].res.feasible);
    const uint64_t at[] = {16, 16, 24, 24};
    for (int i = 0; i < 4; i++) {
        struct replay_result one = run(policies[i % 2], "bundled", at[i]);
        check_same_counts(&rows[i].res, &one);
        CHECK(!rows[i].priced);
        replay_result_free(&one);
    }
    replay_rows_free(rows, done);
}

/* friends against bundled: 144 bytes against 104 for the predictor. */
static void friends_note_tests(void)
{
    const struct policy_spec policies[] = {POLICY("predictor")};
    const struct layout_spec layouts[] = {LAYOUT("bundled"), LAYOUT("friends")};
    const struct replay_budget budgets[] = {{"24", 24, 24.0 / 64, false}};
    struct replay_study st = {&tr, policies, 1, layouts, 2, budgets, 1, false, NULL, 0, 0};
    struct replay_row rows[2];
    memset(rows, 0, sizeof rows);
    size_t done = 0;
    char err[512];
    CHECK(replay_study_run(&st, rows, &done, NULL, NULL, err, sizeof err) == 0 && done == 2);
    struct friends_note fn;
    CHECK(replay_friends_note(rows, 2, 0, true, &fn) == 0); /* the bundled row itself */
    CHECK(replay_friends_note(rows, 2, 1, true, &fn) == 1);
    CHECK_NEAR(fn.ratio, 144.0 / 104, 1e-12);
    CHECK_STR(fn.text, "friends reads 1.38x the bytes per token of bundled: synthetic traces have no co-activation structure");
    CHECK(replay_friends_note(rows, 2, 1, false, &fn) == 1);
    CHECK(strstr(fn.text, ": no co-activation structure found in this trace") != NULL);
    CHECK(replay_friends_note(rows + 1, 1, 0, true, &fn) == 0); /* no bundled row to compare with */
    rows[1].res.bytes_per_token = rows[0].res.bytes_per_token;     /* friends reading no more: no note */
    CHECK(replay_friends_note(rows, 2, 1, true, &fn) == 0);
    replay_rows_free(rows, done);
}

/* A replayed row is priced as predict --trace prices the same replay, by
 * the same path (predict_replayed beside predict_list). */
static void pricing_tests(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct replay_pricing p;
    char err[1024];
    char model[64];
    CHECK(!trace_source_synthetic(&tr.meta, model, sizeof model) && !model[0]);
    /* priced on the fixture's shape at d_model 4 (the header prices its
     * attention by d_model), f16: the replay's bytes at 2 per weight */
    struct trace keep = tr;
    fixture_trace(&tr, 1, 4, 8, FFN_RELU, 5, sets);
    if (replay_pricing_open(&p, &set, &tr, "fixture", "m1max-cpu", 0, err, sizeof err) != 0) {
        fprintf(stderr, "pricing: %s\n", err);
        check_failures++;
        trace_free(&tr);
        tr = keep;
        return;
    }
    CHECK(strstr(p.shape_source, "header alone") != NULL);
    CHECK_STR(p.dtype, "f32"); /* the fixture is f16; m1max-cpu prices f32 only */
    struct predict_setup s = p.setup;
    s.layout = LAYOUT("bundled");
    struct policy_prediction *items = NULL;
    size_t n = 2;
    const char *names[] = {"window:2", "predictor"};
    const struct policy_spec list[] = {POLICY(names[0]), POLICY(names[1])};
    CHECK(predict_list(&s, list, n, &items, err, sizeof err) == 0 && n == 2);
    for (size_t i = 0; items && i < 2; i++) {
        struct replay_result r = run(names[i], "bundled", 0);
        struct policy_prediction one;
        CHECK(replay_pricing_price(&p, &r, &one, err, sizeof err) == 0);
        CHECK_NEAR(one.prediction.io_ms, items[i].prediction.io_ms, 1e-12);
        CHECK_NEAR(one.prediction.mem_ms, items[i].prediction.mem_ms, 1e-12);
        CHECK_NEAR(one.prediction.compute_ms, items[i].prediction.compute_ms, 1e-12);
        CHECK_NEAR(one.prediction.bytes_per_token, 2 * r.bytes_per_token, 1e-9); /* 2 -> 4 bytes per weight */
        replay_result_free(&r);
    }
    free(items);
    /* hybrid: what is not resident, sequentially. With nothing resident the
     * whole FFN (8 rows x 8 weights x 4 bytes); without a budget half. */
    struct replay_result h = run_bound("hybrid", "bundled", 0);
    struct policy_prediction one;
    CHECK(replay_pricing_price(&p, &h, &one, err, sizeof err) == 0);
    CHECK_NEAR(one.prediction.bytes_per_token, 256, 1e-9);
    replay_result_free(&h);
    h = run("hybrid", "bundled", 0);
    CHECK(replay_pricing_price(&p, &h, &one, err, sizeof err) == 0);
    CHECK_NEAR(one.prediction.bytes_per_token, 128, 1e-9);
    replay_result_free(&h);
    replay_pricing_close(&p);
    trace_free(&tr);
    tr = keep;
}

/* The row stride: a run caches rows at ffn.bin's padded stride, and replay
 * counts with it when asked. The fixture's packed row is 8 bytes. */
static void stride_tests(void)
{
    uint64_t s = 99;
    char err[256];
    CHECK(replay_row_stride(&tr.meta, "packed", &s, err, sizeof err) == 0 && s == 0);
    CHECK(replay_row_stride(&tr.meta, "aligned", &s, err, sizeof err) == 0 && s == 4096);
    CHECK(replay_row_stride(&tr.meta, "16", &s, err, sizeof err) == 0 && s == 16);
    CHECK(replay_row_stride(&tr.meta, "8", &s, err, sizeof err) == 0 && s == 0); /* the packed row itself */
    CHECK(replay_row_stride(&tr.meta, "4", &s, err, sizeof err) == -1);
    CHECK(strstr(err, "a row of this trace's shape is 8 bytes") != NULL);
    CHECK(replay_row_stride(&tr.meta, "wide", &s, err, sizeof err) == -1);
    /* lru in 16 bytes at a 16-byte stride holds one row, as the packed
     * replay does in 8: the same decisions, every read twice the bytes */
    struct replay_result one = run("lru", "bundled", 8);
    struct replay_result wide = run_spec((struct replay_spec){POLICY("lru"), LAYOUT("bundled"), 16, false, false, 16, 0});
    CHECK_U64(wide.capacity_rows, 1);
    CHECK_U64(wide.row_bytes, 16);
    CHECK_COUNTS(wide, one.total.reads, 2 * one.total.bytes, one.total.hits, one.total.inserted, one.total.deleted);
    /* packed at the same 16 bytes it holds two rows: more hits */
    struct replay_result two = run("lru", "bundled", 16);
    CHECK_U64(two.capacity_rows, 2);
    CHECK(two.total.hits > wide.total.hits);
    replay_result_free(&one);
    replay_result_free(&wide);
    replay_result_free(&two);
}

/* A split read widened to direct I/O's blocks, as the engine issues it.
 * The row's 2 vectors of 4 bytes at a 16-byte stride: with 8-byte blocks
 * the up vector is bytes 0-7 and the down vector 0-7 too (it starts at
 * 4: block 0), 8 bytes each; with 16-byte blocks each is the whole row. */
static void read_align_tests(void)
{
    uint64_t off, len, a;
    layout_vector_span(4, 4, 16, 0, &off, &len);
    CHECK(off == 4 && len == 4);
    layout_vector_span(4, 4, 16, 8, &off, &len);
    CHECK(off == 0 && len == 8);
    layout_vector_span(12, 12, 32, 8, &off, &len); /* bytes 12-23: blocks 8-23 */
    CHECK(off == 8 && len == 16);
    layout_vector_span(8, 4, 4096, 4096, &off, &len); /* never past the stride */
    CHECK(off == 0 && len == 4096);
    /* predictor reads the 13 needed rows: 26 vector reads, of 4, 8 or 16 bytes */
    uint64_t want[] = {0, 104, 8, 208, 16, 416};
    for (int i = 0; i < 3; i++) {
        struct replay_result r = run_spec((struct replay_spec){POLICY("predictor"), LAYOUT("split"), 0, false, false, 16, want[2 * i]});
        CHECK_U64(r.total.reads, 26);
        CHECK_U64(r.total.bytes, want[2 * i + 1]);
        replay_result_free(&r);
    }
    char err[256];
    CHECK(replay_read_align(16, "0", &a, err, sizeof err) == 0 && a == 0);
    CHECK(replay_read_align(4096, "512", &a, err, sizeof err) == 0 && a == 512);
    CHECK(replay_read_align(16, "12", &a, err, sizeof err) == -1); /* not a power of two */
    CHECK(strstr(err, "a power of two dividing the row stride (16 bytes)") != NULL);
    CHECK(replay_read_align(16, "32", &a, err, sizeof err) == -1); /* does not divide the stride */
    CHECK(replay_read_align(16, "x", &a, err, sizeof err) == -1);
}

/* What callers outside cache/ ask of a policy: its properties by name
 * (window:auto is a window), and the one rule for a layer's rows. */
/* The ops a name parses into (window:auto taken); NULL when it names none. */
static const struct policy_ops *ops_of(const char *text)
{
    struct policy_spec p;
    char err[256];
    return cache_policy_parse(text, true, &p, err, sizeof err) == 0 ? p.ops : NULL;
}

/* What callers outside cache/ ask of a policy: its properties, from the
 * value a name parses into (window:auto is a window), and the one rule for
 * a layer's rows. */
static void property_tests(void)
{
    CHECK(ops_of("naive") == &policy_naive);
    CHECK(ops_of("window:auto") == &policy_window);
    CHECK(ops_of("window:7") == &policy_window);
    CHECK(ops_of("lru:3") == NULL && ops_of("mru") == NULL && ops_of("auto") == NULL);
    CHECK(policy_naive.reads_whole_layers && !policy_naive.keeps_resident_part);
    CHECK(policy_hybrid.reads_whole_layers && policy_hybrid.keeps_resident_part);
    CHECK(policy_predictor.keeps_recent && policy_window.keeps_recent && !policy_lru.keeps_recent);
    CHECK(policy_hot.known_from_profile && policy_belady.needs_future && !policy_lru.needs_future);
    /* rows per layer of 100: capacity 30, then none */
    CHECK_U64(policy_layer_rows(&policy_lru, 30, 100), 30);
    CHECK_U64(policy_layer_rows(&policy_lru, 0, 100), 0);
    CHECK_U64(policy_layer_rows(&policy_hybrid, 30, 100), 30);
    CHECK_U64(policy_layer_rows(&policy_hybrid, 0, 100), 50);
    CHECK_U64(policy_layer_rows(&policy_window, 0, 100), 100);
    CHECK_U64(policy_layer_rows(&policy_window, 500, 100), 100);
    CHECK_U64(policy_layer_rows(&policy_predictor, 30, 100), 0);
    CHECK_U64(policy_layer_rows(&policy_naive, 0, 100), 0);
    char name[32];
    struct policy_spec spec = policy_spec_of(&policy_window, 5);
    cache_policy_name(&spec, name, sizeof name);
    CHECK_STR(name, "window:5");
    spec = policy_spec_of(&policy_lru, 9);
    cache_policy_name(&spec, name, sizeof name);
    CHECK_STR(name, "lru");
    CHECK(layout_split.per_vector && !layout_bundled.per_vector);
    /* the one mode table: the paper's order, K and G where a mode takes them */
    char pol[32];
    struct layout_spec lay;
    const char *order[] = {"naive", "hybrid", "predictor", "window", "all"};
    for (size_t i = 0; i < 5; i++)
        CHECK(cache_mode_at(i) && !strcmp(cache_mode_at(i)->name, order[i]));
    CHECK(cache_mode_at(5) == NULL && cache_mode_find("dense") == NULL);
    spec = cache_mode_policy(cache_mode_find("all"), 0, true);
    cache_policy_name(&spec, pol, sizeof pol);
    lay = cache_mode_layout(cache_mode_find("all"), 3);
    CHECK_STR(pol, "window:auto");
    CHECK_STR(LAYOUT_NAME(&lay), "coalesce:3");
    spec = cache_mode_policy(cache_mode_find("naive"), 5, false);
    cache_policy_name(&spec, pol, sizeof pol);
    lay = cache_mode_layout(cache_mode_find("naive"), 3);
    CHECK_STR(pol, "naive");
    CHECK(lay.ops == &layout_coalesce && lay.arg == 0);
    CHECK_STR(cache_mode_find("window")->paper_label, "+ windowing");
    lay = cache_mode_layout(cache_mode_find("predictor"), 3);
    CHECK(lay.ops == &layout_split && lay.arg == 0);
    CHECK(cache_policy_named("window") == &policy_window);
    CHECK(cache_policy_named("window:5") == NULL);
    CHECK(layout_coalesce.reads_unneeded && layout_friends.reads_unneeded && !layout_bundled.reads_unneeded);
}

/* Every policy and layout on the one-layer trace (tr): reads, bytes,
 * hits, rows inserted and deleted, counted by hand in each comment. */
static void golden_counts(void)
{
    /* naive: all 8 rows every token, nothing kept. split: 16 reads of 4 bytes per token. */
    EXPECT("naive", "split", 0, 80, 320, 0, 40, 40);
    EXPECT("naive", "bundled", 0, 40, 320, 0, 40, 40);
    /* hybrid: rows 0-3 resident, 4-7 read every token (4 per token);
     * hits: 3 + 3 + 1 (0 of {0,4}) + 2 (1,2 of {1,2,5}) + 2 = 11. */
    EXPECT("hybrid", "bundled", 0, 20, 160, 11, 20, 20);
    /* predictor: exactly the 13 needed rows. */
    EXPECT("predictor", "split", 0, 26, 104, 0, 13, 13);
    EXPECT("predictor", "bundled", 0, 13, 104, 0, 13, 13);
    /* window:1 is the predictor. */
    EXPECT("window:1", "bundled", 0, 13, 104, 0, 13, 13);
    /* window:2 (current + previous token): misses 3, 1 (3), 2, 3, 1 (0) = 10;
     * deleted after t1: {0}; t2: {1,2,3}; t3: {0,4}; t4: {2,5} = 8. */
    EXPECT("window:2", "bundled", 0, 10, 80, 3, 10, 8);
    /* window:K longer than the trace keeps every row: the 6 distinct rows
     * read once, 7 hits, nothing deleted (its memory does not grow with K). */
    EXPECT("window:4294967294", "bundled", 0, 6, 48, 7, 6, 0);
    /* window:5 in 2 rows (16 bytes): the oldest token's rows leave first,
     * token 0's included, then the current token's highest ids.
     * t0 misses 0,1,2, drops 2; t1 hits 1, misses 2,3, drops 0 (token 0:
     * a shrink), 3; t2 misses 0,4, drops 1,2 (shrink); t3 misses 1,2,5,
     * drops 0,4 (shrink), 5; t4 hits 1, misses 0, drops 2 (shrink). */
    EXPECT("window:5", "bundled", 16, 11, 88, 2, 11, 9);
    struct replay_result w5 = run("window:5", "bundled", 16);
    CHECK_U64(w5.window_shrinks, 4);
    replay_result_free(&w5);
    /* lru, 3 rows (24 bytes): t1 evicts 0; t2 misses 0,4, evicts 1,2; t3
     * misses 1,2,5, evicts 3,0,4; t4 hits 1, misses 0, evicts 2. */
    EXPECT("lru", "bundled", 24, 10, 80, 3, 10, 7);
    /* lfu, 3 rows: t1 evicts 0 (freq 1, oldest); t2 misses 0,4, evicts 3, 0;
     * t3 misses 5, evicts 4; t4 misses 0, evicts 5. Misses 3+1+2+1+1. */
    EXPECT("lfu", "bundled", 24, 8, 64, 5, 8, 5);
    /* belady, 3 rows: t1 misses 3 (never used again: evicted); t2 misses 4
     * (evicted); t3 misses 5, evicts 2 (never needed again); t4 hits both. */
    EXPECT("belady", "bundled", 24, 6, 48, 7, 6, 3);
    /* hot, 3 rows: counts 1:4, 0:3, 2:3 -> pins {0,1,2}, read with the first
     * token (3 reads, inserted); then misses 3, 4, 5, each dropped after use. */
    EXPECT("hot", "bundled", 24, 6, 48, 10, 6, 3);
    /* coalesce:1 on the predictor's rows: {0,1,2} one read of 24 bytes;
     * {1,2,3} 24; {0,4} gap 3 -> 8 + 8; {1,2,5} gap 2 -> 16 + 8; {0,1} 16. */
    EXPECT("predictor", "coalesce:1", 0, 7, 104, 0, 13, 13);
    /* coalesce:2: {1,2,5} becomes one read of rows 1..5 (40 bytes). */
    EXPECT("predictor", "coalesce:2", 0, 6, 120, 0, 13, 13);
    /* friends from co-activation: 0->1, 1->2, 2->1, 3->1, 4->0, 5->1. Reads
     * of 16 bytes: t0 0(+1), 2 -> 2; t1 1(+2), 3 -> 2; t2 0, 4 -> 2;
     * t3 1(+2), 5 -> 2; t4 0(+1) -> 1. */
    EXPECT("predictor", "friends", 0, 9, 144, 0, 13, 13);
}

/* DRAM over the tokens, the read-size histogram and hybrid's preload. */
static void dram_and_read_sizes(void)
{
    /* DRAM of window:2: rows after each token's loads 3, 4, 5, 5, 4 -> peak
     * 5 rows of 8 bytes; kept after each token 3, 3, 2, 3, 2 ({0,1}). */
    struct replay_result r = run("window:2", "bundled", 0);
    CHECK_U64(r.dram_peak_bytes, 40);
    CHECK_NEAR(r.dram_mean_bytes, 8.0 * 21 / 5, 1e-9);
    CHECK_NEAR(r.dram_kept_mean_bytes, 8.0 * 13 / 5, 1e-9);
    CHECK_U64(r.per_token[2].reads, 2);
    CHECK_U64(r.per_token[2].deleted, 3);
    CHECK_U64(r.capacity_rows, 0);
    replay_result_free(&r);
    /* read-size histogram: predictor x split = 26 reads of 4 bytes */
    r = run("predictor", "split", 0);
    CHECK_U64(r.read_sizes.count[2], 26);
    CHECK_U64(read_size_hist_percentile(&r.read_sizes, 50), 4);
    replay_result_free(&r);
    /* hybrid preloads half the FFN: 4 rows of 8 bytes */
    r = run("hybrid", "bundled", 0);
    CHECK_U64(r.preload_bytes, 32);
    replay_result_free(&r);
}

/* Other traces in tr: GLU rows, and two layers sharing the budget. */
static void glu_and_two_layers(void)
{
    /* GLU rows are three vectors: predictor x bundled reads 13 rows of 12 bytes. */
    fixture_trace(&tr, 1, 2, 8, FFN_GLU, 5, sets);
    EXPECT("predictor", "bundled", 0, 13, 156, 0, 13, 13);
    EXPECT("predictor", "split", 0, 39, 156, 0, 13, 13);
    trace_free(&tr);

    /* Two layers with the same sets: the budget is split evenly, 48 bytes ->
     * 3 rows per layer, so lru costs exactly twice the one-layer count. */
    const int *const two[] = {s0, s0, s1, s1, s2, s2, s3, s3, s4, s4};
    fixture_trace(&tr, 2, 2, 8, FFN_RELU, 5, two);
    struct replay_result r = run("lru", "bundled", 48);
    CHECK_U64(r.capacity_rows, 3);
    CHECK_U64(r.total.reads, 20);
    CHECK_U64(r.total.needed, 26);
    replay_result_free(&r);
    trace_free(&tr);
}

int main(void)
{
    fixture_trace(&tr, 1, 2, 8, FFN_RELU, 5, sets);
    stride_tests();
    read_align_tests();
    property_tests();
    golden_counts();
    dram_and_read_sizes();
    feasibility_tests();
    study_tests();
    friends_note_tests();
    pricing_tests();
    trace_free(&tr);
    glu_and_two_layers();

    /* Spec errors are reported, not guessed. */
    char err[256];
    struct policy_spec pol;
    CHECK(cache_policy_parse("window:0", false, &pol, err, sizeof err) != 0);
    CHECK(cache_policy_parse("window", false, &pol, err, sizeof err) != 0);
    CHECK(cache_policy_parse("lru:3", false, &pol, err, sizeof err) != 0);
    CHECK(cache_policy_parse("fifo", false, &pol, err, sizeof err) != 0 && strstr(err, "available"));
    struct layout_spec lay;
    CHECK(cache_layout_parse("coalesce:x", &lay, err, sizeof err) != 0);
    CHECK(cache_layout_parse("coalesce:0", &lay, err, sizeof err) == 0);
    CHECK(POLICY("belady").ops->uses_budget && !POLICY("window:3").ops->uses_budget);
    return check_report("test_replay_golden");
}
