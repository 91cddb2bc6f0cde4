/* flashbed run: the engine with its FFN on flash (engine/ffn/ffn_flash.h), or
 * dense as the reference, measured per token as I/O, memory management and
 * compute. Same prompt, sampling and output contract as generate; result
 * files run.json (the format predict --compare reads), run.md and tokens.csv
 * (with --plot the paper's Fig. 8 drawn from it). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/layout_spec.h"
#include "cache/policy_spec.h"
#include "cli/backend_opts.h"
#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/decode_opts.h"
#include "cli/progress_bar.h"
#include "cli/shared.h"
#include "cli/text_out.h"
#include "common/atomic_file.h"
#include "common/cleanup.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/model_shape.h"
#include "common/options.h"
#include "common/parse.h"
#include "common/provenance.h"
#include "common/subprocess.h"
#include "io/io_fault.h"
#include "io/ioengine.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/forward/decode.h"
#include "engine/forward/engine.h"
#include "engine/model/model_format.h"
#include "engine/run/run_exec.h"
#include "engine/run/run_plan.h"
#include "engine/run/run_report.h"
#include "engine/run/run_setup.h"
#include "io/direct_io.h"
#include "traces/trace.h"

struct run_opts {
    char *model, *mode, *policy, *layout, *active, *use, *dram_budget, *device_budget, *io_engine, *record, *out,
        *warmup_file, *read_ahead, *sparsify, *fault, *fault_engine, *verify;
    uint64_t fault_seed;
    struct decode_opts d; /* the prompt, -n, --ignore-eos, sampling, threads and backend (shared with generate) */
    uint64_t window, coalesce, io_threads, iodepth, cold; /* window 0: auto */
    double threshold, act_threshold;
    bool buffered, quiet, check, plot, force;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define O(f) offsetof(struct run_opts, f)
