/* The neuron sources' table (engine/ffn/neuron_source.h, sources.def):
 *   - every source is found by its name, the gate also by gate-cal (cal
 *     set); anything else (trace:FILE, all) is no source; the names --active
 *     lists are the computed sources' in sources.def's order
 *   - each source's properties, the ones callers ask instead of its name:
 *     the oracle is the truth, the trace replays, the predictor and the gate
 *     are deployable (with what run.md calls their DRAM), teal reads
 *     channels, the predictor chooses on a device; every computed source
 *     has its layer and describe hooks, the trace neither
 *   - a zeroed value is the oracle; a value's label is gate-cal exactly
 *     when the gate has per-layer thresholds
 *   - the checks' refusals (a trace, the gate without a GLU, teal without
 *     thresholds, no predictor) and what each source holds and costs on a
 *     model's shape (the oracle's up and gate rows, the gate's, nothing for
 *     teal and the trace)
 *   - select_choice_known takes the computed names only, and they are
 *     exactly SELECT_ACTIVE_ALLOWED's besides all (perplexity's and
 *     generate's --active list: a new source is added there too); select_choice_open
 *     refuses what the common rules refuse (an unknown name, --threshold
 *     with per-layer thresholds, --sparsify where no file is read) and
 *     what the source's own choose hook and check refuse, by whole lines,
 *     and describes what it takes. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/select_choice.h"
#include "traces/trace.h"

static const struct neuron_source_ops *const all[] = {
#define SOURCE(x, names, run_help) &source_##x,
#include "engine/ffn/sources.def"
#undef SOURCE
};
#define N_ALL (sizeof all / sizeof all[0])

static void test_find(void)
{
    bool cal = true;
    for (size_t i = 0; i < N_ALL; i++) {
        CHECK(neuron_source_find(all[i]->name, &cal) == all[i]);
        CHECK(!cal);
    }
    CHECK(neuron_source_find("gate-cal", &cal) == &source_gate && cal);
    CHECK(neuron_source_find("trace:/tmp/x.trace", NULL) == NULL);
    CHECK(neuron_source_find("all", NULL) == NULL);
    CHECK(neuron_source_find("", NULL) == NULL);
    char names[128];
    neuron_source_names(names, sizeof names);
    CHECK_STR(names, "oracle, predictor, gate, gate-cal or teal");
    neuron_source_names(names, 12); /* cut, terminated */
    CHECK_STR(names, "oracle, pre");
}

static void test_properties(void)
{
    CHECK_U64(N_ALL, 5);
    for (size_t i = 0; i < N_ALL; i++) {
        const struct neuron_source_ops *o = all[i];
        CHECK(o->truth == (o == &source_oracle));
        CHECK(o->replays == (o == &source_trace));
        CHECK(o->deployable == (o == &source_predictor || o == &source_gate));
        CHECK(o->reads_channels == (o == &source_teal));
        CHECK(o->chooses_on_device == (o == &source_predictor));
        CHECK((o->layer != NULL) == !o->replays);
        CHECK((o->replay != NULL) == o->replays);
        CHECK((o->describe != NULL) == !o->replays);
        CHECK((o->held_as != NULL) == o->deployable);
        CHECK((o->cal_name != NULL) == (o == &source_gate));
        CHECK((o->report != NULL) == o->deployable);
    }
    CHECK_STR(source_gate.held_as, "gate rows");
    CHECK_STR(source_predictor.held_as, "predictor");
    CHECK(source_gate.file == SOURCE_FILE_GLOBAL && source_teal.file == SOURCE_FILE_PER_LAYER);
    CHECK(source_oracle.file == SOURCE_FILE_NONE && source_predictor.file == SOURCE_FILE_NONE);
}

/* The trace source's replay hook: token t's recorded set of a layer, the
 * active or the predicted one as the value says, from the first token
 * again past the last (a run longer than its trace). 2 tokens x 2 layers
 * of 8 neurons, built in memory. */
