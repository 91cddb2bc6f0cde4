/* flashbed sweep: options as data, then harness/sweep.c does the work. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "common/log.h"
#include "common/options.h"
#include "harness/sweep.h"
#include "harness/sweep_verdict.h"
#include "io/io_fault.h"

struct sweep_opts {
    char *file;
    uint64_t size;
    struct u64_list chunks;
    struct u64_list threads;
    char *engine;
    uint64_t iodepth;
    double runtime;
    double ramp;
    uint64_t rounds;
    char *out;
    bool force;
    bool compare_fio;
    char *fio_mem;
    bool plot;
    bool buffered;
    bool small_pages;
    uint64_t seed;
    char *fault, *fault_engine;
    uint64_t fault_seed;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define O(f) offsetof(struct sweep_opts, f)
static const struct opt_def sweep_options[] = {
    {"file", OPT_STRING, O(file), NULL, "PATH", "file to read; created (random data) if missing or too small"},
    {"size", OPT_SIZE, O(size), "4G", "BYTES", "bytes of the file that reads are spread over",
     .unit_guess = "k,m"},
    {"chunks", OPT_SIZE_LIST, O(chunks), "4k,8k,16k,32k,64k,128k,256k,512k,1m", "LIST", "read sizes",
     .min = 1, .max = 1 << 30},
    {"threads", OPT_UINT_LIST, O(threads), "1,2,4,8,16,32,64", "LIST", "reader thread counts",
     .min = 1, .max = FB_MAX_THREADS},
    {"engine", OPT_STRING, O(engine), "psync", "NAME", "I/O engine (io_uring when built with liburing)",
     .allowed = "psync|io_uring|mmap|null|fault"},
    {"iodepth", OPT_UINT, O(iodepth), "1", "N", "reads in flight per thread (io_uring)",
     .min = 1, .max = FB_MAX_IODEPTH},
    {"runtime", OPT_DURATION, O(runtime), "2", "SECONDS", "measured time per point, split evenly over its rounds",
     .min = 0.001, .max = FB_MAX_SECONDS},
    {"ramp", OPT_DURATION, O(ramp), "0.5", "SECONDS", "time run first and discarded per point, split evenly over its rounds",
     .max = FB_MAX_SECONDS},
    {"rounds", OPT_UINT, O(rounds), "3", "N",
     "runs per point, ours and fio's alternating; the median is reported with the min-max",
     .min = 1, .max = SWEEP_MAX_ROUNDS},
    {"out", OPT_STRING, O(out), NULL, "DIR", "result folder [default: results/sweep-<timestamp>]"},
    {"compare-fio", OPT_FLAG, O(compare_fio), NULL, NULL, "run fio on the same job after each point"},
    {"fio-mem", OPT_STRING, O(fio_mem), NULL, "TYPE", "fio's --mem for its buffers (shmhuge: huge pages, as ours)"},
    {"plot", OPT_FLAG, O(plot), NULL, NULL, "draw throughput.png and throughput.svg with gnuplot"},
    {"buffered", OPT_FLAG, O(buffered), NULL, NULL, "read through the page cache (evicted before each point)"},
    {"small-pages", OPT_FLAG, O(small_pages), NULL, NULL, "read into 4 KiB pages, not transparent huge pages"},
    {"seed", OPT_UINT, O(seed), "0", "N", "random offsets seed; 0 picks a fresh one per point"},
    {"fault", OPT_STRING, O(fault), NULL, "RULES",
     "with --engine fault (psync, or --fault-engine's, with injected faults): eio:RATE, short:RATE, delay:RATE:TIME, "
     "eio@OFFSET[/N], short@OFFSET[/N], delay@OFFSET:TIME[/N], comma-separated (io/io_fault.h)"},
    {"fault-seed", OPT_UINT, O(fault_seed), "1", "N", "seed of --fault's rates"},
    {"fault-engine", OPT_STRING, O(fault_engine), "psync", "NAME",
     "with --engine fault: the engine whose reads it injects faults into (io_uring: --iodepth reads in flight "
     "per thread, a short read cut when it is reaped; needs liburing)",
     .allowed = "psync|io_uring"},
    {"force", OPT_FLAG, O(force), NULL, NULL, FORCE_HELP},
    OPT_END,
};
#undef O

static const struct opt_command sweep_command = {
    .name = "sweep",
    .usage = "--file PATH [options]",
    .summary = "Measures random-read throughput of a file on flash over chunk size x thread count\n"
               "(the paper's Fig. 2b), with direct I/O unless --buffered. Writes sweep.json,\n"
               "sweep.csv and sweep.md (and throughput.png/svg with --plot) to --out.",
    .opts = sweep_options,
    .max_positional = 0,
    OPT_GIVEN_AT(struct sweep_opts, given),
};

/* sweep's option for each setting the library can refuse; the page cache
 * (--buffered) avoids every direct-I/O refusal. */
static const struct sweep_flag sweep_flags[] = {
    {SWEEP_SET_PATH, "--file"},         {SWEEP_SET_SIZE, "--size"},       {SWEEP_SET_CHUNKS, "--chunks"},
    {SWEEP_SET_THREADS, "--threads"},   {SWEEP_SET_IODEPTH, "--iodepth"}, {SWEEP_SET_RUNTIME, "--runtime"},
    {SWEEP_SET_OUT, "--out"},           {SWEEP_SET_FIO, "--compare-fio"}, {SWEEP_SET_FIO_MEM, "--fio-mem"},
    {SWEEP_SET_PLOT, "--plot"},         {SWEEP_SET_ROUNDS, "--rounds"},   {SWEEP_SET_DIRECT, "--buffered"},
    {0, NULL},
};

