/* Fuzzes the sweep results `calibrate --sweep` takes (sim/hw_profile.c,
 * hw_flash_from_sweep): sweep.json's points (chunk_bytes, threads,
 * bw_bytes) and page_cache_bypassed. Points that load go where calibrate
 * sends them: the closed form's fit over all of them, its error on all
 * and on held-out points, and throughput asked of the grid. */
#include <math.h>
#include <stdlib.h>

#include "sim/flash_model.h"
#include "sim/hw_profile.h"
#include "fuzz_util.h"

static void calibrate_flash(struct hw_profile *hw)
{
    struct flash_model *fm = &hw->flash;
    for (size_t i = 0; i < fm->n_grid; i++)
        fm->sequential_bw = fmax(fm->sequential_bw, hw->points[i].bw);
    volatile double sink = flash_fit(hw->points, fm->n_grid, FIT_ALL, &fm->fit);
    sink += flash_mape(&fm->fit, hw->points, fm->n_grid);
    sink += flash_heldout_mape(hw->points, fm->n_grid);
    static const double chunks[] = {4096, 65536, 1 << 20};
    static const double threads[] = {1, 8, 64};
    for (int c = 0; c < 3; c++)
        for (int t = 0; t < 3; t++) {
            bool interpolated;
            sink += flash_throughput(fm, chunks[c], threads[t], &interpolated);
        }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("sweep.json", data, size);
    struct hw_profile *hw = calloc(1, sizeof *hw);
    if (!hw)
        abort();
    char err[1024];
    bool bypassed;
    int rc = hw_flash_from_sweep(path, hw, &bypassed, err, sizeof err);
    fuzz_note("hw_flash_from_sweep", rc, err);
    if (rc == 0)
        calibrate_flash(hw);
    free(hw);
    return 0;
}
