/* --active and --threshold as perplexity and generate take them: the
 * engine over the source that chooses the FFN's neurons (its choice is
 * engine/ffn/select_choice.h's). Prints its errors as "CMD --active: ...". */
#ifndef FLASHBED_CLI_SELECT_OPTS_H
#define FLASHBED_CLI_SELECT_OPTS_H

#include <stdbool.h>

#include "engine/compute/backend.h"
#include "engine/ffn/select_choice.h"
#include "engine/model/model.h"

/* perplexity's and generate's engine for --active: dense for "all", else
 * the masked dense FFN (engine/ffn/ffn_select.h) over the choice, made into
 * *sel (*have_sel: free it). 0, or -1 (printed). */
struct engine;
int select_engine_init(const char *cmd, const char *active, bool threshold_given, double threshold,
                       const char *sparsify, struct engine *e, const struct fb_settings *set, const struct model *m,
                       const struct backend_ops *be, int threads, int max_seq, struct select_choice *sel,
                       bool *have_sel);

/* The help text of --threshold for the commands that take --active. */
#define SELECT_THRESHOLD_HELP                                                                                     \
    "the chooser's threshold: predictor, the probability above which a neuron is predicted active; gate, "       \
    "|act(gate.x)| above T; oracle on a SiLU or GELU FFN, |act(gate).up| (|act(up)| without a gate) above T; "   \
    "gate-cal and teal take none (their thresholds are in sparsify.json or --sparsify FILE) "                      \
    "[default: 0; with --active predictor, the predictor's own; gate with --sparsify FILE: the file's global threshold]"

#endif
