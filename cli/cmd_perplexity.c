/* flashbed perplexity: how well the model predicts a text, in windows of
 * its context cut by flashbed's rule or llama.cpp's (engine/forward/
 * text_feed.h; the sums in engine/forward/text_score.h). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/backend_opts.h"
#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "cli/select_opts.h"
#include "common/clock.h"
#include "common/interrupt.h"
#include "common/json_file.h"
#include "common/log.h"
#include "common/machine.h"
#include "common/options.h"
#include "common/provenance.h"
#include "engine/ffn/ffn_select.h"
#include "engine/forward/engine.h"
#include "engine/forward/sampler.h"
#include "engine/forward/text_feed.h"
#include "engine/forward/text_score.h"

struct perplexity_opts {
    char *model;
    char *text;
    uint64_t tokens;
    uint64_t context;
    uint64_t threads;
    char *backend;
    char *json;
    char *active, *sparsify;
    double threshold;
    uint64_t skip;
    char *rule;
    uint64_t windows;
    bool drop_cr;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define O(f) offsetof(struct perplexity_opts, f)
static const struct opt_def perplexity_options[] = {
    {"model", OPT_STRING, O(model), NULL, "DIR", "flashbed model folder"},
    {"text", OPT_STRING, O(text), NULL, "FILE", "text to score (UTF-8)"},
    {"tokens", OPT_UINT, O(tokens), "0", "N", "score N tokens of the text (0: all), from --skip on"},
    {"skip", OPT_UINT, O(skip), "0", "N", "score the text from its (N+1)-th token (a calibration text past the "
     "tokens its thresholds were chosen on)", .max = OPT_NO_MAX},
    {"context", OPT_UINT, O(context), "0", "N", "window length in tokens, BOS included (0: the model's)",
     .max = MODEL_MAX_POSITIONS},
    {"rule", OPT_STRING, O(rule), "flashbed", "NAME", "how the text is cut into windows and which tokens are "
     "scored: flashbed (every token once; windows led by BOS when the vocabulary adds BOS) or llama.cpp (its "
     "perplexity tool's: whole windows, each's second half scored)", .allowed = "flashbed|llama.cpp"},
    {"windows", OPT_UINT, O(windows), "0", "N", "score the first N windows only (0: all; llama.cpp's --chunks)",
     .max = OPT_NO_MAX},
    {"drop-cr", OPT_FLAG, O(drop_cr), NULL, NULL, "remove every carriage return from the text before tokenizing "
     "(the shared WikiText-2 copy has CRLF lines; llama.cpp's reference figures were made without them)"},
    {"threads", OPT_UINT, O(threads), "0", "N", "compute threads (0: all CPUs)", .max = FB_MAX_THREADS},
    {"backend", OPT_STRING, O(backend), "cpu", "NAME", BACKEND_OPT_HELP, .allowed = BACKEND_OPT_ALLOWED},
    {"json", OPT_STRING, O(json), NULL, "FILE", "write the result as JSON"},
    {"active", OPT_STRING, O(active), "all", "SOURCE", SELECT_ACTIVE_HELP, .allowed = SELECT_ACTIVE_ALLOWED},
    {"threshold", OPT_DOUBLE, O(threshold), "0", "T", SELECT_THRESHOLD_HELP, .min = 0, .max = OPT_NO_MAX},
    {"sparsify", OPT_STRING, O(sparsify), NULL, "FILE", SELECT_SPARSIFY_HELP},
    OPT_END,
};
#undef O

static const struct opt_command perplexity_command = {
    .name = "perplexity",
    .usage = "--model DIR --text FILE [--skip N] [--tokens N] [--rule flashbed|llama.cpp] [--windows N]",
    .summary = "Perplexity of the model on a text: the text is tokenized once and cut into windows\n"
               "of the context length. --rule flashbed (the default): every token is scored once;\n"
               "each window is led by BOS when the model's vocabulary adds BOS, else it starts on\n"
               "the token before its first scored one. --rule llama.cpp: as llama.cpp's perplexity\n"
               "tool (BOS before the text when the vocabulary adds it, whole windows, each one's\n"
               "first token BOS when the vocabulary adds it, its second half scored): with\n"
               "--context 512 its -c 512, --windows N its --chunks N.\n"
               "Prints the perplexity and the mean negative log-likelihood on stdout. With --active\n"
               "SOURCE (any but all) the FFN is computed only on the neurons that\n"
               "source chooses (all weights in DRAM), so the accuracy a choice costs is measured; the\n"
               "FFN density it came to and the FFN weight bytes a token would read are printed too\n"
               "(and in --json: density, input_density for teal, ffn_bytes_per_token; ms_per_token is the\n"
               "scoring time per token scored, as tokens/s on stderr).",
    .opts = perplexity_options,
    .max_positional = 0,
    OPT_GIVEN_AT(struct perplexity_opts, given),
};

/* What scoring came to. */
struct score {
    struct text_score ts;
    struct text_feed_plan plan;
    enum text_feed_rule rule;
    double secs;
    int context;
    size_t text_tokens; /* the tokens scored from (after --skip and --tokens), BOS not counted */
};