static const struct opt_def run_options[] = {
    {"model", OPT_STRING, O(model), NULL, "DIR", "flashbed model folder (flashbed convert / model make)"},
    {"mode", OPT_STRING, O(mode), "all", "MODE", "dense, naive, hybrid, predictor, window, all: shorthand for a policy and a layout (see --help text)",
     .allowed = "dense|naive|hybrid|predictor|window|all"},
    {"policy", OPT_STRING, O(policy), NULL, "P", "which rows stay in DRAM, as replay names it: naive, hybrid, predictor, window:K, lru, lfu, hot, belady; also window:auto"},
    {"layout", OPT_STRING, O(layout), NULL, "L", "how rows become reads, as replay names it: split, bundled, coalesce:G, or transposed (--active teal's: channel bundles and rows of down from ffn_t.bin) [default: bundled; with --active teal, transposed]"},
    {"window", OPT_UINT, O(window), "5", "K|auto", "window and all: keep the neurons of the last K tokens, this one included (the paper's k = 4 is 5); auto: the largest K the budget holds",
     .min = 1, .max = RUN_MAX_WINDOW, .allowed = "auto"},
    {"coalesce", OPT_UINT, O(coalesce), "0", "G", "all: one read across gaps of up to G unneeded neurons",
     .max = MODEL_MAX_D_FF},
    {"active", OPT_STRING, O(active), "oracle", "SOURCE", select_run_active_help},
    {"sparsify", OPT_STRING, O(sparsify), NULL, "FILE", SELECT_SPARSIFY_HELP},
    {"use", OPT_STRING, O(use), "auto", "SETS", "with trace:FILE: predicted, actual, or auto (predicted when present)"},
    {"warmup-file", OPT_STRING, O(warmup_file), NULL, "FILE", "hot with the oracle: the text whose needed neurons hot ranks, run first and not measured [default: the prompt]"},
    {"threshold", OPT_DOUBLE, O(threshold), "0", "T", "the chooser's threshold: oracle on a SiLU or GELU FFN, active when |act(gate).up| (|act(up)| without a gate) > T, on the scale of that value (the ReLU family: active when not zero, T unused) (0: every neuron is active; run.md reports the density, and suggests a threshold from the run's own values when every neuron is); predictor, the probability above which a neuron is predicted active; gate, |act(gate.x)| > T [default: 0; with --active predictor, the predictor's own]",
     .min = 0, .max = OPT_NO_MAX},
    {"act-threshold", OPT_DOUBLE, O(act_threshold), "0", "T", "--check and --record beside a predictor or the gate on a SiLU or GELU FFN: truly active when |act(gate).up| (|act(up)|) > T [default: the predictor's own act_threshold, else 0]",
     .min = 0, .max = OPT_NO_MAX},
    {"check", OPT_FLAG, O(check), NULL, NULL, "beside a predictor, the gate or a trace: also compute the true activations (up-projection rows held in DRAM, reported apart) and count per token the active neurons missed and the extra ones read"},
    {"dram-budget", OPT_STRING, O(dram_budget), NULL, "PCT|BYTES", "DRAM the engine may hold (weights, caches, buffers): 50% of the model, or 6G"},
    {"device-budget", OPT_STRING, O(device_budget), NULL, "PCT|BYTES", "on a device whose memory is not the host's (sim, opencl, cuda): device memory the engine may hold (weights, KV cache, neuron caches, device staging): 30% of the model, or 2G; the caches are sized to it, and --dram-budget then holds the host's part (pinned staging ring, bounce buffer, predictor) [default: the caches follow --dram-budget]"},
    {"io-engine", OPT_STRING, O(io_engine), "psync", "NAME",
     "flash reads: psync or io_uring; auto: measure psync with --io-threads threads, io_uring with 2 threads x 16 "
     "reads in flight and with 4 x 8, on batches like the run's from the model's ffn.bin, and read with the "
     "fastest (run.json's io_engine_choice); fault: psync (or --fault-engine's) with the faults --fault injects",
     .allowed = "psync|io_uring|auto|fault"},
    {"fault", OPT_STRING, O(fault), NULL, "RULES",
     "with --io-engine fault: eio:RATE, short:RATE, delay:RATE:TIME, eio@OFFSET[/N], short@OFFSET[/N], "
     "delay@OFFSET:TIME[/N], comma-separated; a failed or short read is retried once, a second failure stops "
     "the run (results kept, exit 1) (io/io_fault.h)"},
    {"fault-seed", OPT_UINT, O(fault_seed), "1", "N", "seed of --fault's rates"},
    {"fault-engine", OPT_STRING, O(fault_engine), "psync", "NAME",
     "with --io-engine fault: the engine whose reads it injects faults into (io_uring: --iodepth reads in "
     "flight per reader thread, a short read cut when it is reaped; needs liburing)",
     .allowed = "psync|io_uring"},
    {"io-threads", OPT_UINT, O(io_threads), "32", "N", "flash reader threads", .min = 1, .max = FB_MAX_THREADS},
    {"iodepth", OPT_UINT, O(iodepth), "1", "N", "reads in flight per reader thread (io_uring)", .min = 1, .max = FB_MAX_IODEPTH},
    {"buffered", OPT_FLAG, O(buffered), NULL, NULL, "read through the page cache (default: direct I/O)"},
    {"read-ahead", OPT_STRING, O(read_ahead), "on", "on|off",
     "on the cpu backend, with the sets known before a layer's input (--active trace:FILE) and a policy that "
     "keeps what it reads (not naive or hybrid): issue the next layer's reads while this layer computes, the I/O the token waits for reported as io_ms and "
     "the reads' whole time as read_ms; off: each layer reads, then computes (the paper's serial breakdown); "
     "--active teal ignores it (a layer's channels come from its own input)",
     .allowed = "on|off"},
    {"verify", OPT_STRING, O(verify), "on", "on|off",
     "check dram.bin at load and every FFN bundle read from flash against the model's checksums "
     "(ffn.crc32c; --active teal: each channel bundle and row of down against ffn_t.crc32c; flashbed model "
     "verify): a mismatch is read again once, then stops the run naming the layer, "
     "neuron and offset; off: for measurements that must not include it (run.json records which)",
     .allowed = "on|off"},
    OPT_END,
};
static const struct opt_def run_output_options[] = {
    {"cold", OPT_UINT, O(cold), "5", "N", "the first N tokens (cold cache) are summarized apart from the steady state",
     .max = MODEL_MAX_POSITIONS},
    {"record", OPT_STRING, O(record), NULL, "FILE", "write the activation trace of this run (true active sets; --active teal: the channels and rows of down it kept, channel sets for replay --layout transposed); Ctrl-C keeps the trace of the tokens measured"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "result folder [default: results/run-<timestamp>]"},
    {"quiet", OPT_FLAG, O(quiet), NULL, NULL, "no generated text on stdout"},
    {"plot", OPT_FLAG, O(plot), NULL, NULL,
     "also draw fig8.png and fig8.svg from tokens.csv with gnuplot: I/O, memory management and compute per token, "
     "the cold tokens marked (the paper's Fig. 8)"},
    {"force", OPT_FLAG, O(force), NULL, NULL, FORCE_HELP "; and --record's FILE where it exists"},
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
    .usage = "--model DIR --mode MODE (--prompt TEXT | --prompt-file FILE | --prompt-ids FILE) [options]",
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
        "not a deployable predictor); --active predictor runs the model's activation predictor\n"
        "(flashbed predictor train), the deployable mode: its weights count in the DRAM budget\n"
        "and its time is predictor_ms; --active gate lets a GLU FFN's gate projection choose\n"
        "(its rows held in DRAM, counted as the predictor's; with --sparsify FILE and no\n"
        "--threshold, the file's global threshold), --active gate-cal the same with the per-layer\n"
        "thresholds of the model's sparsify.json or --sparsify FILE (flashbed sparsify calibrate;\n"
        "--active teal runs input sparsity from the same file on the transposed layout: ffn_t.bin, written by\n"
        "flashbed model transpose DIR, read by input channel and by row of down through two caches of\n"
        "the policy (--mode predictor, window or all; cpu only); --active trace:FILE lets a trace\n"
        "choose the neurons. --check counts what a predictor, the gate or a trace missed.\n"
        "stdout carries only the text; statistics go to stderr, results to run.json, run.md and\n"
        "tokens.csv (a row per token), with --plot also the paper's Fig. 8 (fig8.png, fig8.svg).",
    .opts = run_options,
    .max_positional = 0,
    .tables = run_tables,
    OPT_GIVEN_AT(struct run_opts, given),
};



