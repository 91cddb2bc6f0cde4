/* flashbed generate: text in, text out; statistics on stderr, per-token
 * timings in --json. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/text_out.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/options.h"
#include "common/provenance.h"
#include "common/json_file.h"
#include "engine/engine.h"
#include "engine/sampler.h"

struct generate_opts {
    char *model;
    char *prompt;
    char *prompt_file;
    uint64_t prompt_tokens;
    uint64_t n;
    double temperature;
    double top_p;
    uint64_t seed;
    uint64_t threads;
    char *backend;
    char *json;
    bool bandwidth;
};

#define O(f) offsetof(struct generate_opts, f)
static const struct opt_def generate_options[] = {
    {"model", OPT_STRING, O(model), NULL, "DIR", "flashbed model folder (flashbed convert)"},
    {"prompt", OPT_STRING, O(prompt), NULL, "TEXT", "prompt text"},
    {"prompt-file", OPT_STRING, O(prompt_file), NULL, "FILE", "read the prompt from a file"},
    {"prompt-tokens", OPT_UINT, O(prompt_tokens), "0", "N", "keep the first N prompt tokens (0: all)"},
    {"n", OPT_UINT, O(n), "256", "N", "tokens to generate (also -n)"},
    {"temperature", OPT_DOUBLE, O(temperature), "1.0", "T", "sampling temperature; 0 is greedy"},
    {"top-p", OPT_DOUBLE, O(top_p), "0.9", "P", "nucleus sampling mass; 1 samples the full distribution"},
    {"seed", OPT_UINT, O(seed), "0", "S", "sampling seed"},
    {"threads", OPT_UINT, O(threads), "0", "N", "compute threads (0: all CPUs)"},
    {"backend", OPT_STRING, O(backend), "cpu", "NAME", "compute backend: cpu"},
    {"json", OPT_STRING, O(json), NULL, "FILE", "write per-token timings and ids as JSON"},
    {"bandwidth", OPT_FLAG, O(bandwidth), NULL, NULL,
     "after each decode step, time a read loop over the model's weights on the same threads\n"
     "and report the weight bandwidth as a share of that DRAM read bandwidth"},
    OPT_END,
};
#undef O

static const struct opt_command generate_command = {
    .name = "generate",
    .usage = "--model DIR (--prompt TEXT | --prompt-file FILE) [-n 256] [options]",
    .summary = "Generates text with all weights in DRAM (the dense reference). stdout carries only\n"
               "the prompt followed by the continuation; statistics go to stderr. Stops at the\n"
               "model's end-of-sequence token or after -n tokens.",
    .opts = generate_options,
    .max_positional = 0,
};

struct gen_result {
    int n_prompt, n_gen;
    double prompt_s, gen_s; /* gen_s: generated tokens after the first */
    double best_s;          /* fastest single decode step: the least disturbed on a shared machine */
    const char *stop;
};

/* --bandwidth: after every timed decode step the backend's own threads
 * read the model's resident weights once with a plain read loop, and the
 * step's weight bandwidth is compared with that pass's. The ceiling is so
 * measured on the very pages the step streams (on a virtual machine two
 * buffers of the same size read up to 20% apart, by where their pages
 * landed), on the same threads, side by side in time (a neighbour's load
 * on a shared machine weighs on both alike). */
struct ceiling {
    double resident_bytes; /* what one pass reads: dram.bin and ffn.bin as loaded */
    int passes;
    double read_s;  /* all passes */
    double *paired; /* (n) per step: step's weight bandwidth / its pass's read bandwidth */
    double best_bw;
};

static int ceiling_open(struct ceiling *c, const struct model *m, int n)
{
    *c = (struct ceiling){.resident_bytes = (double)m->dram_bytes + (m->ffn ? (double)m->ffn_bytes : 0)};
    c->paired = calloc((size_t)n + 1, sizeof *c->paired);
    if (!c->paired) {
        fb_error("generate: cannot allocate the bandwidth record");
        return -1;
    }
    return 0;
}