static void test_trace_replay(void)
{
    char err[256];
    struct trace_meta m = {.n_layers = 2, .d_model = 4, .d_ff = 8, .dtype = DTYPE_F32, .ffn_kind = FFN_RELU,
                           .has_predicted = true, .source = "{\"model\":\"tiny\"}"};
    trace_meta_set_units(&m);
    struct trace_builder *b = trace_builder_new(&m, err, sizeof err);
    CHECK(b != NULL);
    if (!b)
        return;
    static const uint32_t act[2][2][2] = {{{0, 3}, {1, 2}}, {{4, 5}, {6, 7}}}, pred[2][2][1] = {{{3}, {2}}, {{5}, {7}}};
    struct trace_sink sink = trace_builder_sink(b);
    for (uint32_t t = 0; t < 2; t++) {
        CHECK(sink.begin_token(sink.impl, t == 0 ? TRACE_TOKEN_SEQ_START : 0, err, sizeof err) == 0);
        for (uint32_t l = 0; l < 2; l++)
            CHECK(sink.layer(sink.impl, l, act[t][l], 2, pred[t][l], 1, err, sizeof err) == 0);
    }
    struct trace tr;
    CHECK(trace_builder_finish(b, &tr, err, sizeof err) == 0);
    struct select_config c = {.ops = &source_trace, .trace = &tr};
    uint32_t out[8];
    for (uint64_t t = 0; t < 5; t++)
        for (int l = 0; l < 2; l++) {
            c.use_predicted = false;
            CHECK_U64(source_trace.replay(&c, t, l, out), 2);
            CHECK(out[0] == act[t % 2][l][0] && out[1] == act[t % 2][l][1]);
            c.use_predicted = true;
            CHECK_U64(source_trace.replay(&c, t, l, out), 1);
            CHECK(out[0] == pred[t % 2][l][0]);
        }
    trace_free(&tr);
}

static void test_value(void)
{
    struct select_config zero = {0};
    CHECK(select_source(&zero) == &source_oracle);
    CHECK_STR(select_label(&zero), "oracle");
    float per_layer[2] = {0.1f, 0.2f};
    struct select_config gate = {.ops = &source_gate, .threshold = 0.5f};
    CHECK_STR(select_label(&gate), "gate");
    gate.layer_thresholds = per_layer;
    CHECK_STR(select_label(&gate), "gate-cal");
    struct select_config teal = {.ops = &source_teal, .layer_thresholds = per_layer};
    CHECK_STR(select_label(&teal), "teal");
}

/* A model's shape as the checks and the costs read it: 2 layers of 4 x 8, f32. */
static struct model shaped(bool glu)
{
    struct model m;
    memset(&m, 0, sizeof m);
    snprintf(m.shape.name, sizeof m.shape.name, "%s", "tiny");
    snprintf(m.shape.ffn_activation, sizeof m.shape.ffn_activation, "%s", glu ? "silu" : "relu");
    m.shape.n_layers = 2;
    m.shape.d_model = 4;
    m.shape.d_ff = 8;
    m.arch.glu = glu;
    m.dtype = DTYPE_F32;
    return m;
}

static void test_checks(void)
{
    struct model glu = shaped(true), relu = shaped(false);
    char err[256];
    struct select_config trace = {.ops = &source_trace};
    CHECK(neuron_select_check(&glu, &trace, err, sizeof err) == -1);
    CHECK_STR(err, "a trace's sets are replayed, not computed: neurons are selected by the oracle, a predictor or "
                   "the gate");
    struct select_config gate = {.ops = &source_gate};
    CHECK(neuron_select_check(&glu, &gate, err, sizeof err) == 0);
    CHECK(neuron_select_check(&relu, &gate, err, sizeof err) == -1);
    CHECK_STR(err, "the gate chooses neurons of GLU FFNs only: tiny's FFN (relu, no GLU) has no gate projection");
    float cut[2] = {0};
    struct select_config teal = {.ops = &source_teal, .input_thresholds = cut};
    CHECK(neuron_select_check(&glu, &teal, err, sizeof err) == -1);
    CHECK_STR(err, "input sparsity needs its calibrated thresholds (flashbed sparsify calibrate)");
    teal.inter_thresholds = cut;
    CHECK(neuron_select_check(&relu, &teal, err, sizeof err) == 0);
    struct select_config pred = {.ops = &source_predictor};
    CHECK(neuron_select_check(&glu, &pred, err, sizeof err) == -1);
    CHECK_STR(err, "no predictor given");
    struct select_config zero = {0};
    CHECK(neuron_select_check(&relu, &zero, err, sizeof err) == 0);
}