/* --dram-budget or --device-budget (option, and where: "DRAM", "the device"). */
static int parse_budget(const char *option, const char *where, const char *text, uint64_t model_bytes, uint64_t *out)
{
    char err[256];
    double bytes = 0;
    if (parse_share_or_size(text, (double)model_bytes, &bytes, err, sizeof err) != 0) {
        fb_error("run --%s '%s': %s", option, text, err);
        return -1;
    }
    if (bytes < 1) {
        fb_error("run --%s '%s': leaves nothing in %s", option, text, where);
        return -1;
    }
    *out = (uint64_t)bytes;
    return 0;
}

/* run's options as engine/run/run_setup.h takes them, --policy and --layout
 * parsed into values here, the one place run reads a policy's or a layout's
 * name (a dense run reads neither). 0, or -1 (printed). */
/* --fault and --fault-seed into f; 0, or -1 (printed). */
static int fault_option(const struct run_opts *o, struct io_fault *f)
{
    struct io_fault_spec spec;
    char err[512];
    if ((o->fault || opts_given(&run_command, o, "fault-engine")) && strcmp(o->io_engine, "fault") != 0) {
        fb_error("run --%s: needs --io-engine fault (the engine that injects them)",
                 o->fault ? "fault" : "fault-engine");
        return -1;
    }
    if (io_fault_parse(o->fault, o->fault_seed, &spec, err, sizeof err) != 0) {
        fb_error("run --fault: %s", err);
        return -1;
    }
    io_fault_init(f, &spec);
    return 0;
}

