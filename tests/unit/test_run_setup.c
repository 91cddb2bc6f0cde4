/* flashbed run's setup (engine/run/run_setup.h) from its options as data, on a
 * model that exists only as numbers: which policy and layout a mode and
 * --policy/--layout give, what chooses the neurons and with which
 * thresholds, the refusals word for word as run prints them, when hot
 * needs a warm-up, and the fit into a budget (window:auto's K included). */
#include "check.h"
#include "policy_text.h"

#include <stdlib.h>
#include <unistd.h>

#include "engine/run/run_setup.h"

/* 2 layers, d_model 4, d_ff 8, f32, ReLU (no gate): a row is 2 vectors of
 * 16 bytes, stored in bundles of 64; dram.bin 1000 bytes, ffn.bin 1024. */
enum { STRIDE = 64 };

static struct model fake_model(bool glu)
{
    struct model m;
    memset(&m, 0, sizeof m);
    snprintf(m.shape.name, sizeof m.shape.name, "fake");
    snprintf(m.shape.ffn_activation, sizeof m.shape.ffn_activation, glu ? "swiglu" : "relu");
    m.shape.ffn_kind = glu ? FFN_GLU : FFN_RELU;
    m.shape.n_layers = 2;
    m.shape.d_ff = 8;
    m.shape.d_model = 4;
    m.shape.max_positions = 64;
    m.arch.glu = glu;
    m.dtype = DTYPE_F32;
    m.bundle_stride = STRIDE;
    m.dram_bytes = 1000;
    m.ffn_bytes = 2 * 8 * STRIDE;
    m.kv_dim = 4;
    snprintf(m.dir, sizeof m.dir, "/nonexistent-model");
    return m;
}

/* run's defaults: --mode all (not given), --window 5, oracle. */
static struct run_options defaults(void)
{
    return (struct run_options){.cmd = "run", .mode = "all", .window = 5, .active = "oracle", .use = "auto",
                                .io_engine = "psync", .io_threads = 32, .iodepth = 1, .direct = true};
}

/* run_setup_policy into *p (zeroed first); err "" on success. */
static int policy_of(const struct run_options *o, struct run_setup *p, char *err)
{
    memset(p, 0, sizeof *p);
    err[0] = '\0';
    return run_setup_policy(o, p, err, 512);
}

static void test_policy(void)
{
    struct run_setup p;
    char err[512];
    struct run_options o = defaults();
    CHECK(policy_of(&o, &p, err) == 0);
    CHECK_STR(POLICY_NAME(&p.policy), "window:5");
    CHECK_STR(LAYOUT_NAME(&p.layout), "coalesce:0");
    o.window = 0; /* auto */
    o.coalesce = 3;
    CHECK(policy_of(&o, &p, err) == 0);
    CHECK(p.policy.arg_auto && p.policy.ops == &policy_window);
    CHECK_STR(LAYOUT_NAME(&p.layout), "coalesce:3");
    /* --policy alone: --layout's default, bundled */
    o = defaults();
    o.policy = POLICY("lru");
    CHECK(policy_of(&o, &p, err) == 0);
    CHECK_STR(POLICY_NAME(&p.policy), "lru");
    CHECK_STR(LAYOUT_NAME(&p.layout), "bundled");
    /* --layout alone: the mode's policy */
    o = defaults();
    o.layout = LAYOUT("split");
    CHECK(policy_of(&o, &p, err) == 0);
    CHECK_STR(POLICY_NAME(&p.policy), "window:5");
    CHECK_STR(LAYOUT_NAME(&p.layout), "split");
    /* an explicit --mode: --policy and --layout must say the same, by value */
    o = defaults();
    o.mode = "window";
    o.mode_given = true;
    o.policy = POLICY("window:5");
    CHECK(policy_of(&o, &p, err) == 0);
    CHECK_STR(LAYOUT_NAME(&p.layout), "split");
    o.policy = POLICY("lru");
    CHECK(policy_of(&o, &p, err) == -1);
    CHECK_STR(err, "run: --mode window means --policy window:5 --layout split, not lru and split");
    o = defaults();
    o.mode_given = true;
    o.layout = LAYOUT("split");
    CHECK(policy_of(&o, &p, err) == -1);
    CHECK_STR(err, "run: --mode all means --policy window:5 --layout coalesce:0, not window:5 and split");
    o.layout = LAYOUT("coalesce:00"); /* the same value as the mode's coalesce:0 */
    CHECK(policy_of(&o, &p, err) == 0);
    CHECK_STR(LAYOUT_NAME(&p.layout), "coalesce:0");
    /* what the engine cannot run */
    o = defaults();
    o.policy = POLICY("window:5000");
    CHECK(policy_of(&o, &p, err) == -1);
    CHECK_STR(err, "run: policy window:5000: the engine's window is 1 to 4096 tokens");
    o = defaults();
    o.mode = "turbo";
    CHECK(policy_of(&o, &p, err) == -1);
    CHECK_STR(err, "internal: run --mode 'turbo' has no preset");
}

