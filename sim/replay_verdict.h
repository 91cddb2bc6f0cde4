/* The verdict of a budget study (flashbed replay, issue 35): at each DRAM
 * budget, the fastest feasible policy and layout by the cost model's
 * serial milliseconds per token, its bytes, reads and feasibility, the
 * runner-up (the fastest feasible row of another policy), and, when a
 * policy that reads whole layers (naive, hybrid) wins, why no caching
 * policy did, in words computed from the numbers: every caching policy
 * infeasible (a token needs more rows of a layer than the budget holds),
 * and where the caching rows' I/O costs more than the stream's, whether
 * their reads are IOPS-bound on the profile (their effective rate below
 * half its sequential bandwidth). replay.md opens with it; the terminal
 * shows it last.
 *
 * Ties keep the row that comes first (the study's order). Only priced
 * rows are judged. No printing; pure functions of the rows. */
#ifndef FLASHBED_SIM_REPLAY_VERDICT_H
#define FLASHBED_SIM_REPLAY_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "sim/hw_profile.h"
#include "sim/replay_study.h"

/* One budget's verdict; the pointers are into the rows given. */
struct replay_verdict {
    const struct replay_row *first;     /* the budget's first row (its text, bytes, rows per layer) */
    const struct replay_row *best;      /* fastest feasible row; NULL when no row is priced */
    const struct replay_row *runner_up; /* fastest feasible row of another policy; NULL when none */
    const struct replay_row *online;    /* when best reads the future (belady: the offline lower
                                         * bound), the fastest feasible row of a policy that does not;
                                         * else NULL */
    const struct replay_row *caching;   /* fastest caching row (one that does not read whole layers):
                                         * among the feasible ones when any is, else among all; NULL: none */
    size_t n_caching, n_caching_feasible;
    uint64_t max_needed_rows;           /* most rows a token needs in one layer, over the caching rows */
};

/* The verdicts of rows[n] (in a study's order), one per budget in order of
 * first appearance, into v (room for n). Returns how many. */
size_t replay_verdicts(const struct replay_row *rows, size_t n, struct replay_verdict *v);

/* The verdict's lines for one budget (a Markdown list item and its
 * reasons), hw the profile that priced the rows. NULL when out of memory;
 * caller frees. */
char *replay_verdict_lines(const struct replay_verdict *v, const struct hw_profile *hw);

/* The whole section: a heading, profile_note (which profile priced it:
 * sim/hw_choice.h), then every budget's lines. NULL when out of memory. */
char *replay_verdict_text(const struct replay_row *rows, size_t n, const struct hw_profile *hw,
                          const char *profile_note);

#endif
