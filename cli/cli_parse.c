/* Printing what the option parser (common/options.c) returns. */
#include "cli/cli_parse.h"

#include <stdbool.h>

#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "common/log.h"
#include "common/suggest.h"

/* The program's one switch of this kind: set by main before a command runs. */
static bool parse_only;
/* flashbed's global options, for the error of one given after the command. */
static const struct opt_def *global_options;

void cli_set_global_options(const struct opt_def *opts)
{
    global_options = opts;
}

void cli_parse_only(bool on)
{
    parse_only = on;
}

int cli_parse(const struct opt_command *cmd, void *out, int argc, char **argv, char **positional,
              int *n_positional)
{
    char err[512];
    struct opt_command with_globals = *cmd; /* the same tables and offsets */
    with_globals.before_command = global_options;
    int rc = opts_parse(&with_globals, out, argc, argv, positional, n_positional, err, sizeof err);
    if (rc > 0 && !parse_only)
        opts_print_help(cmd, stdout);
    else if (rc < 0)
        fb_error("%s", err);
    return rc == 0 && parse_only ? 1 : rc;
}

int cli_parse_prefix(const struct opt_command *cmd, void *out, int argc, char **argv, int *next)
{
    char err[512];
    int rc = opts_parse_prefix(cmd, out, argc, argv, next, err, sizeof err);
    if (rc < 0)
        fb_error("%s", err);
    return rc;
}

bool cli_start(const struct opt_command *cmd, void *out, size_t size, int argc, char **argv, char **positional,
               int *n_positional, int *status)
{
    memset(out, 0, size);
    int rc = cli_parse(cmd, out, argc, argv, positional, n_positional);
    if (rc == 0)
        return true;
    opts_free(cmd, out);
    *status = rc > 0 ? 0 : 2;
    return false;
}

void cli_unknown_word(const char *where, const char *kind, const char *given, const char *const *names, size_t n)
{
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
                                 names[i]);
    const char *near = suggest_nearest(given, names, n);
    const char *sep = *where ? ": " : "";
    if (near)
        fb_error("%s%sunknown %s '%s': did you mean '%s'? (%s)", where, sep, kind, given, near, list);
    else
        fb_error("%s%sunknown %s '%s' (%s)", where, sep, kind, given, list);
}

void cli_subcommand_error(const char *cmd, const char *const *names, size_t n, int argc, char **argv)
{
    if (argc >= 2 && argv[1][0] != '-') {
        cli_unknown_word(cmd, "subcommand", argv[1], names, n);
        return;
    }
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
                                 names[i]);
    fb_error("%s: needs a subcommand, %s%s", cmd, list, argc >= 2 ? ", before its options" : "");
}

int cli_subcommands_run(const char *command, const struct subcommand *subs, int argc, char **argv,
                        const struct fb_settings *set)
{
    const char *names[16];
    size_t n = 0;
    for (; subs[n].name && n < sizeof names / sizeof names[0]; n++) {
        names[n] = subs[n].name;
        if (argc >= 2 && strcmp(argv[1], subs[n].name) == 0)
            return subs[n].run(argc - 1, argv + 1, set);
    }
    bool help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    FILE *f = help ? stdout : stderr;
    if (!help)
        cli_subcommand_error(command, names, n, argc, argv);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s flashbed %s %s %s\n", i ? "      " : "usage:", command, subs[i].name,
                subs[i].opts ? subs[i].opts->usage : subs[i].usage);
    return help ? 0 : 2;
}
