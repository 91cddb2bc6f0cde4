/* flashbed: one program, many subcommands. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/options.h"
#include "common/parse.h"
#include "common/provenance.h"
#include "common/settings.h"

struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv, const struct fb_settings *set);
    const struct subcommand *subs; /* the subcommands it runs, listed under it by --help; NULL: none */
};

static const struct command commands[] = {
    {"sweep", "random-read throughput over chunk size x threads (Fig. 2b), optionally beside fio",
     cmd_sweep},
    {"calibrate", "measure this machine (flash, DRAM copies, compute) into a hardware profile",
     cmd_calibrate},
    {"predict", "per-token I/O, memory and compute latency from the cost model; the paper's tables",
     cmd_predict},
    {"trace", "activation traces:", cmd_trace, trace_subcommands},
    {"replay", "replay a trace under DRAM caching policies x flash layouts (bytes, reads, DRAM per token)", cmd_replay},
    {"convert", "a Hugging Face folder, a GGUF file or a llama2.c checkpoint into a flashbed model folder",
     cmd_convert},
    {"generate", "generate text with the dense (all-in-DRAM) engine", cmd_generate},
    {"perplexity", "perplexity of a model on a text file", cmd_perplexity},
    {"run", "the model with its FFN on flash (the paper's system), measured per token: I/O, memory, compute", cmd_run},
    {"predictor", "activation predictors:", cmd_predictor, predictor_subcommands},
    {"sparsify", "training-free FFN sparsity:", cmd_sparsify, sparsify_subcommands},
    {"model", "model folders:", cmd_model, model_subcommands},
    {"reproduce", "the paper's study in one command: Fig. 2b, calibration, traces, policies, Table 3; REPORT.md",
     cmd_reproduce},
};

/* Settings every command shares, given before the command. Each falls back
 * to an environment variable, read here only: they become one struct
 * fb_settings (common/settings.h) passed down to the command, and
 * provenance records what was in force. */
struct global_opts {
    char *configs;
    char *plots_dir;
    uint64_t min_parallel_work;
    uint64_t sim_fail_at, sim_delay_us;
    uint64_t opencl_device;
    bool opencl_device_set; /* by the option or the environment */
    bool no_pin;
    bool check_args;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define O(f) offsetof(struct global_opts, f)
static const struct opt_def global_options[] = {
    {"configs", OPT_STRING, O(configs), NULL, "DIR",
     "model shapes, hardware profiles, paper numbers [default: $FLASHBED_CONFIGS, else the source tree's configs/]"},
    {"plots-dir", OPT_STRING, O(plots_dir), NULL, "DIR",
     "gnuplot scripts [default: $FLASHBED_PLOTS_DIR, else the source tree's plots/]"},
    {"min-parallel-work", OPT_UINT, O(min_parallel_work), NULL, "N",
     "cpu backend: multiply-adds below which a step runs on one thread, 0: every step on the team "
     "[default: $FLASHBED_MIN_PARALLEL_WORK, else 32768]"},
    {"sim-fail-at", OPT_UINT, O(sim_fail_at), NULL, "N",
     "sim backend: the Nth copy or launch (1-based) fails, reported at the next wait; 0: none "
     "[default: $FLASHBED_SIM_FAIL_AT, else 0]"},
    {"sim-delay-us", OPT_UINT, O(sim_delay_us), NULL, "US",
     "sim backend: microseconds its queue waits before each command; 0: none "
     "[default: $FLASHBED_SIM_DELAY_US, else 0]"},
    {"opencl-device", OPT_UINT, O(opencl_device), NULL, "N",
     "opencl backend: compute on device N, counted over every platform's devices in order "
     "[default: $FLASHBED_OPENCL_DEVICE, else the first GPU, else the first device]"},
    {"no-pin", OPT_FLAG, O(no_pin), NULL, NULL,
     "cpu backend: leave the compute threads where the scheduler puts them, instead of one per CPU "
     "[default: pinned, unless $FLASHBED_NO_PIN is 1]"},
    {"check-args", OPT_FLAG, O(check_args), NULL, NULL,
     "parse the command's options and stop: exit 0 when they parse, 2 with the error when not (a job file's "
     "lines checked before a long study)"},
    OPT_END,
};
#undef O

static const struct opt_command global_command = {
    .name = "flashbed",
    .usage = "[global options] COMMAND [options]",
    .summary = "",
    .opts = global_options,
    .max_positional = 0,
    OPT_GIVEN_AT(struct global_opts, given),
};

static void usage(FILE *f)
{
    fprintf(f, "usage: flashbed [global options] COMMAND [options]   (flashbed COMMAND --help for its options)\n\n"
               "A testbed for running language models whose weights live on flash.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        fprintf(f, "  %-21s %s\n", commands[i].name, commands[i].summary);
        for (const struct subcommand *sc = commands[i].subs; sc && sc->name; sc++) {
            char both[64];
            snprintf(both, sizeof both, "%s %s", commands[i].name, sc->name);
            fprintf(f, "    %-19s %s\n", both, sc->summary);
        }
    }
    fprintf(f, "\nglobal options (before COMMAND):\n");
    opts_print_options(global_options, f);
}

/* *value from the environment variable env when the command line left
 * option out; 0, or -1 after saying why it does not parse. */
static int env_uint(const struct global_opts *g, const char *option, const char *env, uint64_t *value)
{
    const char *v = getenv(env);
    if (opts_given(&global_command, g, option) || !v || !*v)
        return 0;
    char err[256];
    if (parse_uint(v, value, err, sizeof err) != 0) {
        fb_error("%s: %s", env, err);
        return -1;
    }
    return 0;
}

/* The environment's value for each global option the command line left out. */
static int apply_env(struct global_opts *g)
{
    const char *env;
    if (!opts_given(&global_command, g, "configs") && (env = getenv("FLASHBED_CONFIGS")) && *env) {
        free(g->configs);
        g->configs = strdup(env);
    }
    if (!opts_given(&global_command, g, "plots-dir") && (env = getenv("FLASHBED_PLOTS_DIR")) && *env) {
        free(g->plots_dir);
        g->plots_dir = strdup(env);
    }
    if (!g->no_pin && (env = getenv("FLASHBED_NO_PIN")) && !strcmp(env, "1"))
        g->no_pin = true;
    g->opencl_device_set = opts_given(&global_command, g, "opencl-device") ||
                           ((env = getenv("FLASHBED_OPENCL_DEVICE")) && *env);
    return env_uint(g, "min-parallel-work", "FLASHBED_MIN_PARALLEL_WORK", &g->min_parallel_work) ||
                   env_uint(g, "sim-fail-at", "FLASHBED_SIM_FAIL_AT", &g->sim_fail_at) ||
                   env_uint(g, "sim-delay-us", "FLASHBED_SIM_DELAY_US", &g->sim_delay_us) ||
                   env_uint(g, "opencl-device", "FLASHBED_OPENCL_DEVICE", &g->opencl_device)
               ? -1
               : 0;
}

/* The settings g gives: a folder left out or given as "" is the default's. */
static struct fb_settings settings_of(const struct global_opts *g)
{
    struct fb_settings set = fb_settings_defaults();
    if (g->configs && *g->configs)
        set.configs_dir = g->configs;
    if (g->plots_dir && *g->plots_dir)
        set.plots_dir = g->plots_dir;
    set.min_parallel_work = (size_t)g->min_parallel_work;
    set.pin_threads = !g->no_pin;
    set.sim_fail_at = g->sim_fail_at;
    set.sim_delay_us = g->sim_delay_us;
    if (g->opencl_device_set)
        set.opencl_device = g->opencl_device > INT32_MAX ? INT32_MAX : (int64_t)g->opencl_device;
    return set;
}

/* Every result's provenance records the settings in force (the sim
 * backend's injected faults and delays when there are any: a result
 * without them reads as before they existed). */
static void record_settings(const struct fb_settings *set)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "configs_dir", set->configs_dir);
    cJSON_AddStringToObject(s, "plots_dir", set->plots_dir);
    cJSON_AddNumberToObject(s, "min_parallel_work", (double)set->min_parallel_work);
    cJSON_AddBoolToObject(s, "pin_threads", set->pin_threads);
    if (set->sim_fail_at)
        cJSON_AddNumberToObject(s, "sim_fail_at", (double)set->sim_fail_at);
    if (set->sim_delay_us)
        cJSON_AddNumberToObject(s, "sim_delay_us", (double)set->sim_delay_us);
    if (set->opencl_device >= 0)
        cJSON_AddNumberToObject(s, "opencl_device", (double)set->opencl_device);
    provenance_set_settings(s);
}