static int setup_options(const struct run_opts *o, const struct fb_settings *set, bool dense, struct io_fault *fault,
                         struct run_options *ro)
{
    *ro = (struct run_options){
        .cmd = "run", .mode = o->mode, .mode_given = opts_given(&run_command, o, "mode"),
        .window = (uint32_t)o->window, .coalesce = (uint32_t)o->coalesce, .active = o->active, .use = o->use,
        .threshold = o->threshold, .threshold_given = opts_given(&run_command, o, "threshold"), .sparsify = o->sparsify,
        .act_threshold = o->act_threshold, .act_threshold_given = opts_given(&run_command, o, "act-threshold"),
        .check = o->check, .io_engine = ioengine_with_faults(o->io_engine, o->fault_engine),
        .io_threads = (unsigned)o->io_threads,
        .iodepth = (unsigned)o->iodepth, .direct = !o->buffered, .read_ahead = !strcmp(o->read_ahead, "on"),
        .warmup_file = o->warmup_file, .fault = strcmp(o->io_engine, "fault") ? NULL : fault,
        .verify = !strcmp(o->verify, "on"), .settings = set};
    if (fault_option(o, fault) != 0)
        return -1;
    char err[512];
    if (!dense && ((o->policy && cache_policy_parse(o->policy, true, &ro->policy, err, sizeof err) != 0) ||
                   (o->layout && cache_layout_parse(o->layout, &ro->layout, err, sizeof err) != 0))) {
        fb_error("run: %s", err);
        return -1;
    }
    return 0;
}

/* Everything one run holds, freed in one place (run_free). */
struct run {
    const struct fb_settings *set; /* the global settings (plot scripts, the backend's tuning) */
    struct run_opts o;
    struct run_options ro;      /* o as data, for engine/run/run_setup.h */
    struct run_setup p;
    char *text;                 /* --prompt-file's or --prompt-ids' contents */
    const char *prompt_text;
    char dir[4096];             /* the result folder */
    struct out_manifest *folder; /* dir opened (common/out_manifest.h), closed once the run is freed */
    const struct backend_ops *be;
    struct cli_backend backend; /* be, and its device as run.json records it */
    struct model m;
    bool model_open;
    int *prompt, n_prompt, max_seq, threads;
    struct trace_writer *rec;   /* --record's, until closed */
    int rec_tmp;
    struct engine e;
    bool engine_up;
    struct run_outcome out;
    struct run_reader_choice reader; /* --io-engine auto's measurements */
    bool reader_chosen;
    struct io_fault fault;      /* --io-engine fault's rules and counts */
};

/* What run shows of each token as it is measured: the progress bar, and
 * the generated text on stdout. */
struct run_show {
    const struct run_opts *o;
    const struct model *m;
    struct progress bar;
    bool show; /* the progress bar */
};

static void show_token(void *ctx, const struct decode_step *s, const struct token_row *r)
{
    struct run_show *v = ctx;
    if (v->show) {
        char note[96];
        snprintf(note, sizeof note, "%.1f ms/token, I/O %.1f ms", r->total_ms, r->io_ms);
        progress_update(&v->bar, (uint64_t)s->pos + 1, note);
    }
    if (s->sampled >= 0 && !v->o->quiet) {
        emit_token(&v->m->tok, s->token, s->sampled, NULL);
        fflush(stdout);
    }
}

/* The measured tokens (engine/run/run_exec.h) into r->out, the text and the
 * bar around them. 0 when there are results to write (r->out.error may say
 * the run failed), or -1 (printed) when there are none. */
static int generate(struct run *r)
{
    const struct run_opts *o = &r->o;
    int n = (int)o->d.n;
    if (!o->quiet)
        emit_prompt(&r->m.tok, r->prompt, r->n_prompt);
    /* a bar on the terminal, unless the text is being written there */
    struct run_show v = {.o = o, .m = &r->m, .show = o->quiet || !isatty(STDOUT_FILENO)};
    if (v.show)
        progress_begin(&v.bar, "run", (uint64_t)(r->n_prompt + n - 1));
    struct run_exec_config c = {.decode = decode_opts_config(&o->d, r->prompt, r->n_prompt, n), .dense = r->p.dense,
                                .token = show_token, .ctx = &v};
    char err[512];
    int rc = run_exec(&r->e, &c, &r->out, err, sizeof err);
    if (v.show)
        progress_end(&v.bar);
    if (rc != 0) { /* nothing ran: no results to write */
        fb_error("run: %s", err);
        return -1;
    }
    if (!o->quiet)
        fputc('\n', stdout);
    return 0;
}

