/* flashbed model transpose DIR: the model's ffn_t.bin for input sparsity
 * on flash (engine/model/ffn_transposed.h). Exit 0 written, 1 refused or
 * failed (nothing changed), 2 usage. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "common/log.h"
#include "common/options.h"
#include "engine/model/ffn_transposed.h"
#include "engine/model/model.h"

struct model_transpose_opts {
    bool force;
};

#define O(f) offsetof(struct model_transpose_opts, f)
static const struct opt_def model_transpose_options[] = {
    {"force", OPT_FLAG, O(force), NULL, NULL, "replace the model's ffn_t.bin (and its record) when it has one"},
    OPT_END,
};
#undef O

static const struct opt_command model_transpose_command = {
    .name = "model transpose",
    .usage = "DIR [--force]",
    .summary = "Writes DIR/ffn_t.bin, the FFN stored by input channel for input sparsity on flash\n"
               "(run --active teal): per layer one bundle per input channel (up's column, then\n"
               "gate's for a GLU) and one row of down per neuron, each padded for direct I/O\n"
               "(engine/model/model_format.h). Read from ffn.bin one layer at a time, written\n"
               "through a temporary and recorded in model.json (strides, dtype, ffn.bin's hash,\n"
               "provenance): a failure or Ctrl-C leaves the folder as it was. A model that has\n"
               "one is refused unless --force.",
    .opts = model_transpose_options,
    .max_positional = 1,
};

int cmd_model_transpose(int argc, char **argv)
{
    struct model_transpose_opts o;
    char *dir = NULL;
    int n = 0, rc;
    if (!cli_start(&model_transpose_command, &o, sizeof o, argc, argv, &dir, &n, &rc))
        return rc;
    struct model m;
    char err[8400];
    if (n != 1)
        rc = (fb_error("model transpose: needs the model folder: flashbed model transpose DIR"), 2);
    else if (model_open_flags(&m, dir, MODEL_FFN_ON_FLASH, err, sizeof err) != 0)
        rc = (fb_error("model transpose: %s", err), 1);
    else {
        struct cli_progress bar;
        struct progress_report report = cli_progress_report(&bar);
        rc = ffn_transposed_write(&m, o.force, &report, err, sizeof err);
        cli_progress_end(&bar);
        if (rc != 0)
            fb_error("model transpose: %s", err);
        else
            fb_info("wrote %s/%s", dir, MODEL_FFN_T_FILE);
        rc = rc != 0;
        model_close(&m);
    }
    opts_free(&model_transpose_command, &o);
    return rc;
}
