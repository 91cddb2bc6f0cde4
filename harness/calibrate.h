/* flashbed calibrate: measures this machine for the cost model and writes a
 * hardware profile (sim/hw_profile.h). Flash through the sweep code; DRAM
 * row copies the way the neuron cache moves rows (Fig. 6: a deleted row is
 * overwritten by the last one); compute by timing the engine's own
 * matrix-vector kernel (engine/backend_cpu.c). */
#ifndef FLASHBED_HARNESS_CALIBRATE_H
#define FLASHBED_HARNESS_CALIBRATE_H

#include <stddef.h>

/* Bytes/s copying rows of row_bytes between random slots of a buffer far
 * larger than the caches; *ns_per_row gets the time per row. */
double measure_row_copy(size_t row_bytes, double seconds, double *ns_per_row);

/* Effective bytes/s (weights read) and FLOP/s of y = W x for a rows x cols
 * matrix of f32 (half = 0) or f16 (half = 1) weights, with the CPU backend's
 * matvec on `threads` threads, over copies of W (512 MiB in all) taken in
 * turn, so that W comes from DRAM as in decode. 0, with the reason in err,
 * when it cannot allocate or start the threads. */
double measure_matvec(size_t rows, size_t cols, int half, unsigned threads, double seconds,
                      double *flops, char *err, size_t errlen);

#endif
