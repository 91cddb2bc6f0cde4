/* flashbed: one program, many subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "common/provenance.h"

struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
    {"sweep", "random-read throughput over chunk size x threads (Fig. 2b), optionally beside fio",
     cmd_sweep},
    {"calibrate", "measure this machine (flash, DRAM copies, compute) into a hardware profile",
     cmd_calibrate},
    {"predict", "per-token I/O, memory and compute latency from the cost model; the paper's tables",
     cmd_predict},
    {"trace", "activation traces: info (statistics, Fig. 4a), synth (calibrated synthetic)", cmd_trace},
    {"replay", "replay a trace under DRAM caching policies x flash layouts (bytes, reads, DRAM per token)", cmd_replay},
    {"convert", "import a Hugging Face folder or llama2.c checkpoint as a flashbed model folder", cmd_convert},
    {"generate", "generate text with the dense (all-in-DRAM) engine", cmd_generate},
    {"perplexity", "perplexity of a model on a text file", cmd_perplexity},
    {"run", "the model with its FFN on flash (the paper's system), measured per token: I/O, memory, compute", cmd_run},
    {"model", "model make: a synthetic model of a real shape (HF folder or llama2.c checkpoint)", cmd_model},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: flashbed COMMAND [options]   (flashbed COMMAND --help for its options)\n\n"
               "A testbed for running language models whose weights live on flash.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    provenance_set_argv(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            char *help_argv[] = {argv[2], "--help", NULL};
            for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
                if (strcmp(commands[i].name, argv[2]) == 0)
                    return commands[i].run(2, help_argv);
        }
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, argv[1]) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "flashbed: error: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