static void show_progress(void *ctx, size_t done, size_t n)
{
    (void)n;
    progress_update(ctx, done, NULL);
}

static enum text_feed_rule rule_of(const struct perplexity_opts *o)
{
    return strcmp(o->rule, "llama.cpp") == 0 ? TEXT_FEED_SECOND_HALF : TEXT_FEED_VOCAB_BOS;
}

/* Scores toks[0..n) in windows of the engine's context by --rule, each
 * window's NLL kept (out->ts.window_nll, the caller frees). -1, naming the
 * token, when its logits are not finite (NaN weights) or its forward pass
 * failed (printed). */
static int score(const struct perplexity_opts *o, struct engine *e, const int *toks, size_t n, struct score *out)
{
    *out = (struct score){.rule = rule_of(o), .context = e->max_seq, .text_tokens = n};
    out->plan = text_feed_plan(out->rule, e->m->tok.add_bos, e->max_seq, n, (size_t)o->windows);
    out->ts.window_nll = calloc(out->plan.windows + 1, sizeof *out->ts.window_nll);
    if (!out->ts.window_nll) {
        fb_error("perplexity: out of memory for %zu windows' sums", out->plan.windows);
        return -1;
    }
    struct progress pr;
    progress_begin(&pr, "perplexity", n);
    uint64_t t0 = now_ns();
    const struct text_score_config c = {out->rule, (size_t)o->windows, show_progress, &pr};
    int rc = text_score_run(e, toks, n, &c, &out->ts);
    progress_end(&pr);
    out->secs = (double)(now_ns() - t0) * 1e-9;
    if (rc == TEXT_FEED_FAILED)
        fb_error("perplexity: text token %zu: %s", out->ts.scored, e->err);
    else if (rc < 0)
        fb_error("perplexity: the logits for text token %zu are not finite (NaN or infinity): the model's "
                 "weights hold such values or its activations overflow", out->ts.bad);
    return rc < 0 ? -1 : 0;
}

/* How the windows were cut, in words, for the result's line. */
static void describe_windows(const struct score *sc, bool add_bos, char *out, size_t len)
{
    switch (sc->rule) {
    case TEXT_FEED_SECOND_HALF:
        snprintf(out, len, "llama.cpp's rule: %zu window%s of %d tokens%s, the last %d of each scored",
                 sc->ts.windows, sc->ts.windows == 1 ? "" : "s", sc->context, add_bos ? " led by BOS" : "",
                 sc->context - 1 - (int)sc->plan.first);
        return;
    case TEXT_FEED_BOS_LED:
    case TEXT_FEED_VOCAB_BOS:
        if (add_bos)
            snprintf(out, len, "windows of %d tokens + BOS", sc->context - 1);
        else
            snprintf(out, len, "windows of %d tokens, no BOS: the vocabulary adds none", sc->context);
        return;
    }
}

