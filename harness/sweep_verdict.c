/* The sweep's verdict (harness/sweep_verdict.h). */
#include "harness/sweep_verdict.h"

#include <stdlib.h>

#include "common/median.h"
#include "common/parse.h"
#include "common/strbuf.h"

static bool finished(const struct sweep_point *p)
{
    return !p->result.interrupted && !p->result.read_failed && !p->error[0] && p->result.bw_bytes > 0;
}

/* The finished point with the most throughput among those of chunk (0: any). */
static const struct sweep_point *best_at(const struct sweep *s, uint64_t chunk)
{
    const struct sweep_point *best = NULL;
    for (size_t i = 0; i < s->n_points; i++) {
        const struct sweep_point *p = &s->points[i];
        if (finished(p) && (!chunk || p->params.chunk == chunk) && (!best || p->result.bw_bytes > best->result.bw_bytes))
            best = p;
    }
    return best;
}

/* The first point, by chunk then threads, within SWEEP_NEAR_PEAK of peak. */
static const struct sweep_point *first_near(const struct sweep *s, double peak)
{
    const struct sweep_point *first = NULL;
    for (size_t i = 0; i < s->n_points; i++) {
        const struct sweep_point *p = &s->points[i];
        if (!finished(p) || p->result.bw_bytes < SWEEP_NEAR_PEAK * peak)
            continue;
        if (!first || p->params.chunk < first->params.chunk ||
            (p->params.chunk == first->params.chunk && p->params.threads < first->params.threads))
            first = p;
    }
    return first;
}

/* ours / fio over the finished points fio ran beside: the median and range. */
static void fio_line(const struct sweep *s, struct strbuf *t)
{
    double *r = malloc((s->n_points + 1) * sizeof *r);
    size_t n = 0;
    for (size_t i = 0; r && i < s->n_points; i++)
        if (finished(&s->points[i]) && s->points[i].has_fio && s->points[i].fio.bw_bytes > 0)
            r[n++] = s->points[i].result.bw_bytes / s->points[i].fio.bw_bytes;
    if (n) {
        double median = median_sorting(r, n); /* sorts r: r[0] and r[n - 1] are the range */
        bool agree = median >= 1 - SWEEP_FIO_AGREE && median <= 1 + SWEEP_FIO_AGREE;
        strbuf_add(t, "- Beside fio (the same jobs): ours / fio %.2f, the median of %zu points (%.2f to %.2f): %s.\n",
                   median, n, r[0], r[n - 1],
                   agree ? "the two agree within 10%" : "they differ by more than 10%: see sweep.md's rows and fio's "
                   "buffers (--small-pages reads into 4 KiB pages as fio does)");
    }
    free(r);
}

static void point_words(const struct sweep_point *p, char *buf, size_t len)
{
    char chunk[32];
    format_size(p->params.chunk, chunk, sizeof chunk);
    snprintf(buf, len, "%.3g GiB/s (%.0f IOPS) with %s reads from %u thread%s", p->result.bw_bytes / (1u << 30),
             p->result.iops, chunk, p->params.threads, p->params.threads == 1 ? "" : "s");
}

char *sweep_verdict(const struct sweep *s)
{
    const struct sweep_point *peak = best_at(s, 0);
    if (!peak)
        return NULL;
    struct strbuf t = {0};
    char words[160];
    point_words(peak, words, sizeof words);
    strbuf_add(&t, "- Peak: %s, page cache %s.\n", words, peak->result.direct ? "bypassed" : "used (not the disk's own figure)");
    const struct sweep_point *near = first_near(s, peak->result.bw_bytes);
    if (near && near != peak) {
        point_words(near, words, sizeof words);
        strbuf_add(&t, "- %.0f%% of the peak from the smallest reads and fewest threads measured: %s.\n",
                   100 * SWEEP_NEAR_PEAK, words);
    }
    uint64_t smallest = peak->params.chunk;
    for (size_t i = 0; i < s->n_points; i++)
        if (finished(&s->points[i]) && s->points[i].params.chunk < smallest)
            smallest = s->points[i].params.chunk;
    const struct sweep_point *small = best_at(s, smallest);
    if (small != peak) {
        point_words(small, words, sizeof words);
        strbuf_add(&t, "- The smallest reads at best: %s, %.1f× below the peak (the paper's Fig. 2b: larger "
                   "reads and more threads are what reach the disk's bandwidth).\n", words,
                   peak->result.bw_bytes / small->result.bw_bytes);
    }
    fio_line(s, &t);
    if (s->n_failed)
        strbuf_add(&t, "- %zu point%s stopped at a failed read (sweep.md names each).\n", s->n_failed,
                   s->n_failed == 1 ? "" : "s");
    return strbuf_take(&t);
}
