/* flashbed sweep: random-read throughput over chunk size x thread count
 * (the paper's Fig. 2b), optionally beside fio running the same jobs. */
#ifndef FLASHBED_HARNESS_SWEEP_H
#define FLASHBED_HARNESS_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/parse.h"
#include "harness/bench_point.h"
#include "harness/fio_job.h"
#include "harness/scratch_file.h"

struct sweep_config {
    const char *path;
    uint64_t size;                /* bytes of the file that are read */
    struct u64_list chunks;       /* bytes */
    struct u64_list threads;
    const struct ioengine_ops *engine;
    unsigned iodepth;
    bool direct;
    double runtime_s, ramp_s;
    const char *out_dir;
    bool compare_fio;
    bool plot;
    uint64_t seed;                /* 0: a fresh seed per point, as fio's randrepeat=0 */
    bool huge_pages;              /* read buffers on transparent huge pages */
    const char *fio_mem;          /* fio's --mem for --compare-fio, NULL: fio's default */
};

struct sweep_point {
    struct point_params params;
    struct point_result result;
    bool has_fio;
    struct fio_result fio;
};

struct sweep {
    const struct sweep_config *cfg;
    cJSON *provenance;            /* owned */
    struct sweep_point *points;
    size_t n_points, cap_points;
    bool complete;                /* false when interrupted before the end */
    uint32_t dio_align;           /* direct-I/O alignment of the file, 0 if buffered */
};

/* Validates everything that can be checked before touching the disk:
 * lists, engine, direct-I/O support and alignment, file, free space, fio
 * and gnuplot when asked for. 0, or -1 with a reason in err. */
int sweep_check(const struct sweep_config *c, struct sweep *s, enum scratch_action *action,
                char *err, size_t errlen);

/* Runs the whole sweep: prepares the file, measures each point (fio after
 * each when asked), rewrites the result files after every point, plots at
 * the end. Returns 0, 1 on error, 130 when interrupted (finished points kept). */
int sweep_run(const struct sweep_config *c, cJSON *parameters);

/* Result files (sweep_output.c). */
cJSON *sweep_to_json(const struct sweep *s);
char *sweep_to_csv(const struct sweep *s);
char *sweep_to_markdown(const struct sweep *s);
int sweep_write_files(const struct sweep *s, const char *dir);
int sweep_plot(const struct sweep *s, const char *dir);

#endif
