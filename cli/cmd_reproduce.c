/* flashbed reproduce: the paper's study in one command (harness/reproduce.h):
 * parse, plan, run the steps (or write them as a plan, or merge folders),
 * print where REPORT.md is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/backend_opts.h"
#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "cli/study_run.h"
#include "common/atomic_file.h"
#include "common/log.h"
#include "common/options.h"
#include "common/provenance.h"
#include "common/strbuf.h"
#include "common/subprocess.h"
#include "harness/reproduce.h"
#include "harness/reproduce_disk.h"

struct reproduce_opts {
    bool tiny, quick, full, merge, check_plan, clean;
    char *models, *disk, *data, *gguf_dir, *out, *plan;
    uint64_t memory;
};

#define O(f) offsetof(struct reproduce_opts, f)
static const struct opt_def reproduce_options[] = {
    {"tiny", OPT_FLAG, O(tiny), NULL, NULL, "every step on the tiny shapes (well under a minute; for tests)"},
    {"quick", OPT_FLAG, O(quick), NULL, NULL,
     "OPT-1.3B and the tiny shapes of the others, Table 3's CPU rows also at Phi-2 and a 1.1B Llama where they "
     "fit (the default)"},
    {"full", OPT_FLAG, O(full), NULL, NULL, "the paper's scale: 7B shapes, 128 + 256 tokens"},
    {"models", OPT_STRING, O(models), "opt,falcon,persimmon,phi,llama2", "LIST",
     "architectures: opt, falcon, persimmon, phi, llama2"},
    {"disk", OPT_STRING, O(disk), NULL, "DIR", "a folder on the disk to measure (Fig. 2b's scratch file goes there) [default: --out]"},
    {"data", OPT_STRING, O(data), "../shared/data", "DIR", "the shared data: stories260K and its text, for the recorded trace"},
    {"gguf-dir", OPT_STRING, O(gguf_dir), ".models", "DIR",
     "the real GGUF models tools/fetch-models.sh fetched (SmolLM2, Gemma 3 270M), looked for before --data's models/"},
    {"memory", OPT_SIZE, O(memory), "0", "SIZE",
     "--quick measures Table 3 at a real shape whose f16 weights fit half of this [default: 0, this machine's memory]"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "the study's folder; run again with the same --out to resume [default: results/reproduce-TIER]"},
    {"plan", OPT_STRING, O(plan), NULL, "FILE", "write one command per model (each a study of its own folder, for GNU parallel or a Slurm array) instead of running"},
    {"merge", OPT_FLAG, O(merge), NULL, NULL, "collect the studies in --out's subfolders into one REPORT.md"},
    {"check-plan", OPT_FLAG, O(check_plan), NULL, NULL,
     "run nothing: parse every step's command line against that command's options (each flag the plan writes "
     "exists and takes its value) and say which do not"},
    {"clean", OPT_FLAG, O(clean), NULL, NULL,
     "run nothing: remove the big files the study made and can make again, and nothing else: its model folders "
     "(converted models, their predictors) and Fig. 2b's scratch file; the results stay (give the options the "
     "study ran with)"},
    OPT_END,
};
#undef O

static const struct opt_command reproduce_command = {
    .name = "reproduce",
    .usage = "[--tiny | --quick | --full] [--models LIST] [--disk DIR] [--out DIR] [--plan FILE | --merge | --clean]",
    .summary = "Runs the paper's study on this machine, each step a flashbed command with its result folder\n"
               "under --out: Fig. 2b (sweep beside fio), calibration, calibrated synthetic traces of every\n"
               "model's shape and a trace recorded from stories260K, the policy study (replay), Tables 2\n"
               "and 3 measured (every mode, neurons from the trace and from a trained predictor, rounds\n"
               "alternating) beside the cost model and the paper, Fig. 8 (every token of a long run), and\n"
               "Fig. 7 (the first model with --window auto at each DRAM share, beside predict's price of\n"
               "window:auto and the paper's modelled curve). Then REPORT.md. A finished step is not run\n"
               "again: repeat the command to resume after Ctrl-C or a failure. Before the first step it says\n"
               "the disk it will use (and refuses when the disk lacks it); in a log, a line per step; at the\n"
               "end it offers to remove its model folders and scratch file (--clean).",
    .opts = reproduce_options,
    .max_positional = 0,
};

/* The device backends (every one whose memory is not the host's) that
 * have a device here, for Table 3's device rows; the others, with why,
 * into c->devices_absent. Describing builds nothing (backend.h). */
