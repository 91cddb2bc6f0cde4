/* Table 3's device rows as predict --paper table3 prices them (issue 31):
 * the paper's GPU and Metal profiles carry a "device" object, and each
 * row priced with one carries the terms sim/device_terms.h computes from
 * that object's numbers, checked here exactly against the profile's JSON
 * read on its own (no loader): launches x launch_s, the waits, the copies
 * at the bandwidth of their mean size, none on unified memory, and the
 * counts of the naive and all rows against dev_terms_token. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/json_file.h"
#include "common/model_shape.h"
#include "common/provenance.h"
#include "sim/device_terms.h"
#include "sim/hw_profile.h"
#include "sim/paper_tables.h"

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The profile's own JSON, as the file has it. */
static cJSON *raw_profile(const struct fb_settings *set, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/hw/%s.json", set->configs_dir, name);
    cJSON *j = read_json_file(path);
    CHECK(j != NULL);
    return j;
}

/* A bandwidth of the raw transfers at bytes: log-interpolated between the
 * sizes around it, the end values beyond them (as the profile defines). */
static double raw_bw(const cJSON *dev, const char *key, double bytes)
{
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(dev, "transfers"), *prev = NULL, *t;
    cJSON_ArrayForEach(t, ts)
    {
        if (bytes <= num(t, "bytes")) {
            if (!prev)
                return num(t, key);
            double a = num(prev, "bytes"), b = num(t, "bytes");
            double u = (log(bytes) - log(a)) / (log(b) - log(a));
            return num(prev, key) + u * (num(t, key) - num(prev, key));
        }
        prev = t;
    }
    return prev ? num(prev, key) : 0;
}

/* The copies' times: none on unified memory, else bytes at the rate of
 * their mean size (uploads from ordinary memory, downloads into pinned). */
static void check_copies(const cJSON *dev, const cJSON *d)
{
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "host_visible"))) {
        CHECK(num(d, "h2d_ms") == 0 && num(d, "d2h_ms") == 0);
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "host_visible")));
        return;
    }
    double up = num(d, "h2d_bytes"), down = num(d, "d2h_bytes");
    CHECK(up > 0 && down > 0 && num(d, "uploads") >= 1 && num(d, "downloads") >= 1);
    double h2d = 1e3 * up / raw_bw(dev, "h2d_pinned_bw_bytes", up / num(d, "uploads")); /* from the pinned ring */
    double d2h = 1e3 * down / raw_bw(dev, "d2h_pinned_bw_bytes", down / num(d, "downloads"));
    CHECK_NEAR(num(d, "h2d_ms"), h2d, 1e-9 * h2d);
    CHECK_NEAR(num(d, "d2h_ms"), d2h, 1e-9 * d2h);
}

/* The counts of an OPT-6.7B row (bf16 bundles of up and down, 16 KiB, a
 * 4-byte up bias) as dev_terms_token gives them: naive stages every row of
 * every layer, all appends the rows the JSON's bytes imply and moves its
 * deletions in a batch per layer, the predictor on the device (its logits
 * downloaded per layer); a batch of reads per layer with its wait for the
 * device (naive: a second, dram.bin's slice), an upload run per group. */
static void check_counts(const struct model_shape *s, const cJSON *row, const cJSON *d)
{
    bool all = !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(row, "method")), "all");
    struct dev_shape ds = {.n_layers = s->n_layers, .d_model = s->d_model, .vocab = s->vocab_size,
                           .n_heads = s->n_heads, .n_kv_heads = s->n_kv_heads, .row_stride = 2ull * s->d_model * 2,
                           .up_bias = true, .down_bias = true, .pos_embedding = true,
                           .device_predictor = all, .d_ff = s->d_ff};
    double moves = num(d, "row_moves"), rows = (num(d, "h2d_bytes") - 8 * moves) / (double)(ds.row_stride + 4);
    CHECK(rows == floor(rows));
    if (!all)
        CHECK(rows == (double)s->n_layers * s->d_ff && moves == 0);
    struct dev_volumes v = {.rows_inserted = (uint64_t)rows, .row_moves = (uint64_t)moves,
                            .staged_groups = all ? 0 : s->n_layers, .append_groups = all ? s->n_layers : 0,
                            .move_batches = moves > 0 ? s->n_layers : 0, .upload_runs = s->n_layers,
                            .read_waits = all ? s->n_layers : 2ull * s->n_layers};
    struct dev_terms t;
    dev_terms_token(&ds, &v, &t);
    CHECK(num(d, "h2d_bytes") == (double)t.bytes_up && num(d, "d2h_bytes") == (double)t.bytes_down);
    CHECK(num(d, "launches") == (double)t.launches && num(d, "syncs") == (double)t.syncs);
    CHECK(num(d, "uploads") == (double)t.uploads && num(d, "downloads") == (double)t.downloads);
}