/* run_setup_plan on m into *p (zeroed first, freed by the caller). */
static int plan_of(const struct run_options *o, const struct model *m, struct run_setup *p, char *err)
{
    memset(p, 0, sizeof *p);
    err[0] = '\0';
    return run_setup_plan(o, m, p, err, 1024);
}

/* The oracle and the gate: the engine's source, thresholds and settings. */
static void test_computed_sources(void)
{
    struct model relu = fake_model(false), glu = fake_model(true);
    struct run_setup p;
    char err[1024];
    struct run_options o = defaults();
    o.threshold = 0.25;
    o.io_threads = 4;
    o.iodepth = 8;
    o.io_engine = "io_uring";
    o.direct = false;
    CHECK(plan_of(&o, &relu, &p, err) == 0);
    CHECK(p.cfg.select.ops == &source_oracle && p.have_sel && !p.have_trace);
    CHECK_NEAR(p.cfg.neuron.threshold, 0.25, 0);
    CHECK_STR(POLICY_NAME(&p.cfg.policy), "window:5");
    CHECK_STR(LAYOUT_NAME(&p.cfg.layout), "coalesce:0");
    CHECK(!p.cfg.neuron.stream_dram && !p.cfg.stream.direct && p.cfg.stream.io_threads == 4 && p.cfg.stream.iodepth == 8);
    CHECK_STR(p.cfg.stream.io_engine, "io_uring");
    CHECK_STR(p.active_desc, "oracle: true activations from up-projection rows held in DRAM (a measuring device, "
                             "not a predictor)");
    run_setup_free(&p);
    /* naive streams dram.bin too; hybrid keeps a resident part */
    o = defaults();
    o.mode = "naive";
    CHECK(plan_of(&o, &relu, &p, err) == 0 && p.cfg.neuron.stream_dram);
    run_setup_free(&p);
    o.mode = "hybrid";
    CHECK(plan_of(&o, &relu, &p, err) == 0 && !p.cfg.neuron.stream_dram);
    run_setup_free(&p);
    /* the gate: its threshold is the chooser's, --act-threshold the truth's */
    o = defaults();
    o.active = "gate";
    o.threshold = 0.5;
    o.threshold_given = true;
    o.act_threshold = 0.125;
    CHECK(plan_of(&o, &glu, &p, err) == 0);
    CHECK(p.cfg.select.ops == &source_gate && p.cfg.select.predictor == NULL);
    CHECK_NEAR(p.cfg.select.threshold, 0.5, 0);
    CHECK_NEAR(p.cfg.neuron.threshold, 0.125, 0);
    CHECK_STR(p.active_desc, "gate: |act(gate.x)| > 0.5 (App. C.5); its rows 0.00 MB in DRAM, 0.00 M multiply-adds "
                             "per token");
    run_setup_free(&p);
}

