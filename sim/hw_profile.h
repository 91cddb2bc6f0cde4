/* Hardware profiles (configs/hw/<name>.json): what one machine does, as the
 * cost model needs it. Flash read throughput (measured points over chunk x
 * threads, sequential bandwidth, the fitted closed form), DRAM row-copy
 * bandwidth, and per dtype the effective speed of decode kernels.
 *
 * A profile measured by `flashbed calibrate` holds numbers. A profile
 * written from the paper may instead say how to derive a number from one of
 * the paper's rows ("derive_from"): the cost model turns those into rates
 * once it knows the model shape (cost_model.c), so every rate names the
 * table row it came from. */
#ifndef FLASHBED_SIM_HW_PROFILE_H
#define FLASHBED_SIM_HW_PROFILE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/settings.h"
#include "sim/flash_model.h"

enum { HW_MAX_POINTS = 256, HW_MAX_COPY = 16, HW_MAX_DTYPES = 6, HW_MAX_XFER = 8, HW_MAX_TAIL = 8 };

/* The I/O engines a profile gives a fixed cost per read for (io/ioengine.h). */
enum { HW_IO_PSYNC, HW_IO_URING, HW_IO_ENGINES };
extern const char *const hw_io_engine_names[HW_IO_ENGINES]; /* "psync", "io_uring" */

/* A rate fixed by one of the paper's rows: the row's time for the work the
 * cost model computes for `model` under `policy` at `dtype`. */
struct derive_rule {
    char model[64];
    char policy[32];   /* "naive" (dense compute), "window" (memory management), ... */
    char dtype[8];
    double ms;
    double fraction;   /* FFN fraction the row moved (mem, sparse flash); 0 if unused */
    double chunk;      /* for flash: bytes per read */
};

struct compute_rate {
    char dtype[8];        /* "f32", "f16", "bf16" */
    double bw;            /* effective bytes/s of weights + KV touched at decode; 0 until derived */
    double flops;         /* FLOP/s ceiling, 0 when unknown */
    struct derive_rule derive; /* derive.ms > 0: bw comes from a paper row */
    char source[200];
};

/* A compute device's copies and queue, measured through the backend
 * interface (calibrate --backend B; engine/compute/backend.h): host ->
 * device ("h2d", upload) and device -> host ("d2h", download) bandwidth
 * at a few sizes, from pinned memory (BUF_PINNED) and from ordinary
 * malloc'd memory; the time per launch of a tiny op when many are queued,
 * and the time of a wait on an empty queue (sync, and event record +
 * wait). The profile's "device" object; absent from a CPU profile.
 *
 * A device that computes on the host's own memory (unified memory: Apple
 * silicon's GPU) says "host_visible": true and gives no "transfers": the
 * rows read from flash land where the GPU reads them, so nothing is
 * copied and the copies are priced at 0 ms (hw_device_bw gives 0); its
 * launches and waits are priced as any device's. */
struct hw_device {
    bool present;
    bool host_visible; /* unified memory: no copies between host and device */
    char name[128];  /* the device, as its driver names it */
    char source[300];
    size_t n_xfer;
    double xfer_bytes[HW_MAX_XFER];          /* ascending */
    double h2d_pinned_bw[HW_MAX_XFER], h2d_pageable_bw[HW_MAX_XFER];
    double d2h_pinned_bw[HW_MAX_XFER], d2h_pageable_bw[HW_MAX_XFER];
    double launch_s, sync_s, event_s;
};

/* The fixed costs the engine pays beside its bytes (the profile's "fixed"
 * object, measured by calibrate: harness/calibrate_fixed.c), each with
 * where it came from. A profile written before calibrate measured them
 * has none: every term is 0 and each source says so.
 *   read_s     per read, per I/O engine: the intercept of a read's time
 *              over its size, one reader thread at queue depth 1 (system
 *              call, completion, the device's latency); read_bw the slope's
 *              bytes/s. 0: not measured (that engine unavailable).
 *   batch_s    per batch of reads: handing it to the reader threads and
 *              learning it is done, beyond its reads
 *   tail       per active reader threads T: a batch of one read per
 *              thread takes `factor` times the time per read of a long
 *              batch at T (the slowest thread, not the mean), on reads of
 *              HW_TAIL_READ_BYTES; 1 when absent
 *   job_*_s    one parallel job over the compute team (engine/compute/
 *              threadpool.h) of team_threads: hot (the workers spinning:
 *              jobs back to back) and cold (the first job after the caller
 *              waited, as for a batch of reads: job_cold_s after waits of
 *              cold_gap_s, ascending; the workers spin a while, then
 *              sleep; job_cold_s[last] stands for longer waits);
 *              the kernels run one thread alone below
 *              min_parallel_work multiply-adds (the cost model counts
 *              jobs with it: sim/cost_engine.h)
 *   token_s    per token, beyond its jobs and bytes */
/* The read size calibrate measures the batch tail at (harness/calibrate_fixed.c). */
enum { HW_TAIL_READ_BYTES = 4096 };

