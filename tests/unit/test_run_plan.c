/* Run planning (engine/run/run_plan.h) on a model that exists only as numbers:
 * the presets, the refusals with their numbers, the capacities a budget
 * buys, and window:auto's K, cross-checked against the window policy
 * itself (cache/) running the same tokens and against the rule predict
 * shares (sim/window_auto.h) given the same rows. */
#include "check.h"
#include "plan_model_fixture.h"
#include "policy_text.h"
#include "trace_fixture.h"

#include "cache/cache.h"
#include "engine/run/run_plan.h"
#include "sim/paper_tables.h"
#include "sim/window_auto.h"

/* plan_model_fixture.h's model; the KV cache is given as 100. */
enum { STRIDE = PLAN_STRIDE, FIXED = PLAN_DRAM + 100 };

static int plan(const struct model *m, const char *policy, uint64_t budget, const struct trace *tr,
                uint64_t tokens, struct run_plan_out *out, char *err)
{
    struct run_plan_input in = {.m = m, .policy = POLICY(policy), .layout = LAYOUT("bundled"), .budget = budget, .kv_bytes = 100,
                                .trace = tr, .tokens = tokens};
    err[0] = 0;
    return run_plan_make(&in, out, err, 512);
}

static void test_presets(void)
{
    struct policy_spec pol;
    struct layout_spec lay;
    CHECK(run_mode_preset("naive", 5, 0, &pol, &lay) == 0);
    CHECK_STR(POLICY_NAME(&pol), "naive");
    CHECK_STR(LAYOUT_NAME(&lay), "coalesce:0");
    CHECK(run_mode_preset("window", 7, 0, &pol, &lay) == 0);
    CHECK_STR(POLICY_NAME(&pol), "window:7");
    CHECK_STR(LAYOUT_NAME(&lay), "split");
    CHECK(run_mode_preset("all", 0, 3, &pol, &lay) == 0); /* window 0: auto */
    CHECK_STR(POLICY_NAME(&pol), "window:auto");
    CHECK_STR(LAYOUT_NAME(&lay), "coalesce:3");
    CHECK(run_mode_preset("turbo", 5, 0, &pol, &lay) == -1);
    char err[256];
    const struct policy_spec wauto = POLICY("window:auto"), w5000 = POLICY("window:5000"), lru = POLICY("lru");
    CHECK(run_plan_check(&wauto, err, sizeof err) == 0);
    CHECK(run_plan_check(&w5000, err, sizeof err) == -1);
    CHECK(strstr(err, "1 to 4096") != NULL);
    CHECK(run_plan_check(&lru, err, sizeof err) == 0);
}

/* The refusals name the numbers that do not fit. */
static void test_refusals(void)
{
    struct model m = fake_model(2, 8);
    struct run_plan_out out;
    char err[512];
    /* the weights in DRAM and the KV cache: 1.10 kB against 1.05 kB */
    CHECK(plan(&m, "window:3", 1050, NULL, 10, &out, err) == -1);
    CHECK(strstr(err, "1.05 kB") && strstr(err, "already take 1.10 kB"));
    /* 100 bytes left: one staging row and one bounce row (128 bytes) do not fit */
    CHECK(plan(&m, "window:3", FIXED + 100, NULL, 10, &out, err) == -1);
    CHECK(strstr(err, "plus the staging area (0.13 kB: 2 rows of 64 bytes)") != NULL);
    /* staging fits, but 2 layers x 1 row (128 bytes) do not: 100 bytes left */
    CHECK(plan(&m, "lru", FIXED + 128 + 100, NULL, 10, &out, err) == -1);
    CHECK(strstr(err, "hold no row in each of 2 layers (a row is 64 bytes)") != NULL);
    CHECK(plan(&m, "lru", 0, NULL, 10, &out, err) == -1);
    CHECK(strstr(err, "needs a DRAM budget") != NULL);
    CHECK(plan(&m, "belady", FIXED + 4096, NULL, 10, &out, err) == -1);
    CHECK(strstr(err, "only when a trace chooses the neurons") != NULL);
    CHECK(plan(&m, "window:auto", 0, NULL, 10, &out, err) == -1);
    CHECK(strstr(err, "needs one") != NULL);
}

