/* sweep's verdict (harness/sweep_verdict.h, issues 35 and 47): exact
 * lines on points made by hand, whose peak, first point near it, smallest
 * reads and fio ratios are known; unfinished points left out; none
 * finished. Beside fio (issue 47): "agree" only when every point does,
 * else "agree at N of M", the worst named; points measured in rounds
 * judged against their spread (covering 1.0: agree; rounds far apart:
 * noisy, not a difference). */
#include "check.h"

#include <stdlib.h>

#include "harness/sweep_verdict.h"

#define GIB (1024.0 * 1024 * 1024)

static struct sweep_point point(uint64_t chunk, unsigned threads, double gib_s, double fio_gib_s)
{
    struct sweep_point p;
    memset(&p, 0, sizeof p);
    p.params.chunk = chunk;
    p.params.threads = threads;
    p.result.bw_bytes = gib_s * GIB;
    p.result.iops = p.result.bw_bytes / (double)chunk;
    p.result.direct = true;
    p.has_fio = fio_gib_s > 0;
    p.fio.bw_bytes = fio_gib_s * GIB;
    return p;
}

static void check_full_grid(void)
{
    struct sweep_point pts[] = {
        point(4096, 1, 0.1, 0.1), point(65536, 1, 0.5, 0.5), point(1 << 20, 1, 1.0, 1.25),
        point(4096, 8, 0.25, 0.25), point(65536, 8, 1.9, 2.0), point(1 << 20, 8, 2.0, 1.6),
    };
    struct sweep s = {.points = pts, .n_points = 6};
    char *v = sweep_verdict(&s);
    CHECK_STR(v, "- Peak: 2 GiB/s (2048 IOPS) with 1m reads from 8 threads, page cache bypassed.\n"
                 "- 90% of the peak from the smallest reads and fewest threads measured: 1.9 GiB/s (31130 IOPS) "
                 "with 64k reads from 8 threads.\n"
                 "- The smallest reads at best: 0.25 GiB/s (65536 IOPS) with 4k reads from 8 threads, 8.0× below "
                 "the peak (the paper's Fig. 2b: larger reads and more threads are what reach the disk's "
                 "bandwidth).\n"
                 "- Beside fio (the same jobs, 1 round each): ours / fio agree at 4 of 6 points within 10%; 2 "
                 "differ by more than 10%; the worst: 1m × 8 threads at 1.25. See sweep.md's rows and fio's "
                 "buffers (--small-pages reads into 4 KiB pages as fio does).\n");
    free(v);
}

/* An interrupted point and a failed one do not count, even when faster;
 * a fio median beyond 10% is said to differ; failed points are counted. */
static void check_unfinished_left_out(void)
{
    struct sweep_point pts[] = {point(4096, 1, 0.1, 0.2), point(65536, 1, 0.4, 0.6), point(1 << 20, 1, 9.0, 0),
                                point(1 << 20, 2, 8.0, 0)};
    pts[2].result.interrupted = true;
    pts[3].result.read_failed = true;
    snprintf(pts[3].error, sizeof pts[3].error, "EIO at 0");
    struct sweep s = {.points = pts, .n_points = 4, .n_failed = 1};
    char *v = sweep_verdict(&s);
    CHECK(v && strstr(v, "- Peak: 0.4 GiB/s (6554 IOPS) with 64k reads from 1 thread, page cache bypassed.\n"));
    CHECK(v && strstr(v, "4.0× below the peak"));
    CHECK(v && strstr(v, "ours / fio agree at 0 of 2 points within 10%; 2 differ by more than 10%; the worst: "
                         "4k × 1 thread at 0.50."));
    CHECK(v && strstr(v, "- 1 point stopped at a failed read (sweep.md names each).\n"));
    CHECK(v && !strstr(v, "90% of the peak")); /* nothing else comes near 0.4 */
    free(v);
}

/* A point of `n` rounds: ours' and fio's GiB/s per round, as measured;
 * settled into its medians as the sweep does. */
static struct sweep_point rounds_point(uint64_t chunk, unsigned threads, unsigned n, const double *ours,
                                       const double *fio)
{
    struct sweep_point p = point(chunk, threads, ours[0], fio[0]);
    for (unsigned r = 0; r < n; r++) {
        struct point_result res = p.result;
        res.bw_bytes = ours[r] * GIB;
        res.iops = res.bw_bytes / (double)chunk;
        sweep_round_add(&p, r, &res);
        sweep_round_add_fio(&p, r, &(struct fio_result){.bw_bytes = fio[r] * GIB});
    }
    sweep_point_settle(&p);
    return p;
}

