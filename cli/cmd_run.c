/* flashbed run: the engine with its FFN on flash (engine/ffn_flash.h), or
 * dense as the reference, measured per token as I/O, memory management and
 * compute. Same prompt, sampling and output contract as generate; result
 * files run.json (the format predict --compare reads) and run.md. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/decode_opts.h"
#include "cli/text_out.h"
#include "common/atomic_file.h"
#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/options.h"
#include "common/parse.h"
#include "common/progress.h"
#include "common/provenance.h"
#include "common/strbuf.h"
#include "cache/cache.h"
#include "engine/decode.h"
#include "engine/engine.h"
#include "engine/ffn_flash.h"
#include "engine/model_format.h"
#include "engine/run_plan.h"
#include "engine/warmup.h"
#include "traces/trace.h"

struct run_opts {
    char *model, *mode, *policy, *layout, *active, *use, *dram_budget, *io_engine, *record, *out, *warmup_file;
    struct decode_opts d; /* the prompt, -n, --ignore-eos, sampling, threads and backend (shared with generate) */
    uint64_t window, coalesce, io_threads, iodepth, cold; /* window 0: auto */
    double threshold;
    bool buffered, quiet;
};

#define O(f) offsetof(struct run_opts, f)
static const struct opt_def run_options[] = {
    {"model", OPT_STRING, O(model), NULL, "DIR", "flashbed model folder (flashbed convert / model make)"},
    {"mode", OPT_STRING, O(mode), "all", "MODE", "dense, naive, hybrid, predictor, window, all: shorthand for a policy and a layout (see --help text)",
     .allowed = "dense|naive|hybrid|predictor|window|all"},
    {"policy", OPT_STRING, O(policy), NULL, "P", "which rows stay in DRAM, as replay names it: naive, hybrid, predictor, window:K, lru, lfu, hot, belady; also window:auto"},
    {"layout", OPT_STRING, O(layout), NULL, "L", "how rows become reads, as replay names it: split, bundled, coalesce:G [default: bundled]"},
    {"window", OPT_UINT, O(window), "5", "K|auto", "window and all: keep the neurons of the last K tokens, this one included (the paper's k = 4 is 5); auto: the largest K the budget holds",
     .min = 1, .max = RUN_MAX_WINDOW, .allowed = "auto"},
    {"coalesce", OPT_UINT, O(coalesce), "0", "G", "all: one read across gaps of up to G unneeded neurons"},
    {"active", OPT_STRING, O(active), "oracle", "SOURCE", "which neurons: oracle (true activations), or trace:FILE"},
    {"use", OPT_STRING, O(use), "auto", "SETS", "with trace:FILE: predicted, actual, or auto (predicted when present)"},
    {"warmup-file", OPT_STRING, O(warmup_file), NULL, "FILE", "hot with the oracle: the text whose needed neurons hot ranks, run first and not measured [default: the prompt]"},
    {"threshold", OPT_DOUBLE, O(threshold), "0", "T", "non-ReLU FFNs: active when |act(gate).up| > T, on the scale of that product (0: every neuron is active; run.md reports the density)"},
    {"dram-budget", OPT_STRING, O(dram_budget), NULL, "PCT|BYTES", "DRAM the engine may hold (weights, caches, buffers): 50% of the model, or 6G"},
    {"io-engine", OPT_STRING, O(io_engine), "psync", "NAME", "flash reads: psync or io_uring", .allowed = "psync|io_uring"},
    {"io-threads", OPT_UINT, O(io_threads), "32", "N", "flash reader threads", .min = 1, .max = FB_MAX_THREADS},
    {"iodepth", OPT_UINT, O(iodepth), "1", "N", "reads in flight per reader thread (io_uring)", .min = 1, .max = FB_MAX_IODEPTH},
    {"buffered", OPT_FLAG, O(buffered), NULL, NULL, "read through the page cache (default: direct I/O)"},
    OPT_END,
};
static const struct opt_def run_output_options[] = {
    {"cold", OPT_UINT, O(cold), "5", "N", "the first N tokens (cold cache) are summarized apart from the steady state"},
    {"record", OPT_STRING, O(record), NULL, "FILE", "write the activation trace of this run (true active sets)"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "result folder [default: results/run-<timestamp>]"},
    {"quiet", OPT_FLAG, O(quiet), NULL, NULL, "no generated text on stdout"},
    OPT_END,
};
static const struct opt_table run_tables[] = {
    {decode_prompt_options, O(d)},
    {decode_eos_options, O(d)},
    {decode_sampling_options, O(d)},
    {decode_compute_options, O(d)},
    {run_output_options, 0},
    OPT_TABLES_END,
};
#undef O

