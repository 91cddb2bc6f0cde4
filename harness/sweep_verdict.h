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
#include "harness/sweep_rounds.h"

/* Within this share of the peak a point "reaches" it. */
#define SWEEP_NEAR_PEAK 0.9
/* The band of agreement with fio: ours / fio within 1 ± this. */
#define SWEEP_FIO_AGREE 0.1

/* How one point stands beside fio, judged on its rounds (issue 47):
 * - WITHIN: ours / fio (the medians' ratio) lies within the band;
 * - SPREAD_COVERS: it does not, but the rounds' ours / fio range covers
 *   1.0: the rounds cannot tell the two apart, so they agree;
 * - NOISY: neither, and ours' rounds or fio's disagree among themselves
 *   by more than the band (the fastest more than 1 + band times the
 *   slowest): the point cannot say whether the two differ;
 * - DIFFERS: steady rounds, and ours / fio outside the band. */
enum fio_agreement { FIO_WITHIN, FIO_SPREAD_COVERS, FIO_NOISY, FIO_DIFFERS };

enum fio_agreement fio_agreement_of(struct spread ours, struct spread fio, struct spread ratio, double band);

/* The verdict's lines (malloc'd), or NULL when no point finished. The
 * line beside fio counts the points of each kind above, says "agree" only
 * when every point does (else "agree at N of M points"), and names the
 * point furthest from 1.0 with its rounds' range. */
char *sweep_verdict(const struct sweep *s);

#endif
