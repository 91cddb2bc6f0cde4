/* The cost model's byte accounting and the paper's Table 2 and Table 3. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "common/provenance.h"
#include "sim/cost_model.h"
#include "sim/paper_tables.h"

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return cJSON_Parse(buf);
}

static double row_num(const cJSON *r, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(r, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void test_accounting(void)
{
    struct model_shape s;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[512];
    CHECK(model_shape_load("opt-6.7b", &s, err, sizeof err) == 0);
    CHECK(hw_profile_load("m1max-metal", hw, err, sizeof err) == 0);
    CHECK(cost_resolve_profile(hw, err, sizeof err) == 0);
    struct cost_config c = {.shape = &s, .hw = hw, .io_threads = 32, .context_tokens = 256,
                            .dram_share = 0.5, .policy = POLICY_NAIVE, .layout = LAYOUT_BUNDLED};
    snprintf(c.dtype, sizeof c.dtype, "f16");
    struct cost_prediction p;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    /* OPT-6.7B in fp16: 6,658,473,984 x 2 bytes = 13.3 GB, the paper's "13.4 GB" (6.7B nominal). */
    CHECK_NEAR(p.model_bytes, 13316947968.0, 0.5);
    CHECK_NEAR(p.bytes_per_token, 13316947968.0, 0.5);
    CHECK_NEAR(p.io_ms, 13316947968.0 / 6.10e9 * 1e3, 1e-6);
    c.policy = POLICY_HYBRID;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.bytes_per_token, 13316947968.0 / 2, 0.5);
    /* The window: 2.4% of 32 x 16384 neurons, bundled 16 KiB reads (up row + down column, fp16). */
    c.policy = POLICY_WINDOW;
    volumes_from_fractions(&s, POLICY_WINDOW, 0.024, 0.24, &c.vol);
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.reads_per_token, 0.024 * 32 * 16384, 1e-6);
    CHECK_NEAR(p.chunk_bytes, 16384, 0);
    CHECK_NEAR(p.bytes_per_token, 0.024 * 32 * 16384 * 16384, 1);
    CHECK_NEAR(p.throughput, 2.25e9, 2.25e9 * 1e-3); /* the Table 2 point, interpolated exactly */
    CHECK_NEAR(p.rows_inserted, p.rows_deleted, 0);
    c.layout = LAYOUT_SPLIT;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.reads_per_token, 2 * 0.024 * 32 * 16384, 1e-6); /* twice the reads, same bytes */
    CHECK_NEAR(p.chunk_bytes, 8192, 0);
    CHECK_NEAR(p.bytes_per_token, 0.024 * 32 * 16384 * 16384, 1);
    CHECK_NEAR(p.throughput, 1.25e9, 1.25e9 * 1e-3);
    /* Overlap never exceeds the serial sum. */
    CHECK(p.overlapped_ms <= p.serial_ms + 1e-9);
    /* Llama: three pieces per neuron (gate, up, down). */
    CHECK(model_shape_load("llama-2-7b", &s, err, sizeof err) == 0);
    volumes_from_fractions(&s, POLICY_WINDOW, 0.01, 0.1, &c.vol);
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.chunk_bytes, 4096 * 2, 0);
    CHECK_NEAR(p.reads_per_token, 3 * 0.01 * 32 * 11008, 1e-6);
    free(hw);
}

