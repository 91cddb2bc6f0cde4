/* flashbed generate: text in, text out; statistics on stderr, per-token
 * timings in --json. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/backend_opts.h"
#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/decode_opts.h"
#include "cli/select_opts.h"
#include "cli/text_out.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/interrupt.h"
#include "common/json_file.h"
#include "common/log.h"
#include "common/options.h"
#include "common/provenance.h"
#include "engine/ffn/ffn_select.h"
#include "engine/forward/bw_ceiling.h"
#include "engine/forward/decode.h"
#include "engine/forward/engine.h"

struct generate_opts {
    char *model;
    struct decode_opts d; /* the prompt, -n, sampling, threads and backend (shared with run) */
    char *json;
    bool bandwidth;
    char *active, *sparsify;
    double threshold;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define O(f) offsetof(struct generate_opts, f)
static const struct opt_def generate_options[] = {
    {"model", OPT_STRING, O(model), NULL, "DIR", "flashbed model folder (flashbed convert)"},
    {"active", OPT_STRING, O(active), "all", "SOURCE", SELECT_ACTIVE_HELP, .allowed = SELECT_ACTIVE_ALLOWED},
    {"threshold", OPT_DOUBLE, O(threshold), "0", "T", SELECT_THRESHOLD_HELP, .min = 0, .max = OPT_NO_MAX},
    {"sparsify", OPT_STRING, O(sparsify), NULL, "FILE", SELECT_SPARSIFY_HELP},
    OPT_END,
};
static const struct opt_def generate_output_options[] = {
    {"json", OPT_STRING, O(json), NULL, "FILE", "write per-token timings and ids as JSON"},
    {"bandwidth", OPT_FLAG, O(bandwidth), NULL, NULL,
     "after each decode step, time a read loop over the model's weights on the same threads\n"
     "and report the weight bandwidth as a share of that DRAM read bandwidth"},
    OPT_END,
};
static const struct opt_table generate_tables[] = {
    {decode_prompt_options, O(d)},
    {decode_sampling_options, O(d)},
    {decode_compute_options, O(d)},
    {generate_output_options, 0},
    OPT_TABLES_END,
};
#undef O

/* A text generator's defaults: a long sample (run's are a greedy measurement). */
static const struct opt_default generate_defaults[] = {{"n", "256"}, {"temperature", "1.0"}, OPT_DEFAULTS_END};

static const struct opt_command generate_command = {
    .name = "generate",
    .usage = "--model DIR (--prompt TEXT | --prompt-file FILE | --prompt-ids FILE) [-n 256] [options]",
    .summary = "Generates text with all weights in DRAM (the dense reference). stdout carries only\n"
               "the prompt followed by the continuation; statistics go to stderr. Stops at the\n"
               "model's end-of-sequence token or after -n tokens. With --active\n"
               "SOURCE (any but all) the FFN is computed only on the neurons that source\n"
               "chooses (the density and the FFN weight bytes per token are reported).",
    .opts = generate_options,
    .max_positional = 0,
    .tables = generate_tables,
    .defaults = generate_defaults,
    OPT_GIVEN_AT(struct generate_opts, given),
};

struct gen_result {
    int n_prompt, n_gen;
    double prompt_s, gen_s; /* gen_s: generated tokens after the first */
    double best_s;          /* fastest single decode step: the least disturbed on a shared machine */
    const char *stop;
};

/* One generation: the decode loop's callback writes the text and times
 * every step; the totals go to stderr and --json. */
struct gen_state {
    const struct generate_opts *o;
    const struct model *m;
    struct engine *e;
    cJSON *toks; /* --json: one record per generated token */
    struct bw_ceiling ceil;
    double bytes_per_token;
    struct gen_result r;
    double density;  /* --active: FFN neurons computed / all; -1 dense */
    struct ffn_select_summary su; /* --active: density, input density, bytes per token */
    uint64_t t0;     /* the prompt's first forward pass began */
    uint64_t t_step; /* the last counted step ended: a step is the forward pass, sampling and output */
};

/* A generated token's step: on stdout, in the record, in the totals; the
 * first is not counted in gen_s (it follows the prompt, not a step), and a
 * --bandwidth pass after a step is not the next step's. */