static void run_free(struct run *r)
{
    if (r->rec)
        trace_writer_abort(r->rec);
    cleanup_forget(r->rec_tmp);
    if (r->engine_up)
        engine_free(&r->e);
    free(r->out.rows);
    free(r->prompt);
    run_setup_free(&r->p);
    if (r->model_open)
        model_close(&r->m);
    free(r->text);
    opts_free(&run_command, &r->o);
}

static const char *const run_files[] = {"run.json", "run.md", "tokens.csv", NULL};

/* What must hold before anything is measured: a model, the prompt's text,
 * result paths that can be written, gnuplot for --plot. The exit status. */
static int check_inputs(struct run *r)
{
    const struct run_opts *o = &r->o;
    int rc = 0;
    if (!o->model) {
        fb_error("run: needs --model DIR");
        return 2;
    }
    if (!(r->prompt_text = decode_opts_text("run", &o->d, &r->text, &rc)))
        return rc;
    result_dir_name(o->out, "run", r->dir, sizeof r->dir);
    /* before the run, not after every token was generated */
    const char *trace_in = o->active && !strncmp(o->active, "trace:", 6) ? o->active + 6 : NULL;
    const char *inputs[] = {o->d.prompt_file, o->d.prompt_ids, o->warmup_file, trace_in};
    if (out_result_dir_ok("run --out", r->dir, o->force, false, run_files, &r->folder) != 0 ||
        (o->record && out_file_ok_beside("run --record", o->record, 0, inputs, 4, o->model) != 0))
        return 1;
    if (o->record && !o->force && access(o->record, F_OK) == 0) { /* a trace is data: never replaced silently */
        fb_error("run --record: %s already exists; --force replaces it", o->record);
        return 1;
    }
    if (o->plot && !program_available("gnuplot")) { /* as sweep --plot: refused before the run */
        fb_error("run --plot: the plots need gnuplot, which is not installed (apt-get install gnuplot-nox)");
        return 1;
    }
    return 0;
}

/* The model (ffn.bin on flash, with direct I/O unless --buffered) and the
 * prompt's tokens, which fix the KV cache's positions. 0, or 1 (printed). */
static int open_model(struct run *r)
{
    const struct run_opts *o = &r->o;
    char err[1024];
    r->p.dense = !strcmp(o->mode, "dense");
    unsigned flags = (r->p.dense ? 0 : MODEL_FFN_ON_FLASH) | (strcmp(o->verify, "on") ? MODEL_NO_VERIFY : 0);
    if (model_open_flags(&r->m, o->model, flags, err, sizeof err) != 0) {
        fb_error("%s", err);
        return 1;
    }
    r->model_open = true;
    /* tmpfs takes O_DIRECT yet serves reads from memory: refused, never recorded as bypassed */
    if (!r->p.dense && !o->buffered && direct_io_check(r->m.ffn_path, err, sizeof err) != 0) {
        fb_error("run: %s; --buffered reads through the page cache (and the result says so)", err);
        return 1;
    }
    r->prompt = decode_opts_prompt("run", &o->d, &r->m, r->prompt_text, &r->n_prompt);
    if (!r->prompt)
        return 1;
    r->max_seq = r->n_prompt + (int)o->d.n; /* the KV cache holds exactly the positions this run uses */
    if (r->max_seq > (int)r->m.shape.max_positions) {
        char fit[512];
        decode_opts_fit_text(&o->d, r->n_prompt, (long)r->m.shape.max_positions - (long)o->d.n, fit, sizeof fit);
        fb_error("run: the prompt's %d positions + %llu generated tokens pass the model's context of %u: %s",
                 r->n_prompt, (unsigned long long)o->d.n, r->m.shape.max_positions, fit);
        return 1;
    }
    return 0;
}

/* What the plan puts on a device whose memory is not the host's (a dense
 * run: the whole model and the KV cache); 0 on the host. */
static uint64_t device_bytes(const struct run *r)
{
    if (!r->p.device)
        return 0;
    return r->p.dense ? r->m.dram_bytes + r->m.ffn_bytes + r->p.kv_bytes : r->p.plan.device_bytes;
}