/* A budget between: what is left after staging is split evenly. */
static void test_capacity(void)
{
    struct model m = fake_model(2, 8);
    struct run_plan_out out;
    char err[512];
    /* no trace: the window stages a quarter of d_ff (2 rows) with a bounce
     * row: 192 bytes; 2 layers x 3 rows x 64 = 384 more, and 63 that buy nothing */
    CHECK(plan(&m, "window:3", FIXED + 192 + 384 + 63, NULL, 10, &out, err) == 0);
    CHECK_U64(out.staging_rows, 2);
    CHECK_U64(out.bounce_rows, 1);
    CHECK_U64(out.capacity_rows, 3);
    CHECK_U64(out.ffn_cache_bytes, 3 * 2 * 32); /* replay's --dram-budget: unpadded rows */
    CHECK_U64(out.layer_rows[0], 3);
    CHECK_U64(out.layer_rows[1], 3);
    CHECK_U64(out.held_bytes, 192 + 384);
    CHECK_U64(out.window_k, 3);
    CHECK_STR(POLICY_NAME(&out.policy), "window:3");
    CHECK(out.window_from == NULL);
    free(out.layer_rows);
    /* hybrid without a budget: half of each layer resident, the rest staged */
    CHECK(plan(&m, "hybrid", 0, NULL, 10, &out, err) == 0);
    CHECK_U64(out.capacity_rows, 0);
    CHECK_U64(out.layer_rows[0], 4);
    CHECK_U64(out.staging_rows, 4);
    free(out.layer_rows);
}

/* One layer, d_ff 8; sets t0 {0,1,2} t1 {1,2,3} t2 {0,4} t3 {1,2,5} t4 {0,1}.
 * Largest union of k consecutive tokens: k=1: 3, k=2: 5 ({1,2,3}+{0,4}),
 * k=3: 6 ({1,2,3}+{0,4}+{1,2,5}), k=4: 6, k=5: 6. */
static const int s0[] = {0, 1, 2, -1}, s1[] = {1, 2, 3, -1}, s2[] = {0, 4, -1}, s3[] = {1, 2, 5, -1},
                 s4[] = {0, 1, -1};
static const int *const sets[] = {s0, s1, s2, s3, s4};

/* The window itself (cache/) over the same tokens: how often it shrank,
 * or dropped rows of the current token (overflow). */
static uint64_t window_shrinks(const struct trace *tr, uint32_t k, uint64_t capacity)
{
    char err[256];
    struct cache_config cc = {policy_spec_of(&policy_window, k), LAYOUT("bundled"), capacity, tr, false, false};
    struct cache_geometry g = {1, 8, 2, 32, STRIDE, 0, {{.bytes = 16}, {.offset = 16, .bytes = 16}}};
    struct cache c;
    uint64_t overflow = 0;
    if (cache_open(&c, &cc, &g, err, sizeof err) != 0)
        return UINT64_MAX;
    for (uint64_t t = 0; t < tr->n_tokens; t++) {
        uint32_t n;
        const uint32_t *need = trace_set(tr, false, t, 0, &n);
        struct cache_step st;
        cache_request(&c, t, 0, need, n, false, NULL, &st);
        overflow += st.overflow;
    }
    uint64_t shrinks = c.p.shrinks + overflow;
    cache_close(&c);
    return shrinks;
}

