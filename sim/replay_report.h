/* Result files of a replay: replay.json (provenance + one object per
 * budget x policy x layout), replay.csv, replay.md (tables in the paper's
 * style), and the window-size sweep behind the bytes-per-token-vs-K plot.
 * One table of fields feeds JSON and CSV so they cannot disagree.
 *
 * A row is one replay at one DRAM budget (the budget as given, its bytes
 * and its share of the FFN; whether the replay fits in it: sim/replay.h's
 * feasibility), with the cost model's milliseconds per token when priced
 * (sim/replay_price.h). Infeasible rows are kept and marked
 * ("infeasible: why"), never dropped. Where a friends row reads more bytes
 * per token than the bundled row of the same policy and budget, the report
 * says so beside it, with the ratio and the reason the trace's provenance
 * gives (replay_friends_note). */
#ifndef FLASHBED_SIM_REPLAY_REPORT_H
#define FLASHBED_SIM_REPLAY_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "sim/replay.h"
#include "sim/replay_price.h"
#include "sim/replay_study.h"
#include "traces/trace.h"

/* What the report says about the run as a whole. */
struct replay_report_info {
    const char *trace_path;
    const struct trace_meta *meta;
    bool synthetic;                        /* trace_source_synthetic */
    const char *model;                     /* the model the header names ("" when none) */
    const struct replay_pricing *pricing;  /* NULL: the rows are not priced */
    bool complete;                         /* every configuration asked for was replayed */
    const char *profile_note;              /* which profile priced the rows (sim/hw_choice.h's
                                            * hw_choice_note); NULL: the pricing's name alone */
};

/* friends against bundled for one policy and budget. */
struct friends_note {
    double ratio;       /* friends' bytes per token over bundled's */
    char text[240];     /* "friends reads 2.03x the bytes per token of bundled: <reason>" */
};

/* 1 and *note when rows[i] is a row of a layout that looks for a structure
 * in the sets (its ops' needs_known and structure: friends, co-activation)
 * and reads more bytes per token than the baseline layout's row (bundled)
 * of the same policy, sets and budget; else 0 (no such baseline row among
 * rows, or it reads no more). The reason: synthetic traces have no such
 * structure; in a recorded one none was found. The note names both
 * layouts by their names. */
int replay_friends_note(const struct replay_row *rows, size_t n, size_t i, bool synthetic,
                        struct friends_note *note);

/* The trace for a title: "opt-tiny shape (2 layers, d_model 64, d_ff 256),
 * synthetic trace". */
void replay_trace_title(const struct replay_report_info *info, char *buf, size_t len);

/* {"provenance": prov (taken), "trace": ..., "complete": ..., "trace_source",
 * "dram_budgets", "pricing", "verdict" (priced rows: the profile note, and
 * per budget the best row, the runner-up, the caching rows and how many
 * are feasible, the verdict's text), "feasibility", "notes", "results": [...]} */
cJSON *replay_report_json(const struct replay_row *rows, size_t n, const struct replay_report_info *info,
                          cJSON *prov);
char *replay_report_csv(const struct replay_row *rows, size_t n);
/* replay.md: the title, the verdict (sim/replay_verdict.h) when the rows
 * are priced, then the tables. */
char *replay_report_markdown(const struct replay_row *rows, size_t n, const struct replay_report_info *info);
/* The same for a terminal: the title and the tables, the verdict last (the
 * lines a terminal leaves in view). */
char *replay_report_terminal(const struct replay_row *rows, size_t n, const struct replay_report_info *info);
/* The verdict section alone (replay --quiet prints it); "" when the rows
 * are not priced. NULL when out of memory. */
char *replay_report_verdict(const struct replay_row *rows, size_t n, const struct replay_report_info *info);

/* The window sweep: k (tokens kept besides the current one, the paper's k)
 * = 0..16 replayed as window:k+1, one series per layout, at the budget
 * named (its text: the last column). */
char *replay_window_sweep_csv(const struct replay_result *r, size_t n_k, size_t n_layouts, const char *budget);

#endif
