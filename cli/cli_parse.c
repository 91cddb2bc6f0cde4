/* Printing what the option parser (common/options.c) returns. */
#include "cli/cli_parse.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"

/* The program's one switch of this kind: set by main before a command runs. */
static bool parse_only;

void cli_parse_only(bool on)
{
    parse_only = on;
}

int cli_parse(const struct opt_command *cmd, void *out, int argc, char **argv, char **positional,
              int *n_positional)
{
    char err[512];
    int rc = opts_parse(cmd, out, argc, argv, positional, n_positional, err, sizeof err);
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
