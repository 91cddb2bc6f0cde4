/* Fuzzes hardware profiles (configs/hw/NAME.json, sim/hw_profile.c): name,
 * backend, io_threads, flash points and the closed form's parameters (or
 * the ones to fit), DRAM copy points, compute rates per dtype, and the
 * paper rows ("derive_from") that the cost model turns into rates
 * (sim/cost_model.c), a device's copy and wait rates ("device"; loaded
 * with emulated profiles allowed, so that those are parsed too). A
 * profile that loads is then asked what `predict` asks of it: throughput
 * inside and outside its grid, copy bandwidth, device copy bandwidth,
 * compute rates, and its JSON (what calibrate writes). */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "sim/cost_model.h"
#include "sim/hw_profile.h"
#include "fuzz_util.h"

static void ask(struct hw_profile *hw)
{
    static const double chunks[] = {512, 4096, 65536, 1 << 20, 1e9};
    static const double threads[] = {1, 4, 32, 1024};
    volatile double sink = 0;
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
            bool interpolated;
            sink += flash_throughput(&hw->flash, chunks[c], threads[t], &interpolated);
        }
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        sink += hw_copy_bw(hw, chunks[c]);
        for (int k = 0; k < 4; k++)
            sink += hw_device_bw(hw, k < 2, k % 2, chunks[c]);
    }
    const char *dtypes[] = {"f32", "f16", "bf16"};
    for (int d = 0; d < 3; d++) {
        struct compute_rate *r = hw_compute(hw, dtypes[d]);
        if (r)
            sink += r->bw;
    }
    (void)sink;
    cJSON *j = hw_profile_to_json(hw);
    char *text = cJSON_PrintUnformatted(j);
    free(text);
    cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct fb_settings set = fb_settings_defaults();
    const char *path = fuzz_write("hw.json", data, size);
    struct hw_profile *hw = malloc(sizeof *hw);
    if (!hw)
        abort();
    char err[1024];
    int rc = hw_profile_load_flags(&set, path, HW_LOAD_ALLOW_EMULATED, hw, err, sizeof err);
    if (rc == 0)
        rc = cost_resolve_profile(hw, &set, err, sizeof err);
    fuzz_note("hw_profile_load", rc, err);
    if (rc == 0)
        ask(hw);
    free(hw);
    return 0;
}
