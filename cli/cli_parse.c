/* Printing what the option parser (common/options.c) returns. */
#include "cli/cli_parse.h"

#include <stdio.h>

#include "common/log.h"

int cli_parse(const struct opt_command *cmd, void *out, int argc, char **argv, char **positional,
              int *n_positional)
{
    char err[512];
    int rc = opts_parse(cmd, out, argc, argv, positional, n_positional, err, sizeof err);
    if (rc > 0)
        opts_print_help(cmd, stdout);
    else if (rc < 0)
        fb_error("%s", err);
    return rc;
}

int cli_parse_prefix(const struct opt_command *cmd, void *out, int argc, char **argv, int *next)
{
    char err[512];
    int rc = opts_parse_prefix(cmd, out, argc, argv, next, err, sizeof err);
    if (rc < 0)
        fb_error("%s", err);
    return rc;
}
