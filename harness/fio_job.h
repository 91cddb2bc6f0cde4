/* Running fio on exactly the job a sweep point ran, and reading its JSON,
 * so every point of ours stands beside fio's on the same file. */
#ifndef FLASHBED_HARNESS_FIO_JOB_H
#define FLASHBED_HARNESS_FIO_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "harness/bench_point.h"

struct fio_result {
    double bw_bytes;
    double iops;
    uint64_t lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p999_ns; /* clat percentiles */
};

/* The fio command line for p, as a NULL-terminated argv held in the
 * caller's *out (no static storage: two command lines can coexist).
 * mem is fio's --mem (buffer allocation: "malloc", "shmhuge", ...), NULL
 * for fio's default. Returns out->argv. */
enum { FIO_ARGS = 24, FIO_ARG_LEN = 4200 };
struct fio_argv {
    char text[FIO_ARGS][FIO_ARG_LEN];
    const char *argv[FIO_ARGS + 1];
};
const char *const *fio_job_argv(const struct point_params *p, const char *mem, struct fio_argv *out);

/* Parses fio's --output-format=json text (leading non-JSON lines are skipped).
 * 0, or -1 with a reason in err. */
int fio_parse_json(const char *text, struct fio_result *out, char *err, size_t errlen);

/* Runs fio for p and parses it. 0, or -1 with a reason in err. */
int fio_job_run(const struct point_params *p, const char *mem, struct fio_result *out, char *err,
                size_t errlen);

/* Huge pages fio needs for p with --mem=shmhuge/mmaphuge: one buffer of
 * iodepth x chunk per thread, rounded up to whole 2 MiB pages. */
uint64_t fio_huge_pages_needed(const struct point_params *p);

#endif