/* The FFN's density and bytes per token with --active, on stdout. */
static void print_density(const struct perplexity_opts *o, const struct ffn_select_summary *su)
{
    printf("FFN density %.4f%% (neurons computed per token and layer, chosen by the %s; %.3f ms per token "
           "choosing them)\n", 100 * su->density, o->active, su->select_ms_per_token);
    if (su->input_density >= 0)
        printf("FFN input density %.4f%% (input channels kept per token and layer)\n", 100 * su->input_density);
    printf("FFN weights read %.0f bytes per token (%.2f%% of dense's %.0f)\n", su->bytes_per_token,
           su->dense_bytes_per_token > 0 ? 100 * su->bytes_per_token / su->dense_bytes_per_token : 0,
           su->dense_bytes_per_token);
}

static void density_json(cJSON *j, const struct select_choice *sel, const struct ffn_select_summary *su)
{
    cJSON_AddStringToObject(j, "active_source", sel->desc);
    cJSON_AddNumberToObject(j, "density", su->density);
    if (su->input_density >= 0)
        cJSON_AddNumberToObject(j, "input_density", su->input_density);
    if (sel->have_cal) {
        cJSON_AddNumberToObject(j, "calibrated_sparsity", sel->cal.sparsity);
        cJSON_AddStringToObject(j, "sparsify_file", sel->cal_path);
    }
}

/* How the text was cut and each window's NLL, in --json: "window" the
 * text tokens a window scores at most (flashbed's rule) as before. */
static void windows_json(cJSON *j, const struct model *m, const struct score *sc)
{
    cJSON_AddNumberToObject(j, "window", sc->rule == TEXT_FEED_SECOND_HALF ? sc->context - 1 - (int)sc->plan.first
                                                                              : sc->context - 1);
    cJSON_AddStringToObject(j, "rule", text_feed_rule_name(sc->rule));
    cJSON_AddNumberToObject(j, "context", sc->context);
    cJSON_AddBoolToObject(j, "add_bos", m->tok.add_bos);
    if (sc->rule == TEXT_FEED_SECOND_HALF)
        cJSON_AddNumberToObject(j, "first", (double)sc->plan.first);
    cJSON_AddNumberToObject(j, "windows", (double)sc->ts.windows);
    cJSON_AddNumberToObject(j, "text_tokens", (double)sc->text_tokens);
    cJSON *w = cJSON_AddArrayToObject(j, "window_nll");
    for (size_t i = 0; w && i < sc->ts.windows; i++)
        cJSON_AddItemToArray(w, cJSON_CreateNumber(sc->ts.window_nll[i]));
}

/* The result on stdout (and the FFN density and bytes with --active), and --json. */
static int report(const struct perplexity_opts *o, const struct model *m, struct engine *e, const struct score *sc,
                  const struct select_choice *sel, const struct cli_backend *be)
{
    double mean = sc->ts.nll / (double)sc->ts.scored, ppl = exp(mean);
    struct ffn_select_summary su = {.bytes_per_token = (double)ffn_dense_bytes_per_token(m)};
    char how[160];
    describe_windows(sc, m->tok.add_bos, how, sizeof how);
    printf("perplexity %.4f over %zu tokens (mean NLL %.5f nats, %s)%s\n", ppl, sc->ts.scored, mean, how,
           interrupted() ? " [interrupted]" : "");
    if (sel) {
        ffn_select_summarize(&e->ffn, &su);
        print_density(o, &su);
    }
    fprintf(stderr, "%.1f tokens/s\n", (double)sc->ts.scored / sc->secs);
    if (!o->json)
        return 0;
    cJSON *j = cJSON_CreateObject();
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", opts_to_json(&perplexity_command, o));
    cJSON_AddStringToObject(prov, "model", m->shape.name);
    cli_backend_provenance(prov, be);
    cJSON_AddItemToObject(j, "provenance", prov);
    cJSON_AddNumberToObject(j, "perplexity", ppl);
    cJSON_AddNumberToObject(j, "mean_nll", mean);
    cJSON_AddNumberToObject(j, "tokens_scored", (double)sc->ts.scored);
    cJSON_AddNumberToObject(j, "tokens_skipped", (double)o->skip);
    cJSON_AddNumberToObject(j, "ms_per_token", 1e3 * sc->secs / (double)sc->ts.scored);
    windows_json(j, m, sc);
    cJSON_AddBoolToObject(j, "interrupted", interrupted());
    cJSON_AddStringToObject(j, "active", o->active);
    cJSON_AddNumberToObject(j, "ffn_bytes_per_token", su.bytes_per_token);
    cJSON_AddNumberToObject(j, "dense_ffn_bytes_per_token", (double)ffn_dense_bytes_per_token(m));
    if (sel)
        density_json(j, sel, &su);
    int rc = write_json_file(NULL, o->json, j) ? 1 : 0;
    cJSON_Delete(j);
    return rc;
}

