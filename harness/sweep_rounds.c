/* A point's rounds: sums, medians, spreads (harness/sweep_rounds.h). */
#include "harness/sweep_rounds.h"

#include <string.h>

#include "common/median.h"

unsigned sweep_rounds_of(const struct sweep_config *c)
{
    return c && c->rounds ? c->rounds : 1;
}

struct spread spread_of(const double *v, size_t n)
{
    struct spread s = {0, 0, 0};
    if (n == 0 || n > SWEEP_MAX_ROUNDS)
        return s;
    double sorted[SWEEP_MAX_ROUNDS];
    memcpy(sorted, v, n * sizeof *v);
    s.median = median_sorting(sorted, n);
    s.min = sorted[0];
    s.max = sorted[n - 1];
    return s;
}

bool spread_wider_than(struct spread s, double band)
{
    return s.max > (1 + band) * s.min;
}

void sweep_round_add(struct sweep_point *p, unsigned r, const struct point_result *res)
{
    if (r >= SWEEP_MAX_ROUNDS)
        return;
    p->rounds[r].bw_bytes = res->bw_bytes;
    p->rounds[r].iops = res->iops;
    p->n_rounds = r + 1;
    struct point_result *sum = &p->result;
    if (r == 0) {
        *sum = *res;
        return;
    }
    sum->bytes += res->bytes;
    sum->ios += res->ios;
    sum->seconds += res->seconds;
    sum->cpu_user_s += res->cpu_user_s;
    sum->cpu_sys_s += res->cpu_sys_s;
    sum->retries += res->retries;
    hist_merge(&sum->lat, &res->lat);
    sum->interrupted |= res->interrupted;
    if (res->read_failed) {
        sum->read_failed = true;
        sum->failed_offset = res->failed_offset;
    }
}

void sweep_round_add_fio(struct sweep_point *p, unsigned r, const struct fio_result *f)
{
    if (r < SWEEP_MAX_ROUNDS)
        p->rounds[r].fio = *f;
}

/* The median over p's rounds of the double at offset `at` of a struct
 * sweep_round. */
static double median_at(const struct sweep_point *p, size_t at)
{
    double v[SWEEP_MAX_ROUNDS];
    for (unsigned r = 0; r < p->n_rounds; r++)
        memcpy(&v[r], (const char *)&p->rounds[r] + at, sizeof v[r]);
    return spread_of(v, p->n_rounds).median;
}

/* As median_at, for a uint64_t (fio's latency percentiles), rounded. */
static uint64_t median_u64_at(const struct sweep_point *p, size_t at)
{
    double v[SWEEP_MAX_ROUNDS];
    for (unsigned r = 0; r < p->n_rounds; r++) {
        uint64_t x;
        memcpy(&x, (const char *)&p->rounds[r] + at, sizeof x);
        v[r] = (double)x;
    }
    return (uint64_t)(spread_of(v, p->n_rounds).median + 0.5);
}

void sweep_point_settle(struct sweep_point *p)
{
    if (p->n_rounds == 0)
        return;
#define AT(member) offsetof(struct sweep_round, member)
    p->result.bw_bytes = median_at(p, AT(bw_bytes));
    p->result.iops = median_at(p, AT(iops));
    if (!p->has_fio)
        return;
    p->fio.bw_bytes = median_at(p, AT(fio.bw_bytes));
    p->fio.iops = median_at(p, AT(fio.iops));
    p->fio.lat_p50_ns = median_u64_at(p, AT(fio.lat_p50_ns));
    p->fio.lat_p90_ns = median_u64_at(p, AT(fio.lat_p90_ns));
    p->fio.lat_p99_ns = median_u64_at(p, AT(fio.lat_p99_ns));
    p->fio.lat_p999_ns = median_u64_at(p, AT(fio.lat_p999_ns));
#undef AT
}

struct spread point_ours_spread(const struct sweep_point *p)
{
    if (p->n_rounds == 0)
        return (struct spread){p->result.bw_bytes, p->result.bw_bytes, p->result.bw_bytes};
    double v[SWEEP_MAX_ROUNDS];
    for (unsigned r = 0; r < p->n_rounds; r++)
        v[r] = p->rounds[r].bw_bytes;
    return spread_of(v, p->n_rounds);
}

struct spread point_fio_spread(const struct sweep_point *p)
{
    if (!p->has_fio)
        return (struct spread){0, 0, 0};
    if (p->n_rounds == 0)
        return (struct spread){p->fio.bw_bytes, p->fio.bw_bytes, p->fio.bw_bytes};
    double v[SWEEP_MAX_ROUNDS];
    for (unsigned r = 0; r < p->n_rounds; r++)
        v[r] = p->rounds[r].fio.bw_bytes;
    return spread_of(v, p->n_rounds);
}

struct spread point_ratio_spread(const struct sweep_point *p)
{
    if (!p->has_fio)
        return (struct spread){0, 0, 0};
    if (p->n_rounds == 0) {
        double r = p->fio.bw_bytes > 0 ? p->result.bw_bytes / p->fio.bw_bytes : 0;
        return (struct spread){r, r, r};
    }
    double v[SWEEP_MAX_ROUNDS];
    for (unsigned r = 0; r < p->n_rounds; r++) {
        if (!(p->rounds[r].fio.bw_bytes > 0))
            return (struct spread){0, 0, 0};
        v[r] = p->rounds[r].bw_bytes / p->rounds[r].fio.bw_bytes;
    }
    struct spread s = spread_of(v, p->n_rounds);
    /* the medians' ratio, as the table's columns give it; with an odd
     * count it lies within the rounds' ratios, with an even one the range
     * is widened to hold it should it not */
    struct spread ours = point_ours_spread(p), fio = point_fio_spread(p);
    s.median = fio.median > 0 ? ours.median / fio.median : 0;
    s.min = s.median < s.min ? s.median : s.min;
    s.max = s.median > s.max ? s.median : s.max;
    return s;
}