/* The global options into g (the caller's: set borrows its strings, so the
 * caller frees g once the command is done) and the settings they give. */
static int parse_globals(struct global_opts *g, int argc, char **argv, int *next, struct fb_settings *set)
{
    int rc = cli_parse_prefix(&global_command, g, argc, argv, next);
    if (rc == 0)
        rc = apply_env(g);
    if (rc == 0) {
        *set = settings_of(g);
        record_settings(set);
    }
    cli_parse_only(g->check_args);
    return rc;
}

/* The error of a command name that is none, with the one it likely meant. */
static void unknown_command(const char *name)
{
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        names[i] = commands[i].name;
    cli_unknown_word("", "command", name, names, sizeof names / sizeof names[0]);
    fprintf(stderr, "\n");
    usage(stderr);
}

int cli_run_command(int argc, char **argv, const struct fb_settings *set)
{
    if (argc < 1) {
        usage(stderr);
        return FB_EXIT_USAGE;
    }
    bool help_of = argc > 1 && strcmp(argv[0], "help") == 0; /* flashbed help COMMAND */
    if (!help_of && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "help") == 0)) {
        usage(stdout);
        return FB_EXIT_OK;
    }
    const char *name = help_of ? argv[1] : argv[0];
    char *help_argv[] = {argv[help_of], "--help", NULL};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return help_of ? commands[i].run(2, help_argv, set) : commands[i].run(argc, argv, set);
    unknown_command(name);
    return FB_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    provenance_set_argv(argc, argv);
    /* Until a long run asks to poll, Ctrl-C removes unfinished output and exits. */
    interrupt_exit_on_signal();
    struct global_opts g = {.min_parallel_work = FB_MIN_PARALLEL_WORK_DEFAULT};
    struct fb_settings set;
    int next = argc;
    cli_set_global_options(global_options);
    int rc = parse_globals(&g, argc, argv, &next, &set) != 0 ? 2 : cli_run_command(argc - next, argv + next, &set);
    opts_free(&global_command, &g);
    return rc;
}
