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
#include "engine/membw.h"
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
     "also measure DRAM read bandwidth (same threads) and report the weight bandwidth's share"},
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

/* 1 GiB: far beyond any cache, small beside the model */
#define BANDWIDTH_BUFFER ((size_t)1 << 30)
#define BANDWIDTH_PASSES 5

static int run(const struct generate_opts *o, struct model *m, struct engine *e, const char *text,
               cJSON *json)
{
    double dram_bw_before = o->bandwidth ? dram_read_bandwidth(e->be_threads, BANDWIDTH_BUFFER, BANDWIDTH_PASSES) : 0;
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
    double weight_bw = tg * (double)model_bytes_per_token(m), dram_bw = 0;
    (void)dram_bw_before;
    if (o->bandwidth) {
        /* measured before and after generating, the better kept: the
         * machine may be shared, and the ceiling is what it can give */
        double after = dram_read_bandwidth(e->be_threads, BANDWIDTH_BUFFER, BANDWIDTH_PASSES);
        dram_bw = dram_bw_before > after ? dram_bw_before : after;
        double best_bw = r.best_s > 0 ? (double)model_bytes_per_token(m) / r.best_s : 0;
        fprintf(stderr, "weight bandwidth: %.2f GB/s (%.1f MB per token) = %.1f%% of DRAM read bandwidth "
                "%.2f GB/s (%d threads); fastest token %.2f tokens/s = %.1f%%\n", weight_bw * 1e-9,
                model_bytes_per_token(m) * 1e-6, dram_bw > 0 ? 100 * weight_bw / dram_bw : 0,
                dram_bw * 1e-9, e->be_threads, r.best_s > 0 ? 1 / r.best_s : 0,
                dram_bw > 0 ? 100 * best_bw / dram_bw : 0);
    }
    if (json) {
        cJSON *s = cJSON_AddObjectToObject(json, "summary");
        cJSON_AddNumberToObject(s, "weight_bandwidth_bytes_per_second", weight_bw);
        cJSON_AddNumberToObject(s, "fastest_token_per_second", r.best_s > 0 ? 1 / r.best_s : 0);
        if (o->bandwidth) {
            cJSON_AddNumberToObject(s, "dram_read_bandwidth_bytes_per_second", dram_bw);
            cJSON_AddNumberToObject(s, "bandwidth_fraction", dram_bw > 0 ? weight_bw / dram_bw : 0);
        }
        cJSON_AddNumberToObject(s, "prompt_tokens", r.n_prompt);
        cJSON_AddNumberToObject(s, "generated_tokens", r.n_gen);
        cJSON_AddStringToObject(s, "stop_reason", r.stop);
        cJSON_AddNumberToObject(s, "prompt_tokens_per_second", pp);
        cJSON_AddNumberToObject(s, "generation_tokens_per_second", tg);
        cJSON_AddNumberToObject(s, "weight_bytes_per_token", (double)model_bytes_per_token(m));
    }
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
    if (model_open(&m, o.model) != 0) {
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
    if (engine_init(&e, &m, be, &ffn_dense, threads, 0) == 0) {
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
