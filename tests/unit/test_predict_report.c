/* predict.json and predict.md (sim/predict_report.h): a list of policies
 * priced on a shipped shape and profile, written as predict writes it and
 * read back as reproduce reads it, exactly; and the reader on a missing
 * file, on files that are not predict's, and on an entry without a price. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "policy_text.h"
#include "test_files.h"
#include "common/atomic_file.h"
#include "common/json_file.h"
#include "common/settings.h"
#include "sim/predict_list.h"
#include "sim/predict_report.h"

/* The list priced as predict --policy prices it (cli/cmd_predict.c). */
static int price_list(const struct predict_setup *su, const char *list, struct policy_prediction **out, size_t *n)
{
    struct policy_spec *p = NULL;
    char err[1024];
    int rc = cache_policy_parse_list(list, true, &p, n, err, sizeof err);
    if (rc == 0)
        rc = predict_list_check(p, *n, false, err, sizeof err);
    if (rc == 0)
        rc = predict_list(su, p, *n, out, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "price '%s': %s\n", list, err);
    free(p);
    return rc;
}

/* Writes predict.json for the list to path, as predict does. */
static void write_report(const char *path, const struct policy_prediction *it, size_t n)
{
    cJSON *prov = cJSON_CreateObject();
    cJSON_AddStringToObject(prov, "tool", "test_predict_report");
    cJSON *root = predict_report_json(it, n, prov);
    char err[512];
    CHECK(root != NULL && atomic_write_json(NULL, path, root, err, sizeof err) == 0);
    cJSON_Delete(root);
    cJSON_Delete(prov); /* referenced, not taken: still the caller's */
}

/* window:auto first, then two fixed policies: the first entry read back is
 * the priced one, bit for bit, with the K and rows window:auto chose. */
static void test_list(const struct predict_setup *su, const char *dir)
{
    struct policy_prediction *it = NULL;
    size_t n = 0;
    CHECK(price_list(su, "window:auto,naive,window:5", &it, &n) == 0);
    CHECK_U64(n, 3);
    if (!it || n != 3)
        return;
    CHECK(it[0].window.k >= 1 && it[0].window_rows > 0);
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/predict.json", dir);
    write_report(path, it, n);
    struct predict_first f;
    CHECK(predict_report_read_first(path, &f, err, sizeof err) == 0);
    CHECK(f.predicted);
    CHECK(f.part_ms[RUN_IO] == it[0].prediction.io_ms);
    CHECK(f.part_ms[RUN_MEM] == it[0].prediction.mem_ms);
    CHECK(f.part_ms[RUN_COMPUTE] == it[0].prediction.compute_ms);
    CHECK(f.window_k == (double)it[0].window.k);
    CHECK(f.capacity_rows == (double)it[0].window_rows);

    /* The file: a list has no top-level "prediction"; each entry names the
     * policy priced, window:auto's entry what was asked. */
    cJSON *root = read_json_file(path);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "predictions");
    CHECK(cJSON_GetArraySize(list) == 3 && !cJSON_GetObjectItemCaseSensitive(root, "prediction"));
    char want[64];
    snprintf(want, sizeof want, "window:%u", it[0].window.k);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 0), "policy")), want);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 0), "window_auto");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "asked")), "window:auto");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 1), "policy")), "naive");
    CHECK(!cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 1), "window_auto"));
    cJSON_Delete(root);

    /* predict.md: one latency row each, window:auto's labelled, and why K. */
    char *md = predict_report_md(su, it, n);
    char row[96];
    snprintf(row, sizeof row, "\n| %s (window:auto) | ", want);
    CHECK(md && strstr(md, "# flashbed predict — opt-6.7b, m1max-cpu, f32, bundled layout\n"));
    CHECK(md && strstr(md, row) && strstr(md, "\n| naive | ") && strstr(md, "\n| window:5 | "));
    snprintf(row, sizeof row, "window:auto chose K = %u for a layer cache of %llu rows", it[0].window.k,
             (unsigned long long)it[0].window_rows);
    CHECK(md && strstr(md, row));
    free(md);
    free(it);
    unlink(path);
}

