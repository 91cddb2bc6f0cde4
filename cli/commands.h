/* The subcommands of the flashbed program. Each parses its own options
 * (declared as data, common/options.h) and calls into the library, passing
 * down the global settings main built (common/settings.h). */
#ifndef FLASHBED_CLI_COMMANDS_H
#define FLASHBED_CLI_COMMANDS_H

#include "cli/exit_codes.h"
#include "cli/shared.h"
#include "common/options.h"
#include "common/settings.h"

/* One subcommand of a command (trace info, model make, ...): the table a
 * command's dispatcher runs (cli_subcommands_run) is the one that
 * flashbed --help and COMMAND --help list, so help names every
 * subcommand there is. A table ends with a row whose name is NULL. */
struct subcommand {
    const char *name;
    const char *summary; /* one line, for flashbed --help */
    const struct opt_command *opts; /* its options' table, whose usage help shows; NULL: usage */
    const char *usage;              /* its options, after "flashbed COMMAND NAME " (opts NULL) */
    int (*run)(int argc, char **argv, const struct fb_settings *set); /* argv[0] is NAME */
};

extern const struct subcommand trace_subcommands[], model_subcommands[], predictor_subcommands[],
    sparsify_subcommands[];

/* Runs argv[1]'s row of subs with argv from it; COMMAND --help (or -h)
 * lists each row's usage on stdout (0); no row, or one that is none:
 * the error, with the one meant, then the usages on stderr (2). */
int cli_subcommands_run(const char *command, const struct subcommand *subs, int argc, char **argv,
                        const struct fb_settings *set);

int cmd_sweep(int argc, char **argv, const struct fb_settings *set);
int cmd_predict(int argc, char **argv, const struct fb_settings *set);
int cmd_calibrate(int argc, char **argv, const struct fb_settings *set);
int cmd_trace(int argc, char **argv, const struct fb_settings *set);
int cmd_replay(int argc, char **argv, const struct fb_settings *set);
int cmd_convert(int argc, char **argv, const struct fb_settings *set);
int cmd_generate(int argc, char **argv, const struct fb_settings *set);
int cmd_perplexity(int argc, char **argv, const struct fb_settings *set);
int cmd_model(int argc, char **argv, const struct fb_settings *set);
int cmd_run(int argc, char **argv, const struct fb_settings *set);
int cmd_predictor(int argc, char **argv, const struct fb_settings *set);
int cmd_sparsify(int argc, char **argv, const struct fb_settings *set);
int cmd_model_verify(int argc, char **argv); /* cmd_model_verify.c */
int cmd_model_transpose(int argc, char **argv); /* cmd_model_transpose.c */
int cmd_sparsify_study(int argc, char **argv, const struct fb_settings *set); /* cmd_sparsify_study.c */
int cmd_reproduce(int argc, char **argv, const struct fb_settings *set);

/* argv[0] names the command (or help); runs it with set, as main does
 * after the global options. The exit status. */
int cli_run_command(int argc, char **argv, const struct fb_settings *set);

#endif
