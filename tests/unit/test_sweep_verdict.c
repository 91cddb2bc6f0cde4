/* sweep's verdict (harness/sweep_verdict.h, issue 35): exact lines on
 * points made by hand, whose peak, first point near it, smallest reads
 * and fio ratios are known; unfinished points left out; none finished. */
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
                 "- Beside fio (the same jobs): ours / fio 1.00, the median of 6 points (0.80 to 1.25): the two "
                 "agree within 10%.\n");
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
    CHECK(v && strstr(v, "ours / fio 0.58, the median of 2 points (0.50 to 0.67): they differ by more than 10%"));
    CHECK(v && strstr(v, "- 1 point stopped at a failed read (sweep.md names each).\n"));
    CHECK(v && !strstr(v, "90% of the peak")); /* nothing else comes near 0.4 */
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
    return check_report("test_sweep_verdict");
}
