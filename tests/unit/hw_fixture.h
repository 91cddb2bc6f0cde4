/* A hardware profile made by hand for the cost model's tests: a flat
 * flash of 1 GB/s from 4 KiB to 1 MiB at 1 to 32 threads, f16 compute at
 * 10 GB/s, row copies at 10 GB/s, nothing else, so every term can be
 * priced by hand. The caller adds what its test prices and frees it. */
#ifndef FLASHBED_TESTS_HW_FIXTURE_H
#define FLASHBED_TESTS_HW_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "sim/hw_profile.h"

static inline struct hw_profile *hw_flat_profile(void)
{
    struct hw_profile *hw = calloc(1, sizeof *hw);
    if (!hw)
        abort();
    snprintf(hw->path, sizeof hw->path, "hand-made");
    hw->io_threads = 32;
    const double chunks[] = {4096, 1048576}, threads[] = {1, 32};
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 2; c++)
            hw->points[hw->flash.n_grid++] = (struct flash_point){chunks[c], threads[t], 1e9};
    hw->flash.grid = hw->points;
    hw->flash.sequential_bw = 1e9;
    hw->flash.fit = (struct flash_params){1e-4, 1e9, 2e9, 1e5, 2};
    hw->compute[hw->n_compute++] = (struct compute_rate){.dtype = "f16", .bw = 1e10};
    hw->copy_row_bytes[0] = 4096;
    hw->copy_bw[hw->n_copy++] = 1e10;
    return hw;
}

#endif
