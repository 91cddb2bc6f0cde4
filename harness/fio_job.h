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

/* The fio command line for p, as a NULL-terminated argv in static storage. */
const char *const *fio_job_argv(const struct point_params *p);

/* Parses fio's --output-format=json text (leading non-JSON lines are skipped).
 * 0, or -1 with a reason in err. */
int fio_parse_json(const char *text, struct fio_result *out, char *err, size_t errlen);

/* Runs fio for p and parses it. 0, or -1 with a reason in err. */
int fio_job_run(const struct point_params *p, struct fio_result *out, char *err, size_t errlen);

#endif