static const struct opt_command run_command = {
    .name = "run",
    .usage = "--model DIR --mode MODE (--prompt TEXT | --prompt-file FILE) [options]",
    .summary =
        "Runs the model with its FFN on flash, as the paper does, measuring every token's I/O,\n"
        "memory-management and compute time. Modes: dense (all in DRAM: the reference), naive\n"
        "(every weight read every token), hybrid (part of the FFN resident, the rest read every\n"
        "token), predictor (the needed neurons only), window (+ the last K tokens' neurons kept),\n"
        "all (+ row-column bundles: one read per neuron, adjacent ones together). Each mode is\n"
        "a policy and a layout: naive = naive + coalesce:0 (and dram.bin streamed), hybrid =\n"
        "hybrid + coalesce:0, predictor = predictor + split, window = window:K + split, all =\n"
        "window:K + coalesce:G. --policy and --layout take any pair replay takes (friends\n"
        "excepted); with --mode too they must agree. --active oracle takes the true\n"
        "activations from up-projection rows held in DRAM for the purpose (a measuring device,\n"
        "not a deployable predictor); --active trace:FILE lets a trace choose the neurons.\n"
        "stdout carries only the text; statistics go to stderr, results to run.json and run.md.",
    .opts = run_options,
    .max_positional = 0,
    .tables = run_tables,
};

/* One token's measured costs. */
struct token_row {
    int id;
    bool generated;
    double total_ms, io_ms, mem_ms, compute_ms, ffn_ms, predictor_ms, attention_ms;
    double bytes_read, reads, io_requests, dram_bytes_read, rows_inserted, rows_deleted, cache_rows, needed,
        overflow_rows, window_shrinks;
};

/* The keys of run.json's token objects and summaries, with their place in
 * struct token_row: one table for the JSON, the means and the Markdown. */
static const struct {
    const char *key;
    size_t off;
} row_keys[] = {
#define K(k) {#k, offsetof(struct token_row, k)}
    K(total_ms), K(io_ms), K(mem_ms), K(compute_ms), K(ffn_ms), K(predictor_ms), K(attention_ms),
    K(bytes_read), K(reads), K(io_requests), K(dram_bytes_read), K(rows_inserted), K(rows_deleted), K(cache_rows),
    K(needed), K(overflow_rows), K(window_shrinks),
#undef K
};
#define N_KEYS (sizeof row_keys / sizeof row_keys[0])

static double *row_value(struct token_row *r, size_t k)
{
    return (double *)((char *)r + row_keys[k].off);
}

/* Means of tokens [lo, hi) that pass the filter (-1: all, 0: prompt, 1: generated). */
static void mean_rows(struct token_row *rows, int lo, int hi, int generated, struct token_row *out, int *count)
{
    memset(out, 0, sizeof *out);
    int n = 0;
    for (int i = lo; i < hi; i++) {
        if (generated >= 0 && rows[i].generated != (generated == 1))
            continue;
        for (size_t k = 0; k < N_KEYS; k++)
            *row_value(out, k) += *row_value(&rows[i], k);
        n++;
    }
    for (size_t k = 0; k < N_KEYS && n; k++)
        *row_value(out, k) /= n;
    *count = n;
}

static cJSON *row_json(struct token_row *r)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t k = 0; k < N_KEYS; k++)
        cJSON_AddNumberToObject(o, row_keys[k].key, *row_value(r, k));
    return o;
}

struct run_setup {
    bool dense;
    struct ffn_flash_config cfg;
    struct run_plan_out plan;
    char policy[64], layout[64];
    struct trace trace, profile; /* profile: hot's warm-up under the oracle */
    bool have_trace, have_profile;
    char profile_desc[256];
    uint64_t budget;           /* 0: none */
    uint64_t model_bytes;      /* dram.bin + ffn.bin */
    uint64_t kv_bytes;
    char active_desc[256];
};

static int parse_budget(const char *text, uint64_t model_bytes, uint64_t *out)
{
    char err[256];
    double bytes = 0;
    if (parse_share_or_size(text, (double)model_bytes, &bytes, err, sizeof err) != 0) {
        fb_error("run --dram-budget '%s': %s", text, err);
        return -1;
    }
    if (bytes < 1) {
        fb_error("run --dram-budget '%s': leaves nothing in DRAM", text);
        return -1;
    }
    *out = (uint64_t)bytes;
    return 0;
}

/* The policy and layout: --mode's preset, or --policy/--layout (which must
 * agree with an explicit --mode). */
