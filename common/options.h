/* Command-line options declared as data (as fio does): each subcommand
 * describes its options in a table of opt_def, and one parser fills the
 * command's own struct, prints --help and dumps the values as JSON for
 * the provenance of every result file. */
#ifndef FLASHBED_COMMON_OPTIONS_H
#define FLASHBED_COMMON_OPTIONS_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/limits.h" /* FB_MAX_THREADS, FB_MAX_IODEPTH for option ranges */

enum opt_type {
    OPT_FLAG,      /* bool; "--name" sets it */
    OPT_STRING,    /* char * (heap) */
    OPT_UINT,      /* uint64_t */
    OPT_DOUBLE,    /* double */
    OPT_SIZE,      /* uint64_t bytes, "4G" */
    OPT_SIZE_LIST, /* struct u64_list of bytes, "4k,32k" */
    OPT_UINT_LIST, /* struct u64_list, "1,2,4" */
    OPT_DURATION,  /* double seconds, "2", "500ms" */
};

/* For opt_def.max: no upper bound. */
#define OPT_NO_MAX HUGE_VAL

struct opt_def {
    const char *name;    /* long name without dashes */
    enum opt_type type;
    size_t offset;       /* offsetof(the command's struct, field) */
    const char *def;     /* default, as the user would type it; NULL: unset */
    const char *metavar; /* shown in --help, e.g. "PATH" */
    const char *help;    /* one line */
    /* Constraints, as fio's minval/maxval/posval, checked on the defaults
     * and on what the user gives, and shown by --help. Rows that leave them
     * out (positional initializers of the six fields above) constrain
     * nothing. Declared with designated initializers after the six:
     *   {"iodepth", OPT_UINT, O(iodepth), "1", "N", "reads in flight",
     *    .min = 1, .max = FB_MAX_IODEPTH},
     *   {"persist", OPT_DOUBLE, O(persist), "0", "P", "...", .max = 1, .max_open = true},
     *   {"dtype", OPT_STRING, O(dtype), "f32", "TYPE", "...", .allowed = "f32|f16|bf16"}, */
    double min, max; /* OPT_UINT, OPT_DOUBLE, OPT_SIZE, OPT_DURATION, and each element of
                      * OPT_SIZE_LIST / OPT_UINT_LIST: the value lies in [min, max]. In
                      * force when either is non-zero; then max > min is required
                      * (OPT_NO_MAX: no upper bound). */
    bool max_open;   /* [min, max): max itself is refused */
    const char *allowed; /* OPT_STRING: the accepted values, '|'-separated ("f32|f16|bf16") */
};

#define OPT_END {.name = NULL}

struct opt_command {
    const char *name;       /* "sweep" */
    const char *usage;      /* text after "flashbed sweep", e.g. "--file PATH [options]" */
    const char *summary;    /* one paragraph printed by --help */
    const struct opt_def *opts;
    int max_positional;     /* how many bare arguments the command takes */
};

/* Fills `out` from defaults, then from argv (argv[0] is the subcommand).
 * Bare arguments go to positional[] (at most cmd->max_positional).
 * Returns 0 on success, 1 when --help was printed (caller exits 0),
 * -1 on a bad option (message already printed). */
int opts_parse(const struct opt_command *cmd, void *out, int argc, char **argv,
               char **positional, int *n_positional);

/* The same for options placed before a subcommand (flashbed's global
 * options): parsing stops at the first bare argument, whose index in argv
 * goes to *next (argc when there is none). */
int opts_parse_prefix(const struct opt_command *cmd, void *out, int argc, char **argv, int *next);

/* Frees strings and lists held by `out`. */
void opts_free(const struct opt_command *cmd, void *out);

void opts_print_help(const struct opt_command *cmd, FILE *f);

/* One line per option of the table: name, help, default and constraints. */
void opts_print_options(const struct opt_def *opts, FILE *f);

/* {"name": value, ...} for every option, defaults included. */
cJSON *opts_to_json(const struct opt_command *cmd, const void *values);

/* True when the user gave the option explicitly (not a default). */
bool opts_given(const struct opt_command *cmd, const void *values, const char *name);

#endif