/* "CMD --option: why", the option being the first the refusal is about,
 * and the direct-I/O way out when the command has one. */
static void print_refusal(const char *cmd, const struct sweep_flag *flags, unsigned settings, const char *why)
{
    const char *flag = NULL, *way_out = NULL;
    for (const struct sweep_flag *f = flags; f->flag; f++) {
        if (!(settings & f->setting))
            continue;
        if (f->setting == SWEEP_SET_DIRECT)
            way_out = f->flag;
        else if (!flag)
            flag = f->flag;
    }
    fb_error("%s%s%s: %s%s%s%s", cmd, flag ? " " : "", flag ? flag : "", why, way_out ? " (or pass " : "",
             way_out ? way_out : "", way_out ? ")" : "");
}

static const char *const sweep_files[] = {"sweep.json", "sweep.csv", "sweep.md", NULL};

int run_sweep(const char *cmd, const struct sweep_flag *flags, const struct sweep_config *c, cJSON *params, bool force,
              struct out_manifest **folder)
{
    *folder = NULL;
    struct sweep s;
    enum scratch_action action;
    unsigned settings;
    char err[1024];
    if (sweep_check(c, &s, &action, &settings, err, sizeof err) != 0) {
        print_refusal(cmd, flags, settings, err);
        cJSON_Delete(params);
        return 1;
    }
    char what[64];
    snprintf(what, sizeof what, "%s --out", cmd);
    if (out_result_dir_ok(what, c->out_dir, force, false, sweep_files, folder) != 0) {
        cJSON_Delete(params);
        return 1;
    }
    if (action != SCRATCH_READY)
        fb_info("%s %s (%llu bytes of random data)", action == SCRATCH_CREATE ? "creating" : "extending",
                c->path, (unsigned long long)c->size);
    /* the library reports; the bar is drawn here (a copy of the config carries it) */
    struct sweep_config drawn = *c;
    struct cli_progress bar;
    struct progress_report report = cli_progress_report(&bar);
    drawn.progress = &report;
    drawn.folder = *folder;
    s.cfg = &drawn;
    int rc = sweep_run(&s, action, params, err, sizeof err);
    cli_progress_end(&bar);
    if (err[0])
        fb_error("%s", err);
    if (s.n_points)
        fb_info("%zu of %zu points written to %s/sweep.{json,csv,md}%s", s.n_points, s.total, c->out_dir,
                c->plot ? " with throughput.{png,svg}" : "");
    else if (s.provenance) /* measuring had started */
        fb_info("no point finished; nothing written");
    char *verdict = sweep_verdict(&s);
    if (verdict)
        printf("%s", verdict);
    free(verdict);
    sweep_free(&s);
    return rc;
}

/* --fault and --fault-seed into f; 0, or 2 after saying what is wrong. */
static int sweep_fault(const struct sweep_opts *o, struct io_fault *f)
{
    struct io_fault_spec spec;
    char err[512];
    if ((o->fault || opts_given(&sweep_command, o, "fault-engine")) && strcmp(o->engine, "fault") != 0) {
        fb_error("sweep --%s: needs --engine fault (the engine that injects them)",
                 o->fault ? "fault" : "fault-engine");
        return 2;
    }
    if (io_fault_parse(o->fault, o->fault_seed, &spec, err, sizeof err) != 0) {
        fb_error("sweep --fault: %s", err);
        return 2;
    }
    io_fault_init(f, &spec);
    return 0;
}

int cmd_sweep(int argc, char **argv, const struct fb_settings *set)
{
    struct sweep_opts o;
    int rc;
    if (!cli_start(&sweep_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    if (!o.file) {
        fb_error("sweep: needs --file PATH (the file to read; created if missing)");
        opts_free(&sweep_command, &o);
        return 1;
    }
    struct sweep_config c = {
        .path = o.file,
        .size = o.size,
        .chunks = o.chunks,
        .threads = o.threads,
        .engine = ioengine_find(ioengine_with_faults(o.engine, o.fault_engine)),
        .iodepth = (unsigned)o.iodepth,
        .direct = !o.buffered,
        .runtime_s = o.runtime,
        .ramp_s = o.ramp,
        .rounds = (unsigned)o.rounds,
        .compare_fio = o.compare_fio,
        .fio_mem = o.fio_mem,
        .plot = o.plot,
        .settings = set,
        .seed = o.seed,
        .huge_pages = !o.small_pages,
    };
    char out_dir[4096];
    result_dir_name(o.out, "sweep", out_dir, sizeof out_dir);
    c.out_dir = out_dir;
    if (!c.engine) { /* io_uring in a build without liburing */
        fb_error("sweep --engine: unknown engine '%s' (available: %s)", ioengine_with_faults(o.engine, o.fault_engine),
                 ioengine_names());
        opts_free(&sweep_command, &o);
        return 2;
    }
    if (o.iodepth > 1 && (c.engine->flags & IOENGINE_SYNC))
        fb_warn("engine %s is synchronous: --iodepth %llu runs as 1 per thread", c.engine->name,
                (unsigned long long)o.iodepth);
    struct io_fault fault;
    if (sweep_fault(&o, &fault) != 0) {
        opts_free(&sweep_command, &o);
        return 2;
    }
    c.fault = !strcmp(o.engine, "fault") ? &fault : NULL;
    cJSON *params = opts_to_json(&sweep_command, &o);
    cJSON_ReplaceItemInObject(params, "out", cJSON_CreateString(c.out_dir));
    struct out_manifest *folder;
    rc = run_sweep("sweep", sweep_flags, &c, params, o.force, &folder);
    opts_free(&sweep_command, &o);
    return out_result_dir_close(folder, rc);
}