static int choose_policy(const struct run_opts *o, struct run_setup *p)
{
    char window[24] = "auto";
    if (o->window)
        snprintf(window, sizeof window, "%llu", (unsigned long long)o->window);
    if (run_mode_preset(o->mode, window, (uint32_t)o->coalesce, p->policy, sizeof p->policy, p->layout,
                        sizeof p->layout) != 0) {
        fb_error("internal: run --mode '%s' has no preset", o->mode); /* the option's allowed values do */
        return -1;
    }
    bool mode_given = opts_given(&run_command, o, "mode");
    if (!o->policy && !o->layout)
        return 0;
    const char *policy = o->policy ? o->policy : p->policy;
    const char *layout = o->layout ? o->layout : mode_given ? p->layout : "bundled";
    if (mode_given && (strcmp(policy, p->policy) || strcmp(layout, p->layout))) {
        fb_error("run: --mode %s means --policy %s --layout %s, not %s and %s", o->mode, p->policy, p->layout, policy,
                 layout);
        return -1;
    }
    char err[256];
    if (run_plan_check_names(policy, layout, err, sizeof err) != 0) {
        fb_error("run: %s", err);
        return -1;
    }
    snprintf(p->policy, sizeof p->policy, "%s", policy);
    snprintf(p->layout, sizeof p->layout, "%s", layout);
    return 0;
}

static int plan_run(const struct run_opts *o, const struct model *m, struct run_setup *p)
{
    const struct model_shape *s = &m->shape;
    p->cfg.threshold = (float)o->threshold;
    p->cfg.io_engine = o->io_engine;
    p->cfg.io_threads = (unsigned)o->io_threads;
    p->cfg.iodepth = (unsigned)o->iodepth;
    p->cfg.direct = !o->buffered;
    if (choose_policy(o, p) != 0)
        return -1;
    p->cfg.policy = p->policy;
    p->cfg.layout = p->layout;
    p->cfg.stream_dram = !strcmp(p->policy, "naive");
    if (!strncmp(o->active, "trace:", 6)) {
        char err[512];
        if (trace_load(o->active + 6, &p->trace, err, sizeof err) != 0) {
            fb_error("run --active: %s", err);
            return -1;
        }
        p->have_trace = true;
        if (trace_matches_shape(&p->trace, o->active + 6, s, err, sizeof err) != 0) {
            fb_error("run --active: %s", err);
            return -1;
        }
        if (trace_choose_sets(o->use, &p->trace.meta, o->active + 6, &p->cfg.use_predicted, err, sizeof err) != 0) {
            fb_error("run --use: %s", err);
            return -1;
        }
        p->cfg.active = ACTIVE_TRACE;
        p->cfg.trace = &p->trace;
        snprintf(p->active_desc, sizeof p->active_desc, "trace %s (%s sets, %llu tokens, replayed cyclically)",
                 o->active + 6, p->cfg.use_predicted ? "predicted" : "active",
                 (unsigned long long)p->trace.n_tokens);
    } else if (!strcmp(o->active, "oracle")) {
        p->cfg.active = ACTIVE_ORACLE;
        snprintf(p->active_desc, sizeof p->active_desc,
                 "oracle: true activations from up-projection rows held in DRAM (a measuring device, not a predictor)");
    } else {
        fb_error("run --active: '%s' is not oracle or trace:FILE", o->active);
        return -1;
    }
    return 0;
}

/* hot under the oracle ranks the neurons of a warm-up (engine/warmup.h):
 * the --warmup-file text, else the prompt, run before the measured tokens. */