static void find_devices(struct repro_config *c)
{
    const struct backend_ops *ops;
    for (size_t i = 0; (ops = backend_nth(i)) && c->n_devices < REPRO_MAX_DEVICES; i++) {
        struct cli_backend b;
        char err[1024];
        if (cli_backend_probe(ops->name, c->settings, &b, err, sizeof err) == 0) {
            if (b.dev.host_visible)
                continue; /* cpu: the host's rows */
            struct repro_device *d = &c->devices[c->n_devices++];
            snprintf(d->backend, sizeof d->backend, "%s", ops->name);
            snprintf(d->device, sizeof d->device, "%.*s", (int)sizeof d->device - 1, b.dev.device);
            d->emulated = b.dev.emulated;
            continue;
        }
        size_t n = strlen(c->devices_absent);
        snprintf(c->devices_absent + n, sizeof c->devices_absent - n, "%s%s (%.160s)", n ? "; " : "", ops->name, err);
    }
}

static int parse_tier(const struct reproduce_opts *o, enum repro_tier *tier)
{
    if (o->tiny + o->quick + o->full > 1) {
        fb_error("reproduce: give one of --tiny, --quick, --full");
        return -1;
    }
    *tier = o->tiny ? REPRO_TINY : o->full ? REPRO_FULL : REPRO_QUICK;
    return 0;
}

/* --models into c->models (pointers into list, which the caller keeps). */
static int parse_models(char *list, struct repro_config *c)
{
    for (char *m = strtok(list, ","); m; m = strtok(NULL, ",")) {
        if (c->n_models == REPRO_MAX_MODELS) {
            fb_error("reproduce --models: at most %d", REPRO_MAX_MODELS);
            return -1;
        }
        c->models[c->n_models++] = m;
    }
    if (!c->n_models) {
        fb_error("reproduce --models: empty list");
        return -1;
    }
    return 0;
}

static int write_plan(const struct reproduce_opts *o, const struct repro_config *c, const char *program)
{
    static const char *const tier_flag[] = {"--tiny", "--quick", "--full"};
    struct strbuf b = {0};
    for (size_t i = 0; i < c->n_models; i++)
        strbuf_add(&b,
                   "%s --configs '%s' --plots-dir '%s' reproduce %s --models %s --disk '%s' --data '%s' --gguf-dir '%s' "
                   "--out '%s/%s'\n",
                   program, c->settings->configs_dir, c->settings->plots_dir, tier_flag[c->tier], c->models[i], c->disk,
                   c->data, c->gguf_dir, c->out, c->models[i]);
    char *text = strbuf_take(&b), err[4400];
    if (!text || atomic_write_text(NULL, o->plan, text, err, sizeof err) != 0) {
        fb_error("reproduce --plan: %s", text ? err : "out of memory");
        free(text);
        return 1;
    }
    free(text);
    fb_info("%zu independent studies written to %s (each line its own folder; then: flashbed reproduce --merge --out %s)",
            c->n_models, o->plan, c->out);
    return 0;
}

