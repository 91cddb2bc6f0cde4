/* What checking the reads costs (run --verify, issue 34): calibrate's
 * CRC-32C rate (harness/calibrate.h) kept in the profile and read back
 * (sim/hw_profile.h), the cost model's verification term against numbers
 * worked by hand (sim/cost_model.h), and a run's summary.verify read for
 * predict --compare (sim/run_summary.h). No timing is checked beyond a
 * measured rate being positive. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hw_fixture.h"
#include "policy_text.h"
#include "test_files.h"
#include "harness/calibrate.h"
#include "sim/cost_model.h"
#include "sim/run_summary.h"

/* The rate is measured (positive and finite: its size is the machine's
 * and its load's, never a test's), on the buffer it names, median of
 * repeats; nothing to time gives 0. */
static void test_crc_rate(void)
{
    double rate = measure_crc_rate(16384, 3, 0.005);
    CHECK(rate > 0 && isfinite(rate));
    CHECK(measure_crc_rate(16384, 0, 0.005) == 0);
    CHECK(measure_crc_rate(0, 3, 0.005) == 0);
    struct hw_profile *hw = calloc(1, sizeof *hw);
    calibrate_measure_crc(hw, true);
    CHECK(hw->crc_bw > 0 && isfinite(hw->crc_bw) && hw->crc_buffer_bytes == CALIBRATE_CRC_BYTES);
    CHECK(strncmp(hw->crc_source, "measured: CRC-32C", 17) == 0 && strstr(hw->crc_source, "16384-byte"));
    free(hw);
}

/* Written by calibrate's writer and read back with its source; a profile
 * without it reads as 0, said so; a bad rate is refused naming the key. */
static void test_profile_key(void)
{
    struct fb_settings set = fb_settings_defaults();
    struct hw_profile *hw = calloc(1, sizeof *hw), *back = calloc(1, sizeof *back);
    char dir[] = "/tmp/fb-costverify-XXXXXX", path[64], err[1024];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/box.json", dir);
    CHECK(hw_profile_load(&set, "m1max-cpu", hw, err, sizeof err) == 0);
    CHECK(hw->crc_bw == 0 && strstr(hw->crc_source, "not measured") && strstr(hw->crc_source, "unpriced"));
    cJSON *j = hw_profile_to_json(hw);
    CHECK(!cJSON_HasObjectItem(cJSON_GetObjectItem(j, "dram"), "crc32c_bw_bytes")); /* nothing claimed */
    cJSON_Delete(j);
    CHECK(cost_resolve_profile(hw, &set, err, sizeof err) == 0); /* the paper's rules as rates: written back */
    hw->crc_bw = 3.25e9, hw->crc_buffer_bytes = 8192;
    snprintf(hw->crc_source, sizeof hw->crc_source, "by hand");
    j = hw_profile_to_json(hw);
    char *text = cJSON_Print(j);
    test_write_text(path, text);
    CHECK(hw_profile_load(&set, path, back, err, sizeof err) == 0);
    CHECK(back->crc_bw == 3.25e9 && back->crc_buffer_bytes == 8192);
    CHECK_STR(back->crc_source, "by hand");
    cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "dram"), "crc32c_bw_bytes"), -1);
    free(text);
    text = cJSON_Print(j);
    test_write_text(path, text);
    CHECK(hw_profile_load(&set, path, back, err, sizeof err) == -1);
    CHECK(strstr(err, path) == err && strstr(err, "\"dram.crc32c_bw_bytes\""));
    free(text);
    cJSON_Delete(j);
    unlink(path);
    CHECK(rmdir(dir) == 0);
    free(hw);
    free(back);
}

/* OPT-6.7B in f16 on the Metal profile without its device (no fixed
 * costs): a bundle is 2 x 4096 x 2 = 16384 bytes, 32 x 16384 of them; the
 * CRC at 2 GB/s. */