static int warm_up(const struct run_opts *o, const struct model *m, const struct backend_ops *be, int threads,
                   const int *prompt, int n_prompt, struct run_setup *p)
{
    if (strcmp(p->policy, "hot") || p->have_trace)
        return 0;
    char *text = o->warmup_file ? read_prompt_file(o->warmup_file) : NULL;
    if (o->warmup_file && !text)
        return -1;
    int n = n_prompt, *tokens = text ? encode_prompt(m, text, 0, &n) : (int *)prompt;
    if (n > (int)m->shape.max_positions)
        n = (int)m->shape.max_positions;
    char path[4096], err[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/flashbed-warmup-%ld.trace", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    struct warmup_input in = {m, be, threads, &p->cfg, tokens, n, path};
    int rc = tokens ? warmup_profile(&in, &p->profile, err, sizeof err) : (snprintf(err, sizeof err, "out of memory"), -1);
    unlink(path);
    if (rc != 0)
        fb_error("run --warmup-file: %s", err);
    p->have_profile = rc == 0;
    snprintf(p->profile_desc, sizeof p->profile_desc, "hot ranks the oracle's needed neurons over a warm-up of %d tokens (%s)",
             n, o->warmup_file ? o->warmup_file : "the prompt");
    if (tokens != prompt)
        free(tokens);
    free(text);
    return rc;
}

/* Sizes the caches and staging to the budget (engine/run_plan.h) and refuses what cannot fit. */
static int fit_budget(const struct model *m, struct run_setup *p, uint64_t tokens)
{
    if (p->dense) {
        if (p->budget && m->dram_bytes + p->kv_bytes + m->ffn_bytes > p->budget) {
            fb_error("run --mode dense: the model needs %.2f GB in DRAM, the budget is %.2f GB",
                     (double)(m->dram_bytes + p->kv_bytes + m->ffn_bytes) / 1e9, (double)p->budget / 1e9);
            return -1;
        }
        return 0;
    }
    struct run_plan_input in = {.m = m, .policy = p->policy, .layout = p->layout, .budget = p->budget,
                                .kv_bytes = p->kv_bytes, .trace = p->have_trace ? &p->trace : NULL,
                                .profile = p->have_profile ? &p->profile : NULL, .use_predicted = p->cfg.use_predicted,
                                .tokens = tokens, .stream_dram = p->cfg.stream_dram};
    char err[512];
    if (run_plan_make(&in, &p->plan, err, sizeof err) != 0) {
        fb_error("run: %s", err);
        return -1;
    }
    p->cfg.policy = p->plan.policy; /* window:auto resolved */
    p->cfg.profile = p->have_profile ? &p->profile : NULL;
    p->cfg.capacity_rows = p->plan.capacity_rows;
    p->cfg.layer_rows = p->plan.layer_rows;
    p->cfg.staging_rows = p->plan.staging_rows;
    p->cfg.bounce_rows = p->plan.bounce_rows;
    return 0;
}

static uint64_t peak_rss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
#ifdef __APPLE__
    return (uint64_t)ru.ru_maxrss;
#else
    return (uint64_t)ru.ru_maxrss * 1024;
#endif
}

struct run_outcome {
    struct token_row *rows;
    int n_rows, n_prompt, n_gen;
    const char *stop;
    char error[512];
};

/* One run through the decode loop: its callback records a row of costs per
 * computed position, shows progress, and writes the generated text. */
struct run_decode {
    const struct run_opts *o;
    const struct model *m;
    struct engine *e;
    bool dense;
    struct run_outcome *out;
    struct progress bar;
    bool show; /* the progress bar */
};

/* The trace being recorded learns where each token comes from. */
static void run_before(void *ctx, int pos, bool generated)
{
    struct run_decode *d = ctx;
    ffn_flash_next_token(&d->e->ffn, (pos == 0 ? TRACE_TOKEN_SEQ_START : 0u) | (generated ? TRACE_TOKEN_GENERATED : 0u));
}

/* The flash FFN's costs of the last token into r; -1 when it failed. */
static int take_flash_costs(struct run_decode *d, struct token_row *r)
{
    struct ffn_flash_token ft;
    ffn_flash_take_token(&d->e->ffn, &ft);
    r->io_ms = ft.io_ms;
    r->mem_ms = ft.mem_ms;
    r->ffn_ms = ft.ffn_ms;
    r->predictor_ms = ft.predictor_ms;
    r->bytes_read = (double)ft.bytes_read;
    r->reads = (double)ft.reads;
    r->io_requests = (double)ft.io_requests;
    r->dram_bytes_read = (double)ft.dram_bytes_read;
    r->overflow_rows = (double)ft.overflow_rows;
    r->rows_inserted = (double)ft.rows_inserted;
    r->rows_deleted = (double)ft.rows_deleted;
    r->cache_rows = (double)ft.cache_rows;
    r->needed = (double)ft.needed;
    r->window_shrinks = ft.window_shrinks;
    const char *err = ffn_flash_error(&d->e->ffn);
    if (err)
        snprintf(d->out->error, sizeof d->out->error, "%s", err);
    return err ? -1 : 0;
}

static int run_token(void *ctx, const struct decode_step *s)
{
    struct run_decode *d = ctx;
    struct token_row *r = &d->out->rows[d->out->n_rows++];
    r->total_ms = (double)(s->end_ns - s->start_ns) * 1e-6;
    r->id = s->token;
    r->generated = s->generated;
    if (!d->dense && take_flash_costs(d, r) != 0)
        return -1;
    r->compute_ms = r->total_ms - r->io_ms - r->mem_ms;
    r->attention_ms = r->compute_ms - r->ffn_ms - r->predictor_ms;
    if (d->show) {
        char note[96];
        snprintf(note, sizeof note, "%.1f ms/token, I/O %.1f ms", r->total_ms, r->io_ms);
        progress_update(&d->bar, (uint64_t)s->pos + 1, note);
    }
    if (s->sampled >= 0 && !d->o->quiet) {
        emit_token(&d->m->tok, s->token, s->sampled, NULL);
        fflush(stdout);
    }
    return 0;
}