/* What a source cannot do, word for word. */
static void test_source_refusals(void)
{
    struct model relu = fake_model(false), glu = fake_model(true);
    struct run_setup p;
    char err[1024];
    struct run_options o = defaults();
    o.active = "gate";
    CHECK(plan_of(&o, &relu, &p, err) == -1);
    CHECK_STR(err, "run --active gate: the gate chooses neurons of GLU FFNs only: fake's FFN (relu, no GLU) has no "
                   "gate projection");
    run_setup_free(&p);
    o.mode = "naive";
    CHECK(plan_of(&o, &glu, &p, err) == -1);
    CHECK_STR(err, "run --active gate: policy naive reads every neuron it does not hold, so nothing is chosen (use "
                   "--mode predictor, window or all, or --active oracle)");
    run_setup_free(&p);
    o = defaults();
    o.check = true;
    CHECK(plan_of(&o, &relu, &p, err) == -1);
    CHECK_STR(err, "run --check compares a predictor, the gate or a trace with the true activations: the oracle's "
                   "choice is them (use --active predictor, gate or trace:FILE)");
    run_setup_free(&p);
    o = defaults();
    o.active = "bogus";
    CHECK(plan_of(&o, &relu, &p, err) == -1);
    CHECK_STR(err, "run --active: 'bogus' is not oracle, predictor, gate, gate-cal, teal or trace:FILE");
    run_setup_free(&p);
    o.active = "predictor";
    o.threshold = 2;
    o.threshold_given = true;
    CHECK(plan_of(&o, &relu, &p, err) == -1);
    CHECK_STR(err, "run --threshold 2: the predictor's threshold is a probability, 0 to 1");
    run_setup_free(&p);
}

/* Writes a trace of the fake shape (2 layers, d_ff 8): token t needs
 * {t, t + 1} in both layers. 0, or -1. */
static int write_trace(const char *path, uint32_t d_model, int tokens)
{
    char err[512];
    struct trace_meta tm = {.n_layers = 2, .d_model = d_model, .d_ff = 8, .dtype = DTYPE_F32, .ffn_kind = FFN_RELU,
                            .has_predicted = false, .source = "{}", .has_channels = false};
    trace_meta_set_units(&tm);
    struct trace_writer *w = trace_writer_open(NULL, path, &tm, err, sizeof err);
    for (int t = 0; w && t < tokens; t++) {
        uint32_t set[2] = {(uint32_t)t % 7, (uint32_t)t % 7 + 1};
        if (trace_writer_begin_token(w, 0, err, sizeof err) != 0 ||
            trace_writer_layer(w, 0, set, 2, NULL, 0, err, sizeof err) != 0 ||
            trace_writer_layer(w, 1, set, 2, NULL, 0, err, sizeof err) != 0) {
            trace_writer_abort(w);
            return -1;
        }
    }
    return w && trace_writer_close(w, err, sizeof err) == 0 ? 0 : -1;
}

/* --active trace:FILE: the trace, its sets, and what is refused. */
static void test_trace_source(void)
{
    struct model m = fake_model(false);
    char dir[] = "/tmp/flashbed-test-setup-XXXXXX", path[128], wide[128], active[160], want[512], err[1024];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.trace", dir);
    snprintf(wide, sizeof wide, "%s/wide.trace", dir);
    CHECK(write_trace(path, 4, 5) == 0 && write_trace(wide, 8, 5) == 0);
    struct run_setup p;
    struct run_options o = defaults();
    snprintf(active, sizeof active, "trace:%s", path);
    o.active = active;
    CHECK(plan_of(&o, &m, &p, err) == 0);
    CHECK(p.have_trace && !p.have_sel && p.cfg.select.ops == &source_trace && p.cfg.select.trace == &p.trace);
    CHECK(!p.cfg.select.use_predicted); /* auto: the trace has no predicted sets */
    snprintf(want, sizeof want, "trace %s (active sets, 5 tokens, replayed cyclically)", path);
    CHECK_STR(p.active_desc, want);
    /* hot reads the trace: no warm-up */
    CHECK(!run_setup_needs_warmup(&p));
    run_setup_free(&p);
    o.use = "predicted";
    CHECK(plan_of(&o, &m, &p, err) == -1);
    CHECK(strncmp(err, "run --use: ", 11) == 0);
    run_setup_free(&p);
    o.use = "auto";
    snprintf(active, sizeof active, "trace:%s", wide);
    CHECK(plan_of(&o, &m, &p, err) == -1);
    snprintf(want, sizeof want, "run --active: %s: recorded for 2 layers, d_model 8, d_ff 8 (relu), but the model "
             "shape fake has 2, 4, 8 (relu)", wide);
    CHECK_STR(err, want);
    run_setup_free(&p);
    o.active = "trace:/nonexistent.trace";
    CHECK(plan_of(&o, &m, &p, err) == -1);
    CHECK_STR(err, "run --active: cannot read trace /nonexistent.trace: No such file or directory");
    run_setup_free(&p);
    unlink(path);
    unlink(wide);
    rmdir(dir);
}

