/* The sweep's answer in a few lines, for the terminal and the top of
 * sweep.md: the disk's peak random-read throughput and where it is
 * reached, how far small reads fall below it (the paper's Fig. 2b, §2.2:
 * larger chunks and more threads), and how the measurement stands beside
 * fio's on the same jobs.
 *
 * Only points that finished (not interrupted, no failed read) count.
 * Return convention: malloc'd Markdown lines (the caller frees), or NULL
 * when no point finished or memory ran out. Threading: none. */
#ifndef FLASHBED_HARNESS_SWEEP_VERDICT_H
#define FLASHBED_HARNESS_SWEEP_VERDICT_H

#include "harness/sweep.h"

/* Within this share of the peak a point "reaches" it. */
#define SWEEP_NEAR_PEAK 0.9
/* ours / fio's median within 1 ± this: the two agree. */
#define SWEEP_FIO_AGREE 0.1

char *sweep_verdict(const struct sweep *s);

#endif
