/* A sweep point measured in rounds (issue 47): on a shared disk one run of
 * a point says little, so each point runs --rounds times, ours and fio's
 * alternating (ours then fio, then fio then ours, ...: a drift of the disk
 * falls on both alike), and reports the median with the min–max.
 *
 * This file is the arithmetic, pure and exact: a round's figures into a
 * point, the medians, and the spread of ours, of fio's and of ours / fio
 * (each round's ours over the fio run beside it). Measuring is sweep.c's.
 * Threading: none; each function touches only what it is given. */
#ifndef FLASHBED_HARNESS_SWEEP_ROUNDS_H
#define FLASHBED_HARNESS_SWEEP_ROUNDS_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/sweep.h"

/* The rounds a config asks for (0 reads as 1). */
unsigned sweep_rounds_of(const struct sweep_config *c);

/* The median and the extremes of a sample. */
struct spread {
    double median, min, max;
};

/* Of v[0..n) (v unchanged; the median of an even count is the mean of the
 * two middle values); all 0 when n is 0. */
struct spread spread_of(const double *v, size_t n);

/* Whether the sample's values disagree among themselves by more than band:
 * its largest more than (1 + band) times its smallest. */
bool spread_wider_than(struct spread s, double band);

/* Ours' round r (0-based, in order) into p: its figures kept, its reads
 * summed into p->result (the first round's result taken as it is). */
void sweep_round_add(struct sweep_point *p, unsigned r, const struct point_result *res);

/* fio's run of round r into p. */
void sweep_round_add_fio(struct sweep_point *p, unsigned r, const struct fio_result *f);

/* After the last round: p->result's bw_bytes and iops, and p->fio's
 * figures when has_fio, become the rounds' medians. */
void sweep_point_settle(struct sweep_point *p);

/* The spreads over p's rounds (its one figure when n_rounds is 0): ours'
 * bytes/s, fio's, and ours / fio: its median the ratio of the two medians
 * (as the table's columns divide), its min and max those of each round's
 * ours over the fio run beside it (widened to hold the median should an
 * even count of rounds leave it outside); all 0 without fio, or where
 * fio read nothing. */
struct spread point_ours_spread(const struct sweep_point *p);
struct spread point_fio_spread(const struct sweep_point *p);
struct spread point_ratio_spread(const struct sweep_point *p);

#endif