static int generate(const struct run_opts *o, struct model *m, struct engine *e, struct run_setup *p,
                    const int *prompt, int n_prompt, struct run_outcome *out)
{
    int n = (int)o->d.n;
    out->rows = calloc((size_t)(n_prompt + n), sizeof *out->rows);
    if (!out->rows) {
        fb_error("run: cannot allocate the per-token rows");
        return -1;
    }
    if (!o->quiet)
        emit_prompt(&m->tok, prompt, n_prompt);
    /* a bar on the terminal, unless the text is being written there */
    struct run_decode d = {.o = o, .m = m, .e = e, .dense = p->dense, .out = out,
                           .show = o->quiet || !isatty(STDOUT_FILENO)};
    if (d.show)
        progress_begin(&d.bar, "run", (uint64_t)(n_prompt + n - 1));
    struct decode_config c = decode_opts_config(&o->d, prompt, n_prompt, n);
    struct decode_hooks h = {.before = p->dense ? NULL : run_before, .token = run_token, .ctx = &d};
    struct decode_result res;
    int rc = decode_run(e, &c, &h, &res, out->error, sizeof out->error);
    if (d.show)
        progress_end(&d.bar);
    if (rc != 0) { /* nothing ran: no results to write */
        fb_error("run: %s", out->error);
        free(out->rows);
        out->rows = NULL;
        return -1;
    }
    if (!o->quiet)
        fputc('\n', stdout);
    out->n_prompt = n_prompt;
    out->n_gen = res.n_generated;
    out->stop = decode_stop_name(res.stop);
    return out->error[0] ? -1 : 0;
}

/* run.json: provenance, per-token rows, and the summaries (steady state:
 * every token after the cold ones; also cold, prompt and generated apart). */