/* One row of table3.json: a device object exactly where its profile has
 * one, with the terms that profile's numbers give. Returns 1 for a device row. */
static int check_row(const struct fb_settings *set, const struct model_shape *opt, const cJSON *row)
{
    cJSON *hw = raw_profile(set, cJSON_GetStringValue(cJSON_GetObjectItem(row, "hw")));
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(hw, "device"), *d = cJSON_GetObjectItem(row, "device");
    CHECK(!dev == !d);
    if (dev && d) {
        CHECK_NEAR(num(d, "launch_ms"), 1e3 * num(d, "launches") * num(dev, "launch_s"), 1e-12);
        CHECK_NEAR(num(d, "sync_ms"), 1e3 * (num(dev, "sync_s") + (num(d, "syncs") - 1) * num(dev, "event_s")), 1e-12);
        check_copies(dev, d);
        double sum = num(row, "model_total_ms") + num(d, "h2d_ms") + num(d, "d2h_ms") + num(d, "launch_ms") +
                     num(d, "sync_ms");
        CHECK_NEAR(num(d, "total_ms"), sum, 1e-9 * sum);
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(row, "model")), "opt-6.7b"))
            check_counts(opt, row, d);
    }
    cJSON_Delete(hw);
    return d != NULL;
}

/* The profiles: the GPU's copies at PCIe rates, the Metal ones unified. */
static void test_profiles(const struct fb_settings *set)
{
    struct hw_profile hw;
    char err[512];
    CHECK(hw_profile_load(set, "rtx4090-gpu", &hw, err, sizeof err) == 0);
    CHECK(hw.device.present && !hw.device.host_visible && hw.device.n_xfer == 4 && !hw.emulated);
    cJSON *raw = raw_profile(set, "rtx4090-gpu");
    const cJSON *dev = cJSON_GetObjectItem(raw, "device");
    CHECK(hw_device_bw(&hw, true, true, 4194304) == raw_bw(dev, "h2d_pinned_bw_bytes", 4194304));
    CHECK(hw_device_bw(&hw, true, false, 1e6) == raw_bw(dev, "h2d_pageable_bw_bytes", 1e6));
    CHECK(cJSON_IsString(cJSON_GetObjectItem(dev, "source")) && cJSON_IsObject(cJSON_GetObjectItem(dev, "sources")));
    cJSON_Delete(raw);
    for (int i = 0; i < 2; i++) {
        CHECK(hw_profile_load(set, i ? "m2ultra-metal" : "m1max-metal", &hw, err, sizeof err) == 0);
        CHECK(hw.device.present && hw.device.host_visible && hw.device.n_xfer == 0);
        CHECK(hw_device_bw(&hw, true, false, 16384) == 0 && hw_device_bw(&hw, false, true, 16384) == 0);
        cJSON *j = hw_profile_to_json(&hw); /* written back as read: unified, no transfers */
        const cJSON *jd = cJSON_GetObjectItem(j, "device");
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(jd, "host_visible")) && !cJSON_GetObjectItem(jd, "transfers"));
        cJSON_Delete(j);
    }
    CHECK(hw_profile_load(set, "m1max-cpu", &hw, err, sizeof err) == 0 && !hw.device.present);
}

int main(void)
{
    const struct fb_settings set = fb_settings_defaults();
    test_profiles(&set);
    char dir[] = "/tmp/flashbed-test-paper-device-XXXXXX", path[256], err[512];
    CHECK(mkdtemp(dir) != NULL);
    cJSON *prov = provenance_new();
    struct model_shape opt;
    CHECK(model_shape_load(&set, "opt-6.7b", &opt, err, sizeof err) == 0);
    CHECK(paper_write_table3(&set, NULL, dir, NULL, prov, NULL, err, sizeof err) == 0);
    snprintf(path, sizeof path, "%s/table3.json", dir);
    cJSON *t = read_json_file(path);
    int device_rows = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(t, "rows"))
        device_rows += check_row(&set, &opt, row);
    CHECK(device_rows == 6); /* naive and all on the M1 Max's and M2 Ultra's GPUs and the RTX 4090 */
    cJSON_Delete(t);
    snprintf(path, sizeof path, "%s/table3.md", dir);
    char *md = read_text_file(path, NULL);
    CHECK(md && strstr(md, "| opt-6.7b | all | GPU | rtx4090-gpu |") && strstr(md, "none (unified memory)"));
    free(md);
    cJSON_Delete(prov);
    const char *files[] = {"table3.json", "table3.md"};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        unlink(path);
    }
    rmdir(dir);
    return check_report("test_paper_device");
}
