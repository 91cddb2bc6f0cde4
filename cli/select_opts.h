/* --active and --threshold as perplexity, generate and run take them: the
 * source that chooses the FFN's neurons (engine/ffn/neuron_select.h) and its
 * threshold. Loads the model's activation predictor, refusing a folder
 * without one with the command that makes it, and the gate on a model
 * without a gate projection. Prints its errors as "CMD --active: ...". */
#ifndef FLASHBED_CLI_SELECT_OPTS_H
#define FLASHBED_CLI_SELECT_OPTS_H

#include <stdbool.h>

#include "engine/model/model.h"
#include "engine/ffn/neuron_select.h"
#include "engine/predictor/predictor.h"

struct select_choice {
    struct select_config cfg;   /* cfg.predictor points at pred */
    struct predictor pred;      /* the model's, loaded (have_pred) */
    bool have_pred;
    char desc[384];             /* for people: the source, its threshold, what it holds and costs */
};

/* name: oracle, predictor or gate. --threshold, when given, is the
 * source's: the predictor's probability (0..1; default its recorded one),
 * the gate's cut on |act(gate·x)|, the oracle's on |act(gate·x)·(up·x)|
 * or |act(up·x + b)| (SiLU and GELU FFNs: the ReLU family is active when
 * not zero; default 0 for both). 0, or -1 (printed). */
int select_choice_make(const char *cmd, const char *name, bool threshold_given, double threshold,
                       const struct model *m, struct select_choice *out);
void select_choice_free(struct select_choice *c);

/* perplexity's and generate's engine for --active: dense for "all", else
 * the masked dense FFN (engine/ffn/ffn_select.h) over the choice, made into
 * *sel (*have_sel: free it). 0, or -1 (printed). */
struct engine;
int select_engine_init(const char *cmd, const char *active, bool threshold_given, double threshold,
                       struct engine *e, const struct fb_settings *set, const struct model *m,
                       const struct backend_ops *be, int threads, int max_seq, struct select_choice *sel,
                       bool *have_sel);

/* The help text of --threshold for the commands that take --active. */
#define SELECT_THRESHOLD_HELP                                                                                     \
    "the chooser's threshold: predictor, the probability above which a neuron is predicted active "              \
    "[default: the predictor's own]; gate, |act(gate.x)| above T; oracle on a SiLU or GELU FFN, |act(gate).up| " \
    "(|act(up)| without a gate) above T"

#endif