static cJSON *run_json(const struct run_opts *o, const struct model *m, const struct run_setup *p,
                       const struct run_outcome *r, cJSON *prov, uint64_t dram_held, uint64_t oracle_bytes)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "provenance", prov);
    cJSON_AddStringToObject(prov, "model", m->shape.name);
    cJSON_AddStringToObject(prov, "model_dir", m->dir);
    cJSON_AddStringToObject(prov, "dtype", dtype_name(m->dtype));
    cJSON_AddStringToObject(prov, "mode", o->mode);
    cJSON_AddStringToObject(prov, "active", p->dense ? "all (dense)" : p->active_desc);
    cJSON_AddNumberToObject(prov, "dram_budget_bytes", (double)p->budget);
    cJSON_AddNumberToObject(prov, "model_bytes", (double)p->model_bytes);
    cJSON_AddBoolToObject(prov, "page_cache_bypassed", !p->dense && p->cfg.direct);
    if (!p->dense) {
        cJSON *pol = cJSON_AddObjectToObject(prov, "policy");
        cJSON_AddStringToObject(pol, "policy", p->plan.policy);
        cJSON_AddStringToObject(pol, "policy_requested", p->policy);
        cJSON_AddStringToObject(pol, "layout", p->layout);
        if (p->plan.window_k)
            cJSON_AddNumberToObject(pol, "window_k", p->plan.window_k);
        if (p->plan.window_from)
            cJSON_AddStringToObject(pol, "window_chosen_from", p->plan.window_from);
        if (p->have_profile)
            cJSON_AddStringToObject(pol, "profile", p->profile_desc);
        cJSON_AddNumberToObject(pol, "capacity_rows_per_layer", (double)p->plan.capacity_rows);
        cJSON_AddNumberToObject(pol, "ffn_cache_bytes", (double)p->plan.ffn_cache_bytes);
        cJSON *lr = cJSON_AddArrayToObject(pol, "cache_rows_by_layer");
        for (uint32_t l = 0; l < m->shape.n_layers; l++)
            cJSON_AddItemToArray(lr, cJSON_CreateNumber(p->plan.layer_rows[l]));
        cJSON_AddNumberToObject(pol, "staging_rows", p->plan.staging_rows);
        cJSON_AddNumberToObject(pol, "bounce_rows", p->plan.bounce_rows);
        cJSON_AddStringToObject(pol, "io_engine", p->cfg.io_engine);
        cJSON_AddNumberToObject(pol, "io_threads", p->cfg.io_threads);
        cJSON_AddNumberToObject(pol, "iodepth", p->cfg.iodepth);
    }
    cJSON *toks = cJSON_AddArrayToObject(root, "tokens");
    for (int i = 0; i < r->n_rows; i++) {
        cJSON *t = row_json(&r->rows[i]);
        cJSON_AddNumberToObject(t, "index", i);
        cJSON_AddNumberToObject(t, "id", r->rows[i].id);
        cJSON_AddStringToObject(t, "phase", r->rows[i].generated ? "generated" : "prompt");
        cJSON_AddItemToArray(toks, t);
    }
    int cold = (int)o->cold < r->n_rows ? (int)o->cold : r->n_rows, n;
    struct token_row mean;
    mean_rows(r->rows, cold, r->n_rows, -1, &mean, &n);
    cJSON *sum = row_json(&mean);
    cJSON_AddItemToObject(root, "summary", sum);
    cJSON_AddNumberToObject(sum, "tokens", n);
    cJSON_AddNumberToObject(sum, "cold_tokens_excluded", cold);
    if (!p->dense) {
        cJSON_AddStringToObject(sum, "policy", p->plan.policy);
        cJSON_AddStringToObject(sum, "layout", p->layout);
        if (p->plan.window_k)
            cJSON_AddNumberToObject(sum, "window_k", p->plan.window_k);
        cJSON_AddNumberToObject(sum, "ffn_cache_bytes", (double)p->plan.ffn_cache_bytes);
        cJSON_AddNumberToObject(sum, "capacity_rows_per_layer", (double)p->plan.capacity_rows);
    }
    if (!p->dense && strcmp(p->plan.policy, "naive") && strcmp(p->plan.policy, "hybrid"))
        cJSON_AddNumberToObject(sum, "density", mean.needed / ((double)m->shape.n_layers * m->shape.d_ff));
    cJSON_AddNumberToObject(sum, "peak_rss_bytes", (double)peak_rss_bytes());
    cJSON_AddNumberToObject(sum, "engine_dram_bytes", (double)(m->dram_bytes + (p->dense ? m->ffn_bytes : 0) + p->kv_bytes + dram_held));
    cJSON_AddNumberToObject(sum, "oracle_dram_bytes", (double)oracle_bytes);
    cJSON_AddNumberToObject(sum, "tokens_per_second", mean.total_ms > 0 ? 1e3 / mean.total_ms : 0);
    cJSON_AddNumberToObject(sum, "read_throughput_bytes",
                            mean.io_ms > 0 ? (mean.bytes_read + mean.dram_bytes_read) / (mean.io_ms * 1e-3) : 0);
    cJSON_AddNumberToObject(sum, "mean_read_bytes", mean.reads > 0 ? mean.bytes_read / mean.reads : 0);
    cJSON_AddNumberToObject(sum, "prompt_tokens", r->n_prompt);
    cJSON_AddNumberToObject(sum, "generated_tokens", r->n_gen);
    cJSON_AddStringToObject(sum, "stop_reason", r->stop);
    const char *names[] = {"cold", "prompt", "generated"};
    for (int k = 0; k < 3; k++) {
        if (k == 0)
            mean_rows(r->rows, 0, cold, -1, &mean, &n);
        else
            mean_rows(r->rows, cold, r->n_rows, k == 2, &mean, &n);
        cJSON *part = row_json(&mean);
        cJSON_AddNumberToObject(part, "tokens", n);
        cJSON_AddItemToObject(root, names[k], part);
    }
    return root;
}

/* The share of FFN neurons the steady-state tokens needed; for a non-ReLU
 * FFN under the oracle that share is set by --threshold, and a threshold
 * that makes every neuron active leaves nothing for the policy to save. */
static void density_line(struct strbuf *t, const struct model *m, const struct run_setup *p, double needed)
{
    if (!strcmp(p->plan.policy, "naive") || !strcmp(p->plan.policy, "hybrid")) {
        strbuf_add(t, "- density: not measured (policy %s computes every neuron)\n", p->plan.policy);
        return;
    }
    double all = (double)m->shape.n_layers * m->shape.d_ff;
    double density = all > 0 ? needed / all : 0;
    bool thresholded = p->cfg.active == ACTIVE_ORACLE && (m->arch.glu || m->arch.act != ACT_RELU);
    strbuf_add(t, "- density: %.2f%% of the FFN's neurons needed per token (steady state)", 100 * density);
    if (thresholded)
        strbuf_add(t, ", from --threshold %g on |act(gate)·up|", p->cfg.threshold);
    strbuf_add(t, "\n");
    if (thresholded && density >= 0.999)
        strbuf_add(t, "- **every neuron is active** at this threshold: each token needs the whole FFN, so no policy "
                      "saves a read (raise --threshold for a sparse run)\n");
}