static void gen_step(struct gen_state *g, const struct decode_step *s)
{
    cJSON *rec = NULL;
    if (g->toks) {
        rec = cJSON_CreateObject();
        cJSON_AddNumberToObject(rec, "id", s->sampled);
    }
    emit_token(&g->m->tok, s->token, s->sampled, rec);
    fflush(stdout);
    uint64_t t_done = now_ns();
    if (rec) {
        cJSON_AddNumberToObject(rec, "ms", (double)(t_done - g->t_step) * 1e-6);
        cJSON_AddItemToArray(g->toks, rec);
    }
    if (s->generated) {
        double step = (double)(t_done - g->t_step) * 1e-9;
        g->r.gen_s += step;
        if (g->r.best_s == 0 || step < g->r.best_s)
            g->r.best_s = step;
        if (g->o->bandwidth) {
            bw_ceiling_pass(&g->ceil, g->e, step, g->bytes_per_token);
            t_done = now_ns();
        }
    }
    g->t_step = t_done;
}

static int gen_token(void *ctx, const struct decode_step *s)
{
    struct gen_state *g = ctx;
    if (s->pos == 0)
        g->t0 = s->start_ns;
    if (!s->generated) { /* the prompt's time ends with its last position */
        g->r.prompt_s = (double)(s->end_ns - g->t0) * 1e-9;
        g->t_step = s->end_ns;
    }
    if (s->sampled >= 0)
        gen_step(g, s);
    return 0;
}

static void print_bandwidth(struct gen_state *g, double weight_bw, double dram_bw, double median_paired)
{
    double best_bw = g->r.best_s > 0 ? g->bytes_per_token / g->r.best_s : 0;
    fprintf(stderr,
            "weight bandwidth: %.2f GB/s (%.1f MB per token) = %.1f%% of the DRAM read bandwidth %.2f GB/s\n"
            "  (a read loop on the same %d threads over the model's %.1f MB of resident weights after each of\n"
            "  %d decode steps, best pass %.2f GB/s); median of the per-step ratios %.1f%%;\n"
            "  fastest token %.2f tokens/s = %.1f%%\n",
            weight_bw * 1e-9, g->bytes_per_token * 1e-6, 100 * weight_bw / dram_bw, dram_bw * 1e-9,
            g->e->be_threads, g->ceil.resident_bytes * 1e-6, g->ceil.passes, g->ceil.best_bw * 1e-9,
            100 * median_paired, g->r.best_s > 0 ? 1 / g->r.best_s : 0, 100 * best_bw / dram_bw);
}

/* With --active: the FFN's density and the FFN weight bytes a token reads (ffn_select.h), on stderr. */
static void print_density(struct gen_state *g)
{
    ffn_select_summarize(&g->e->ffn, &g->su);
    g->density = g->su.density;
    fprintf(stderr, "FFN density: %.4f%% of the neurons computed per token and layer (chosen by the %s)\n",
            100 * g->density, g->o->active);
    if (g->su.input_density >= 0)
        fprintf(stderr, "FFN input density: %.4f%% of the input channels kept per token and layer\n",
                100 * g->su.input_density);
    fprintf(stderr, "FFN weights read: %.0f bytes per token (%.2f%% of dense's %.0f)\n", g->su.bytes_per_token,
            g->su.dense_bytes_per_token > 0 ? 100 * g->su.bytes_per_token / g->su.dense_bytes_per_token : 0,
            g->su.dense_bytes_per_token);
}

static void density_json(const struct gen_state *g, cJSON *s)
{
    cJSON_AddNumberToObject(s, "density", g->density);
    if (g->su.input_density >= 0)
        cJSON_AddNumberToObject(s, "input_density", g->su.input_density);
    cJSON_AddNumberToObject(s, "ffn_bytes_per_token", g->su.bytes_per_token);
    cJSON_AddNumberToObject(s, "dense_ffn_bytes_per_token", g->su.dense_bytes_per_token);
}

