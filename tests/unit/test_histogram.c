#include <stdlib.h>

#include "check.h"
#include "common/histogram.h"
#include "common/median.h"

/* Values below 128 are counted exactly: nearest-rank percentiles are exact. */
static void test_exact_small_values(void)
{
    struct histogram h;
    hist_init(&h);
    for (uint64_t v = 1; v <= 100; v++)
        hist_add(&h, v);
    CHECK_U64(h.count, 100);
    CHECK_U64(hist_percentile(&h, 50), 50);
    CHECK_U64(hist_percentile(&h, 90), 90);
    CHECK_U64(hist_percentile(&h, 99), 99);
    CHECK_U64(hist_percentile(&h, 99.9), 100);
    CHECK_U64(hist_percentile(&h, 100), 100);
    CHECK_U64(hist_percentile(&h, 1), 1);
    CHECK_NEAR(hist_mean(&h), 50.5, 1e-12);
    CHECK_U64(h.min, 1);
    CHECK_U64(h.max, 100);
}

/* 99.9% of 1000 values is rank 999, not 1000 (binary fractions must not push it up). */
static void test_rank_rounding(void)
{
    struct histogram h;
    hist_init(&h);
    for (uint64_t v = 0; v < 1000; v++)
        hist_add(&h, v < 999 ? 10 : 120);
    CHECK_U64(hist_percentile(&h, 99.9), 10);
    CHECK_U64(hist_percentile(&h, 100), 120);
}

/* Bucket ranges tile the integers without gaps or overlaps. */
static void test_bucket_tiling(void)
{
    uint64_t expect_lo = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        uint64_t lo, hi;
        hist_bucket_range(i, &lo, &hi);
        CHECK_U64(lo, expect_lo);
        CHECK(hi >= lo);
        CHECK_U64(hist_bucket_of(lo), i);
        CHECK_U64(hist_bucket_of(hi), i);
        if (hi == UINT64_MAX)
            break;
        expect_lo = hi + 1;
        if (check_failures)
            break;
    }
    CHECK_U64(hist_bucket_of(UINT64_MAX), HIST_BUCKETS - 1);
}

/* Known large values: a percentile lands within the bucket's relative width. */
static void test_large_values(void)
{
    struct histogram h;
    hist_init(&h);
    /* 900 reads at 100 us, 90 at 1 ms, 10 at 20 ms. */
    for (int i = 0; i < 900; i++)
        hist_add(&h, 100000);
    for (int i = 0; i < 90; i++)
        hist_add(&h, 1000000);
    for (int i = 0; i < 10; i++)
        hist_add(&h, 20000000);
    CHECK_NEAR((double)hist_percentile(&h, 50), 100000, 100000.0 / 64);
    CHECK_NEAR((double)hist_percentile(&h, 90), 100000, 100000.0 / 64);
    CHECK_NEAR((double)hist_percentile(&h, 90.1), 1000000, 1000000.0 / 64);
    CHECK_NEAR((double)hist_percentile(&h, 99), 1000000, 1000000.0 / 64);
    CHECK_NEAR((double)hist_percentile(&h, 99.9), 20000000, 20000000.0 / 64);
    /* A single repeated value is reported exactly (clamped to min/max). */
    struct histogram one;
    hist_init(&one);
    for (int i = 0; i < 5; i++)
        hist_add(&one, 123457);
    CHECK_U64(hist_percentile(&one, 50), 123457);
}

static void test_merge_and_empty(void)
{
    struct histogram a, b;
    hist_init(&a);
    hist_init(&b);
    CHECK_U64(hist_percentile(&a, 50), 0);
    for (uint64_t v = 1; v <= 50; v++)
        hist_add(&a, v);
    for (uint64_t v = 51; v <= 100; v++)
        hist_add(&b, v);
    hist_merge(&a, &b);
    CHECK_U64(a.count, 100);
    CHECK_U64(hist_percentile(&a, 50), 50);
    CHECK_U64(hist_percentile(&a, 75), 75);
    CHECK_U64(a.max, 100);
}

/* The median of rounds (common/median.h): odd, even, one, none. */
static void test_median(void)
{
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, one[] = {7};
    CHECK_NEAR(median_sorting(odd, 3), 3, 0);
    CHECK_NEAR(median_sorting(even, 4), 2.5, 0);
    CHECK_NEAR(even[0], 1, 0); /* sorted in place */
    CHECK_NEAR(median_sorting(one, 1), 7, 0);
    CHECK_NEAR(median_sorting(NULL, 0), 0, 0);
}

int main(void)
{
    test_median();
    test_exact_small_values();
    test_rank_rounding();
    test_bucket_tiling();
    test_large_values();
    test_merge_and_empty();
    return check_report("test_histogram");
}