/* A device that says how much memory it has is refused a plan it cannot
 * hold, before anything is allocated. 0, or -1 (printed). */
static int device_fits(const struct run *r)
{
    uint64_t need = device_bytes(r), has = r->backend.dev.mem_bytes;
    if (!has || need <= has)
        return 0;
    fb_error("run: the device cannot hold the %llu bytes (%.2f MB) this run puts on it (weights, KV cache, neuron "
             "caches, staging): %s has %llu bytes; --device-budget SIZE sizes the neuron caches to what it can give",
             (unsigned long long)need, (double)need / 1e6, r->backend.dev.device, (unsigned long long)has);
    return -1;
}

/* hot's warm-up (engine/run/run_setup.h) over the --warmup-file text, else
 * the prompt. 0, or -1 (printed). */
static int warm_up(struct run *r)
{
    const struct run_opts *o = &r->o;
    if (!run_setup_needs_warmup(&r->p))
        return 0;
    char *text = o->warmup_file ? read_prompt_file(o->warmup_file) : NULL;
    if (o->warmup_file && !text)
        return -1;
    int n = r->n_prompt, *tokens = text ? encode_prompt(&r->m, text, 0, &n) : r->prompt;
    char err[2048] = "run --warmup-file: out of memory";
    int rc = tokens ? run_setup_warmup(&r->ro, &r->m, r->be, r->threads, tokens, n, &r->p, err, sizeof err) : -1;
    if (rc != 0)
        fb_error("%s", err);
    if (tokens != r->prompt)
        free(tokens);
    free(text);
    return rc;
}

/* The budget, the setup (policy, source), hot's warm-up and the fit, then
 * the recording. 0, or 1 (printed). */
static int prepare(struct run *r)
{
    const struct run_opts *o = &r->o;
    struct run_setup *p = &r->p;
    if (cli_backend_open("run", o->d.backend, r->set, &r->backend) != 0)
        return 1;
    r->be = r->backend.ops;
    r->threads = decode_opts_threads(&o->d);
    run_setup_sizes(p, &r->m, r->max_seq);
    char err[10240]; /* a trace's or the model's path in it */
    p->device = !r->backend.dev.host_visible;
    p->backend = r->be->name;
    if ((o->dram_budget && parse_budget("dram-budget", "DRAM", o->dram_budget, p->model_bytes, &p->budget) != 0) ||
        (o->device_budget &&
         parse_budget("device-budget", "the device", o->device_budget, p->model_bytes, &p->device_budget) != 0))
        return FB_EXIT_USAGE; /* a budget that does not parse: the command line's, whatever the model */
    if (setup_options(o, r->set, p->dense, &r->fault, &r->ro) != 0)
        return 1;
    if (!p->dense && run_setup_plan(&r->ro, &r->m, p, err, sizeof err) != 0) {
        fb_error("%s", err);
        return 1;
    }
    if (!p->dense && !strcmp(o->io_engine, "auto")) {
        if (run_reader_choose(&r->m, p, &r->reader, err, sizeof err) != 0) {
            fb_error("run: %s", err);
            return 1;
        }
        r->reader_chosen = true;
    }
    if (warm_up(r) != 0)
        return 1;
    if (run_setup_fit(&r->ro, &r->m, p, (uint64_t)r->max_seq - 1, err, sizeof err) != 0) {
        fb_error("%s", err);
        return 1;
    }
    if (device_fits(r) != 0)
        return 1;
    /* 512: where run has always cut the writer's message */
    if (o->record && !(r->rec = run_record_open(r->folder, o->record, &r->m, p, err, 512))) {
        fb_error("run --record: %s", err);
        return 1;
    }
    if (r->rec)
        r->rec_tmp = atomic_tmp_watch(o->record); /* a second Ctrl-C removes the unfinished trace */
    return 0;
}

/* --record's trace closed, or dropped when the run failed, when its
 * results could not be written (unwritten) or when it was interrupted
 * before a token was measured. An interrupted run stops between tokens, so
 * the trace of the tokens measured is whole, as the Python recorder keeps
 * it: closed, and said so. 0, or -1 (printed). */