/* The statistics on stderr and in --json's summary. */
static void report(struct gen_state *g, cJSON *json)
{
    const struct gen_result *r = &g->r;
    double pp = r->prompt_s > 0 ? r->n_prompt / r->prompt_s : 0;
    double tg = r->gen_s > 0 ? (r->n_gen - 1) / r->gen_s : 0;
    fprintf(stderr,
            "prompt tokens: %d (with BOS), generated tokens: %d (stopped: %s)\n"
            "prompt processing: %.2f tokens/s, generation: %.2f tokens/s\n",
            r->n_prompt, r->n_gen, r->stop, pp, tg);
    if (g->density >= 0)
        print_density(g);
    double weight_bw = tg * g->bytes_per_token, dram_bw = 0, median_paired = 0;
    if (g->o->bandwidth && g->ceil.passes > 0) {
        dram_bw = bw_ceiling_bandwidth(&g->ceil);
        median_paired = bw_ceiling_median_paired(&g->ceil);
        print_bandwidth(g, weight_bw, dram_bw, median_paired);
    } else if (g->o->bandwidth) {
        fb_warn("generate: --bandwidth needs at least two generated tokens; no ratio to report");
    }
    if (!json)
        return;
    cJSON *s = cJSON_AddObjectToObject(json, "summary");
    cJSON_AddNumberToObject(s, "weight_bandwidth_bytes_per_second", weight_bw);
    cJSON_AddNumberToObject(s, "fastest_token_per_second", r->best_s > 0 ? 1 / r->best_s : 0);
    if (g->o->bandwidth && dram_bw > 0) {
        cJSON_AddNumberToObject(s, "dram_read_bandwidth_bytes_per_second", dram_bw);
        cJSON_AddNumberToObject(s, "dram_read_bandwidth_best_pass_bytes_per_second", g->ceil.best_bw);
        cJSON_AddNumberToObject(s, "dram_read_passes", g->ceil.passes);
        cJSON_AddNumberToObject(s, "bandwidth_fraction", weight_bw / dram_bw);
        cJSON_AddNumberToObject(s, "bandwidth_fraction_median_per_step", median_paired);
    }
    cJSON_AddNumberToObject(s, "prompt_tokens", r->n_prompt);
    cJSON_AddNumberToObject(s, "generated_tokens", r->n_gen);
    cJSON_AddStringToObject(s, "stop_reason", r->stop);
    cJSON_AddNumberToObject(s, "prompt_tokens_per_second", pp);
    cJSON_AddNumberToObject(s, "generation_tokens_per_second", tg);
    cJSON_AddNumberToObject(s, "weight_bytes_per_token", g->bytes_per_token);
    if (g->density >= 0)
        density_json(g, s);
}

/* -n within the context after the prompt; -1 when the prompt alone passes it. */
static int tokens_to_generate(const struct generate_opts *o, const struct engine *e, int n_prompt)
{
    int budget = e->max_seq - n_prompt, n = (int)o->d.n;
    if (budget < 0) {
        char fit[512];
        decode_opts_fit_text(&o->d, n_prompt, e->max_seq, fit, sizeof fit);
        fb_error("generate: the prompt's %d positions pass the model's context of %d: %s", n_prompt, e->max_seq,
                 fit);
        return -1;
    }
    if (n > budget) {
        fb_warn("generate: -n %d passes the context of %d positions; generating %d", n, e->max_seq, budget);
        n = budget;
    }
    return n;
}

static int generate(struct gen_state *g, const int *prompt, int n_prompt, cJSON *json)
{
    int n = tokens_to_generate(g->o, g->e, n_prompt);
    if (n < 0)
        return -1;
    char err[256];
    if (g->o->bandwidth && bw_ceiling_open(&g->ceil, g->m, n + 1, err, sizeof err) != 0) {
        fb_error("generate --bandwidth: %s", err);
        return -1;
    }
    g->bytes_per_token = (double)model_bytes_per_token(g->m);
    cJSON *ids = json ? cJSON_AddArrayToObject(json, "prompt_token_ids") : NULL;
    g->toks = json ? cJSON_AddArrayToObject(json, "tokens") : NULL;
    for (int i = 0; ids && i < n_prompt; i++)
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(prompt[i]));
    emit_prompt(&g->m->tok, prompt, n_prompt);
    struct decode_config c = decode_opts_config(&g->o->d, prompt, n_prompt, n);
    struct decode_hooks h = {.token = gen_token, .ctx = g};
    struct decode_result res;
    if (decode_run(g->e, &c, &h, &res, err, sizeof err) != 0) {
        fb_error("generate: %s", err);
        return -1;
    }
    fputc('\n', stdout);
    fflush(stdout);
    g->r.n_prompt = n_prompt;
    g->r.n_gen = res.n_generated;
    g->r.stop = decode_stop_name(res.stop);
    report(g, json);
    return 0;
}