/* one pass after a decode step of step_s that read `bytes` of weights */
static void ceiling_pass(struct ceiling *c, struct engine *e, const struct model *m, double step_s,
                         double bytes)
{
    double s = e->be_ops->read_pass(e->be, m->dram, m->dram_bytes);
    if (m->ffn)
        s += e->be_ops->read_pass(e->be, m->ffn, m->ffn_bytes);
    double bw = c->resident_bytes / s;
    c->read_s += s;
    c->paired[c->passes++] = bytes / step_s / bw;
    if (bw > c->best_bw)
        c->best_bw = bw;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double ceiling_median_paired(struct ceiling *c)
{
    if (!c->passes)
        return 0;
    qsort(c->paired, (size_t)c->passes, sizeof *c->paired, cmp_double);
    return c->passes % 2 ? c->paired[c->passes / 2]
                         : 0.5 * (c->paired[c->passes / 2 - 1] + c->paired[c->passes / 2]);
}

static double ceiling_bandwidth(const struct ceiling *c)
{
    return c->read_s > 0 ? c->passes * c->resident_bytes / c->read_s : 0;
}

static int run(const struct generate_opts *o, struct model *m, struct engine *e, const char *text,
               cJSON *json)
{
    int n_prompt;
    int *prompt = encode_prompt(m, text, o->prompt_tokens, &n_prompt);
    if (!prompt) {
        fb_error("generate: cannot allocate the prompt's tokens");
        return -1;
    }
    int budget = e->max_seq - n_prompt;
    if (budget < 0) {
        fb_error("generate: the prompt has %d tokens, the model's context only %d (use --prompt-tokens)",
                 n_prompt, e->max_seq);
        free(prompt);
        return -1;
    }
    int n = (int)o->n;
    if (n > budget) {
        fb_warn("generate: -n %d passes the context of %d positions; generating %d", n, e->max_seq, budget);
        n = budget;
    }
    struct sampler smp;
    if (sampler_init(&smp, (int)m->shape.vocab_size, (float)o->temperature, (float)o->top_p, o->seed)) {
        free(prompt);
        return -1;
    }
    struct ceiling ceil = {0};
    if (o->bandwidth && ceiling_open(&ceil, m, n) != 0) {
        sampler_free(&smp);
        free(prompt);
        return -1;
    }
    double bytes_per_token = (double)model_bytes_per_token(m);
    cJSON *ids = json ? cJSON_AddArrayToObject(json, "prompt_token_ids") : NULL;
    cJSON *toks = json ? cJSON_AddArrayToObject(json, "tokens") : NULL;
    for (int i = 0; i < n_prompt; i++) {
        if (ids)
            cJSON_AddItemToArray(ids, cJSON_CreateNumber(prompt[i]));
        if (i > 0)
            emit_token(&m->tok, prompt[i - 1], prompt[i], NULL);
    }
    fflush(stdout);
    struct gen_result r = {.n_prompt = n_prompt, .stop = "length"};
    uint64_t t0 = now_ns();
    for (int p = 0; p < n_prompt; p++)
        engine_forward(e, prompt[p], p);
    int prev = prompt[n_prompt - 1];
    uint64_t t_step = now_ns();
    r.prompt_s = (double)(t_step - t0) * 1e-9;
    for (int i = 0; i < n; i++) {
        if (interrupted()) {
            r.stop = "interrupted";
            break;
        }
        int next = sampler_sample(&smp, e->s.logits);
        if (is_stop_token(m, next)) {
            r.stop = "end of sequence";
            break;
        }
        cJSON *rec = NULL;
        if (toks) {
            rec = cJSON_CreateObject();
            cJSON_AddNumberToObject(rec, "id", next);
        }
        emit_token(&m->tok, prev, next, rec);
        fflush(stdout);
        prev = next;
        r.n_gen++;
        uint64_t t_done = now_ns();
        if (rec) {
            cJSON_AddNumberToObject(rec, "ms", (double)(t_done - t_step) * 1e-6);
            cJSON_AddItemToArray(toks, rec);
        }
        if (i > 0) {
            double step = (double)(t_done - t_step) * 1e-9;
            r.gen_s += step;
            if (r.best_s == 0 || step < r.best_s)
                r.best_s = step;
            if (o->bandwidth) {
                ceiling_pass(&ceil, e, m, step, bytes_per_token);
                t_done = now_ns(); /* the pass is not the next step's */
            }
        }
        t_step = t_done;
        if (i + 1 < n)
            engine_forward(e, next, n_prompt + i);
    }
    fputc('\n', stdout);
    fflush(stdout);
    double pp = r.prompt_s > 0 ? r.n_prompt / r.prompt_s : 0;
    double tg = r.gen_s > 0 ? (r.n_gen - 1) / r.gen_s : 0;
    fprintf(stderr,
            "prompt tokens: %d (with BOS), generated tokens: %d (stopped: %s)\n"
            "prompt processing: %.2f tokens/s, generation: %.2f tokens/s\n",
            r.n_prompt, r.n_gen, r.stop, pp, tg);
    double weight_bw = tg * bytes_per_token, dram_bw = 0, median_paired = 0;
    if (o->bandwidth && ceil.passes > 0) {
        dram_bw = ceiling_bandwidth(&ceil);
        median_paired = ceiling_median_paired(&ceil);
        double best_bw = r.best_s > 0 ? bytes_per_token / r.best_s : 0;
        fprintf(stderr,
                "weight bandwidth: %.2f GB/s (%.1f MB per token) = %.1f%% of the DRAM read bandwidth %.2f GB/s\n"
                "  (a read loop on the same %d threads over the model's %.1f MB of resident weights after each of\n"
                "  %d decode steps, best pass %.2f GB/s); median of the per-step ratios %.1f%%;\n"
                "  fastest token %.2f tokens/s = %.1f%%\n",
                weight_bw * 1e-9, bytes_per_token * 1e-6, 100 * weight_bw / dram_bw, dram_bw * 1e-9,
                e->be_threads, ceil.resident_bytes * 1e-6, ceil.passes, ceil.best_bw * 1e-9,
                100 * median_paired,
                r.best_s > 0 ? 1 / r.best_s : 0, 100 * best_bw / dram_bw);
    } else if (o->bandwidth) {
        fb_warn("generate: --bandwidth needs at least two generated tokens; no ratio to report");
    }
    if (json) {
        cJSON *s = cJSON_AddObjectToObject(json, "summary");
        cJSON_AddNumberToObject(s, "weight_bandwidth_bytes_per_second", weight_bw);
        cJSON_AddNumberToObject(s, "fastest_token_per_second", r.best_s > 0 ? 1 / r.best_s : 0);
        if (o->bandwidth && dram_bw > 0) {
            cJSON_AddNumberToObject(s, "dram_read_bandwidth_bytes_per_second", dram_bw);
            cJSON_AddNumberToObject(s, "dram_read_bandwidth_best_pass_bytes_per_second", ceil.best_bw);
            cJSON_AddNumberToObject(s, "dram_read_passes", ceil.passes);
            cJSON_AddNumberToObject(s, "bandwidth_fraction", weight_bw / dram_bw);
            cJSON_AddNumberToObject(s, "bandwidth_fraction_median_per_step", median_paired);
        }
        cJSON_AddNumberToObject(s, "prompt_tokens", r.n_prompt);
        cJSON_AddNumberToObject(s, "generated_tokens", r.n_gen);
        cJSON_AddStringToObject(s, "stop_reason", r.stop);
        cJSON_AddNumberToObject(s, "prompt_tokens_per_second", pp);
        cJSON_AddNumberToObject(s, "generation_tokens_per_second", tg);
        cJSON_AddNumberToObject(s, "weight_bytes_per_token", bytes_per_token);
    }
    free(ceil.paired);
    sampler_free(&smp);
    free(prompt);
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    /* the spelling "-n 256" is the option --n */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-n"))
            argv[i] = "--n";
    struct generate_opts o;
    memset(&o, 0, sizeof o);
    int rc = opts_parse(&generate_command, &o, argc, argv, NULL, NULL);
    if (rc != 0) {
        opts_free(&generate_command, &o);
        return rc > 0 ? 0 : 2;
    }
    rc = 2;
    char *text = NULL;
    const struct backend_ops *be = backend_find(o.backend);
    if (!o.model)
        fb_error("generate: needs --model DIR");
    else if (!o.prompt == !o.prompt_file)
        fb_error("generate: needs exactly one of --prompt TEXT and --prompt-file FILE");
    else if (o.temperature < 0 || o.top_p < 0 || o.top_p > 1)
        fb_error("generate: --temperature must be >= 0 and --top-p in [0, 1]");
    else if (!be)
        fb_error("generate --backend: unknown backend '%s' (available: cpu)", o.backend);
    else if (o.prompt_file && !(text = read_prompt_file(o.prompt_file)))
        rc = 1;
    else
        rc = 0;
    if (rc != 0) {
        opts_free(&generate_command, &o);
        return rc;
    }
    struct model m;
    struct engine e;
    int threads = o.threads ? (int)o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[1024];
    if (model_open(&m, o.model, err, sizeof err) != 0) {
        fb_error("%s", err);
        free(text);
        opts_free(&generate_command, &o);
        return 1;
    }
    cJSON *json = NULL;
    if (o.json) {
        json = cJSON_CreateObject();
        cJSON *prov = provenance_new();
        cJSON_AddItemToObject(prov, "parameters", opts_to_json(&generate_command, &o));
        cJSON_AddStringToObject(prov, "model", m.shape.name);
        cJSON_AddStringToObject(prov, "dtype", dtype_name(m.dtype));
        cJSON_AddNumberToObject(prov, "threads", threads);
        cJSON_AddStringToObject(prov, "backend", be->name);
        cJSON_AddItemToObject(json, "provenance", prov);
    }
    rc = 1;
    if (engine_init(&e, &m, be, &ffn_dense, threads, 0, err, sizeof err) != 0)
        fb_error("%s", err);
    else {
        interrupt_install();
        if (run(&o, &m, &e, text ? text : o.prompt, json) == 0)
            rc = json && write_json_file(o.json, json) != 0 ? 1 : 0;
        engine_free(&e);
    }
    cJSON_Delete(json);
    model_close(&m);
    free(text);
    opts_free(&generate_command, &o);
    return rc;
}