/* One policy: the top-level keys predict.json had before lists, equal to
 * the list's one entry; no window_auto, so the reader gives NAN for K. */
static void test_one(const struct predict_setup *su, const char *dir)
{
    struct policy_prediction *it = NULL;
    size_t n = 0;
    CHECK(price_list(su, "hybrid", &it, &n) == 0);
    if (!it || n != 1)
        return;
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/one.json", dir);
    write_report(path, it, n);
    cJSON *root = read_json_file(path);
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(root, "prediction");
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "predictions"), 0);
    CHECK(top && cJSON_Compare(top, cJSON_GetObjectItemCaseSensitive(first, "prediction"), true));
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "volume_source")), it[0].config.vol.source);
    cJSON_Delete(root);
    struct predict_first f;
    CHECK(predict_report_read_first(path, &f, err, sizeof err) == 0);
    CHECK(f.predicted && f.part_ms[RUN_IO] == it[0].prediction.io_ms && f.part_ms[RUN_MEM] == 0);
    CHECK(f.part_ms[RUN_COMPUTE] == it[0].prediction.compute_ms);
    CHECK(isnan(f.window_k) && isnan(f.capacity_rows));
    free(it);
    unlink(path);
}

/* Nothing predicted: *out set (nothing, NAN) and an error naming the file. */
static void check_refused(const char *path, const char *want)
{
    struct predict_first f = {.predicted = true, .window_k = 1, .capacity_rows = 1};
    char err[512] = "";
    CHECK(predict_report_read_first(path, &f, err, sizeof err) == -1);
    CHECK(strstr(err, path) && strstr(err, want));
    CHECK(!f.predicted && isnan(f.window_k) && isnan(f.capacity_rows));
    for (int k = 0; k < RUN_TOTAL; k++)
        CHECK(isnan(f.part_ms[k]));
}

static void test_reader_refusals(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/none.json", dir);
    check_refused(path, "cannot read"); /* the step has not run yet */
    snprintf(path, sizeof path, "%s/bad.json", dir);
    test_write_text(path, "{\"predictions\": [");
    check_refused(path, "cannot read");
    test_write_text(path, "{\"provenance\": {}}");
    check_refused(path, "no \"predictions\" entry");
    test_write_text(path, "{\"predictions\": []}");
    check_refused(path, "no \"predictions\" entry");
    /* An entry without a price: nothing predicted, but its window is read,
     * as reproduce has always read it; a price without a part gives NAN. */
    test_write_text(path, "{\"predictions\": [{\"window_auto\": {\"window_k\": 3, \"capacity_rows\": 40}}]}");
    struct predict_first f;
    char err[512];
    CHECK(predict_report_read_first(path, &f, err, sizeof err) == 0);
    CHECK(!f.predicted && f.window_k == 3 && f.capacity_rows == 40 && isnan(f.part_ms[RUN_IO]));
    test_write_text(path, "{\"predictions\": [{\"prediction\": {\"io_ms\": 1.5, \"compute_ms\": 2}}]}");
    CHECK(predict_report_read_first(path, &f, err, sizeof err) == 0);
    CHECK(f.predicted && f.part_ms[RUN_IO] == 1.5 && isnan(f.part_ms[RUN_MEM]) && f.part_ms[RUN_COMPUTE] == 2);
    CHECK(isnan(f.window_k));
    unlink(path);
}

int main(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[1024], dir[] = "/tmp/flashbed-test-predict-report-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(model_shape_load(&set, "opt-6.7b", &s, err, sizeof err) == 0);
    CHECK(hw_profile_load(&set, "m1max-cpu", hw, err, sizeof err) == 0);
    CHECK(cost_resolve_profile(hw, &set, err, sizeof err) == 0);
    struct predict_setup su = {.settings = &set, .shape = &s, .hw = hw, .dtype = "f32", .layout = LAYOUT("bundled"),
                               .dram_share = 0.6, .io_threads = 32, .context_tokens = 256};
    test_list(&su, dir);
    test_one(&su, dir);
    test_reader_refusals(dir);
    rmdir(dir);
    free(hw);
    return check_report("test_predict_report");
}
