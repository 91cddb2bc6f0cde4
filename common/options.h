/* Command-line options declared as data (as fio does): each subcommand
 * describes its options in tables of opt_def, and one parser fills the
 * command's own struct, writes --help and dumps the values as JSON for
 * the provenance of every result file.
 *
 * A library: nothing here prints on its own. A parse that fails returns -1
 * with its one-line message in the caller's buffer, and a request for help
 * returns 1; the program prints either (opts_print_help writes to the FILE
 * it is given).
 *
 * Options several commands share (generate's and run's prompt and sampling
 * options) are declared once, as a fragment: a table whose offsets are
 * relative to a struct that each command embeds at its own offset, listed
 * among the command's `tables`. A command that wants another default for a
 * fragment's option says so in its `defaults`. */
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
    const char *help;    /* one line; --help adds " [default: DEF]" unless it says
                          * "[default" itself (once, for the whole default) */
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
    const char *allowed; /* OPT_STRING: the accepted values, '|'-separated ("f32|f16|bf16").
                          * OPT_UINT with a range from min >= 1: one word accepted besides
                          * the numbers, stored as 0 ("auto": the program chooses) */
    char short_name;     /* also accepted as "-c VALUE" (.short_name = 'n': "-n 64"); --help says so */
    bool percent;        /* OPT_DOUBLE: "50%" is accepted too, as 0.5 (a share, as --dram-budget takes one) */
    const char *unit_guess; /* OPT_SIZE: the units a number without one is suggested with, comma-separated
                             * ("k,m": "did you mean 256k or 256m?"); NULL: "G" */
};

#define OPT_END {.name = NULL}

/* A table of options whose offsets are relative to `base` within the
 * command's struct (offsetof(the command's struct, the embedded fragment)). */
struct opt_table {
    const struct opt_def *opts;
    size_t base;
};

#define OPT_TABLES_END {.opts = NULL}

/* Options a command may have, all its tables together. */
#define OPT_MAX_OPTS 64

/* Which options a parse took from the command line rather than a default.
 * A struct whose command asks (opts_given) holds one, and the command says
 * where: OPT_GIVEN_AT(struct run_opts, given) among its fields. So each
 * parsed struct answers for itself, whatever was parsed after it. */
struct opt_given {
    bool set[OPT_MAX_OPTS];
};
#define OPT_GIVEN_AT(type, member) .given = offsetof(type, member), .keeps_given = true

/* The command's own default for an option of a shared table. */
struct opt_default {
    const char *name;
    const char *def; /* as the user would type it */
};

#define OPT_DEFAULTS_END {.name = NULL}

struct opt_command {
    const char *name;       /* "sweep" */
    const char *usage;      /* text after "flashbed sweep", e.g. "--file PATH [options]" */
    const char *summary;    /* one paragraph printed by --help */
    const struct opt_def *opts; /* the command's table, at offset 0; NULL: only `tables` */
    int max_positional;     /* how many bare arguments the command takes */
    /* More tables, after `opts`, in the order --help and the JSON list them;
     * ended by OPT_TABLES_END. NULL: none. An option name appears once in all. */
    const struct opt_table *tables;
    /* Defaults that replace the tables' own, by option name; ended by
     * OPT_DEFAULTS_END. NULL: none. */
    const struct opt_default *defaults;
    /* Where the command's struct keeps its struct opt_given (OPT_GIVEN_AT);
     * without keeps_given nothing is kept and opts_given answers false. */
    size_t given;
    bool keeps_given;
    /* The program's options that go before the command (flashbed's global
     * options): one of them given after the command is refused saying where
     * it goes, and their names are among an unknown option's suggestions.
     * NULL: none (cli_parse fills it in). */
    const struct opt_def *before_command;
};

/* Fills `out` from defaults, then from argv (argv[0] is the subcommand).
 * An unknown option's error ends with "did you mean --NAME?" when one of
 * the command's options is near it (common/suggest.h).
 * Bare arguments go to positional[] (at most cmd->max_positional).
 * Returns 0 on success, 1 when --help or -h was asked for (the caller
 * prints opts_print_help and exits 0), -1 on a bad option or a table
 * declared wrong, with the message in err (one line, without a prefix such
 * as "error: "). Either way the caller frees `out` with opts_free. */
int opts_parse(const struct opt_command *cmd, void *out, int argc, char **argv,
               char **positional, int *n_positional, char *err, size_t errlen);

/* The same for options placed before a subcommand (flashbed's global
 * options): parsing stops at the first bare argument, whose index in argv
 * goes to *next (argc when there is none); --help there is the caller's. */
int opts_parse_prefix(const struct opt_command *cmd, void *out, int argc, char **argv, int *next,
                      char *err, size_t errlen);

/* Frees strings and lists held by `out`. */
void opts_free(const struct opt_command *cmd, void *out);

void opts_print_help(const struct opt_command *cmd, FILE *f);

/* One line per option of the table: name, help, default and constraints
 * (the table's own defaults). */
void opts_print_options(const struct opt_def *opts, FILE *f);

/* {"name": value, ...} for every option, defaults included. */
cJSON *opts_to_json(const struct opt_command *cmd, const void *values);

/* True when the user gave the option explicitly (not a default), as the
 * parse into values recorded it (the command keeps it: OPT_GIVEN_AT). */
bool opts_given(const struct opt_command *cmd, const void *values, const char *name);

#endif