static char *run_markdown(const struct model *m, const struct run_setup *p, const cJSON *root)
{
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(root, "summary");
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(root, "provenance");
#define NUM(o, k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k))
    struct strbuf t = {0};
    if (p->dense)
        strbuf_add(&t, "# flashbed run: %s (%s), dense\n\n", m->shape.name, dtype_name(m->dtype));
    else
        strbuf_add(&t, "# flashbed run: %s (%s), policy %s%s, layout %s\n\n", m->shape.name, dtype_name(m->dtype),
                   p->plan.policy, p->plan.window_from ? " (window:auto)" : "", p->layout);
    strbuf_add(&t, "- command: `%s`\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prov, "command_line")));
    strbuf_add(&t, "- commit: %s, date: %s\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prov, "git_commit")),
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prov, "date")));
    strbuf_add(&t, "- neurons: %s\n", p->dense ? "all (dense, everything in DRAM)" : p->active_desc);
    if (p->have_profile)
        strbuf_add(&t, "- profile: %s\n", p->profile_desc);
    if (p->plan.window_from)
        strbuf_add(&t, "- window:auto chose K = %u from %s\n", p->plan.window_k, p->plan.window_from);
    if (!p->dense)
        density_line(&t, m, p, NUM(sum, "needed"));
    strbuf_add(&t, "- page cache %s; DRAM budget %s\n\n", !p->dense && p->cfg.direct ? "bypassed (direct I/O)" : "used",
               p->budget ? "set" : "none");
    strbuf_add(&t, "Steady state (%.0f tokens after %.0f cold ones), per token — as the paper's Table 3:\n\n",
               NUM(sum, "tokens"), NUM(sum, "cold_tokens_excluded"));
    strbuf_add(&t, "| | I/O ms | mem ms | compute ms | (FFN ms) | (predictor ms) | total ms | MB read | reads | rows in | rows out | cache rows |\n"
                   "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    const char *parts[] = {"summary", "cold", "prompt", "generated"};
    const char *labels[] = {"steady state", "cold tokens", "prompt (steady)", "generated (steady)"};
    for (int k = 0; k < 4; k++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, parts[k]);
        if (NUM(o, "tokens") <= 0)
            continue;
        strbuf_add(&t, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f |\n", labels[k],
                   NUM(o, "io_ms"), NUM(o, "mem_ms"), NUM(o, "compute_ms"), NUM(o, "ffn_ms"), NUM(o, "predictor_ms"),
                   NUM(o, "total_ms"), NUM(o, "bytes_read") / 1e6, NUM(o, "reads"), NUM(o, "rows_inserted"),
                   NUM(o, "rows_deleted"), NUM(o, "cache_rows"));
    }
    strbuf_add(&t, "\nRead throughput %.2f GB/s in reads of %.0f bytes; %.2f tokens/s; peak RSS %.2f GB "
                   "(engine holds %.2f GB, oracle rows %.2f GB).\n",
               NUM(sum, "read_throughput_bytes") / 1e9, NUM(sum, "mean_read_bytes"), NUM(sum, "tokens_per_second"),
               NUM(sum, "peak_rss_bytes") / 1e9, NUM(sum, "engine_dram_bytes") / 1e9, NUM(sum, "oracle_dram_bytes") / 1e9);
#undef NUM
    return strbuf_take(&t);
}