/* hot without a trace ranks a warm-up's sets; no other policy asks for one. */
static void test_needs_warmup(void)
{
    struct model m = fake_model(false);
    struct run_setup p;
    char err[1024];
    struct run_options o = defaults();
    o.policy = POLICY("hot");
    CHECK(plan_of(&o, &m, &p, err) == 0 && run_setup_needs_warmup(&p));
    run_setup_free(&p);
    o.policy = POLICY("lru");
    CHECK(plan_of(&o, &m, &p, err) == 0 && !run_setup_needs_warmup(&p));
    run_setup_free(&p);
    memset(&p, 0, sizeof p);
    p.dense = true;
    CHECK(!run_setup_needs_warmup(&p));
}

/* The fit: sizes, the plan applied to the engine's configuration,
 * window:auto's K, and a dense run's budget. */
static void test_fit(void)
{
    struct model m = fake_model(false);
    struct run_setup p;
    char err[1024];
    memset(&p, 0, sizeof p);
    run_setup_sizes(&p, &m, 10);
    CHECK_U64(p.model_bytes, 1000 + 1024);
    CHECK_U64(p.kv_bytes, 640); /* K and V, 2 layers, 10 positions, kv_dim 4, f32 */
    /* lru in 1000 + 640 (KV) + 2 staging rows and a bounce row + 2 x 3 rows */
    struct run_options o = defaults();
    o.policy = POLICY("lru");
    CHECK(plan_of(&o, &m, &p, err) == 0);
    run_setup_sizes(&p, &m, 10);
    p.budget = 1000 + 640 + 3 * STRIDE + 2 * 3 * STRIDE;
    CHECK(run_setup_fit(&o, &m, &p, 9, err, sizeof err) == 0);
    CHECK_U64(p.plan.staging_rows, 2);
    CHECK_U64(p.plan.capacity_rows, 3);
    CHECK(p.cfg.capacity_rows == 3 && p.cfg.layer_rows == p.plan.layer_rows && p.cfg.stream.staging_rows == 2 &&
          p.cfg.stream.bounce_rows == 1);
    run_setup_free(&p);
    /* window:auto: the plan's K reaches the engine; the setup keeps what was asked */
    o = defaults();
    o.window = 0;
    CHECK(plan_of(&o, &m, &p, err) == 0);
    run_setup_sizes(&p, &m, 10);
    p.budget = 1000 + 640 + 3 * STRIDE + 2 * 8 * STRIDE; /* the whole FFN: a window of all 9 tokens */
    CHECK(run_setup_fit(&o, &m, &p, 9, err, sizeof err) == 0);
    CHECK(p.policy.arg_auto);
    CHECK_STR(POLICY_NAME(&p.plan.policy), "window:9");
    CHECK(policy_spec_equal(&p.cfg.policy, &p.plan.policy));
    run_setup_free(&p);
    /* without a budget lru is refused */
    o = defaults();
    o.policy = POLICY("lru");
    CHECK(plan_of(&o, &m, &p, err) == 0);
    CHECK(run_setup_fit(&o, &m, &p, 9, err, sizeof err) == -1);
    CHECK_STR(err, "run: policy lru keeps what a budget holds: it needs a DRAM budget");
    run_setup_free(&p);
    /* dense: the whole model and the KV cache */
    memset(&p, 0, sizeof p);
    p.dense = true;
    run_setup_sizes(&p, &m, 10);
    CHECK(run_setup_fit(&o, &m, &p, 9, err, sizeof err) == 0);
    p.budget = 1000 + 1024 + 640;
    CHECK(run_setup_fit(&o, &m, &p, 9, err, sizeof err) == 0);
    p.budget--;
    CHECK(run_setup_fit(&o, &m, &p, 9, err, sizeof err) == -1);
    CHECK_STR(err, "run --mode dense: the model needs 0.00 GB in DRAM, the budget is 0.00 GB");
    run_setup_free(&p);
}

int main(void)
{
    test_policy();
    test_computed_sources();
    test_source_refusals();
    test_trace_source();
    test_needs_warmup();
    test_fit();
    return check_report("test_run_setup");
}
