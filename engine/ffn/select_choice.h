/* --active and --threshold as perplexity, generate and run take them, as
 * data: the source that chooses the FFN's neurons (engine/ffn/neuron_source.h)
 * by its name, with its threshold: a value (struct select_config). Loads the model's activation predictor
 * (refusing a folder without one with the command that makes it) and
 * refuses the gate on a model without a gate projection.
 *
 * No printing. 0, or -1 with err holding the whole line the command prints
 * ("run --active predictor: ..."): this module is those commands' option
 * logic, so unlike other library code its messages name the command (cmd)
 * and the option at fault. Not thread-safe: one choice per caller. */
#ifndef FLASHBED_ENGINE_SELECT_CHOICE_H
#define FLASHBED_ENGINE_SELECT_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/ffn/neuron_select.h"
#include "engine/ffn/sparsify_file.h"
#include "engine/model/model.h"
#include "engine/predictor/predictor.h"

struct select_choice {
    struct select_config cfg;   /* cfg.predictor points at pred */
    struct predictor pred;      /* the model's, loaded (have_pred) */
    bool have_pred;
    struct sparsify_thresholds cal; /* gate-cal, teal, gate from a file: its thresholds (have_cal) */
    bool have_cal;
    char cal_path[4200];        /* with have_cal: the file read (--sparsify, or the model's sparsify.json) */
    char desc[640];             /* for people: the source, its threshold, what it holds and costs */
};

/* name: oracle, predictor, gate, gate-cal or teal. The threshold, when
 * given, is the source's: the predictor's probability (0..1; default its
 * recorded one), the gate's cut on |act(gate·x)|, the oracle's on
 * |act(gate·x)·(up·x)| or |act(up·x + b)| (SiLU and GELU FFNs: the ReLU
 * family is active when not zero; default 0 for both). gate-cal (the gate
 * with the per-layer thresholds of a thresholds file) and teal (input
 * sparsity, the same file's) take none. The file is `sparsify` (--sparsify
 * FILE) when not NULL, else the model's sparsify.json. The gate with no
 * threshold but `sparsify` given takes that file's global threshold (one
 * for every layer); the gate never reads the model's sparsify.json by
 * itself (its default stays 0), and a given threshold wins over the file
 * (which is then not read). `sparsify` with another source is refused. On
 * failure out holds nothing to free. */
int select_choice_open(const char *cmd, const char *name, bool threshold_given, double threshold,
                       const char *sparsify, const struct model *m, struct select_choice *out, char *err,
                       size_t errlen);
void select_choice_free(struct select_choice *c);

/* Whether name is one of the names select_choice_open takes. */
bool select_choice_known(const char *name);

/* For the sources' choose hooks: the thresholds file a->sparsify (else the
 * model's sparsify.json) with the thresholds of kind, into c->cal
 * (have_cal, cal_path). 0, or -1 with err the whole line. */
int select_choice_calibrated(const struct source_args *a, const struct model *m, enum sparsify_kind kind,
                             struct select_choice *c, char *err, size_t errlen);

/* --active's allowed values for the masked dense FFN, and its help.
 * select_active_bars is "|all" and each source's names from sources.def
 * ("|all|oracle|predictor|gate|gate-cal|teal"); SELECT_ACTIVE_ALLOWED
 * starts after the first bar (an address constant, for an opt_def's
 * initializer, as common/wtype.h's WTYPE_ALLOWED). */
extern const char select_active_bars[];
#define SELECT_ACTIVE_ALLOWED (select_active_bars + 1)

/* run --active's help: "which neurons:" and each source's run_help from
 * sources.def, in its order. */
extern const char select_run_active_help[];
#define SELECT_ACTIVE_HELP                                                                                       \
    "FFN neurons computed: all (dense), or only those chosen by the model's activation predictor, the gate "     \
    "projection (GLU FFNs; one threshold for every layer: --threshold T, or with --sparsify FILE and no "        \
    "--threshold the file's global one), gate-cal (the gate with the per-layer thresholds of the model's "      \
    "sparsify.json or --sparsify FILE, CATS-style), teal (input sparsity from the same file: small input "      \
    "channels and small intermediate rows dropped, TEAL-style) or the oracle (true activations); make the "     \
    "thresholds with `flashbed sparsify calibrate`"

/* --sparsify's help, for the commands that take --active. */
#define SELECT_SPARSIFY_HELP                                                                                     \
    "thresholds file of `flashbed sparsify calibrate --out FILE` that gate-cal, teal and gate (its global "      \
    "threshold, when --threshold is left out) read instead of the model's sparsify.json"

#endif