static void test_costs(void)
{
    struct model glu = shaped(true), relu = shaped(false);
    uint64_t matrix = 2 * 8 * 4 * 4, madds = 2 * 8 * 4;
    CHECK_U64(neuron_select_matrix_bytes(&glu), matrix);
    struct select_config oracle = {.ops = &source_oracle}, gate = {.ops = &source_gate},
                         teal = {.ops = &source_teal}, trace = {.ops = &source_trace},
                         pred = {.ops = &source_predictor};
    CHECK_U64(neuron_select_bytes(&glu, &oracle), 2 * matrix);
    CHECK_U64(neuron_select_bytes(&relu, &oracle), matrix);
    CHECK_U64(neuron_select_madds(&glu, &oracle), 2 * madds);
    CHECK_U64(neuron_select_madds(&relu, &oracle), madds);
    CHECK_U64(neuron_select_bytes(&glu, &gate), matrix);
    CHECK_U64(neuron_select_madds(&glu, &gate), madds);
    CHECK_U64(neuron_select_bytes(&glu, &teal) + neuron_select_madds(&glu, &teal), 0);
    CHECK_U64(neuron_select_bytes(&glu, &trace) + neuron_select_madds(&glu, &trace), 0);
    CHECK_U64(neuron_select_bytes(&glu, &pred) + neuron_select_madds(&glu, &pred), 0); /* none given */
}

static void test_known(void)
{
    const char *yes[] = {"oracle", "predictor", "gate", "gate-cal", "teal"};
    const char *no[] = {"trace", "trace:/tmp/x.trace", "all", "dense", "Oracle", ""};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        CHECK(select_choice_known(yes[i]));
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        CHECK(!select_choice_known(no[i]));
    /* every name listed is known, once, and as many as the computed names: the same set */
    char allowed[128], bars[130];
    snprintf(allowed, sizeof allowed, "%s", SELECT_ACTIVE_ALLOWED);
    snprintf(bars, sizeof bars, "|%s|", SELECT_ACTIVE_ALLOWED);
    size_t listed = 0, names = 0;
    for (char *name = strtok(allowed, "|"); name; name = strtok(NULL, "|"))
        if (strcmp(name, "all") != 0) {
            char bar[32];
            snprintf(bar, sizeof bar, "|%s|", name);
            CHECK(select_choice_known(name));
            const char *first = strstr(bars, bar);
            CHECK(first && !strstr(first + 1, bar));
            listed++;
        }
    for (size_t i = 0; i < N_ALL; i++)
        names += all[i]->layer ? 1 + (all[i]->cal_name != NULL) : 0;
    CHECK_U64(listed, names);
}

/* sources.def's columns: each source's names are its own name and
 * cal_name when it is chosen by name (it computes its sets), none
 * otherwise; --active lists them in the table's order after all; run's
 * help reads every source's words, the trace's last. */
static void test_def_columns(void)
{
    static const char *const names_of[] = {
#define SOURCE(x, names, run_help) names,
#include "engine/ffn/sources.def"
#undef SOURCE
    };
    for (size_t i = 0; i < N_ALL; i++) {
        char want[64] = "";
        if (all[i]->layer)
            snprintf(want, sizeof want, "|%s%s%s", all[i]->name, all[i]->cal_name ? "|" : "",
                     all[i]->cal_name ? all[i]->cal_name : "");
        CHECK_STR(names_of[i], want);
        CHECK(strstr(select_run_active_help, all[i]->layer ? all[i]->name : "trace:FILE"));
    }
    CHECK_STR(SELECT_ACTIVE_ALLOWED, "all|oracle|predictor|gate|gate-cal|teal");
    CHECK(!strncmp(select_run_active_help, "which neurons: oracle (true activations), predictor (", 52));
    const char *end = ", or trace:FILE";
    CHECK(!strcmp(select_run_active_help + strlen(select_run_active_help) - strlen(end), end));
}

