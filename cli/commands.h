/* The subcommands of the flashbed program. Each parses its own options
 * (declared as data, common/options.h) and calls into the library. */
#ifndef FLASHBED_CLI_COMMANDS_H
#define FLASHBED_CLI_COMMANDS_H

#include "cli/shared.h"

int cmd_sweep(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_predictor(int argc, char **argv);
int cmd_reproduce(int argc, char **argv);

/* argv[0] names the command (or help); runs it, as main does after the
 * global options. The exit status. */
int cli_run_command(int argc, char **argv);

#endif