static int close_record(struct run *r, bool unwritten)
{
    char err[4400];
    int tokens = r->out.n_rows;
    bool stopped = !strcmp(r->out.stop, "interrupted");
    struct trace_writer *w = r->rec;
    r->rec = NULL; /* a run that failed, even only in writing its results, leaves the trace's path as it was */
    if (r->out.error[0] || unwritten || (stopped && tokens == 0)) {
        trace_writer_abort(w);
        if (stopped && !r->out.error[0] && !unwritten)
            fb_warn("run --record: interrupted before the first token was measured: no trace written, %s left as "
                    "it was", r->o.record);
        return 0;
    }
    if (trace_writer_close(w, err, sizeof err) != 0) {
        atomic_err_name_path(err, sizeof err, r->o.record);
        fb_error("run --record: %s", err);
        return -1;
    }
    if (stopped)
        fb_info("run --record: interrupted: %s holds the trace of the %d tokens measured (a whole trace: replay and "
                "trace info read it)", r->o.record, tokens);
    return 0;
}

/* run.json, run.md, tokens.csv (and the plot), then the recorded trace
 * closed (close_record). The exit
 * status: 1 on an error, 130 interrupted, else 0. */
static int write_results(struct run *r)
{
    const struct run_setup *p = &r->p;
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", opts_to_json(&run_command, &r->o));
    cli_backend_provenance(prov, &r->backend);
    if (!p->dense)
        provenance_add_disk(prov, r->m.ffn_path);
    struct run_report_extra x = {.mode = r->o.mode, .cold = (int)r->o.cold, .plot = r->o.plot,
                                 .settings = r->set, .folder = r->folder,
                                 .reader = r->reader_chosen ? &r->reader : NULL};
    run_engine_extra(&r->e, &r->m, p, &x);
    char err[4400], *md; /* room for two paths: a temporary's and its file's */
    int wrc = run_report_write(r->dir, &r->m, p, &r->out, &x, prov, &md, err, sizeof err);
    if (wrc != 0)
        fb_error(wrc == -2 ? "run --plot: %s" : "%s", err);
    if (md) /* run.md after the error line: a failed write still shows the measurements */
        fputs(md, stderr);
    free(md);
    bool stopped = !strcmp(r->out.stop, "interrupted");
    if (r->rec && close_record(r, wrc != 0) != 0)
        wrc = -1;
    if (wrc == 0)
        fb_info("results in %s", r->dir);
    return wrc != 0 || r->out.error[0] ? 1 : stopped ? 130 : 0;
}

/* The engine over the plan, the tokens, the results. The exit status. */
static int execute(struct run *r)
{
    struct run_setup *p = &r->p;
    char err[1024];
    struct trace_sink rec_sink = trace_writer_sink(r->rec);
    p->cfg.record = r->rec ? &rec_sink : NULL;
    if (run_engine_init(&r->e, r->set, &r->m, r->be, p, r->threads, r->max_seq, err, sizeof err) != 0) {
        if (p->device) /* most likely the device ran out of memory: say what the plan asked of it */
            fb_error("run: %s; if the device cannot hold the %llu bytes this run puts on it (weights, KV cache, "
                     "neuron caches, staging), --device-budget SIZE sizes the neuron caches to what it can give", err,
                     (unsigned long long)device_bytes(r));
        else
            fb_error("run: %s", err);
        return 1;
    }
    r->engine_up = true;
    interrupt_install();
    if (generate(r) != 0)
        return 1;
    if (r->out.error[0])
        fb_error("run: %s", r->out.error);
    return write_results(r);
}

int cmd_run(int argc, char **argv, const struct fb_settings *set)
{
    struct run *r = calloc(1, sizeof *r);
    if (!r) {
        fb_error("run: out of memory");
        return 1;
    }
    r->set = set;
    r->rec_tmp = -1;
    int rc = cli_parse(&run_command, &r->o, argc, argv, NULL, NULL);
    if (rc != 0)
        rc = rc > 0 ? 0 : 2;
    else if ((rc = check_inputs(r)) == 0 && (rc = open_model(r)) == 0 && (rc = prepare(r)) == 0)
        rc = execute(r);
    run_free(r);
    rc = out_result_dir_close(r->folder, rc);
    free(r);
    return rc;
}