/* Whether the text and the context leave a token to score by --rule;
 * else printed. */
static bool scorable(const struct perplexity_opts *o, const struct model *m, size_t n)
{
    enum text_feed_rule rule = rule_of(o);
    int ctx = engine_context(m, (int)o->context), least = text_feed_min_context(rule);
    if (n == 0 && o->skip)
        fb_error("perplexity --skip %llu: %s has no tokens left after the first %llu", (unsigned long long)o->skip,
                 o->text, (unsigned long long)o->skip);
    else if (n == 0)
        fb_error("%s: no tokens to score", o->text);
    else if (ctx < least) /* nothing to score: windows would not advance */
        fb_error("perplexity --context: a window of %d position%s leaves no token to score by --rule %s (at "
                 "least %d)", ctx, ctx == 1 ? "" : "s", o->rule, least);
    else if (text_feed_plan(rule, m->tok.add_bos, ctx, n, (size_t)o->windows).scored == 0)
        fb_error("perplexity --rule %s: %s has %zu tokens%s, not one whole window of %d", o->rule, o->text, n,
                 m->tok.add_bos ? " and BOS" : "", ctx);
    else
        return true;
    return false;
}

/* The engine with its neuron source over the tokens, then the result. The
 * exit status. */
static int score_text(const struct perplexity_opts *o, const struct fb_settings *set, struct model *m, const int *toks,
                      size_t n)
{
    struct engine e;
    struct select_choice sel;
    struct cli_backend be;
    bool have_sel = false;
    int rc = 1;
    if (scorable(o, m, n) && cli_backend_open("perplexity", o->backend, set, &be) == 0 &&
        select_engine_init("perplexity", o->active, opts_given(&perplexity_command, o, "threshold"), o->threshold,
                           o->sparsify, &e, set, m, be.ops, machine_compute_threads(o->threads), (int)o->context, &sel,
                           &have_sel) == 0) {
        interrupt_install();
        struct score sc;
        if (score(o, &e, toks, n, &sc) == 0) /* the windows scored so far reported, also when stopped */
            rc = report(o, m, &e, &sc, have_sel ? &sel : NULL, &be);
        free(sc.ts.window_nll);
        if (rc == 0 && interrupted())
            rc = FB_EXIT_INTERRUPTED;
        engine_free(&e);
    }
    if (have_sel)
        select_choice_free(&sel);
    return rc;
}

int cmd_perplexity(int argc, char **argv, const struct fb_settings *set)
{
    struct perplexity_opts o;
    int rc;
    if (!cli_start(&perplexity_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    const char *inputs[] = {o.text};
    struct model m;
    char err[1024];
    if (!o.model || !o.text) {
        fb_error("perplexity: needs --model DIR and --text FILE");
        rc = 2;
    } else if (o.json && out_file_ok_beside("perplexity --json", o.json, 0, inputs, 1, o.model) != 0) {
        rc = 1;
    } else if (model_open(&m, o.model, err, sizeof err) != 0) {
        fb_error("%s", err);
        rc = 1;
    } else {
        struct text_tokens t;
        if (text_tokens_load_cr(&m, o.text, o.skip, o.tokens, false, o.drop_cr, &t, err, sizeof err) != 0)
            fb_error("%s", err);
        rc = t.ids ? score_text(&o, set, &m, t.ids, t.n) : 1;
        text_tokens_free(&t);
        model_close(&m);
    }
    opts_free(&perplexity_command, &o);
    return rc;
}