static void test_paper_tables(void)
{
    char dir[] = "/tmp/flashbed-test-paper-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    cJSON *prov = provenance_new();
    char err[512];
    CHECK(paper_write_table2(dir, prov, err, sizeof err) == 0);
    CHECK(paper_write_table3(dir, prov, err, sizeof err) == 0);
    char path[256];
    snprintf(path, sizeof path, "%s/table2.json", dir);
    cJSON *t2 = read_json(path);
    cJSON *rows = cJSON_GetObjectItem(t2, "rows");
    CHECK(cJSON_GetArraySize(rows) == 5);
    const cJSON *r;
    int i = 0;
    cJSON_ArrayForEach(r, rows)
    {
        CHECK(cJSON_IsString(cJSON_GetObjectItem(r, "config")));
        double e = row_num(r, "rel_err"), e2 = row_num(r, "rel_err_table2_densities");
        CHECK_NEAR(e, (row_num(r, "model_io_ms") - row_num(r, "paper_io_ms")) / row_num(r, "paper_io_ms"), 1e-12);
        /* With the densities the table's own byte column implies, every row is within 5%. */
        CHECK(fabs(e2) <= 0.05);
        /* Naive and hybrid are pure byte accounting: within 1%. */
        if (i < 2)
            CHECK(fabs(e) <= 0.01);
        /* With App. C's rounded densities: the windowing row within 1%; the predictor and
         * bundling rows miss by 6.9% and 5.3% (the paper's rounding; see table2.md). */
        if (i == 3)
            CHECK(fabs(e) <= 0.01);
        if (i == 2)
            CHECK_NEAR(e, -0.069, 0.002);
        if (i == 4)
            CHECK_NEAR(e, 0.053, 0.002);
        i++;
    }
    cJSON_Delete(t2);
    snprintf(path, sizeof path, "%s/table3.json", dir);
    cJSON *t3 = read_json(path);
    rows = cJSON_GetObjectItem(t3, "rows");
    CHECK(cJSON_GetArraySize(rows) == 20);
    cJSON_ArrayForEach(r, rows)
    {
        const char *model = cJSON_GetObjectItem(r, "model")->valuestring;
        const char *method = cJSON_GetObjectItem(r, "method")->valuestring;
        const char *hw = cJSON_GetObjectItem(r, "hw")->valuestring;
        /* Cells calibrated on the paper reproduce it exactly. */
        if (!strcmp(model, "opt-6.7b") && !strcmp(method, "naive"))
            CHECK_NEAR(row_num(r, "compute_rel_err"), 0, 1e-9);
        /* (CPU: derived from Table 5's 57.79 ms, compared with Table 3's rounded 58.) */
        if (!strcmp(model, "opt-6.7b") && !strcmp(method, "all"))
            CHECK_NEAR(row_num(r, "mem_rel_err"), 0, 0.004);
        /* Real predictions: the M1 Metal All I/O from Table 2's throughput, Falcon's memory
         * management from OPT's rate, OPT's CPU I/O from the throughput model at 32 KiB. */
        if (!strcmp(model, "opt-6.7b") && !strcmp(method, "all") && !strcmp(hw, "m1max-metal"))
            CHECK(fabs(row_num(r, "io_rel_err")) < 0.02);
        if (!strcmp(model, "falcon-7b") && !strcmp(method, "all"))
            CHECK(fabs(row_num(r, "mem_rel_err")) < 0.02);
        if (!strcmp(model, "opt-6.7b") && !strcmp(method, "all") && !strcmp(hw, "m1max-cpu"))
            CHECK(fabs(row_num(r, "io_rel_err")) < 0.15);
        /* Naive I/O: bytes of the exact parameter count against the paper's nominal one. */
        if (!strcmp(method, "naive") && strcmp(model, "persimmon-8b"))
            CHECK(fabs(row_num(r, "io_rel_err")) < 0.04);
    }
    cJSON_Delete(t3);
    cJSON_Delete(prov);
    const char *files[] = {"table2.json", "table2.md", "table3.json", "table3.md"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        CHECK(access(path, R_OK) == 0);
        unlink(path);
    }
    rmdir(dir);
}

static void test_s_agg(void)
{
    CHECK_NEAR(paper_s_agg(1), 0.10, 1e-9);
    CHECK_NEAR(paper_s_agg(5), 0.24, 1e-9);
    CHECK_NEAR(paper_s_agg(5) - paper_s_agg(4), 0.024, 1e-9);
    for (int k = 1; k < 32; k++) /* grows, with a falling slope */
        CHECK(paper_s_agg(k + 1) - paper_s_agg(k) < paper_s_agg(k) - paper_s_agg(k > 1 ? k - 1 : 1) ||
              k == 1);
}

int main(void)
{
    char *argv[] = {"test_cost_model", NULL};
    provenance_set_argv(1, argv);
    test_accounting();
    test_paper_tables();
    test_s_agg();
    return check_report("test_cost_model");
}
