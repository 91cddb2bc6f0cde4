/* Log-linear histogram of non-negative integers (latencies in ns, read sizes
 * in bytes). Values below 2^HIST_SUB_BITS are counted exactly; above, each
 * power of two is split into 2^(HIST_SUB_BITS-1) equal buckets, so a
 * reported percentile is within 1/2^(HIST_SUB_BITS-1) (about 1.6%) of the
 * true value. Fixed size, no allocation: safe to keep one per thread and
 * merge afterwards. */
#ifndef FLASHBED_COMMON_HISTOGRAM_H
#define FLASHBED_COMMON_HISTOGRAM_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB (1u << HIST_SUB_BITS)          /* 128 exact buckets */
#define HIST_HALF (HIST_SUB / 2)                /* 64 buckets per octave */
#define HIST_BUCKETS (HIST_SUB + (64 - HIST_SUB_BITS) * HIST_HALF)

struct histogram {
    uint64_t count;
    uint64_t min, max;
    double sum;
    uint64_t bucket[HIST_BUCKETS];
};

void hist_init(struct histogram *h);
void hist_add(struct histogram *h, uint64_t value);
void hist_merge(struct histogram *into, const struct histogram *from);

/* Nearest-rank percentile (0 < p <= 100): the smallest bucket holding at
 * least ceil(p/100 * count) values, reported as that bucket's midpoint
 * (exact for values below HIST_SUB), clamped to [min, max]. 0 when empty. */
uint64_t hist_percentile(const struct histogram *h, double p);

double hist_mean(const struct histogram *h);

/* The range of values bucket i holds: [lo, hi]. Exposed for tests. */
void hist_bucket_range(unsigned i, uint64_t *lo, uint64_t *hi);
unsigned hist_bucket_of(uint64_t value);

#endif