int cmd_run(int argc, char **argv)
{
    struct run_opts o;
    memset(&o, 0, sizeof o);
    int rc = cli_parse(&run_command, &o, argc, argv, NULL, NULL);
    if (rc != 0) {
        opts_free(&run_command, &o);
        return rc > 0 ? 0 : 2;
    }
    struct run_setup p;
    memset(&p, 0, sizeof p);
    char *text = NULL;
    const char *prompt_text = NULL;
    if (!o.model) {
        fb_error("run: needs --model DIR");
        rc = 2;
    } else {
        prompt_text = decode_opts_text("run", &o.d, &text, &rc);
    }
    if (!prompt_text) {
        opts_free(&run_command, &o);
        return rc;
    }
    const struct backend_ops *be = backend_find(o.d.backend);
    p.dense = !strcmp(o.mode, "dense");
    struct model m;
    rc = 1;
    char open_err[1024];
    if (model_open_flags(&m, o.model, p.dense ? 0 : MODEL_FFN_ON_FLASH, open_err, sizeof open_err) != 0) {
        fb_error("%s", open_err);
        free(text);
        opts_free(&run_command, &o);
        return 1;
    }
    char dir[4096];
    if (o.out)
        snprintf(dir, sizeof dir, "%s", o.out);
    else {
        char stamp[32];
        provenance_stamp(stamp, sizeof stamp);
        snprintf(dir, sizeof dir, "results/run-%s", stamp);
    }
    int threads = decode_opts_threads(&o.d);
    /* the KV cache holds exactly the positions this run uses */
    int n_prompt = 0;
    int *prompt = encode_prompt(&m, prompt_text, o.d.prompt_tokens, &n_prompt);
    int max_seq = n_prompt + (int)o.d.n;
    if (!prompt || max_seq > (int)m.shape.max_positions) {
        if (prompt)
            fb_error("run: %d prompt + %llu generated tokens pass the model's context of %u (use --prompt-tokens)",
                     n_prompt, (unsigned long long)o.d.n, m.shape.max_positions);
        else
            fb_error("run: cannot allocate the prompt's tokens");
        free(prompt);
        model_close(&m);
        free(text);
        opts_free(&run_command, &o);
        return 1;
    }
    p.model_bytes = m.dram_bytes + m.ffn_bytes;
    p.kv_bytes = 2ull * m.shape.n_layers * (uint64_t)max_seq * m.kv_dim * sizeof(float);
    struct trace_writer *rec = NULL;
    struct engine e;
    bool engine_up = false;
    struct run_outcome out = {0};
    if ((o.dram_budget && parse_budget(o.dram_budget, p.model_bytes, &p.budget) != 0) ||
        (!p.dense && plan_run(&o, &m, &p) != 0) ||
        (!p.dense && warm_up(&o, &m, be, threads, prompt, n_prompt, &p) != 0) ||
        fit_budget(&m, &p, (uint64_t)max_seq - 1) != 0)
        goto done;
    if (o.record) {
        if (p.dense) {
            fb_error("run --record: the dense mode does not look at activations; use --mode all (or another flash mode)");
            goto done;
        }
        struct trace_meta tm = {.n_layers = m.shape.n_layers, .d_model = m.shape.d_model, .d_ff = m.shape.d_ff,
                                .bytes_per_weight = (uint32_t)dtype_size(m.dtype), .ffn_kind = (uint32_t)m.shape.ffn_kind};
        char src[4400], err[512];
        snprintf(src, sizeof src, "{\"model\": \"%s\", \"model_dir\": \"%s\", \"recorded_by\": \"flashbed run\", \"threshold\": %g}",
                 m.shape.name, m.dir, o.threshold);
        tm.source = src;
        if (!(rec = trace_writer_open(o.record, &tm, err, sizeof err))) {
            fb_error("run --record: %s", err);
            goto done;
        }
        p.cfg.record = rec;
    }
    if (engine_init_with(&e, &m, be, p.dense ? &ffn_dense : &ffn_flash, p.dense ? NULL : &p.cfg, threads, max_seq,
                         open_err, sizeof open_err) != 0) {
        fb_error("run: %s", open_err);
        goto done;
    }
    engine_up = true;
    interrupt_install();
    int grc = generate(&o, &m, &e, &p, prompt, n_prompt, &out);
    if (grc != 0 && !out.rows)
        goto done;
    if (out.error[0])
        fb_error("run: %s", out.error);
    uint64_t oracle_bytes = 0, held = p.dense ? 0 : ffn_flash_dram_bytes(&e.ffn, &oracle_bytes);
    if (mkdir_p(dir, 0755) != 0) {
        fb_error("cannot create %s: %s", dir, strerror(errno));
        goto done;
    }
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", opts_to_json(&run_command, &o));
    if (!p.dense)
        provenance_add_disk(prov, m.ffn_path);
    cJSON *root = run_json(&o, &m, &p, &out, prov, held, oracle_bytes);
    char path[4200];
    snprintf(path, sizeof path, "%s/run.json", dir);
    int wrc = write_json_file(path, root);
    char *md = run_markdown(&m, &p, root);
    snprintf(path, sizeof path, "%s/run.md", dir);
    if (wrc == 0 && md)
        wrc = write_text_file(path, md);
    if (md)
        fputs(md, stderr);
    free(md);
    cJSON_Delete(root);
    if (rec) {
        char err[512];
        int trc = out.error[0] || !strcmp(out.stop, "interrupted") ? (trace_writer_abort(rec), 0)
                                                                     : trace_writer_close(rec, err, sizeof err);
        if (trc != 0) {
            fb_error("run --record: %s", err);
            wrc = -1;
        }
        rec = NULL;
    }
    fb_info("results in %s", dir);
    rc = wrc != 0 || out.error[0] ? 1 : !strcmp(out.stop, "interrupted") ? 130 : 0;
done:
    if (rec)
        trace_writer_abort(rec);
    if (engine_up)
        engine_free(&e);
    free(out.rows);
    free(prompt);
    if (p.have_trace)
        trace_free(&p.trace);
    if (p.have_profile)
        trace_free(&p.profile);
    free(p.plan.layer_rows);
    model_close(&m);
    free(text);
    opts_free(&run_command, &o);
    return rc;
}
