/* The sweep's verdict (harness/sweep_verdict.h). */
#include "harness/sweep_verdict.h"

#include <math.h>
#include <stdlib.h>

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

enum fio_agreement fio_agreement_of(struct spread ours, struct spread fio, struct spread ratio, double band)
{
    if (ratio.median >= 1 - band && ratio.median <= 1 + band)
        return FIO_WITHIN;
    if (ratio.min <= 1 && ratio.max >= 1)
        return FIO_SPREAD_COVERS;
    if (spread_wider_than(ours, band) || spread_wider_than(fio, band))
        return FIO_NOISY;
    return FIO_DIFFERS;
}

/* The points beside fio, counted by kind, and the one of each kind
 * furthest from 1.0. */
struct fio_tally {
    size_t n, kind[FIO_DIFFERS + 1];
    unsigned rounds;                                 /* the most any point took */
    const struct sweep_point *furthest[FIO_DIFFERS + 1]; /* its ours / fio median furthest from 1 */
    const struct sweep_point *first_noisy;
};

static struct fio_tally tally_fio(const struct sweep *s)
{
    struct fio_tally t = {.rounds = 1};
    for (size_t i = 0; i < s->n_points; i++) {
        const struct sweep_point *p = &s->points[i];
        struct spread ratio = point_ratio_spread(p);
        if (!finished(p) || !p->has_fio || !(ratio.min > 0))
            continue;
        enum fio_agreement k = fio_agreement_of(point_ours_spread(p), point_fio_spread(p), ratio, SWEEP_FIO_AGREE);
        t.n++;
        t.kind[k]++;
        if (p->n_rounds > t.rounds)
            t.rounds = p->n_rounds;
        if (k == FIO_NOISY && !t.first_noisy)
            t.first_noisy = p;
        const struct sweep_point *f = t.furthest[k];
        if (!f || fabs(ratio.median - 1) > fabs(point_ratio_spread(f).median - 1))
            t.furthest[k] = p;
    }
    return t;
}

/* The worst point: the furthest of those that differ, else of the noisy
 * ones, else of all (every one agreeing). */
static const struct sweep_point *worst_of(const struct fio_tally *t, enum fio_agreement *kind)
{
    static const enum fio_agreement order[] = {FIO_DIFFERS, FIO_NOISY};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (t->furthest[order[i]]) {
            *kind = order[i];
            return t->furthest[order[i]];
        }
    const struct sweep_point *a = t->furthest[FIO_WITHIN], *b = t->furthest[FIO_SPREAD_COVERS];
    *kind = a && (!b || fabs(point_ratio_spread(a).median - 1) >= fabs(point_ratio_spread(b).median - 1))
                ? FIO_WITHIN : FIO_SPREAD_COVERS;
    return *kind == FIO_WITHIN ? a : b;
}

/* "64k × 8 threads" */
static void point_name(const struct sweep_point *p, char *buf, size_t len)
{
    char chunk[32];
    format_size(p->params.chunk, chunk, sizeof chunk);
    snprintf(buf, len, "%s × %u thread%s", chunk, p->params.threads, p->params.threads == 1 ? "" : "s");
}

/* "64k × 8 threads at 1.27 (rounds 1.21 to 1.33)", the rounds' range
 * when there were several. */
static void ratio_words(const struct sweep_point *p, char *buf, size_t len)
{
    char name[64];
    point_name(p, name, sizeof name);
    struct spread r = point_ratio_spread(p);
    int n = snprintf(buf, len, "%s at %.2f", name, r.median);
    if (p->n_rounds > 1 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " (rounds %.2f to %.2f)", r.min, r.max);
}

/* ours / fio over the finished points fio ran beside: how many agree, the
 * noisy ones, and the worst point. */
static void fio_line(const struct sweep *s, struct strbuf *out)
{
    struct fio_tally t = tally_fio(s);
    if (!t.n)
        return;
    int band = (int)(100 * SWEEP_FIO_AGREE + 0.5);
    size_t agree = t.kind[FIO_WITHIN] + t.kind[FIO_SPREAD_COVERS];
    enum fio_agreement worst_kind;
    char worst[160], covers[96] = "";
    ratio_words(worst_of(&t, &worst_kind), worst, sizeof worst);
    if (t.kind[FIO_SPREAD_COVERS])
        snprintf(covers, sizeof covers, " (%zu of them only within their rounds' spread, which covers 1.0)",
                 t.kind[FIO_SPREAD_COVERS]);
    strbuf_add(out, "- Beside fio (the same jobs, %u round%s each): ours / fio ", t.rounds, t.rounds == 1 ? "" : "s");
    if (agree == t.n) {
        strbuf_add(out, "agree within %d%% at all %zu points%s; the furthest from 1.0: %s.\n", band, t.n, covers,
                   worst);
        return;
    }
    strbuf_add(out, "agree at %zu of %zu points within %d%%%s", agree, t.n, band, covers);
    if (t.kind[FIO_DIFFERS])
        strbuf_add(out, "; %zu differ by more than %d%%", t.kind[FIO_DIFFERS], band);
    if (t.kind[FIO_NOISY]) {
        char name[64];
        point_name(t.first_noisy, name, sizeof name);
        strbuf_add(out, "; %zu noisy, %s first (rounds more than %d%% apart among themselves: neither agreement "
                        "nor a difference)", t.kind[FIO_NOISY], name, band);
    }
    strbuf_add(out, "; the worst: %s%s. See sweep.md's rows and fio's buffers (--small-pages reads into 4 KiB "
                    "pages as fio does).\n", worst, worst_kind == FIO_NOISY ? ", noisy" : "");
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
