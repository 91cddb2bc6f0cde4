/* Command-line options declared as data (as fio does): each subcommand
 * describes its options in a table of opt_def, and one parser fills the
 * command's own struct, prints --help and dumps the values as JSON for
 * the provenance of every result file. */
#ifndef FLASHBED_COMMON_OPTIONS_H
#define FLASHBED_COMMON_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>

#include <cjson/cJSON.h>

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

struct opt_def {
    const char *name;    /* long name without dashes */
    enum opt_type type;
    size_t offset;       /* offsetof(the command's struct, field) */
    const char *def;     /* default, as the user would type it; NULL: unset */
    const char *metavar; /* shown in --help, e.g. "PATH" */
    const char *help;    /* one line */
};

#define OPT_END {NULL, OPT_FLAG, 0, NULL, NULL, NULL}

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

/* Frees strings and lists held by `out`. */
void opts_free(const struct opt_command *cmd, void *out);

void opts_print_help(const struct opt_command *cmd, FILE *f);

/* {"name": value, ...} for every option, defaults included. */
cJSON *opts_to_json(const struct opt_command *cmd, const void *values);

/* True when the user gave the option explicitly (not a default). */
bool opts_given(const struct opt_command *cmd, const void *values, const char *name);

#endif
