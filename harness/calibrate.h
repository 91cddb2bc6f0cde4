/* flashbed calibrate: measures this machine for the cost model and writes a
 * hardware profile (sim/hw_profile.h). Flash through the sweep code; DRAM
 * row copies the way the neuron cache moves rows (Fig. 6: a deleted row is
 * overwritten by the last one); compute by timing the engine's own
 * matrix-vector kernel (engine/compute/cpu_kernels.c), or a device
 * backend's through the backend interface (calibrate_device.c). */
#ifndef FLASHBED_HARNESS_CALIBRATE_H
#define FLASHBED_HARNESS_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "engine/compute/backend.h"
#include "sim/hw_profile.h"

/* Bytes/s copying rows of row_bytes between random slots of a buffer far
 * larger than the caches; *ns_per_row gets the time per row. */
double measure_row_copy(size_t row_bytes, double seconds, double *ns_per_row);

/* Bytes/s of CRC-32C (common/crc32c.h) as run --verify checks bundles:
 * bundles of `bytes` three side by side (crc32c_x3) on one thread, along
 * 256 MiB so they come from DRAM (a bundle read with direct I/O lands
 * there, not in the caches): the median of `repeats` timings of about
 * `seconds` each. 0 when the buffer cannot be allocated. */
double measure_crc_rate(size_t bytes, int repeats, double seconds);

/* Effective bytes/s (weights read) and FLOP/s of y = W x for a rows x cols
 * matrix of t weights, with the CPU backend's
 * matvec on `threads` threads (tuned by set, as the engine's), over copies
 * of W (512 MiB in all) taken in turn, so that W comes from DRAM as in
 * decode. 0, with the reason in err, when it cannot allocate or start the
 * threads. */
double measure_matvec(const struct fb_settings *set, size_t rows, size_t cols, enum fb_dtype t, unsigned threads,
                      double seconds, double *flops, char *err, size_t errlen);

/* The recipe, step by step, for the program to run and report between. */

/* How well the closed form fits the flash points. */
struct calibrate_fit {
    double rms_log_error, mape_all_pct, mape_heldout_pct;
};

/* The profile's flash model from its sweep points (hw->points, measured
 * or from a sweep file): the closed form fitted to every point, its errors,
 * and the sequential rate (the best point when large reads gave none). */
void calibrate_fit_flash(struct hw_profile *hw, struct calibrate_fit *fit);

/* DRAM row copies of 4 KiB to 1 MiB rows, as the neuron cache moves them. */
void calibrate_measure_memory(struct hw_profile *hw, bool quick);

/* The CRC-32C rate run --verify pays (hw->crc_bw) on CALIBRATE_CRC_BYTES
 * buffers, with its source. */
enum { CALIBRATE_CRC_BYTES = 16384 };
void calibrate_measure_crc(struct hw_profile *hw, bool quick);

/* Whether the CPU's profile measures type t: one float type of each
 * width, the first in the table's order (f32, f16; not bf16), and every
 * block format. The rule and why: at its definition (calibrate.c). */
bool calibrate_cpu_measures(enum fb_dtype t);

/* The engine's matvec on `threads` threads in each type the CPU measures
 * (calibrate_cpu_measures), in the table's order: one compute rate each.
 * A kernel that cannot be timed gets rate 0 and its reason in why[type]
 * (the profile is written all the same); why[] of a type not measured is
 * "". */
void calibrate_measure_compute(struct hw_profile *hw, const struct fb_settings *set, unsigned threads, bool quick,
                               char why[DTYPE_COUNT][512]);

/* Effective bytes/s (weights read) and FLOP/s of y = W x through backend
 * b's matvec (engine/compute/backend.h), W of t weights uploaded into the device's own memory (copies taken
 * in turn, span bytes of them and at least one), launches enqueued in
 * batches of 8, each batch synced, for about `seconds` (16 launches at
 * least) after two batches that warm the kernel. 0, with the reason in
 * err, when the device refuses the memory or a call fails. */
double measure_backend_matvec(const struct backend_ops *ops, struct backend *b, size_t rows, size_t cols,
                              enum fb_dtype t, size_t span, double seconds, double *flops, char *err, size_t errlen);

/* A device backend (ops, started here with `threads` host threads)
 * measured through the backend interface: its copy and queue rates
 * (calibrate_transfer.h) into hw->device, and the matvec rates of f32,
 * f16 and bf16 weights in its memory into hw->compute, the device named in
 * each source. An emulated device (sim, OpenCL on a CPU) is measured the
 * same way and marks the profile emulated, with a note. 0, or -1 with the
 * reason in err when the backend does not start or any call fails (no
 * rate is guessed: the caller writes no profile). */
int calibrate_measure_device(struct hw_profile *hw, const struct fb_settings *set, const struct backend_ops *ops,
                             unsigned threads, bool quick, char *err, size_t errlen);

/* The profile as JSON, with the fit's errors and whether the flash
 * points bypassed the page cache. */
cJSON *calibrate_profile_json(const struct hw_profile *hw, const struct calibrate_fit *fit, bool bypassed);

#endif