/* select_choice_open's refusal of name on m, or "" when it takes it. */
static const char *refusal(const char *name, bool given, double threshold, const char *sparsify, const struct model *m,
                           char *err, size_t errlen)
{
    struct select_choice c;
    err[0] = '\0';
    if (select_choice_open("perplexity", name, given, threshold, sparsify, m, &c, err, errlen) == 0) {
        select_choice_free(&c);
        return "";
    }
    return err;
}

static void test_choice(void)
{
    struct model glu = shaped(true), relu = shaped(false);
    char err[1024];
    CHECK_STR(refusal("bogus", false, 0, NULL, &glu, err, sizeof err),
              "perplexity --active: 'bogus' is not oracle, predictor, gate, gate-cal or teal");
    CHECK_STR(refusal("trace", false, 0, NULL, &glu, err, sizeof err),
              "perplexity --active: 'trace' is not oracle, predictor, gate, gate-cal or teal");
    CHECK_STR(refusal("gate-cal", true, 0.5, NULL, &glu, err, sizeof err),
              "perplexity --threshold: --active gate-cal takes its per-layer thresholds from the model's "
              "sparsify.json; leave out --threshold (or use --active gate for one global threshold)");
    CHECK_STR(refusal("teal", true, 0.5, "f.json", &glu, err, sizeof err),
              "perplexity --threshold: --active teal takes its per-layer thresholds from f.json; leave out "
              "--threshold (or use --active gate for one global threshold)");
    CHECK_STR(refusal("oracle", false, 0, "f.json", &glu, err, sizeof err),
              "perplexity --sparsify f.json: --active oracle reads no thresholds file (gate, gate-cal and teal do)");
    CHECK_STR(refusal("predictor", true, 2, NULL, &glu, err, sizeof err),
              "perplexity --threshold 2: the predictor's threshold is a probability, 0 to 1");
    CHECK_STR(refusal("gate-cal", false, 0, NULL, &relu, err, sizeof err),
              "perplexity --active gate-cal: tiny's FFN (relu, no GLU) has no gate projection");
    CHECK_STR(refusal("gate", true, 0.5, NULL, &relu, err, sizeof err),
              "perplexity --active gate: the gate chooses neurons of GLU FFNs only: tiny's FFN (relu, no GLU) has no "
              "gate projection");
    struct select_choice c;
    CHECK(select_choice_open("perplexity", "gate", true, 0.5, NULL, &glu, &c, err, sizeof err) == 0);
    CHECK(c.cfg.ops == &source_gate && c.cfg.threshold == 0.5f && !c.cfg.layer_thresholds && !c.have_cal);
    CHECK_STR(c.desc, "gate: |act(gate.x)| > 0.5 (App. C.5); its rows 0.00 MB in DRAM, 0.00 M multiply-adds per "
                      "token");
    select_choice_free(&c);
    CHECK(select_choice_open("perplexity", "oracle", true, 0.25, NULL, &relu, &c, err, sizeof err) == 0);
    CHECK(c.cfg.ops == &source_oracle && c.cfg.threshold == 0.25f);
    CHECK_STR(c.desc, "oracle: true activations from up-projection rows held in DRAM (a measuring device, not a "
                      "predictor)");
    select_choice_free(&c);
}

int main(void)
{
    test_find();
    test_properties();
    test_value();
    test_checks();
    test_costs();
    test_known();
    test_def_columns();
    test_trace_replay();
    test_choice();
    return check_report("test_neuron_source");
}