/* The real shapes the plan adds for Table 3's CPU rows, and those left out. */
static void say_table3_shapes(const struct repro_plan *p)
{
    char shapes[256] = "";
    for (size_t i = 0, n = 0; i < p->config.n_models; i++)
        if (p->table3_shape[i][0])
            n += (size_t)snprintf(shapes + n, n < sizeof shapes ? sizeof shapes - n : 0, "%s%s", n ? ", " : "",
                                  p->table3_shape[i]);
    if (shapes[0])
        fb_info("Table 3's CPU rows also at the real shapes %s", shapes);
    if (p->table3_left_out[0])
        fb_info("Table 3's real shapes left out: %s", p->table3_left_out);
}

/* --check-plan: every step's arguments through its command's parser, the
 * command stopping there (cli_parse_only). 0 when all parse, else 1. */
static int check_plan(const struct repro_config *c)
{
    char err[8192], line[8192];
    struct repro_plan plan;
    if (repro_plan_build(c, &plan, err, sizeof err) != 0) {
        fb_error("reproduce: %s", err);
        return 2;
    }
    size_t bad = 0, checked = 0;
    cli_parse_only(true);
    for (size_t i = 0; i < plan.n; i++) {
        if (!strcmp(plan.steps[i].args[0], REPRO_REMOVE))
            continue; /* the runner's own step, not a flashbed command */
        checked++;
        int argc = 0;
        while (plan.steps[i].args[argc])
            argc++;
        if (cli_run_command(argc, plan.steps[i].args, c->settings) != 0) {
            repro_step_command(&plan.steps[i], "flashbed", line, sizeof line);
            fb_error("reproduce --check-plan: step %s does not parse: %s", plan.steps[i].id, line);
            bad++;
        }
    }
    cli_parse_only(false);
    if (!bad)
        fb_info("the %s plan's %zu flashbed commands all parse (%zu steps)", repro_tier_name(c->tier), checked,
                plan.n);
    say_table3_shapes(&plan);
    repro_plan_free(&plan);
    return bad ? 1 : 0;
}

static double mib(uint64_t bytes)
{
    return bytes / 1048576.0;
}

/* The plan's disk use, said before it starts; -1 (printed) when the disk
 * lacks the room. */
static int say_disk(const struct repro_plan *plan)
{
    struct repro_disk d;
    char err[4400];
    if (repro_disk_estimate(plan, &d, err, sizeof err) != 0) {
        fb_error("reproduce: estimating the disk it needs: %s", err);
        return -1;
    }
    fb_info("disk: %.1f MiB at most (models %.1f MiB, predictors %.1f MiB, scratch file %.1f MiB, traces at most "
            "%.1f MiB, results and logs %.1f MiB at %u KiB a step, %u KiB with plots, a Hugging Face folder %.1f MiB "
            "while converted); "
            "%.1f MiB of it not there yet",
            mib(d.total), mib(d.models), mib(d.predictors), mib(d.scratch), mib(d.traces), mib(d.results),
            REPRO_DISK_RESULTS_PER_STEP / 1024, REPRO_DISK_RESULTS_PLOTS / 1024, mib(d.hf_peak), mib(d.need_out + d.need_disk));
    if (repro_disk_check(plan, &d, err, sizeof err) == 0)
        return 0;
    fb_error("reproduce: %s", err);
    return -1;
}

static void list_one(void *ctx, const char *path, uint64_t bytes)
{
    (void)ctx;
    fprintf(stderr, "  %s (%.1f MiB)\n", path, mib(bytes));
}

/* --clean: what the study made and can make again, removed. */
static int clean_study(const struct repro_config *c)
{
    char err[8192];
    struct repro_plan plan;
    if (repro_plan_build(c, &plan, err, sizeof err) != 0) {
        fb_error("reproduce: %s", err);
        return 2;
    }
    uint64_t removed = 0;
    repro_clean_list(&plan, list_one, NULL);
    int rc = repro_clean(&plan, &removed, err, sizeof err);
    if (rc != 0)
        fb_error("reproduce --clean: %s", err);
    else
        fb_info("removed %.1f MiB: the study's model folders and scratch file (its results stay; running the study "
                "again makes them again)", mib(removed));
    repro_plan_free(&plan);
    return rc == 0 ? 0 : 1;
}

