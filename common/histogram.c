#include "common/histogram.h"

#include <math.h>
#include <string.h>

void hist_init(struct histogram *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

static unsigned msb(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

unsigned hist_bucket_of(uint64_t v)
{
    if (v < HIST_SUB)
        return (unsigned)v;
    unsigned k = msb(v);                    /* >= HIST_SUB_BITS */
    unsigned shift = k - (HIST_SUB_BITS - 1);
    unsigned sub = (unsigned)(v >> shift);  /* in [HIST_HALF, HIST_SUB) */
    return HIST_SUB + (k - HIST_SUB_BITS) * HIST_HALF + (sub - HIST_HALF);
}

void hist_bucket_range(unsigned i, uint64_t *lo, uint64_t *hi)
{
    if (i < HIST_SUB) {
        *lo = *hi = i;
        return;
    }
    unsigned k = (i - HIST_SUB) / HIST_HALF + HIST_SUB_BITS;
    unsigned sub = (i - HIST_SUB) % HIST_HALF + HIST_HALF;
    unsigned shift = k - (HIST_SUB_BITS - 1);
    *lo = (uint64_t)sub << shift;
    *hi = *lo + ((1ull << shift) - 1);
}

void hist_add(struct histogram *h, uint64_t v)
{
    h->bucket[hist_bucket_of(v)]++;
    h->count++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void hist_merge(struct histogram *into, const struct histogram *from)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        into->bucket[i] += from->bucket[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
}

uint64_t hist_percentile(const struct histogram *h, double p)
{
    if (h->count == 0)
        return 0;
    if (p > 100)
        p = 100;
    /* The epsilon keeps 99.9% of 1000 at rank 999 despite binary fractions. */
    double r = p * (double)h->count / 100.0;
    uint64_t rank = (uint64_t)ceil(r - 1e-9 * r);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            hist_bucket_range(i, &lo, &hi);
            uint64_t mid = lo + (hi - lo) / 2;
            if (mid < h->min)
                mid = h->min;
            if (mid > h->max)
                mid = h->max;
            return mid;
        }
    }
    return h->max;
}

double hist_mean(const struct histogram *h)
{
    return h->count ? h->sum / (double)h->count : 0.0;
}