/* The classifier alone, on spreads given outright. */
static void check_agreement_kinds(void)
{
    struct spread steady = {1.0, 0.98, 1.02}, wild = {1.0, 0.7, 1.3};
    CHECK(fio_agreement_of(steady, steady, (struct spread){1.10, 1.08, 1.12}, 0.1) == FIO_WITHIN);
    CHECK(fio_agreement_of(steady, steady, (struct spread){0.90, 0.90, 0.90}, 0.1) == FIO_WITHIN);
    CHECK(fio_agreement_of(steady, steady, (struct spread){1.15, 1.12, 1.18}, 0.1) == FIO_DIFFERS);
    CHECK(fio_agreement_of(wild, steady, (struct spread){1.3, 0.95, 1.6}, 0.1) == FIO_SPREAD_COVERS);
    CHECK(fio_agreement_of(steady, steady, (struct spread){1.3, 1.0, 1.6}, 0.1) == FIO_SPREAD_COVERS);
    CHECK(fio_agreement_of(wild, steady, (struct spread){1.3, 1.1, 1.6}, 0.1) == FIO_NOISY);
    CHECK(fio_agreement_of(steady, wild, (struct spread){0.7, 0.5, 0.8}, 0.1) == FIO_NOISY);
    /* rounds exactly 10% apart are not more than the band */
    CHECK(fio_agreement_of((struct spread){1.05, 1.0, 1.1}, steady, (struct spread){1.2, 1.15, 1.25}, 0.1) ==
          FIO_DIFFERS);
}

/* Every point within the band: "agree ... at all", the furthest named. */
static void check_all_within(void)
{
    double o1[] = {1.0, 1.02, 0.98}, f1[] = {1.0, 1.0, 1.0};
    double o2[] = {2.0, 2.1, 2.2}, f2[] = {2.0, 2.0, 2.0};
    struct sweep_point pts[] = {rounds_point(4096, 1, 3, o1, f1), rounds_point(65536, 4, 3, o2, f2)};
    struct sweep s = {.points = pts, .n_points = 2};
    char *v = sweep_verdict(&s);
    CHECK(v && strstr(v, "- Beside fio (the same jobs, 3 rounds each): ours / fio agree within 10% at all 2 points; "
                         "the furthest from 1.0: 64k × 4 threads at 1.05 (rounds 1.00 to 1.10).\n"));
    free(v);
}

/* The case: a median of 1.08 over 6 points (0.75 to 1.27), which
 * the old line called agreement, while four differ by 11-27%: "agree at
 * 2 of 6", the worst (1.27, 27% off; 0.75 is 25%) named. */
static void check_n_of_m(void)
{
    struct sweep_point pts[] = {point(4096, 1, 0.75, 1.0), point(8192, 1, 1.11, 1.0), point(16384, 1, 1.05, 1.0),
                                point(32768, 1, 1.27, 1.0), point(65536, 1, 1.12, 1.0), point(131072, 1, 1.0, 1.0)};
    struct sweep s = {.points = pts, .n_points = 6};
    char *v = sweep_verdict(&s);
    CHECK(v && strstr(v, "ours / fio agree at 2 of 6 points within 10%; 4 differ by more than 10%; the worst: "
                         "32k × 1 thread at 1.27. See sweep.md's rows"));
    CHECK(v && !strstr(v, "agree within 10% at all"));
    free(v);
}

/* Rounds: one point steady and 20% off (differs), one whose rounds'
 * ratios cover 1.0 (agrees), one whose own rounds are 50% apart without
 * covering 1.0 (noisy, not a difference); the worst is the one that
 * differs, though the noisy one lies further from 1.0. */
static void check_noisy_and_spread(void)
{
    double o_diff[] = {1.2, 1.21, 1.19}, f_diff[] = {1.0, 1.0, 1.0};
    double o_cover[] = {1.3, 0.95, 1.25}, f_cover[] = {1.0, 1.0, 1.0};
    double o_noisy[] = {2.0, 3.0, 1.6}, f_noisy[] = {1.0, 1.0, 1.0};
    struct sweep_point pts[] = {rounds_point(4096, 1, 3, o_diff, f_diff), rounds_point(65536, 1, 3, o_cover, f_cover),
                                rounds_point(1 << 20, 8, 3, o_noisy, f_noisy)};
    struct sweep s = {.points = pts, .n_points = 3};
    char *v = sweep_verdict(&s);
    CHECK_STR(strstr(v ? v : "", "- Beside fio"),
              "- Beside fio (the same jobs, 3 rounds each): ours / fio agree at 1 of 3 points within 10% (1 of them "
              "only within their rounds' spread, which covers 1.0); 1 differ by more than 10%; 1 noisy, 1m × 8 "
              "threads first (rounds more than 10% apart among themselves: neither agreement nor a difference); "
              "the worst: 4k × 1 thread at 1.20 (rounds 1.19 to 1.21). See sweep.md's rows and fio's buffers "
              "(--small-pages reads into 4 KiB pages as fio does).\n");
    free(v);
    /* without the steady one, the worst is the noisy one, said so */
    s.points = &pts[1];
    s.n_points = 2;
    v = sweep_verdict(&s);
    CHECK(v && strstr(v, "the worst: 1m × 8 threads at 2.00 (rounds 1.60 to 3.00), noisy."));
    free(v);
}

static void check_nothing_finished(void)
{
    struct sweep_point p = point(4096, 1, 1.0, 0);
    p.result.interrupted = true;
    struct sweep s = {.points = &p, .n_points = 1};
    CHECK(sweep_verdict(&s) == NULL);
    struct sweep empty = {.n_points = 0};
    CHECK(sweep_verdict(&empty) == NULL);
}

int main(void)
{
    check_full_grid();
    check_unfinished_left_out();
    check_nothing_finished();
    check_agreement_kinds();
    check_all_within();
    check_n_of_m();
    check_noisy_and_spread();
    return check_report("test_sweep_verdict");
}