static int run(const struct generate_opts *o, struct model *m, struct engine *e, const char *text, cJSON *json)
{
    int n_prompt;
    int *prompt = decode_opts_prompt("generate", &o->d, m, text, &n_prompt);
    if (!prompt)
        return -1;
    struct gen_state g = {.o = o, .m = m, .e = e, .density = strcmp(o->active, "all") ? 0 : -1};
    int rc = generate(&g, prompt, n_prompt, json);
    bw_ceiling_close(&g.ceil);
    free(prompt);
    return rc;
}

/* --json's provenance, filled before generating. */
static cJSON *json_start(const struct generate_opts *o, const struct model *m, int threads,
                         const struct cli_backend *backend)
{
    cJSON *json = cJSON_CreateObject();
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", opts_to_json(&generate_command, o));
    cJSON_AddStringToObject(prov, "model", m->shape.name);
    cJSON_AddStringToObject(prov, "dtype", wtype_name(m->dtype));
    cJSON_AddNumberToObject(prov, "threads", threads);
    cli_backend_provenance(prov, backend);
    cJSON_AddItemToObject(json, "provenance", prov);
    return json;
}

/* The model open: the engine with its neuron source, the tokens, --json.
 * The exit status. */
static int generate_with(const struct generate_opts *o, const struct fb_settings *set, struct model *m,
                         const char *text)
{
    struct cli_backend be;
    if (cli_backend_open("generate", o->d.backend, set, &be) != 0)
        return 1;
    int threads = decode_opts_threads(&o->d);
    cJSON *json = o->json ? json_start(o, m, threads, &be) : NULL;
    struct engine e;
    struct select_choice sel;
    bool have_sel = false, up = false;
    int rc = 1;
    if (strcmp(o->active, "all") && o->bandwidth)
        fb_error("generate --bandwidth compares the dense FFN's weight reads with DRAM's: leave out --active");
    else if (o->bandwidth && !be.dev.host_visible) /* the weights are then in the device's memory */
        fb_error("generate --bandwidth compares the weight reads with the host's DRAM: it needs --backend cpu");
    else
        up = select_engine_init("generate", o->active, opts_given(&generate_command, o, "threshold"), o->threshold,
                                o->sparsify, &e, set, m, be.ops, threads, 0, &sel, &have_sel) == 0;
    if (up && json && have_sel && sel.have_cal) { /* which thresholds file, for what target */
        cJSON_AddStringToObject(json, "sparsify_file", sel.cal_path);
        cJSON_AddNumberToObject(json, "calibrated_sparsity", sel.cal.sparsity);
    }
    if (up) {
        interrupt_install();
        if (run(o, m, &e, text, json) == 0) /* the tokens so far printed and kept, also when stopped */
            rc = json && write_json_file(NULL, o->json, json) != 0 ? FB_EXIT_FAILURE
                 : interrupted()                            ? FB_EXIT_INTERRUPTED
                                                            : FB_EXIT_OK;
        engine_free(&e);
    }
    if (have_sel)
        select_choice_free(&sel);
    cJSON_Delete(json);
    return rc;
}

int cmd_generate(int argc, char **argv, const struct fb_settings *set)
{
    struct generate_opts o;
    int rc;
    if (!cli_start(&generate_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    char *owned = NULL;
    const char *text = NULL;
    if (!o.model) {
        fb_error("generate: needs --model DIR");
        rc = 2;
    } else {
        text = decode_opts_text("generate", &o.d, &owned, &rc);
    }
    const char *inputs[] = {o.d.prompt_file, o.d.prompt_ids};
    if (text && o.json && out_file_ok_beside("generate --json", o.json, 0, inputs, 2, o.model) != 0) {
        text = NULL;
        rc = 1;
    }
    struct model m;
    char err[1024];
    if (text && model_open(&m, o.model, err, sizeof err) != 0) {
        fb_error("%s", err);
        text = NULL;
        rc = 1;
    }
    if (text) {
        rc = generate_with(&o, set, &m, text);
        model_close(&m);
    }
    free(owned);
    opts_free(&generate_command, &o);
    return rc;
}
