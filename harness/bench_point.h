/* One measurement: N threads reading random chunks of a file with one
 * engine, timed by fio's rules. */
#ifndef FLASHBED_HARNESS_BENCH_POINT_H
#define FLASHBED_HARNESS_BENCH_POINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/histogram.h"
#include "io/ioengine.h"

struct point_params {
    const struct ioengine_ops *engine;
    const char *path;
    uint64_t file_size;   /* offsets are uniform over [0, file_size), chunk-aligned */
    uint64_t chunk;
    unsigned threads;
    unsigned iodepth;     /* forced to 1 for synchronous engines */
    bool direct;
    bool huge_pages;      /* back read buffers with transparent huge pages */
    double runtime_s;
    double ramp_s;        /* run first and discarded */
    uint64_t seed;
    struct io_fault *fault; /* the fault engine's rules and counts (io/io_fault.h); NULL: none */
};

struct point_result {
    uint64_t bytes;       /* completed in the measured window, all threads */
    uint64_t ios;
    double seconds;       /* the longest thread's measured time */
    double bw_bytes;      /* bytes / seconds */
    double iops;
    struct histogram lat; /* per-read completion latency, ns */
    double cpu_user_s;    /* summed over the benchmark threads */
    double cpu_sys_s;
    bool direct;          /* whether the page cache was bypassed */
    unsigned iodepth;     /* effective */
    bool huge_pages;      /* buffers were backed by huge pages (asked and granted) */
    bool interrupted;     /* stopped early by Ctrl-C: not a valid point */
    uint64_t retries;     /* reads tried again after a failed or short one (BENCH_RETRIES each) */
    bool read_failed;     /* a read failed its retry too: the point stopped there (the error names it) */
    uint64_t failed_offset; /* that read's offset (the first thread's to fail) */
};

#define BENCH_RETRIES 1

/* Runs one point. Returns 0, or -1 with a one-line reason in err; after a
 * read failed (read_failed) r holds what completed before it: bytes, ios
 * and latencies count only reads that completed in full. */
int bench_point_run(const struct point_params *p, struct point_result *r, char *err,
                    size_t errlen);

#endif
