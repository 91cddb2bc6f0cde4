/* trace info's calibration rows against a profile's targets, bits per
 * neuron and trace_info.json, on a two-layer trace worked out by hand. */
#include "check.h"
#include "trace_fixture.h"

#include "common/model_shape.h"
#include "traces/trace_info.h"
#include "traces/trace_stats.h"

/* d_ff 8, 5 tokens. Layer 0: 13 active in all (density 13/40 = 0.325);
 * layer 1: 7 (0.175); mean 0.25. With 2 layers the middle one is layer 0
 * (15/31 of the depth, rounded). */
static const int a0[] = {0, 1, 2, -1}, a1[] = {1, 2, 3, -1}, a2[] = {0, 4, -1}, a3[] = {1, 2, 5, -1},
                 a4[] = {0, 1, -1};
static const int b0[] = {0, -1}, b1[] = {0, -1}, b2[] = {1, -1}, b3[] = {-1}, b4[] = {0, 1, 2, 3, -1};
static const int *const sets[] = {a0, b0, a1, b1, a2, b2, a3, b3, a4, b4};

static const struct trace_calib_row *row(const struct trace_calib_row *r, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(r[i].key, key))
            return &r[i];
    return NULL;
}

static void rows_without_targets(const struct trace *tr, const struct trace_stats *s)
{
    struct trace_calib_row r[TRACE_CALIB_MAX_ROWS];
    int n = trace_calibration_rows(tr, s, NULL, r);
    CHECK_U64(n, 4); /* the densities; no window2 row without its target */
    CHECK_STR(r[0].key, "density_first");
    CHECK_NEAR(r[0].achieved, 0.325, 1e-12);
    CHECK_NEAR(r[1].achieved, 0.325, 1e-12); /* the middle layer is layer 0 */
    CHECK_NEAR(r[2].achieved, 0.175, 1e-12);
    CHECK_NEAR(r[3].achieved, 0.25, 1e-12);
    for (int i = 0; i < n; i++)
        CHECK(r[i].target == -1 && r[i].percent);
    CHECK_NEAR(trace_layer_target(NULL, 0), -1, 0);
}

static void rows_with_targets(const struct trace *tr, const struct trace_stats *s, const cJSON *src)
{
    struct trace_calib_row r[TRACE_CALIB_MAX_ROWS];
    int n = trace_calibration_rows(tr, s, src, r);
    CHECK_U64(n, 5);
    CHECK_NEAR(row(r, n, "density_first")->target, 0.3, 0);
    CHECK_NEAR(row(r, n, "density_middle")->target, -1, 0); /* the profile does not give it */
    CHECK_NEAR(row(r, n, "density_mean")->target, 0.2, 0);
    const struct trace_calib_row *w = row(r, n, "window2_active");
    CHECK(w && w->target == 0.5 && w->achieved == s->sagg_active[1]);
    CHECK_NEAR(trace_layer_target(src, 1), 0.19, 0);
    CHECK_NEAR(trace_layer_target(src, 2), -1, 0); /* past the array */
}

/* The predicted sets equal to the active ones: every ratio 1. */
static void rows_with_predicted(struct trace *tr, const cJSON *src)
{
    tr->meta.has_predicted = true;
    tr->pred_off = tr->active_off;
    tr->pred_ids = tr->active_ids;
    struct trace_stats s;
    CHECK(trace_stats_compute(tr, &s) == 0);
    struct trace_calib_row r[TRACE_CALIB_MAX_ROWS];
    int n = trace_calibration_rows(tr, &s, src, r);
    CHECK_U64(n, 10);
    CHECK_NEAR(row(r, n, "pred_over_active")->achieved, 1, 1e-12);
    CHECK(!row(r, n, "pred_over_active")->percent);
    CHECK_NEAR(row(r, n, "recall")->achieved, 1, 1e-12);
    CHECK_NEAR(row(r, n, "pred_density")->achieved, 0.25, 1e-12);
    CHECK(row(r, n, "window5_pred")->achieved == s.sagg_active[4]);
    CHECK_NEAR(trace_bits_per_neuron(&s, 100), 20.0, 1e-12); /* 40 events: 20 active, 20 predicted */
    trace_stats_free(&s);
    tr->meta.has_predicted = false;
    tr->pred_off = NULL;
    tr->pred_ids = NULL;
}

static void info_json(const struct trace *tr, const struct trace_stats *s, const cJSON *src)
{
    cJSON *j = trace_info_json(tr, s, src, cJSON_CreateObject());
    CHECK_U64(cJSON_GetObjectItem(j, "n_layers")->valueint, 2);
    CHECK_NEAR(cJSON_GetObjectItem(j, "bits_per_neuron")->valuedouble, 40.0, 1e-12);
    const cJSON *cal = cJSON_GetObjectItem(j, "calibration");
    CHECK_U64(cJSON_GetArraySize(cal), 5);
    const cJSON *mid = cJSON_GetArrayItem(cal, 1);
    CHECK_STR(cJSON_GetObjectItem(mid, "statistic")->valuestring, "density_middle");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(mid, "target")));
    CHECK_NEAR(cJSON_GetObjectItem(mid, "achieved")->valuedouble, 0.325, 1e-12);
    CHECK(cJSON_GetObjectItem(j, "sagg_predicted") == NULL);
    cJSON_Delete(j);
}

int main(void)
{
    struct trace tr;
    fixture_trace(&tr, 2, 2, 8, FFN_RELU, 5, sets);
    tr.file_bytes = 100;
    struct trace_stats s;
    CHECK(trace_stats_compute(&tr, &s) == 0);
    cJSON *src = cJSON_Parse("{\"targets\": {\"density_first\": 0.3, \"density_mean\": 0.2, "
                             "\"window2_active\": 0.5, \"density_layers\": [0.31, 0.19]}}");
    rows_without_targets(&tr, &s);
    rows_with_targets(&tr, &s, src);
    info_json(&tr, &s, src);
    rows_with_predicted(&tr, src);
    cJSON_Delete(src);
    trace_stats_free(&s);
    trace_free(&tr);
    return check_report("test_trace_info");
}