struct hw_fixed {
    bool present;
    double read_s[HW_IO_ENGINES], read_bw[HW_IO_ENGINES];
    char read_source[300];
    double batch_s;
    char batch_source[300];
    size_t n_tail;
    double tail_threads[HW_MAX_TAIL], tail_factor[HW_MAX_TAIL]; /* threads ascending */
    char tail_source[300];
    double team_threads, min_parallel_work, job_hot_s;
    size_t n_cold;
    double cold_gap_s[HW_MAX_TAIL], job_cold_s[HW_MAX_TAIL];
    char job_source[300];
    double token_s;
    char token_source[300];
};

struct hw_profile {
    char name[64];
    char path[4096];
    char backend[16];          /* "cpu", "metal", "cuda" */
    unsigned io_threads;       /* reader threads the profile's flash numbers assume */
    struct flash_model flash;
    struct flash_point points[HW_MAX_POINTS];
    struct derive_rule flash_derive; /* sparse point from a paper row, ms > 0 when used */
    char flash_source[300];
    double copy_row_bytes[HW_MAX_COPY], copy_bw[HW_MAX_COPY];
    size_t n_copy;
    double per_row_ns;         /* fixed cost per inserted or deleted row */
    struct derive_rule mem_derive;
    char mem_source[300];
    /* CRC-32C (common/crc32c.h) over a buffer of crc_buffer_bytes, hot, one
     * thread: what run --verify pays per byte of a bundle it checks
     * (dram.crc32c_bw_bytes; calibrate measures it). 0 in a profile written
     * before calibrate measured it: the cost model then leaves verification
     * unpriced and says so (cost_model.h), guessing no rate. */
    double crc_bw, crc_buffer_bytes;
    char crc_source[300];
    struct compute_rate compute[HW_MAX_DTYPES];
    size_t n_compute;
    char compute_note[300];
    /* measured on a model of a device (sim, OpenCL on a CPU such as
     * PoCL): its device rates check the pipeline and are no GPU's, so the
     * loader refuses it unless asked (HW_LOAD_ALLOW_EMULATED) */
    bool emulated;
    char emulated_note[300];
    struct hw_device device;
    struct hw_fixed fixed;
};

enum { HW_LOAD_ALLOW_EMULATED = 1 };

/* name: "m1max-cpu" (set's configs folder, hw/) or a path
 * (config_file_path). 0, or -1 with err naming the file. A profile marked
 * "emulated" is refused (its rates would price a GPU row from a model of
 * one) unless flags has HW_LOAD_ALLOW_EMULATED; hw_profile_load passes 0. */
int hw_profile_load_flags(const struct fb_settings *set, const char *name, unsigned flags, struct hw_profile *hw,
                          char *err, size_t errlen);
int hw_profile_load(const struct fb_settings *set, const char *name, struct hw_profile *hw, char *err,
                    size_t errlen);

/* The flash points of a `flashbed sweep` result (sweep.json's "points":
 * chunk_bytes, threads, bw_bytes) into hw->points and hw->flash's grid,
 * where they came from into hw->flash_source, and whether that sweep
 * bypassed the page cache into *bypassed. 0, or -1 with err naming the
 * file (unreadable, a point missing a key or with a value no measurement
 * has: a chunk that is not a whole number of bytes from 1 to 2^40,
 * threads not whole or outside 1..FB_MAX_THREADS, a bandwidth that is not
 * finite and from 1 to 1e18 bytes/s; fewer than the 6 points the closed
 * form needs). */
int hw_flash_from_sweep(const char *path, struct hw_profile *hw, bool *bypassed, char *err, size_t errlen);

/* DRAM copy bandwidth for rows of row_bytes (log-interpolated, clamped). */
double hw_copy_bw(const struct hw_profile *hw, double row_bytes);

/* The device's copy bandwidth for copies of bytes (log-interpolated over
 * its sizes, clamped): host -> device when h2d, else device -> host; from
 * pinned memory when pinned, else from ordinary memory. 0 when the
 * profile has no device, or a host-visible one (no copy is made: the
 * device terms price its copies at 0 ms, sim/device_terms.h). */
double hw_device_bw(const struct hw_profile *hw, bool h2d, bool pinned, double bytes);

/* The batch tail at `threads` active reader threads (log-interpolated
 * over the profile's, clamped); 1 when the profile has none. */
double hw_read_tail(const struct hw_profile *hw, double threads);

/* A cold job's seconds after the caller waited gap_s (log-interpolated
 * over the profile's waits, clamped); 0 when the profile has none. */
double hw_job_cold(const struct hw_profile *hw, double gap_s);

/* The index of an I/O engine's name in hw_io_engine_names, -1 if none. */
int hw_io_engine(const char *name);

/* The compute rate for a dtype, NULL if the profile has none. */
struct compute_rate *hw_compute(struct hw_profile *hw, const char *dtype);

/* JSON of a profile (what calibrate writes); "emulated", its note and
 * "device" only for a profile of a device. */
cJSON *hw_profile_to_json(const struct hw_profile *hw);

#endif
