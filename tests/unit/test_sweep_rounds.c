/* A sweep point's rounds (harness/sweep_rounds.h, issue 47): the median
 * with the min and max, odd and even counts; the rounds' reads summed and
 * their latencies merged; fio's figures the rounds' medians; ours / fio
 * the medians' ratio with the range of each round's ratio; the band. */
#include "check.h"

#include "harness/sweep_rounds.h"

static void check_spread(void)
{
    double odd[] = {3, 1, 2};
    struct spread s = spread_of(odd, 3);
    CHECK(s.median == 2 && s.min == 1 && s.max == 3);
    CHECK(odd[0] == 3 && odd[1] == 1); /* left as given */
    double even[] = {4, 1, 2, 10};
    s = spread_of(even, 4);
    CHECK(s.median == 3 && s.min == 1 && s.max == 10);
    double one[] = {5};
    s = spread_of(one, 1);
    CHECK(s.median == 5 && s.min == 5 && s.max == 5);
    s = spread_of(one, 0);
    CHECK(s.median == 0 && s.min == 0 && s.max == 0);
    CHECK(!spread_wider_than((struct spread){1.05, 1.0, 1.1}, 0.1)); /* 10% apart: not more */
    CHECK(spread_wider_than((struct spread){1.05, 1.0, 1.11}, 0.1));
    CHECK(!spread_wider_than((struct spread){1, 1, 1}, 0));
}

static struct point_result round_result(uint64_t ios, double seconds, uint64_t lat_ns)
{
    struct point_result r;
    memset(&r, 0, sizeof r);
    r.ios = ios;
    r.bytes = ios * 4096;
    r.seconds = seconds;
    r.bw_bytes = (double)r.bytes / seconds;
    r.iops = (double)ios / seconds;
    r.retries = 1;
    r.cpu_sys_s = 0.25;
    r.iodepth = 1;
    hist_init(&r.lat);
    for (uint64_t i = 0; i < ios; i++)
        hist_add(&r.lat, lat_ns);
    return r;
}

/* Three rounds of 100, 400 and 200 reads in 1 s each: sums of 700 reads,
 * 3 s, 3 retries, one histogram of 700 latencies; 200 IOPS the median
 * (their mean would be 233). */
static void check_rounds_summed(void)
{
    struct sweep_point p;
    memset(&p, 0, sizeof p);
    p.params.chunk = 4096;
    struct point_result r0 = round_result(100, 1, 1000), r1 = round_result(400, 1, 3000),
                        r2 = round_result(200, 1, 2000);
    sweep_round_add(&p, 0, &r0);
    sweep_round_add(&p, 1, &r1);
    sweep_round_add(&p, 2, &r2);
    sweep_point_settle(&p);
    CHECK(p.n_rounds == 3);
    CHECK_U64(p.result.ios, 700);
    CHECK_U64(p.result.bytes, 700 * 4096);
    CHECK_U64(p.result.retries, 3);
    CHECK(p.result.seconds == 3);
    CHECK(p.result.cpu_sys_s == 0.75);
    CHECK(p.result.iops == 200);
    CHECK(p.result.bw_bytes == 200 * 4096);
    CHECK_U64(p.result.lat.count, 700);
    CHECK_U64(p.result.lat.min, 1000);
    CHECK_U64(p.result.lat.max, 3000);
    struct spread o = point_ours_spread(&p);
    CHECK(o.median == 200 * 4096 && o.min == 100 * 4096 && o.max == 400 * 4096);
    /* no fio: no ratio, no fio spread */
    CHECK(point_ratio_spread(&p).median == 0 && point_fio_spread(&p).max == 0);
}

/* Two rounds with fio: medians of two are their means; ours / fio the
 * medians' ratio, its range each round's own ratio; fio's percentiles
 * the rounds' medians. */
static void check_fio_rounds(void)
{
    struct sweep_point p;
    memset(&p, 0, sizeof p);
    struct point_result r0 = round_result(100, 1, 1000), r1 = round_result(300, 1, 1000);
    sweep_round_add(&p, 0, &r0);
    sweep_round_add_fio(&p, 0, &(struct fio_result){.bw_bytes = 100 * 4096, .iops = 100, .lat_p50_ns = 10,
                                                    .lat_p99_ns = 90});
    sweep_round_add(&p, 1, &r1);
    sweep_round_add_fio(&p, 1, &(struct fio_result){.bw_bytes = 200 * 4096, .iops = 200, .lat_p50_ns = 20,
                                                    .lat_p99_ns = 91});
    p.has_fio = true;
    sweep_point_settle(&p);
    CHECK(p.result.iops == 200);
    CHECK(p.fio.bw_bytes == 150 * 4096 && p.fio.iops == 150);
    CHECK_U64(p.fio.lat_p50_ns, 15);
    CHECK_U64(p.fio.lat_p99_ns, 91); /* 90.5 rounded */
    struct spread f = point_fio_spread(&p);
    CHECK(f.min == 100 * 4096 && f.max == 200 * 4096);
    struct spread r = point_ratio_spread(&p);
    CHECK_NEAR(r.median, 200.0 / 150.0, 1e-15); /* the table's columns divided */
    CHECK(r.min == 1.0 && r.max == 1.5);          /* round 1: 100/100, round 2: 300/200 */
}

/* A point made by hand (no rounds): its one figure is every statistic. */
static void check_single(void)
{
    struct sweep_point p;
    memset(&p, 0, sizeof p);
    p.result.bw_bytes = 8;
    p.has_fio = true;
    p.fio.bw_bytes = 10;
    struct spread r = point_ratio_spread(&p);
    CHECK(r.median == 0.8 && r.min == 0.8 && r.max == 0.8);
    CHECK(point_ours_spread(&p).min == 8 && point_fio_spread(&p).max == 10);
    CHECK(sweep_rounds_of(NULL) == 1);
    struct sweep_config c = {.rounds = 0};
    CHECK(sweep_rounds_of(&c) == 1);
    c.rounds = 4;
    CHECK(sweep_rounds_of(&c) == 4);
}

int main(void)
{
    check_spread();
    check_rounds_summed();
    check_fio_rounds();
    check_single();
    return check_report("test_sweep_rounds");
}