static void test_window_auto_trace(void)
{
    struct trace tr;
    fixture_trace(&tr, 1, 2, 8, FFN_RELU, 5, sets);
    struct model m = fake_model(1, 8);
    /* largest need 3: one staging row (a quarter) and one bounce row, 128 bytes */
    static const struct {
        uint64_t capacity;
        uint32_t k; /* window:K keeps K-1 tokens: the largest K whose K-1 peak fits */
    } cases[] = {{2, 1}, {3, 2}, {4, 2}, {5, 3}, {6, 5}, {8, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct run_plan_out out;
        char err[512], want[32];
        CHECK(plan(&m, "window:auto", FIXED + 128 + cases[i].capacity * STRIDE, &tr, 5, &out, err) == 0);
        CHECK_U64(out.capacity_rows, cases[i].capacity);
        CHECK_U64(out.window_k, cases[i].k);
        snprintf(want, sizeof want, "window:%u", cases[i].k);
        CHECK_STR(POLICY_NAME(&out.policy), want);
        CHECK(out.window_from && strstr(out.window_from, "trace"));
        /* the one rule predict uses too, given the same rows, chooses the same */
        struct window_auto_input wi = {&tr, false, 5, 8, cases[i].capacity};
        struct window_auto_choice wc;
        CHECK(window_auto_choose(&wi, &wc, err, sizeof err) == 0);
        CHECK_U64(wc.k, cases[i].k);
        CHECK_STR(wc.from, out.window_from);
        free(out.layer_rows);
        /* the window chosen never shrinks; one token more would (below the run's length) */
        if (cases[i].k > 1)
            CHECK_U64(window_shrinks(&tr, cases[i].k, cases[i].capacity), 0);
        if (cases[i].k < 5)
            CHECK(window_shrinks(&tr, cases[i].k + 1, cases[i].capacity) > 0);
    }
    /* a run longer than the trace replays it: 12 tokens, so windows up to 12 */
    struct run_plan_out out;
    char err[512];
    CHECK(plan(&m, "window:auto", FIXED + 128 + 6 * STRIDE, &tr, 12, &out, err) == 0);
    CHECK_U64(out.window_k, 12);
    free(out.layer_rows);
    /* belady past the trace's end */
    CHECK(plan(&m, "belady", FIXED + 128 + 6 * STRIDE, &tr, 6, &out, err) == -1);
    CHECK(strstr(err, "run's 6 tokens pass the trace's 5") != NULL);
    trace_free(&tr);
}

/* The oracle: the s_agg curve the cost model uses, K-1 tokens kept. */
static void test_window_auto_oracle(void)
{
    struct model m = fake_model(1, 1000);
    struct run_plan_out out;
    char err[512];
    /* without a trace the window stages a quarter of d_ff, at most a
     * quarter of the rows the budget leaves, + 1 bounce row: of 328 rows,
     * 82 + 1 staged and 245 cached. s_agg(5) = 24.0% -> 240 rows,
     * s_agg(6) = 26.1% -> 261: 245 rows hold window:6's 5 tokens */
    CHECK(plan(&m, "window:auto", FIXED + 328 * STRIDE, NULL, 100, &out, err) == 0);
    CHECK_U64(out.staging_rows, 82);
    CHECK_U64(out.capacity_rows, 245);
    CHECK(paper_s_agg(5) * 1000 <= 245 && paper_s_agg(6) * 1000 > 245);
    CHECK_U64(out.window_k, 6);
    CHECK(out.window_from && strstr(out.window_from, "s_agg"));
    struct window_auto_input wi = {NULL, false, 100, 1000, 245};
    struct window_auto_choice wc;
    CHECK(window_auto_choose(&wi, &wc, err, sizeof err) == 0);
    CHECK_U64(wc.k, 6);
    free(out.layer_rows);
    /* below s_agg(1) = 10%: no token's rows fit; the window holds the current one only */
    CHECK(plan(&m, "window:auto", FIXED + 133 * STRIDE, NULL, 100, &out, err) == 0); /* 33 + 1 staged */
    CHECK_U64(out.capacity_rows, 99);
    CHECK_U64(out.window_k, 1);
    free(out.layer_rows);
    /* a run of 3 tokens needs no window past 3 */
    CHECK(plan(&m, "window:auto", FIXED + 1400 * STRIDE, NULL, 3, &out, err) == 0);
    CHECK_U64(out.window_k, 3);
    free(out.layer_rows);
}

/* The plan into the flash FFN's configuration, and a dense run's budget. */
static void test_apply_and_dense(void)
{
    struct model m = fake_model(2, 100);
    struct run_plan_out out;
    char err[512];
    CHECK(plan(&m, "lru", FIXED + 40 * STRIDE, NULL, 10, &out, err) == 0);
    struct ffn_flash_config cfg = {0};
    struct trace profile = {0};
    run_plan_apply(&out, &profile, &cfg);
    CHECK(policy_spec_equal(&cfg.policy, &out.policy) && cfg.layer_rows == out.layer_rows && cfg.profile == &profile);
    CHECK(cfg.capacity_rows == out.capacity_rows && cfg.stream.staging_rows == out.staging_rows &&
          cfg.stream.bounce_rows == out.bounce_rows);
    free(out.layer_rows);
    m.ffn_bytes = 2 * 100 * STRIDE; /* 12800: with dram.bin 1000 and the KV cache 100, 13900 in all */
    CHECK(run_plan_dense_check(&m, 100, 0, err, sizeof err) == 0);
    CHECK(run_plan_dense_check(&m, 100, 13900, err, sizeof err) == 0);
    CHECK(run_plan_dense_check(&m, 100, 13899, err, sizeof err) == -1);
    CHECK(strstr(err, "the model needs 0.00 GB in DRAM") != NULL);
}

int main(void)
{
    test_presets();
    test_refusals();
    test_capacity();
    test_window_auto_trace();
    test_window_auto_oracle();
    test_apply_and_dense();
    return check_report("test_run_plan");
}
