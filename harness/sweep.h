/* flashbed sweep: random-read throughput over chunk size x thread count
 * (the paper's Fig. 2b), optionally beside fio running the same jobs. */
#ifndef FLASHBED_HARNESS_SWEEP_H
#define FLASHBED_HARNESS_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/parse.h"
#include "common/progress.h"
#include "common/settings.h"
#include "harness/bench_point.h"
#include "harness/fio_job.h"
#include "harness/scratch_file.h"
#include "io/io_fault.h"

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
    const struct fb_settings *settings; /* where plot's script is (read only when plot) */
    struct out_manifest *folder;  /* out_dir opened as the command's result folder (common/out_manifest.h):
                                   * the files are claimed there; NULL: none */
    uint64_t seed;                /* 0: a fresh seed per point, as fio's randrepeat=0 */
    bool huge_pages;              /* read buffers on transparent huge pages */
    const char *fio_mem;          /* fio's --mem for --compare-fio, NULL: fio's default */
    const struct progress_report *progress; /* the scratch file written, then each point (NULL: none) */
    struct io_fault *fault;       /* engine fault: its rules and counts (io/io_fault.h); NULL: none */
    unsigned rounds;              /* runs per point, ours and fio's alternating (harness/sweep_rounds.h);
                                   * runtime_s and ramp_s are split evenly over them; 0: one */
};

/* The most rounds a point takes (each round's figures are columns). */
#define SWEEP_MAX_ROUNDS 10

/* One round of a point: ours, and fio's run beside it (has_fio). */
struct sweep_round {
    double bw_bytes, iops;
    struct fio_result fio;
};

/* A point measured in rounds: result sums the rounds' reads (bytes, ios,
 * seconds, CPU, retries, one latency histogram), its bw_bytes and iops are
 * the rounds' medians, as are fio's figures (each latency percentile the
 * median of the rounds'). Points made by hand may leave n_rounds 0: then
 * result and fio are the one round. */
struct sweep_point {
    struct point_params params;   /* runtime_s, ramp_s: one round's; seed: the first round's */
    struct point_result result;
    bool has_fio;
    struct fio_result fio;
    unsigned n_rounds;            /* rounds measured (a failed point: up to the one that failed) */
    struct sweep_round rounds[SWEEP_MAX_ROUNDS];
    struct io_fault_counts faults; /* what the fault engine injected during the point */
    char error[512];               /* a read that failed its retry: the point stopped there ("" none) */
    char failed_offset[24];        /* its offset in decimal ("" none) */
};

struct sweep {
    const struct sweep_config *cfg;
    cJSON *provenance;            /* owned; set once the file is ready and measuring starts */
    struct sweep_point *points;
    size_t n_points, cap_points;
    size_t total;                 /* points the sweep has (chunks x threads) */
    bool complete;                /* false when interrupted before the end */
    uint32_t dio_align;           /* direct-I/O alignment of the file, 0 if buffered */
    size_t n_failed;              /* points whose reads failed (kept, with their error) */
};

/* The settings a refusal is about (a mask of these), so that the caller
 * can name its own options for them: the library's messages name none. */
enum sweep_setting {
    SWEEP_SET_PATH = 1 << 0,
    SWEEP_SET_SIZE = 1 << 1,
    SWEEP_SET_CHUNKS = 1 << 2,
    SWEEP_SET_THREADS = 1 << 3,
    SWEEP_SET_IODEPTH = 1 << 4,
    SWEEP_SET_RUNTIME = 1 << 5,
    SWEEP_SET_DIRECT = 1 << 6,    /* reading through the page cache would not be refused */
    SWEEP_SET_OUT = 1 << 7,
    SWEEP_SET_FIO = 1 << 8,       /* compare_fio */
    SWEEP_SET_FIO_MEM = 1 << 9,
    SWEEP_SET_PLOT = 1 << 10,
    SWEEP_SET_ROUNDS = 1 << 11,
};

/* Validates everything that can be checked before touching the disk:
 * lists, engine, direct-I/O support and alignment, file, free space, fio
 * and gnuplot when asked for, and readies s for sweep_run. 0 and what the
 * file needs (action), or -1 with a reason in err and the settings it is
 * about in *settings. */
int sweep_check(const struct sweep_config *c, struct sweep *s, enum scratch_action *action, unsigned *settings,
                char *err, size_t errlen);

/* Runs the sweep sweep_check readied: prepares the file, measures each
 * point (fio after each when asked), rewrites the result files after every
 * point, plots at the end. Takes parameters (recorded in the provenance).
 * A point whose read failed its retry is kept with its error (naming the
 * offset) and what completed before it, and the sweep goes on; it then
 * returns 1, err counting the failed points and quoting the first.
 * Returns 0; 1 with the reason in err; 130 when interrupted (finished
 * points kept; err says why only when something also failed). s->n_points
 * of s->total points were measured; sweep_free releases them. */
int sweep_run(struct sweep *s, enum scratch_action action, cJSON *parameters, char *err, size_t errlen);
void sweep_free(struct sweep *s);

/* Result files (sweep_output.c). Each 0, or -1 with the reason in err. */
cJSON *sweep_to_json(const struct sweep *s);
char *sweep_to_csv(const struct sweep *s);
char *sweep_to_markdown(const struct sweep *s);
int sweep_write_files(const struct sweep *s, const char *dir, char *err, size_t errlen);
int sweep_plot(const struct sweep *s, const char *dir, char *err, size_t errlen);

#endif
