/* REPORT.md's first screen (issue 35): the study's answer before its
 * sections. What ran and on what, how long it took; the speedups measured
 * (naive, hybrid, all) beside the paper's CPU rows of the model each shape
 * stands for; where the cost model holds and where it misses, with each
 * figure; the best deployable policy at each DRAM budget of the policy
 * study. Every figure is computed from the study's result files (runs'
 * run.json, predict.json, replay.json, the step markers) and the paper's
 * tables (configs/paper/); where a step has not run the summary says so
 * instead of a number.
 *
 * A summary speaks for one study (its plan) or for a merge's studies
 * (plans built from each folder alone: no steps, no models; what ran is
 * then read from the folders). Internal to harness/reproduce_*.c; no
 * errors to return (what cannot be read is said in the text). */
#ifndef FLASHBED_HARNESS_REPRODUCE_SUMMARY_H
#define FLASHBED_HARNESS_REPRODUCE_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"
#include "harness/reproduce.h"

/* Within this relative error of the measured total the cost model holds
 * (the 15%, as "What differs" counts its misses). */
#define REPRO_MODEL_HOLDS 0.15

/* A speedup from fewer rounds, or from rounds of fewer measured tokens,
 * than these carries its caveat on its own line of the headline (issue
 * 47): one short round of a tiny shape gave "all vs naive 37.28×". */
#define REPRO_SPEEDUP_MIN_ROUNDS 3
#define REPRO_SPEEDUP_MIN_TOKENS 32

/* One shape of Table 3's CPU rows, in the study that measured it. */
struct repro_summary_row {
    const struct repro_plan *p;
    char shape[64];
    bool tiny; /* a tiny shape: its tokens are mostly fixed costs */
    char label[320]; /* the shape, after its study's name in a merge */
};

#define REPRO_SUMMARY_MAX_ROWS 64

/* The shapes Table 3's CPU rows run at: each plan's (the real shape the
 * tier adds, then the tier's), or, for a plan without models (a merge's),
 * every runs/<shape>/ with a naive, hybrid or all run of the trace. */
size_t repro_summary_rows(const struct repro_plan *const *plans, const char *const *names, size_t n,
                          struct repro_summary_row *rows, size_t max);

/* The paper's model a shape stands for ("opt-6.7b" for opt-1.3b); NULL
 * when the shape is none of the architectures'. */
const char *repro_summary_paper_model(const char *shape);

void repro_summary_speedups(struct strbuf *b, const struct repro_summary_row *rows, size_t n);
/* names: each plan's study in a merge (NULL: one study), for the labels. */
void repro_summary_cost_model(struct strbuf *b, const struct repro_summary_row *rows, size_t n,
                              const struct repro_plan *const *plans, const char *const *names, size_t n_plans);
void repro_summary_policies(struct strbuf *b, const struct repro_plan *const *plans, const char *const *names,
                            size_t n);

/* The traces of the policy study: the plan's replay steps, or a merge's
 * policies/<trace>/ folders; n of them, at most max. */
size_t repro_summary_traces(const struct repro_plan *p, char (*names)[64], size_t max);

/* The subfolders of dir holding rel_inside (any of them when it has
 * several, '|'-separated), sorted by name; n of them, at most max. */
size_t repro_summary_list(const char *dir, const char *rel_inside, char (*names)[64], size_t max);

/* The whole first screen: "## At a glance" and its parts. names: each
 * study's folder name in a merge (NULL: one study). */
void repro_section_summary(struct strbuf *b, const struct repro_plan *const *plans, const char *const *names,
                           size_t n);

#endif
