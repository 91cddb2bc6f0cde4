/* A budget study: one trace replayed under every DRAM budget x policy x
 * layout (flashbed replay --dram-budget 10%,25%,50%), each replay priced by
 * the cost model when a pricing is given (sim/replay_price.h). The rows
 * come budget-major, then in the order of the policies, then the layouts.
 *
 * Every policy gets a row at every budget, those that ignore the budget
 * (naive, predictor) included, so that each has a point at each budget;
 * every replay is run with the budget binding (replay_spec.budget_binds):
 * a budget of 0, or one below a row per layer, keeps window and hybrid
 * within it and is judged for feasibility like any other (sim/replay.h).
 * A row at one budget has exactly the counts of a replay at that budget
 * alone. No printing; the library half of flashbed replay. */
#ifndef FLASHBED_SIM_REPLAY_STUDY_H
#define FLASHBED_SIM_REPLAY_STUDY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/predict_list.h"
#include "sim/replay.h"
#include "sim/replay_price.h"
#include "traces/trace.h"

/* One DRAM budget of a study. */
struct replay_budget {
    const char *text;   /* as given: "25%", "2G" */
    uint64_t bytes;
    double share;       /* bytes over the FFN's bytes (for "25%": 0.25 exactly) */
    bool none;          /* "none": no budget at all (what a run without --dram-budget has), not a binding 0 */
};

/* One replay at one budget, with the cost model's milliseconds when priced. */
struct replay_row {
    struct replay_result res;
    const char *budget;                /* the budget's text */
    double budget_share;               /* the budget's share of the FFN */
    bool priced;                       /* modelled holds the cost model's milliseconds */
    struct policy_prediction modelled; /* .prediction: the ms; .config: how it was priced */
};

struct replay_study {
    const struct trace *tr;
    const struct policy_spec *policies;
    size_t n_policies;
    const struct layout_spec *layouts;
    size_t n_layouts;
    const struct replay_budget *budgets;
    size_t n_budgets;
    bool use_predicted;
    const struct replay_pricing *pricing;  /* NULL: rows not priced */
    uint64_t row_stride;                   /* replay_spec's: 0, the packed row */
    uint64_t read_align;                   /* replay_spec's: 0, vectors read exactly */
};

/* Called after each row (done rows filled, the last of policy); returns
 * false to stop there (an interrupt). */
typedef bool (*replay_study_step)(void *ctx, size_t done, const char *policy);

/* Replays (and prices) the study into rows[n_budgets x n_policies x
 * n_layouts]; *done counts the rows filled, also on failure or a stop
 * (free them with replay_rows_free). 0, or -1 with err naming the policy,
 * layout and budget. */
int replay_study_run(const struct replay_study *s, struct replay_row *rows, size_t *done, replay_study_step step,
                     void *ctx, char *err, size_t errlen);

void replay_rows_free(struct replay_row *rows, size_t n);

/* The window sweep beside a study (the paper's Fig. 4b, bytes against k):
 * window:1..REPLAY_SWEEP_K per layout at budget b (the budget binding
 * unless b->none), into sweep[layout * REPLAY_SWEEP_K + k - 1]; *done
 * counts the replays filled. step (may be NULL) after each, with the
 * policy's name; false stops the sweep (returns 0). 0, or -1 with err
 * naming the replay. */
#define REPLAY_SWEEP_K 17 /* the paper's k = 0..16 */
int replay_window_sweep(const struct replay_study *s, const struct replay_budget *b, struct replay_result *sweep,
                        size_t *done, replay_study_step step, void *ctx, char *err, size_t errlen);

/* How much the window's size changes one sweep (n_layouts x
 * REPLAY_SWEEP_K results): over the layouts, the most of (largest -
 * smallest) over the largest bytes per token of window:2..17 (k = 1..16;
 * window:1 keeps nothing between tokens, so k = 0 is the predictor's
 * point, not a window's size); 0 when the size changes nothing (a budget
 * that holds no more than a token's rows: every K shrinks alike). */
double replay_window_spread(const struct replay_result *sweep, size_t n_layouts);

/* Below this spread a sweep is flat: the window does not matter there. */
#define REPLAY_WINDOW_FLAT 0.05

/* Which of n sweeps (sweeps[i * n_layouts * REPLAY_SWEEP_K ...], at the
 * budgets b[i]) the window-size plot is drawn at (issue 35: at a budget
 * where the window matters): of the first n_study (the study's budgets),
 * the one whose sweep spreads most (the first on a tie); when each of them
 * is flat and a further sweep follows (at no budget), that one. Why, in
 * words with the spreads, into why. */
size_t replay_window_choose(const struct replay_result *sweeps, const struct replay_budget *b, size_t n,
                            size_t n_study, size_t n_layouts, char *why, size_t len);

#endif
