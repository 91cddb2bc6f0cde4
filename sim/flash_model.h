/* Flash read throughput as a function of chunk size s and reader threads N.
 *
 * Closed form: X(s, N) = [ (N*s/(L0 + s/b1))^-p + B_max^-p + (IOPS_max*s)^-p ]^(-1/p)
 *   L0        latency to first byte of one read (s)
 *   b1        one stream's transfer rate (bytes/s)
 *   B_max     the device's bandwidth ceiling (bytes/s)
 *   IOPS_max  the device's read-rate ceiling (reads/s)
 *   p         how sharply the three limits hand over to each other
 * N threads at queue depth 1 each see L0 + s/b1 per read; the smooth
 * minimum with the two ceilings gives the plateaus of the paper's Fig. 2b.
 *
 * Inside a measured grid, throughput is interpolated in log(chunk) and
 * log(threads); the closed form serves only outside it. */
#ifndef FLASHBED_SIM_FLASH_MODEL_H
#define FLASHBED_SIM_FLASH_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct flash_params {
    double L0_s, b1, B_max, IOPS_max, p;
};

struct flash_point {
    double chunk;    /* bytes */
    double threads;
    double bw;       /* bytes/s */
};

/* Which parameters a fit may move; the others keep their given values. */
enum flash_free {
    FIT_L0 = 1, FIT_B1 = 2, FIT_BMAX = 4, FIT_IOPS = 8, FIT_P = 16,
    FIT_ALL = 31,
};

struct flash_model {
    struct flash_params fit;
    struct flash_point *grid;   /* measured points, sorted by threads then chunk */
    size_t n_grid;
    double sequential_bw;       /* large sequential reads, 0 if unknown */
};

double flash_closed_form(const struct flash_params *fp, double chunk, double threads);

/* Least squares on log throughput (Nelder-Mead over log parameters), started
 * from estimates read off the points: L0 and b1 from the 1-thread points,
 * the ceilings from the largest bandwidth and read rate. `fp` holds the
 * starting/fixed values on entry when free != FIT_ALL. Returns the RMS
 * relative error of the fit, or -1 with fewer points than free parameters. */
double flash_fit(const struct flash_point *pts, size_t n, unsigned free_mask,
                 struct flash_params *fp);

/* Mean absolute percentage error of the closed form on points. */
double flash_mape(const struct flash_params *fp, const struct flash_point *pts, size_t n);

/* Held-out check: fit on a checkerboard half of a chunk x threads grid,
 * return the MAPE on the other half. -1 when too few points. */
double flash_heldout_mape(const struct flash_point *pts, size_t n);

/* Throughput at (chunk, threads): interpolated when inside the grid's
 * chunk and thread ranges (and the grid has the 4 surrounding points),
 * else the closed form. *interpolated tells which (may be NULL). */
double flash_throughput(const struct flash_model *m, double chunk, double threads,
                        bool *interpolated);

#endif
