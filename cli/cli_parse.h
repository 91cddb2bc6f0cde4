/* The program's side of common/options.h: the parser returns its error and
 * asks for help; here they are printed (stderr and stdout), so that every
 * subcommand says them the same way. */
#ifndef FLASHBED_CLI_CLI_PARSE_H
#define FLASHBED_CLI_CLI_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/options.h"

/* opts_parse, then prints what it found: the command's --help on stdout
 * (returns 1: exit 0), or "flashbed: error: <message>" on stderr (returns -1:
 * exit 2). 0: parsed. The caller frees `out` with opts_free in every case. */
int cli_parse(const struct opt_command *cmd, void *out, int argc, char **argv, char **positional,
              int *n_positional);

/* The start every command shares: out zeroed (size bytes), then
 * cli_parse. true when the command goes on; false when it stops there,
 * its options freed and *status its exit status (0 after --help or with
 * --check-args, 2 for a bad option). */
bool cli_start(const struct opt_command *cmd, void *out, size_t size, int argc, char **argv, char **positional,
               int *n_positional, int *status);

/* With on, every command stops once its options parse (the global option
 * --check-args, and reproduce --check-plan): cli_parse then returns 1 on
 * success, as for --help, so the command frees its options and exits 0
 * having done nothing, and fails as ever on a bad option. */
void cli_parse_only(bool on);

/* "WHERE: unknown KIND 'GIVEN': did you mean 'X'? (a, b or c)" on stderr
 * (WHERE "": no prefix but the program's),
 * the suggestion when one of the n names is near GIVEN (common/suggest.h). */
void cli_unknown_word(const char *where, const char *kind, const char *given, const char *const *names, size_t n);

/* The error of a command with subcommands (names[n]) given argv without
 * one of them: "CMD: needs a subcommand, a or b" when argv[1] is missing or
 * an option, else cli_unknown_word's "unknown subcommand" with its guess. */
void cli_subcommand_error(const char *cmd, const char *const *names, size_t n, int argc, char **argv);

/* flashbed's global options (main.c's table): a command's parse refuses
 * one given after the command saying where it goes (opts_parse). */
void cli_set_global_options(const struct opt_def *opts);

/* opts_parse_prefix, printing its error; 0 or -1. */
int cli_parse_prefix(const struct opt_command *cmd, void *out, int argc, char **argv, int *next);

#endif
