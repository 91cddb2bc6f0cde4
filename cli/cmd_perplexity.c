/* flashbed perplexity: how well the model predicts a text, in windows of
 * its context, each starting with BOS. */
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
    .usage = "--model DIR --text FILE [--skip N] [--tokens N]",
    .summary = "Perplexity of the model on a text: the text is tokenized once, cut into windows\n"
               "of the context length each led by BOS, and every token after BOS is scored.\n"
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
    double nll, secs;
    size_t scored;
    int window;
};

/* The running sums while the text is fed (engine/forward/text_feed.h). */
struct scoring {
    const int *toks;
    int vocab;
    double nll;
    size_t scored, bad; /* bad: the token whose logits were not finite */
    struct progress pr;
};

static int add_token(void *ctx, size_t i, const float *logits)
{
    struct scoring *s = ctx;
    double term = text_feed_nll(logits, s->vocab, s->toks[i], NULL);
    if (!isfinite(term)) {
        s->bad = i;
        return -1;
    }
    s->nll += term;
    s->scored++;
    return 0;
}

static void show_progress(void *ctx, size_t done, size_t n)
{
    (void)n;
    progress_update(&((struct scoring *)ctx)->pr, done, NULL);
}

/* Scores toks[0..n) in windows of the engine's context, each led by BOS.
 * -1, naming the token, when its logits are not finite (NaN weights) or
 * its forward pass failed (printed). */
static int score(struct engine *e, const int *toks, size_t n, struct score *out)
{
    struct scoring s = {.toks = toks, .vocab = (int)e->m->shape.vocab_size};
    progress_begin(&s.pr, "perplexity", n);
    uint64_t t0 = now_ns();
    const struct text_feed f = {.scored = add_token, .progress = show_progress, .ctx = &s};
    int rc = text_feed_run(e, toks, n, &f);
    progress_end(&s.pr);
    if (rc == TEXT_FEED_FAILED) {
        fb_error("perplexity: text token %zu: %s", s.scored, e->err);
        return -1;
    }
    if (rc < 0) {
        fb_error("perplexity: the logits for text token %zu are not finite (NaN or infinity): the model's "
                 "weights hold such values or its activations overflow", s.bad);
        return -1;
    }
    *out = (struct score){s.nll, (double)(now_ns() - t0) * 1e-9, s.scored, e->max_seq - 1};
    return 0;
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

/* The result on stdout (and the FFN density and bytes with --active), and --json. */
static int report(const struct perplexity_opts *o, const struct model *m, struct engine *e, const struct score *sc,
                  const struct select_choice *sel, const struct cli_backend *be)
{
    double mean = sc->nll / (double)sc->scored, ppl = exp(mean);
    struct ffn_select_summary su = {.bytes_per_token = (double)ffn_dense_bytes_per_token(m)};
    printf("perplexity %.4f over %zu tokens (mean NLL %.5f nats, windows of %d tokens + BOS)%s\n", ppl, sc->scored,
           mean, sc->window, interrupted() ? " [interrupted]" : "");
    if (sel) {
        ffn_select_summarize(&e->ffn, &su);
        print_density(o, &su);
    }
    fprintf(stderr, "%.1f tokens/s\n", sc->scored / sc->secs);
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
    cJSON_AddNumberToObject(j, "tokens_scored", (double)sc->scored);
    cJSON_AddNumberToObject(j, "tokens_skipped", (double)o->skip);
    cJSON_AddNumberToObject(j, "ms_per_token", 1e3 * sc->secs / (double)sc->scored);
    cJSON_AddNumberToObject(j, "window", sc->window);
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
    if (n == 0 && o->skip)
        fb_error("perplexity --skip %llu: %s has no tokens left after the first %llu", (unsigned long long)o->skip,
                 o->text, (unsigned long long)o->skip);
    else if (n == 0)
        fb_error("%s: no tokens to score", o->text);
    else if (engine_context(m, (int)o->context) < 2) /* BOS and nothing to score: windows would not advance */
        fb_error("perplexity --context: a window of %d position leaves no token to score after BOS (at least 2)",
                 engine_context(m, (int)o->context));
    else if (cli_backend_open("perplexity", o->backend, set, &be) == 0 &&
             select_engine_init("perplexity", o->active, opts_given(&perplexity_command, o, "threshold"), o->threshold,
                                o->sparsify, &e, set, m, be.ops, machine_compute_threads(o->threads), (int)o->context, &sel,
                                &have_sel) == 0) {
        interrupt_install();
        struct score sc;
        if (score(&e, toks, n, &sc) == 0) /* the windows scored so far reported, also when stopped */
            rc = report(o, m, &e, &sc, have_sel ? &sel : NULL, &be);
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
        if (text_tokens_load(&m, o.text, o.skip, o.tokens, false, &t, err, sizeof err) != 0)
            fb_error("%s", err);
        rc = t.ids ? score_text(&o, set, &m, t.ids, t.n) : 1;
        text_tokens_free(&t);
        model_close(&m);
    }
    opts_free(&perplexity_command, &o);
    return rc;
}