/* After a finished study: on a terminal, asks whether to remove its big
 * files; in a log, prints the command that does. */
static void offer_clean(const struct repro_plan *plan)
{
    uint64_t bytes = repro_clean_list(plan, NULL, NULL);
    if (!bytes)
        return;
    char line[8192] = "flashbed reproduce";
    cJSON *prov = provenance_new();
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(prov, "command_line");
    if (cJSON_IsString(cl))
        snprintf(line, sizeof line, "%s", cl->valuestring);
    cJSON_Delete(prov);
    if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) {
        fb_info("the study's model folders and scratch file take %.1f MiB; to remove them (the results stay): "
                "%s --clean", mib(bytes), line);
        return;
    }
    repro_clean_list(plan, list_one, NULL);
    fprintf(stderr, "flashbed: remove these (%.1f MiB; the results stay)? [y/N] ", mib(bytes));
    char answer[16] = "";
    if (!fgets(answer, sizeof answer, stdin) || (answer[0] != 'y' && answer[0] != 'Y')) {
        fb_info("kept; later: %s --clean", line);
        return;
    }
    char err[4400];
    uint64_t removed = 0;
    if (repro_clean(plan, &removed, err, sizeof err) != 0)
        fb_error("reproduce: %s", err);
    else
        fb_info("removed %.1f MiB", mib(removed));
}

static int run_study(const struct repro_config *c, const char *program)
{
    char err[8192];
    struct repro_plan plan;
    if (repro_plan_build(c, &plan, err, sizeof err) != 0) {
        fb_error("reproduce: %s", err);
        return 2;
    }
    say_table3_shapes(&plan);
    int rc = 1;
    if (say_disk(&plan) == 0) {
        const struct study_run_spec spec = {"reproduce", program, c->out, repro_report_write, false};
        rc = study_run(&plan, &spec, c->settings);
    }
    if (rc == 0)
        offer_clean(&plan);
    repro_plan_free(&plan);
    return rc;
}

int cmd_reproduce(int argc, char **argv, const struct fb_settings *set)
{
    struct reproduce_opts o;
    memset(&o, 0, sizeof o);
    int rc = cli_parse(&reproduce_command, &o, argc, argv, NULL, NULL);
    struct repro_config c = {.settings = set};
    char out[4096], program[4096];
    if (rc == 0 && (parse_tier(&o, &c.tier) != 0 || parse_models(o.models, &c) != 0))
        rc = -1;
    if (rc != 0) { /* 1: --help (exit 0); -1: a bad option (2) */
        opts_free(&reproduce_command, &o);
        return rc > 0 ? 0 : 2;
    }
    if (study_own_path("reproduce", program, sizeof program) != 0) {
        opts_free(&reproduce_command, &o);
        return 1;
    }
    snprintf(out, sizeof out, "%s", o.out ? o.out : "");
    if (!o.out)
        snprintf(out, sizeof out, "results/reproduce-%s", repro_tier_name(c.tier));
    c.out = out;
    c.disk = o.disk ? o.disk : out;
    c.data = o.data;
    c.gguf_dir = o.gguf_dir;
    c.mem_bytes = o.memory;
    c.fio = program_available("fio");
    if (!o.merge)
        find_devices(&c);
    char err[4400];
    if (o.merge && repro_merge(out, set, err, sizeof err) != 0) {
        fb_error("reproduce --merge: %s", err);
        rc = 1;
    } else if (o.merge) {
        fb_info("report: %s/REPORT.md", out);
    }
    else if (o.check_plan)
        rc = check_plan(&c);
    else if (o.clean)
        rc = clean_study(&c);
    else
        rc = o.plan ? write_plan(&o, &c, program) : run_study(&c, program);
    opts_free(&reproduce_command, &o);
    return rc;
}