static void test_pricing_67b(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[512];
    CHECK(model_shape_load(&set, "opt-6.7b", &s, err, sizeof err) == 0);
    CHECK(hw_profile_load(&set, "m1max-metal", hw, err, sizeof err) == 0);
    CHECK(cost_resolve_profile(hw, &set, err, sizeof err) == 0);
    hw->device = (struct hw_device){0};
    hw->crc_bw = 2e9;
    struct cost_config c = {.shape = &s, .hw = hw, .io_threads = 32, .context_tokens = 256, .dram_share = 0.5,
                            .policy = POLICY("naive"), .layout = LAYOUT("bundled")};
    snprintf(c.dtype, sizeof c.dtype, "f16");
    struct cost_prediction off, on;
    CHECK(cost_predict(&c, &off, err, sizeof err) == 0);
    CHECK(!off.verify && off.verify_bytes == 0 && off.verify_ms == 0 && off.mem_ms == 0);
    c.verify = true;
    /* naive: every row of every layer, 32 x 16384 x 16384 bytes */
    CHECK(cost_predict(&c, &on, err, sizeof err) == 0);
    CHECK(on.verify && !on.verify_unpriced);
    CHECK_NEAR(on.verify_bytes, 8589934592.0, 0);
    CHECK_NEAR(on.verify_ms, 4294.967296, 1e-9);
    CHECK_NEAR(on.mem_ms, on.verify_ms, 0);
    CHECK_NEAR(on.serial_ms, off.serial_ms + 4294.967296, 1e-6);
    CHECK(on.io_ms == off.io_ms && on.compute_ms == off.compute_ms);
    /* hybrid: the streamed half of the model, 6658473984 bytes, all of it FFN rows */
    c.policy = POLICY("hybrid");
    CHECK(cost_predict(&c, &on, err, sizeof err) == 0);
    CHECK_NEAR(on.verify_bytes, 6658473984.0, 1e-3);
    CHECK_NEAR(on.verify_ms, 3329.236992, 1e-6);
    /* window:5 loading 2.4% of the neurons: 12582.912 bundles, beside its copies */
    c.policy = POLICY("window:5");
    volumes_from_fractions(&s, &policy_window, 0.024, 0.24, &c.vol);
    c.verify = false;
    CHECK(cost_predict(&c, &off, err, sizeof err) == 0);
    c.verify = true;
    CHECK(cost_predict(&c, &on, err, sizeof err) == 0);
    CHECK_NEAR(on.verify_bytes, 0.024 * 32 * 16384 * 16384, 1e-3);
    CHECK_NEAR(on.verify_ms, 103.079215104, 1e-9);
    CHECK_NEAR(on.mem_ms, off.mem_ms + 103.079215104, 1e-9);
    /* split reads single vectors: nothing checked */
    c.layout = LAYOUT("split");
    CHECK(cost_predict(&c, &on, err, sizeof err) == 0);
    CHECK(on.verify && on.verify_bytes == 0 && on.verify_ms == 0 && !on.verify_unpriced);
    /* a profile without a CRC rate: unpriced, said so, 0 ms */
    c.layout = LAYOUT("bundled");
    hw->crc_bw = 0;
    CHECK(cost_predict(&c, &on, err, sizeof err) == 0);
    CHECK(on.verify_unpriced && on.verify_ms == 0 && on.mem_ms == off.mem_ms);
    CHECK_NEAR(on.verify_bytes, 0.024 * 32 * 16384 * 16384, 1e-3);
    free(hw);
}

/* With fixed costs (priced as the engine reads): opt-tiny naive checks
 * 2 layers x 256 rows of 2 x 64 x 2 = 256 bytes, the bundle's bytes and
 * not its 4096 on flash: 131072 bytes, at 1 GB/s 0.131072 ms. */
static void test_pricing_engine(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = hw_flat_profile();
    char err[512];
    CHECK(model_shape_load(&set, "opt-tiny", &s, err, sizeof err) == 0);
    hw->fixed.present = true;
    hw->fixed.min_parallel_work = 32768;
    hw->crc_bw = 1e9;
    struct cost_config c = {.shape = &s, .hw = hw, .io_threads = 32, .context_tokens = 8, .dram_share = 1,
                            .policy = POLICY("naive"), .layout = LAYOUT("bundled"), .verify = true};
    snprintf(c.dtype, sizeof c.dtype, "f16");
    struct cost_prediction p;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK(p.fixed);
    CHECK_NEAR(p.verify_bytes, 131072, 0);
    CHECK_NEAR(p.verify_ms, 0.131072, 1e-12);
    CHECK_NEAR(p.mem_ms, 0.131072, 1e-12);
    free(hw);
}

/* summary.verify.requested: on, off, absent (a run from before it: off),
 * anything else refused naming the key; compared when both checked. */
static void test_run_summary_verify(void)
{
    char dir[] = "/tmp/fb-runverify-XXXXXX", path[200], err[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/run.json", dir);
    const char *head = "{\"summary\": {\"io_ms\": 10, \"mem_ms\": 2, \"compute_ms\": 8";
    char text[512];
    snprintf(text, sizeof text, "%s, \"verify\": {\"requested\": \"on\", \"verify_ms_per_token\": 0.5}}}", head);
    test_write_text(path, text);
    struct run_summary m;
    CHECK(run_summary_read(path, &m, err, sizeof err) == 0);
    CHECK(m.verify && m.verify_ms == 0.5);
    struct cost_prediction p = {.io_ms = 10, .mem_ms = 2, .compute_ms = 8, .verify = true, .verify_ms = 0.6};
    struct run_comparison c;
    run_compare(&p, &m, &c);
    CHECK(c.has_verify && c.verify_ms[0] == 0.6 && c.verify_ms[1] == 0.5);
    CHECK_NEAR(c.verify_ms[2], 0.2, 1e-12);
    CHECK(c.measured[RUN_TOTAL] == 20); /* inside mem_ms: not added again */
    p.verify = false;
    run_compare(&p, &m, &c);
    CHECK(!c.has_verify);
    run_summary_free(&m);
    snprintf(text, sizeof text, "%s, \"verify\": {\"requested\": \"off\", \"verify_ms_per_token\": 0}}}", head);
    test_write_text(path, text);
    CHECK(run_summary_read(path, &m, err, sizeof err) == 0);
    CHECK(!m.verify);
    run_summary_free(&m);
    snprintf(text, sizeof text, "%s}}", head);
    test_write_text(path, text);
    CHECK(run_summary_read(path, &m, err, sizeof err) == 0);
    CHECK(!m.verify && isnan(m.verify_ms));
    run_summary_free(&m);
    snprintf(text, sizeof text, "%s, \"verify\": {\"requested\": \"maybe\"}}}", head);
    test_write_text(path, text);
    CHECK(run_summary_read(path, &m, err, sizeof err) == -1);
    CHECK(strstr(err, path) == err && strstr(err, "summary.verify.requested"));
    unlink(path);
    CHECK(rmdir(dir) == 0);
}

int main(void)
{
    test_crc_rate();
    test_profile_key();
    test_pricing_67b();
    test_pricing_engine();
    test_run_summary_verify();
    return check_report("test_cost_verify");
}
