/* The cost model's byte accounting, the paper's Table 2 and Table 3, and
 * lists of policies (sim/predict_list.h): each priced as if alone, and the
 * names checked by cache/'s parser; window:auto chosen as run chooses it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hw_fixture.h"
#include "policy_text.h"
#include "test_files.h"
#include "common/limits.h"
#include "common/provenance.h"
#include "sim/cost_engine.h"
#include "sim/cost_model.h"
#include "sim/paper_tables.h"
#include "sim/predict_list.h"
#include "sim/replay.h"
#include "sim/run_summary.h"
#include "traces/trace_synth.h"

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

/* OPT-6.7B's shape and a hardware profile, resolved for the cost model. */
static void load_opt67(const struct fb_settings *set, const char *profile, struct model_shape *s,
                       struct hw_profile *hw)
{
    char err[1024];
    CHECK(model_shape_load(set, "opt-6.7b", s, err, sizeof err) == 0);
    CHECK(hw_profile_load(set, profile, hw, err, sizeof err) == 0);
    CHECK(cost_resolve_profile(hw, set, err, sizeof err) == 0);
}

/* OPT-6.7B in f16, naive, bundled, half the model, on the Metal profile
 * without its (unified) device, so none is priced: the cases start here. */
static struct cost_config opt67_naive_f16(const struct fb_settings *set, struct model_shape *s, struct hw_profile *hw)
{
    load_opt67(set, "m1max-metal", s, hw);
    hw->device = (struct hw_device){0};
    struct cost_config c = {.shape = s, .hw = hw, .io_threads = 32, .context_tokens = 256,
                            .dram_share = 0.5, .policy = POLICY("naive"), .layout = LAYOUT("bundled")};
    snprintf(c.dtype, sizeof c.dtype, "f16");
    return c;
}

static void test_accounting(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[512];
    struct cost_config c = opt67_naive_f16(&set, &s, hw);
    struct cost_prediction p;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    /* OPT-6.7B in fp16: 6,658,473,984 x 2 bytes = 13.3 GB, the paper's "13.4 GB" (6.7B nominal). */
    CHECK_NEAR(p.model_bytes, 13316947968.0, 0.5);
    CHECK_NEAR(p.bytes_per_token, 13316947968.0, 0.5);
    CHECK_NEAR(p.io_ms, 13316947968.0 / 6.10e9 * 1e3, 1e-6);
    c.policy = POLICY("hybrid");
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.bytes_per_token, 13316947968.0 / 2, 0.5);
    /* The window: 2.4% of 32 x 16384 neurons, bundled 16 KiB reads (up row + down column, fp16). */
    c.policy = POLICY("window:5");
    volumes_from_fractions(&s, &policy_window, 0.024, 0.24, &c.vol);
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.reads_per_token, 0.024 * 32 * 16384, 1e-6);
    CHECK_NEAR(p.chunk_bytes, 16384, 0);
    CHECK_NEAR(p.bytes_per_token, 0.024 * 32 * 16384 * 16384, 1);
    CHECK_NEAR(p.throughput, 2.25e9, 2.25e9 * 1e-3); /* the Table 2 point, interpolated exactly */
    CHECK_NEAR(p.rows_inserted, p.rows_deleted, 0);
    c.layout = LAYOUT("split");
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.reads_per_token, 2 * 0.024 * 32 * 16384, 1e-6); /* twice the reads, same bytes */
    CHECK_NEAR(p.chunk_bytes, 8192, 0);
    CHECK_NEAR(p.bytes_per_token, 0.024 * 32 * 16384 * 16384, 1);
    CHECK_NEAR(p.throughput, 1.25e9, 1.25e9 * 1e-3);
    /* Overlap never exceeds the serial sum. */
    CHECK(p.overlapped_ms <= p.serial_ms + 1e-9);
    /* Llama: three pieces per neuron (gate, up, down). */
    CHECK(model_shape_load(&set, "llama-2-7b", &s, err, sizeof err) == 0);
    volumes_from_fractions(&s, &policy_window, 0.01, 0.1, &c.vol);
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.chunk_bytes, 4096 * 2, 0);
    CHECK_NEAR(p.reads_per_token, 3 * 0.01 * 32 * 11008, 1e-6);
    free(hw);
}

/* A profile with a device prices the device's terms (sim/device_terms.h)
 * apart from the totals; one without prices none. OPT-6.7B, f16: a row is
 * 16384 bytes (+ 4 for the up bias). */
static void test_device_pricing(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[512];
    struct cost_config c = opt67_naive_f16(&set, &s, hw);
    struct cost_prediction p;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK(!p.device && p.h2d_ms == 0 && p.dev_launches == 0);
    struct hw_device *d = &hw->device;
    /* the rows go up from the pinned ring, x and the logits come down into pinned memory */
    *d = (struct hw_device){.present = true, .n_xfer = 1, .xfer_bytes = {1e6}, .h2d_pinned_bw = {20e9},
                            .h2d_pageable_bw = {10e9}, .d2h_pinned_bw = {5e9}, .d2h_pageable_bw = {1e9},
                            .launch_s = 5e-6, .sync_s = 20e-6, .event_s = 10e-6};
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    /* naive: every row staged once, one group a layer; only the logits come back */
    CHECK(p.device);
    CHECK_NEAR(p.dev_bytes_up, 32.0 * 16384 * (16384 + 4), 0);
    CHECK_NEAR(p.dev_bytes_down, 50272.0 * 4, 0);
    CHECK_NEAR(p.dev_launches, 3 + 32 * 9 + 2 + 32 * 2 + 2 * 32, 0);
    CHECK_NEAR(p.dev_syncs, 1 + 2 * 32, 0); /* the head; per layer a wait for ffn.bin's reads and dram.bin's */
    CHECK_NEAR(p.h2d_ms, 1e3 * p.dev_bytes_up / 20e9, 1e-9);
    CHECK_NEAR(p.d2h_ms, 1e3 * p.dev_bytes_down / 5e9, 1e-9);
    CHECK_NEAR(p.launch_ms, p.dev_launches * 5e-3, 1e-9);
    CHECK_NEAR(p.sync_ms, 20e-3 + 64 * 10e-3, 1e-9);
    CHECK_NEAR(p.device_total_ms, p.serial_ms + p.h2d_ms + p.d2h_ms + p.launch_ms + p.sync_ms, 1e-9);
    /* the window: rows appended and moved, the predictor on the device (its
     * logits come down per layer), the previous step's wait covered */
    c.policy = POLICY("window:5");
    c.predictor_fraction = 0.0125;
    volumes_from_fractions(&s, &policy_window, 0.024, 0.24, &c.vol);
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    double rows = floor(0.024 * 32 * 16384 + 0.5);
    CHECK_NEAR(p.dev_row_moves, rows, 0);
    CHECK_NEAR(p.dev_bytes_up, rows * (16384 + 4) + 8 * rows, 0);
    CHECK_NEAR(p.dev_bytes_down, 50272.0 * 4 + 32 * 16384 * 4, 0); /* the predictor's logits per layer */
    CHECK_NEAR(p.dev_syncs, 1 + 32 + 32, 0); /* + a wait for the logits, one for the reads per layer */
    /* no predictor priced (a trace chooses): nothing but the logits comes down */
    c.predictor_fraction = 0;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.dev_bytes_down, 50272.0 * 4, 0);
    CHECK_NEAR(p.dev_syncs, 1 + 32, 0);
    /* OPT-125M in f16: a row's 2 x 768 x 2 = 3072 bytes are stored (and go up)
     * as a 4096-byte bundle: naive uploads every row at that stride */
    struct model_shape small;
    CHECK(model_shape_load(&set, "opt-125m", &small, err, sizeof err) == 0);
    c.shape = &small;
    c.policy = POLICY("naive");
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.dev_bytes_up, 12.0 * 3072 * (4096 + 4), 0);
    free(hw);
}

/* table2.json in dir: each row's error as computed, and within the
 * paper's rounding of its densities. */
static void check_table2(const char *dir)
{
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
}

/* table3.json in dir: the cells calibrated on the paper reproduce it, the
 * predicted ones come close. */
static void check_table3(const char *dir)
{
    char path[256];
    const cJSON *r;
    snprintf(path, sizeof path, "%s/table3.json", dir);
    cJSON *t3 = read_json(path);
    cJSON *rows = cJSON_GetObjectItem(t3, "rows");
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
}

static void test_paper_tables(void)
{
    const struct fb_settings set = fb_settings_defaults();
    char dir[] = "/tmp/flashbed-test-paper-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    cJSON *prov = provenance_new();
    char err[512];
    CHECK(paper_write_table2(&set, NULL, dir, NULL, prov, NULL, err, sizeof err) == 0);
    CHECK(paper_write_table3(&set, NULL, dir, NULL, prov, NULL, err, sizeof err) == 0);
    check_table2(dir);
    check_table3(dir);
    cJSON_Delete(prov);
    char path[256];
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

/* Every field of two predictions, exactly. */
static bool same_prediction(const struct cost_prediction *a, const struct cost_prediction *b)
{
    const double x[] = {a->io_ms, a->mem_ms, a->compute_ms, a->attention_ms, a->predictor_ms, a->ffn_ms,
                        a->other_ms, a->serial_ms, a->overlapped_ms, a->bytes_per_token, a->reads_per_token,
                        a->chunk_bytes, a->throughput, a->rows_inserted, a->rows_deleted, a->cache_rows,
                        a->model_bytes, a->dram_embeddings, a->dram_attention, a->dram_predictor, a->dram_ffn,
                        a->dram_total};
    const double y[] = {b->io_ms, b->mem_ms, b->compute_ms, b->attention_ms, b->predictor_ms, b->ffn_ms,
                        b->other_ms, b->serial_ms, b->overlapped_ms, b->bytes_per_token, b->reads_per_token,
                        b->chunk_bytes, b->throughput, b->rows_inserted, b->rows_deleted, b->cache_rows,
                        b->model_bytes, b->dram_embeddings, b->dram_attention, b->dram_predictor, b->dram_ffn,
                        b->dram_total};
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        if (x[i] != y[i])
            return false;
    return a->throughput_interpolated == b->throughput_interpolated;
}

/* predict's --policy as its command line takes it (cli/cmd_predict.c):
 * the list parsed (window:auto taken), each element checked, then priced.
 * check_list stops before pricing. */
static int check_list(const char *list, bool have_trace, size_t *n, char *err, size_t errlen)
{
    struct policy_spec *p = NULL;
    int rc = cache_policy_parse_list(list, true, &p, n, err, errlen);
    if (predict_list_check(p, *n, have_trace, err, errlen) != 0)
        rc = -1;
    free(p);
    return rc;
}

static int price_list(const struct predict_setup *su, const char *list, struct policy_prediction **out, size_t *n,
                      char *err, size_t errlen)
{
    struct policy_spec *p = NULL;
    size_t np = 0;
    int rc = cache_policy_parse_list(list, true, &p, &np, err, errlen);
    if (predict_list_check(p, np, su->trace != NULL, err, errlen) != 0)
        rc = -1;
    if (rc == 0 && (rc = predict_list(su, p, np, out, err, errlen)) == 0)
        *n = np;
    free(p);
    return rc;
}

/* A list of three gives the three single-policy predictions, in order. */
static void check_list_equals_singles(const struct predict_setup *su, const char *list, const char *const one[3])
{
    struct policy_prediction *all = NULL, *single = NULL;
    size_t n = 0, m = 0;
    char err[1024];
    CHECK(price_list(su, list, &all, &n, err, sizeof err) == 0);
    CHECK_U64(n, 3);
    for (size_t i = 0; all && i < 3; i++) {
        CHECK(price_list(su, one[i], &single, &m, err, sizeof err) == 0);
        CHECK_U64(m, 1);
        CHECK_STR(POLICY_NAME(&all[i].config.policy), one[i]);
        CHECK(single && same_prediction(&all[i].prediction, &single[0].prediction));
        CHECK(single && all[i].prediction.io_ms > 0);
        CHECK_STR(all[i].config.vol.source, single ? single[0].config.vol.source : "");
        free(single);
        single = NULL;
    }
    free(all);
}

/* An error for the list, whose message holds `want`. */
static void check_refused(const struct predict_setup *su, const char *list, const char *want)
{
    struct policy_prediction *out = NULL;
    size_t n = 7;
    char err[1024] = "";
    CHECK(price_list(su, list, &out, &n, err, sizeof err) == -1);
    CHECK(out == NULL && n == 7);
    if (!strstr(err, want))
        fprintf(stderr, "'%s': error \"%s\" lacks \"%s\"\n", list, err, want);
    CHECK(strstr(err, want) != NULL);
}

/* A calibrated synthetic trace of the shape, 30 tokens, in memory. */
static void synth_trace(const struct model_shape *s, uint64_t seed, struct trace *tr)
{
    char path[] = "/tmp/flashbed-test-list-XXXXXX", err[512];
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    struct synth_params sp;
    synth_params_default(&sp, s);
    sp.tokens = 30;
    sp.seed = seed;
    CHECK(synth_write(&sp, path, err, sizeof err) == 0);
    CHECK(trace_load(path, tr, err, sizeof err) == 0);
    unlink(path);
}

/* predict's setup over OPT-6.7B on the M1 Max CPU profile: f32, bundled,
 * half the model in DRAM, 32 I/O threads, 256 tokens of context. */
static struct predict_setup opt67_setup(const struct fb_settings *set, struct model_shape *s, struct hw_profile *hw)
{
    load_opt67(set, "m1max-cpu", s, hw);
    return (struct predict_setup){.settings = set, .shape = s, .hw = hw, .dtype = "f32", .layout = LAYOUT("bundled"),
                                  .dram_share = 0.5, .io_threads = 32, .context_tokens = 256};
}

static void test_policy_list(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[1024];
    struct predict_setup su = opt67_setup(&set, &s, hw);
    /* The paper's densities: its own window, another on the s_agg curve, a baseline. */
    check_list_equals_singles(&su, "naive,window:5,window:3", (const char *const[]){"naive", "window:5", "window:3"});
    size_t n;
    CHECK(check_list("lru,belady,window:5", true, &n, err, sizeof err) == 0);
    CHECK_U64(n, 3);
    /* lru needs a trace's exact sets; so do coalesce:G and friends. */
    check_refused(&su, "lru", "policy 'lru' is priced from a trace's exact sets only");
    check_refused(&su, "window:5,lru", "policy 'lru'");
    CHECK(check_list("window:5,lru", false, &n, err, sizeof err) == -1);
    su.layout = LAYOUT("coalesce:2");
    check_refused(&su, "window:5", "layout 'coalesce:2'");
    su.layout = LAYOUT("bundled");
    /* Empty elements and unknown names, named. */
    check_refused(&su, "window:5,", "policy 2 of 'window:5,' is empty");
    check_refused(&su, ",window:5", "policy 1 of ',window:5' is empty");
    check_refused(&su, "naive,,hybrid", "policy 2 of 'naive,,hybrid' is empty");
    check_refused(&su, "", "policy 1 of '' is empty");
    check_refused(&su, "naive,nope", "unknown policy 'nope'");
    check_refused(&su, "window:x", "policy 'window:x' needs a whole number");
    /* cost_predict itself refuses lru without replayed volumes. */
    struct cost_config c = {.shape = &s, .hw = hw, .io_threads = 32, .context_tokens = 256, .dram_share = 0.5,
                            .policy = POLICY("lru"), .layout = LAYOUT("bundled"), .dtype = "f32"};
    struct cost_prediction p;
    CHECK(cost_predict(&c, &p, err, sizeof err) == -1 && strstr(err, "'lru'"));
    c.vol.replayed = true;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);

    /* A synthetic trace: every policy replayed for its own volumes. */
    CHECK(model_shape_load(&set, "opt-tiny", &s, err, sizeof err) == 0);
    struct trace tr;
    synth_trace(&s, 3, &tr);
    su.dram_share = 0.95;
    su.trace = &tr;
    su.trace_path = "synthetic";
    su.use_predicted = tr.meta.has_predicted;
    check_list_equals_singles(&su, "lru,belady,window:5", (const char *const[]){"lru", "belady", "window:5"});
    su.layout = LAYOUT("coalesce:2");
    check_list_equals_singles(&su, "hot,predictor,lfu", (const char *const[]){"hot", "predictor", "lfu"});
    check_refused(&su, "lru,naive", "policy 'naive': naive and hybrid");
    su.dram_share = 0.1; /* below the non-FFN weights */
    check_refused(&su, "window:5,lru", "policy 'lru': a DRAM budget of 10.0% of the model leaves no DRAM");
    trace_free(&tr);
    free(hw);
}

/* The predictor every policy but naive and hybrid runs: from a rank and the
 * shape, the paper's share of the model, or none; held in DRAM and timed. */
static void test_predictor_pricing(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[1024];
    struct predict_setup su = opt67_setup(&set, &s, hw);
    CHECK_NEAR(cost_predictor_params(&s, 128), 32.0 * (128 * (4096 + 16384) + 16384), 0.5);
    struct policy_prediction *it = NULL;
    size_t n;
    struct param_counts pc;
    model_shape_params(&s, &pc);
    CHECK(price_list(&su, "naive,predictor", &it, &n, err, sizeof err) == 0); /* auto: the paper's 1.25% */
    CHECK(it[0].prediction.dram_predictor == 0 && it[0].prediction.predictor_ms == 0);
    CHECK_NEAR(it[1].prediction.dram_predictor, 0.0125 * (double)pc.total * 4, 1);
    CHECK(strstr(it[1].config.predictor_source, "1.25%") != NULL);
    double paper_ms = it[1].prediction.predictor_ms;
    free(it);
    su.predictor_rank = 256;
    CHECK(price_list(&su, "predictor", &it, &n, err, sizeof err) == 0);
    CHECK_NEAR(it[0].prediction.dram_predictor, cost_predictor_params(&s, 256) * 4, 1);
    CHECK(it[0].prediction.predictor_ms > 0 && it[0].prediction.predictor_ms != paper_ms);
    CHECK(strstr(it[0].config.predictor_source, "rank 256") != NULL);
    double with = it[0].prediction.compute_ms;
    free(it);
    su.predictor_rank = PREDICT_RANK_NONE;
    CHECK(price_list(&su, "predictor", &it, &n, err, sizeof err) == 0);
    CHECK(it[0].prediction.dram_predictor == 0 && it[0].prediction.predictor_ms == 0 && it[0].prediction.compute_ms < with);
    free(it);
    su.predictor_rank = 5000;
    check_refused(&su, "predictor", "rank 5000 passes min(d_model 4096, d_ff 16384)");
    CHECK(model_shape_load(&set, "opt-tiny", &s, err, sizeof err) == 0);
    su.predictor_rank = PREDICT_RANK_AUTO; /* no paper share for it: rank 128 capped at d_model */
    CHECK(price_list(&su, "window:3", &it, &n, err, sizeof err) == 0);
    CHECK_NEAR(it[0].prediction.dram_predictor, cost_predictor_params(&s, 64) * 4, 1e-6);
    free(it);
    free(hw);
}

/* The window tests' setup: opt-tiny, the M1 Max's CPU profile (returned,
 * to free) and a 30-token synthetic trace of seed 5, priced in f32 at 80%
 * of the model on its active sets. */
static struct hw_profile *window_setup(const struct fb_settings *set, struct model_shape *s, struct trace *tr,
                                       struct predict_setup *su)
{
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[1024];
    CHECK(model_shape_load(set, "opt-tiny", s, err, sizeof err) == 0);
    CHECK(hw_profile_load(set, "m1max-cpu", hw, err, sizeof err) == 0);
    CHECK(cost_resolve_profile(hw, set, err, sizeof err) == 0);
    synth_trace(s, 5, tr);
    *su = (struct predict_setup){.settings = set, .shape = s, .hw = hw, .dtype = "f32", .layout = LAYOUT("bundled"),
                                 .dram_share = 0.8, .io_threads = 4, .context_tokens = 16, .trace = tr,
                                 .trace_path = "synthetic", .predictor_rank = PREDICT_RANK_NONE};
    return hw;
}

/* The FFN cache of the window tests: 80% of the model less the weights
 * outside the FFN, in f32 bytes. */
static double window_setup_ffn_bytes(const struct model_shape *s)
{
    struct param_counts pc;
    model_shape_params(s, &pc);
    return 0.8 * (double)pc.total * 4 - (double)(pc.total - pc.ffn) * 4;
}

/* window:auto: K as run chooses it (sim/window_auto.h) for the rows the
 * cost model's FFN cache gets, priced exactly as window:K. */
static void test_window_auto(void)
{
    struct model_shape s;
    struct trace tr;
    struct predict_setup su;
    const struct fb_settings set = fb_settings_defaults();
    struct hw_profile *hw = window_setup(&set, &s, &tr, &su);
    char err[1024];
    su.tokens = 12;
    size_t n;
    CHECK(check_list("window:auto,lru", true, &n, err, sizeof err) == 0);
    CHECK(check_list("window:auto", false, &n, err, sizeof err) == 0);
    /* the FFN cache in rows of 2 x 64 f32 weights, split over 2 layers */
    uint64_t rows = (uint64_t)window_setup_ffn_bytes(&s) / 512 / 2;
    struct window_auto_input wi = {&tr, false, 12, 256, rows};
    struct window_auto_choice wc;
    CHECK(window_auto_choose(&wi, &wc, err, sizeof err) == 0);
    struct policy_prediction *it = NULL, *fixed = NULL;
    CHECK(price_list(&su, "window:auto", &it, &n, err, sizeof err) == 0);
    CHECK_U64(it[0].window_rows, rows);
    CHECK_U64(it[0].window_tokens, 12);
    CHECK_U64(it[0].window.k, wc.k);
    CHECK(wc.k >= 1 && wc.k <= 12);
    CHECK_STR(POLICY_NAME(&it[0].asked), "window:auto");
    char want[32];
    snprintf(want, sizeof want, "window:%u", wc.k);
    CHECK_STR(POLICY_NAME(&it[0].config.policy), want);
    CHECK(strstr(it[0].window.from, "trace") != NULL);
    CHECK(price_list(&su, want, &fixed, &n, err, sizeof err) == 0);
    CHECK(fixed[0].window.k == 0 && !strcmp(POLICY_NAME(&fixed[0].asked), want));
    CHECK(it[0].prediction.io_ms == fixed[0].prediction.io_ms && it[0].prediction.mem_ms == fixed[0].prediction.mem_ms);
    free(it);
    free(fixed);
    /* without --tokens, over the whole trace; without a trace, the s_agg curve */
    su.tokens = 0;
    CHECK(price_list(&su, "window:auto", &it, &n, err, sizeof err) == 0);
    CHECK_U64(it[0].window_tokens, 30);
    free(it);
    su.trace = NULL;
    CHECK(price_list(&su, "window:auto", &it, &n, err, sizeof err) == 0);
    wi = (struct window_auto_input){NULL, false, WINDOW_MAX_K, 256, rows};
    CHECK(window_auto_choose(&wi, &wc, err, sizeof err) == 0);
    CHECK_U64(it[0].window.k, wc.k);
    CHECK(strstr(it[0].window.from, "s_agg") != NULL);
    free(it);
    /* a budget that leaves no row for the cache */
    su.dram_share = 0.5;
    check_refused(&su, "window:auto", "leaves no FFN cache row");
    trace_free(&tr);
    free(hw);
}

/* A window the FFN cache cannot hold is priced as run and replay keep it:
 * shrunk within the budget, the same volumes as replay at that budget, more
 * bytes than the unbounded window. */
static void test_window_within_budget(void)
{
    struct model_shape s;
    struct trace tr;
    struct predict_setup su;
    const struct fb_settings set = fb_settings_defaults();
    struct hw_profile *hw = window_setup(&set, &s, &tr, &su);
    char err[1024];
    su.use_predicted = tr.meta.has_predicted; /* denser than the active sets: the budget binds */
    double scale = 4.0 / cost_weight_bytes(wtype_name(tr.meta.dtype));
    struct replay_spec bound = {.policy = POLICY("window:12"), .layout = LAYOUT("bundled"),
                                .dram_budget = (uint64_t)(window_setup_ffn_bytes(&s) / scale),
                                .use_predicted = su.use_predicted};
    struct replay_spec unbound = bound;
    unbound.dram_budget = 0;
    struct replay_result rb, ru;
    CHECK(replay_run(&tr, &bound, &rb, err, sizeof err) == 0);
    CHECK(replay_run(&tr, &unbound, &ru, err, sizeof err) == 0);
    CHECK(rb.window_shrinks > 0 && ru.window_shrinks == 0); /* the budget binds */
    CHECK(rb.bytes_per_token > ru.bytes_per_token);
    struct policy_prediction *it = NULL;
    size_t n;
    CHECK(price_list(&su, "window:12", &it, &n, err, sizeof err) == 0);
    CHECK(it[0].config.vol.read_bytes == rb.bytes_per_token * scale);
    CHECK(it[0].config.vol.rows_inserted == rb.rows_inserted_per_token);
    CHECK(it[0].config.vol.rows_deleted == rb.rows_deleted_per_token);
    free(it);
    replay_result_free(&rb);
    replay_result_free(&ru);
    trace_free(&tr);
    free(hw);
}

/* Memory management as the engine copies rows: deletions (the last row
 * fills the hole) and, when reads span rows not kept, insertions out of the
 * bounce buffer; the predictor keeps nothing it reads and copies nothing. */
static void test_rows_copied(void)
{
    struct model_shape s;
    struct trace tr;
    struct predict_setup su;
    const struct fb_settings set = fb_settings_defaults();
    struct hw_profile *hw = window_setup(&set, &s, &tr, &su);
    char err[1024];
    const char *layouts[] = {"split", "coalesce:0", "coalesce:2"};
    for (int i = 0; i < 3; i++) {
        su.layout = LAYOUT(layouts[i]);
        struct policy_prediction *it = NULL;
        size_t n;
        CHECK(price_list(&su, "window:3,predictor", &it, &n, err, sizeof err) == 0);
        const struct token_volumes *v = &it[0].config.vol;
        double rb = 2.0 * s.d_model * 4; /* up and down rows, f32 */
        double rows = v->rows_deleted + (i == 2 ? v->rows_inserted : 0);
        CHECK(v->rows_deleted > 0 && v->rows_inserted > 0);
        CHECK_NEAR(it[0].prediction.mem_ms, 1e3 * rows * rb / hw_copy_bw(hw, rb), 1e-9);
        CHECK(it[1].prediction.mem_ms == 0);
        free(it);
    }
    trace_free(&tr);
    free(hw);
}

/* A profile with known fixed costs (sim/hw_profile.h: struct hw_fixed) and
 * a flat flash of 1 GB/s from 4 KiB to 1 MiB at 1 to 32 threads, so that
 * every term is priced by hand. */
static struct hw_profile *fixed_profile(void)
{
    struct hw_profile *hw = hw_flat_profile();
    struct hw_fixed *f = &hw->fixed;
    f->present = true;
    f->read_s[HW_IO_PSYNC] = 50e-6;
    f->read_bw[HW_IO_PSYNC] = 2e9;
    f->batch_s = 20e-6;
    f->n_tail = 2;
    f->tail_threads[0] = 1, f->tail_factor[0] = 1.5;
    f->tail_threads[1] = 32, f->tail_factor[1] = 1.25;
    f->min_parallel_work = 32768;
    f->team_threads = 2;
    f->job_hot_s = 1e-6, f->token_s = 10e-6;
    f->n_cold = 2; /* a job after 0.1 ms asleep costs 20 us, after 1 ms or more 100 us */
    f->cold_gap_s[0] = 1e-4, f->job_cold_s[0] = 20e-6;
    f->cold_gap_s[1] = 1e-3, f->job_cold_s[1] = 100e-6;
    return hw;
}

/* opt-tiny (d_model 64, d_ff 256, 2 layers) in f16 on fixed_profile: a row
 * is 256 bytes, 4096 on flash; dram.bin 2 x (182144 - 65536) = 233216
 * bytes, 118784 a layer (29 x 4096, one read); a layer's rows 1 MiB, one
 * read. Each batch one read on one thread: its bytes' time and the tail's
 * lag (0.5 of a 4 KiB read's time: a skew in time, whatever the read's
 * size) beat the read's own 50 us + bytes at 2 GB/s; plus batch_s. The team: no
 * kernel reaches 32768 multiply-adds but the lm_head's (1024 x 64): one
 * job, cold. */
static void test_fixed_naive_tiny(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = fixed_profile();
    char err[512];
    CHECK(model_shape_load(&set, "opt-tiny", &s, err, sizeof err) == 0);
    struct cost_config c = {.shape = &s, .hw = hw, .io_threads = 32, .context_tokens = 8, .dram_share = 1,
                            .policy = POLICY("naive"), .layout = LAYOUT("bundled")};
    snprintf(c.dtype, sizeof c.dtype, "f16");
    struct cost_prediction p;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK(p.fixed);
    CHECK_NEAR(p.io_batches, 4, 0);
    CHECK_NEAR(p.reads_per_token, 4, 0);
    CHECK_NEAR(p.bytes_per_token, 2 * (118784.0 + 1048576), 0);
    double lag = 0.5 * 4096 / 1e9, dram = 20e-6 + 118784 / 1e9 + lag, rows = 20e-6 + 1048576 / 1e9 + lag;
    CHECK_NEAR(p.io_ms, 1e3 * 2 * (dram + rows), 1e-9);
    CHECK_NEAR(p.io_batch_ms, 1e3 * 4 * 20e-6, 1e-12);
    CHECK_NEAR(p.io_tail_ms, 1e3 * 2 * 2 * lag, 1e-9);
    CHECK_NEAR(p.team_jobs, 1, 0);
    CHECK_NEAR(p.team_cold_jobs, 1, 0);
    /* the job after the token's 3.6 ms of reads: 100 us, less its work per thread (131072 bytes at 10 GB/s, over 2) */
    double job = 100e-6 - 131072 / 1e10 / 2;
    CHECK_NEAR(p.jobs_ms, 1e3 * job, 1e-12);
    CHECK_NEAR(p.token_fixed_ms, 0.01, 1e-12);
    /* the bytes' compute as without fixed costs, plus the job and the token */
    hw->fixed.present = false;
    struct cost_prediction q;
    CHECK(cost_predict(&c, &q, err, sizeof err) == 0);
    CHECK(!q.fixed && q.jobs_ms == 0 && q.io_batches == 0);
    CHECK_NEAR(p.compute_ms, q.compute_ms + 1e3 * job + 0.01, 1e-9);
    free(hw);
}

/* A window's reads on opt-tiny: 40 reads of a 4 KiB row a layer over 32
 * threads: the bytes' time 163.84 us and a quarter round's tail (32 reads:
 * 131.072 us) beat two reads in turn on one thread (2 x 52.048 us); then
 * one read a layer, where the chain wins: 50 us + 4096 / 2 GB/s against
 * 1.5 x 4.096 us, and the token's one job follows a shorter wait. */
static void test_fixed_window_tiny(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = fixed_profile();
    char err[512];
    CHECK(model_shape_load(&set, "opt-tiny", &s, err, sizeof err) == 0);
    struct cost_config c = {.shape = &s, .hw = hw, .io_threads = 32, .context_tokens = 8, .dram_share = 0.75,
                            .policy = POLICY("window:5"), .layout = LAYOUT("bundled")};
    snprintf(c.dtype, sizeof c.dtype, "f16");
    c.vol = (struct token_volumes){.neurons_loaded = 80, .rows_inserted = 80, .rows_deleted = 80,
                                   .cache_rows = 200, .reads = 80};
    struct cost_prediction p;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.bytes_per_token, 80 * 4096.0, 0);
    double batch = 20e-6 + 40 * 4096 / 1e9 + 0.25 * 32 * 4096 / 1e9;
    CHECK_NEAR(p.io_ms, 1e3 * 2 * batch, 1e-9);
    CHECK_NEAR(p.team_jobs, 1, 0);
    c.vol = (struct token_volumes){.neurons_loaded = 2, .rows_inserted = 2, .cache_rows = 100, .reads = 2};
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    double io_s = 2 * (20e-6 + 50e-6 + 4096 / 2e9);
    CHECK_NEAR(p.io_ms, 1e3 * io_s, 1e-9);
    /* the lm_head's job waited the token's reads: 0.144 ms, between the profile's waits (log-interpolated) */
    double w = 20e-6 + 80e-6 * log(io_s / 1e-4) / log(10);
    CHECK_NEAR(p.jobs_ms, 1e3 * (w - 131072 / 1e10 / 2), 1e-9);
    free(hw);
}

/* opt-1.3b's jobs a token, naive: q, k, v, o (2048 x 2048), attention at a
 * context of 8 (8 x 32 x 64 = 16384: half the threshold), the FFN's two
 * after its reads (the first cold) in each of 24 layers, and the lm_head:
 * 24 x 7 + 1 = 169, 24 cold. hybrid: its held rows computed first, two
 * more jobs a layer. Reads: the FFN's 64 MiB a layer as 64 reads of 1 MiB. */
static void test_fixed_jobs_13b(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct hw_profile *hw = fixed_profile();
    char err[512];
    CHECK(model_shape_load(&set, "opt-1.3b", &s, err, sizeof err) == 0);
    struct cost_config c = {.shape = &s, .hw = hw, .io_threads = 32, .context_tokens = 8, .dram_share = 0.5,
                            .policy = POLICY("naive"), .layout = LAYOUT("bundled")};
    snprintf(c.dtype, sizeof c.dtype, "f16");
    struct cost_prediction p;
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.team_jobs, 169, 0);
    CHECK_NEAR(p.team_cold_jobs, 24, 0);
    /* each job's work per thread hides half its delay: q, k, v, o, attention and the lm_head 0.5 us; the
     * FFN's sums (no work) 1 us; its groups after the reads 50 us (64 MiB: 3.4 ms a thread, more than 100 us) */
    CHECK_NEAR(p.jobs_ms, 1e3 * (121 * 0.5e-6 + 24 * 1e-6 + 24 * 50e-6), 1e-9);
    /* dram.bin's slice a layer: 2 x (1315758080 - 2 x 2048 x 8192 x 24) / 24, aligned up: 10386 x 4096 bytes */
    CHECK_NEAR(p.reads_per_token, 24 * (ceil(10386 * 4096.0 / 1048576) + 64), 0);
    c.policy = POLICY("hybrid");
    CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
    CHECK_NEAR(p.team_jobs, 24 * 9 + 1, 0);
    CHECK_NEAR(p.io_batches, 24, 0);
    free(hw);
}

/* Every kind of job at once (a cache and a ranked predictor, every step on
 * the team): all ENGINE_JOB_KINDS kinds, one per kind a layer but the
 * lm_head's one a token (the predict with a calibrated profile that found
 * eight kinds too few). */
static void test_every_job_kind(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    char err[512];
    CHECK(model_shape_load(&set, "opt-1.3b", &s, err, sizeof err) == 0);
    struct engine_view v = {.shape = &s, .type = DTYPE_F16, .keeps = true, .predictor = true, .predictor_rank = 128,
                            .context = 64, .rows_held = 24 * 1000, .rows_loaded = 24 * 100, .min_parallel = 0};
    struct engine_jobs j;
    engine_jobs_of(&v, &j);
    CHECK_U64(j.n_kinds, ENGINE_JOB_KINDS);
    CHECK_NEAR(j.jobs, 24 * (2 + 2 + 1 + 2 + 2 + 2) + 1, 0);
    CHECK_NEAR(j.cold, 24, 0);
}

/* The engine's view prices weights by their type's table row: one
 * weight's share of its block for aggregates, and a row on flash as the
 * neuron bundle's unit geometry pads it (each part wtype_row_bytes), so a
 * block type's row is exact, not a truncated bytes per weight. Every row of
 * the table; opt-1.3b's bundle is 2 x 2048 weights. */
static void test_engine_type_pricing(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    char err[512];
    CHECK(model_shape_load(&set, "opt-1.3b", &s, err, sizeof err) == 0);
    for (int i = 0; i < DTYPE_COUNT; i++) {
        enum fb_dtype t = (enum fb_dtype)i;
        CHECK(engine_weight_bytes(t) * wtype_block_elems(t) == (double)wtype_block_bytes(t));
        double bundle = (double)wtype_row_bytes(t, s.d_model) * 2;
        CHECK_NEAR(engine_row_stride(&s, t), ceil(bundle / FB_BUNDLE_ALIGN) * FB_BUNDLE_ALIGN, 0);
    }
    CHECK_NEAR(engine_row_stride(&s, DTYPE_F16), 8192, 0);
    CHECK_NEAR(engine_weight_bytes(DTYPE_BF16), 2, 0);
    CHECK(engine_weight_bytes((enum fb_dtype)DTYPE_COUNT) == 0);
}

/* The predictor's rows of a comparison come with every deployable source,
 * gate-cal among them (it holds the gate's rows), and with none other: the
 * run's predictor DRAM says which (0 for the oracle, teal, a trace). */
static void test_run_predictor_rows(void)
{
    char dir[] = "/tmp/flashbed-test-runpred-XXXXXX", path[200], err[512], text[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/run.json", dir);
    static const struct {
        const char *source;
        double bytes;
        bool rows;
    } runs[] = {{"predictor", 4e6, true}, {"gate", 2e6, true}, {"gate-cal", 2e6, true},
                {"oracle", 0, false},    {"teal", 0, false},  {"trace", 0, false}};
    struct cost_prediction p = {.io_ms = 12, .mem_ms = 1, .compute_ms = 8, .predictor_ms = 1.5, .dram_predictor = 2e6};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        snprintf(text, sizeof text,
                 "{\"summary\": {\"io_ms\": 10, \"mem_ms\": 2, \"compute_ms\": 8, \"active_source\": \"%s\", "
                 "\"predictor_ms\": 1, \"predictor_dram_bytes\": %g}}",
                 runs[i].source, runs[i].bytes);
        test_write_text(path, text);
        struct run_summary m;
        struct run_comparison c;
        CHECK(run_summary_read(path, &m, err, sizeof err) == 0);
        run_compare(&p, &m, &c);
        CHECK(c.has_predictor == runs[i].rows);
        CHECK(!runs[i].rows || c.predictor_dram[1] == runs[i].bytes);
        run_summary_free(&m);
    }
    unlink(path);
    rmdir(dir);
}

/* A profile written before fixed costs loads with none, each source
 * saying so; a profile with them writes and reads back the same. */
static void test_fixed_profile_json(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct hw_profile *hw = calloc(1, sizeof *hw), *back = calloc(1, sizeof *back);
    char err[1024];
    CHECK(hw_profile_load(&set, "m1max-cpu", hw, err, sizeof err) == 0);
    CHECK(!hw->fixed.present && hw->fixed.batch_s == 0 && hw->fixed.n_tail == 0 && hw_read_tail(hw, 8) == 1);
    CHECK(strstr(hw->fixed.read_source, "absent from the profile") && strstr(hw->fixed.job_source, "priced as 0"));
    cJSON *j = hw_profile_to_json(hw);
    CHECK(!cJSON_HasObjectItem(j, "fixed"));
    cJSON_Delete(j);
    struct hw_profile *f = fixed_profile();
    snprintf(f->name, sizeof f->name, "box");
    snprintf(f->backend, sizeof f->backend, "cpu");
    snprintf(f->fixed.tail_source, sizeof f->fixed.tail_source, "by hand");
    char path[] = "/tmp/flashbed-fixed-XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    j = hw_profile_to_json(f);
    char *text = cJSON_Print(j);
    test_write_text(path, text);
    free(text);
    cJSON_Delete(j);
    if (hw_profile_load(&set, path, back, err, sizeof err) != 0)
        fprintf(stderr, "%s\n", err);
    CHECK(back->path[0] && !err[0]);
    CHECK(back->fixed.present && back->fixed.read_s[HW_IO_PSYNC] == 50e-6 && back->fixed.read_bw[HW_IO_PSYNC] == 2e9);
    CHECK(back->fixed.n_tail == 2 && back->fixed.tail_factor[1] == 1.25 && !strcmp(back->fixed.tail_source, "by hand"));
    CHECK(back->fixed.n_cold == 2 && back->fixed.job_cold_s[1] == 100e-6 && back->fixed.cold_gap_s[0] == 1e-4);
    CHECK(back->fixed.min_parallel_work == 32768 && back->fixed.token_s == 10e-6);
    CHECK_NEAR(hw_read_tail(back, 1), 1.5, 0);
    CHECK_NEAR(hw_read_tail(back, 64), 1.25, 0); /* clamped */
    unlink(path);
    free(f);
    free(hw);
    free(back);
}

/* A measured run read once (sim/run_summary.h) and compared with a
 * prediction: exact parts, relative errors and MAPE; the predictor's rows
 * when it chose; a run.json without a part refused, naming it. */
static void test_run_summary(void)
{
    char dir[] = "/tmp/flashbed-test-runsum-XXXXXX", path[200], err[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/run.json", dir);
    test_write_text(path, "{\"provenance\": {\"parameters\": {\"dram-budget\": \"50%\"}}, \"summary\": {\"io_ms\": 10, "
                     "\"mem_ms\": 2, \"compute_ms\": 8, \"window_k\": 5, \"capacity_rows_per_layer\": 300, "
                     "\"active_source\": \"predictor\", \"predictor_ms\": 1, \"predictor_dram_bytes\": 4e6}}");
    struct run_summary m;
    CHECK(run_summary_read(path, &m, err, sizeof err) == 0);
    CHECK(m.part_ms[RUN_TOTAL] == 20 && m.window_k == 5 && m.capacity_rows == 300);
    CHECK_STR(m.dram_budget, "50%");
    CHECK(m.provenance != NULL);
    struct cost_prediction p = {.io_ms = 12, .mem_ms = 1, .compute_ms = 8, .predictor_ms = 1.5, .dram_predictor = 2e6};
    struct run_comparison c;
    run_compare(&p, &m, &c);
    CHECK_NEAR(c.rel_err[RUN_IO], 0.2, 1e-12);
    CHECK_NEAR(c.rel_err[RUN_MEM], -0.5, 1e-12);
    CHECK_NEAR(c.rel_err[RUN_COMPUTE], 0, 1e-12);
    CHECK_NEAR(c.rel_err[RUN_TOTAL], 21.0 / 20 - 1, 1e-12);
    CHECK_NEAR(c.mape_pct, 100 * (0.2 + 0.5 + 0) / 3, 1e-9);
    CHECK(c.has_predictor && c.predictor_ms[2] == 0.5 && c.predictor_dram[2] == -0.5);
    CHECK(!c.has_device && isnan(m.device[0])); /* a cpu run */
    run_summary_free(&m);
    test_write_text(path, "{\"summary\": {\"io_ms\": 10, \"mem_ms\": 2, \"compute_ms\": 8, \"h2d_bytes\": 1000, "
                     "\"d2h_bytes\": 400, \"launches\": 30, \"syncs\": 5}}");
    CHECK(run_summary_read(path, &m, err, sizeof err) == 0);
    run_compare(&p, &m, &c);
    CHECK(!c.has_device); /* a profile without a device */
    p.device = true, p.dev_bytes_up = 1500, p.dev_bytes_down = 400, p.dev_launches = 30, p.dev_syncs = 4;
    run_compare(&p, &m, &c);
    CHECK(c.has_device && c.device[0][0] == 1500 && c.device[0][1] == 1000 && c.device[0][2] == 0.5);
    CHECK(c.device[1][2] == 0 && c.device[2][1] == 30 && c.device[3][2] == -0.2);
    run_summary_free(&m);
    /* a run that hid 30 of its 40 ms of reads: compared by its reads' whole time */
    test_write_text(path, "{\"summary\": {\"io_ms\": 10, \"mem_ms\": 2, \"compute_ms\": 8, \"read_ms\": 40}}");
    CHECK(run_summary_read(path, &m, err, sizeof err) == 0);
    p.io_ms = 36;
    run_compare(&p, &m, &c);
    CHECK(c.overlapped && c.exposed_io_ms == 10 && c.overlapped_total_ms == 20);
    CHECK(c.measured[RUN_IO] == 40 && c.measured[RUN_TOTAL] == 50 && c.measured[RUN_COMPUTE] == 8);
    CHECK_NEAR(c.rel_err[RUN_IO], -0.1, 1e-12);
    CHECK_NEAR(c.rel_err[RUN_TOTAL], 45.0 / 50 - 1, 1e-12);
    run_summary_free(&m);
    test_write_text(path, "{\"summary\": {\"io_ms\": 10, \"mem_ms\": 2, \"compute_ms\": 8, \"read_ms\": 10}}");
    CHECK(run_summary_read(path, &m, err, sizeof err) == 0);
    run_compare(&p, &m, &c);
    CHECK(!c.overlapped && c.measured[RUN_IO] == 10); /* nothing hidden: as before */
    run_summary_free(&m);
    test_write_text(path, "{\"summary\": {\"io_ms\": 10, \"compute_ms\": 8}}");
    CHECK(run_summary_read(path, &m, err, sizeof err) == -1);
    CHECK(strstr(err, "summary.mem_ms") && strstr(err, path));
    test_write_text(path, "{\"summary\": {\"io_ms\": 10, \"mem_ms\": -1, \"compute_ms\": 8}}");
    CHECK(run_summary_read(path, &m, err, sizeof err) == -1);
    unlink(path);
    rmdir(dir);
}

/* The comparison's verdict (run_compare_verdict): holds within 15% of the
 * total, misses beyond; the component with the largest gap in ms named
 * with its share of the components' gaps; a short token said to be fixed costs. */
static void test_compare_verdict(void)
{
    struct run_comparison c = {.predicted = {12, 1, 8, 21}, .measured = {10, 2, 8, 20},
                               .rel_err = {0.2, -0.5, 0, 0.05}};
    char v[1024];
    CHECK_STR(run_compare_verdict(&c, v, sizeof v),
              "Verdict: the cost model holds on this run: 21 ms a token predicted against 20 measured (+5%, within "
              "±15%). The largest gap is I/O: 12 against 10 ms (+20%), 67% of the components' gaps in ms.\n");
    struct run_comparison m = {.predicted = {0.1, 0, 0.2, 0.3}, .measured = {0.1, 0, 0.9, 1.0},
                               .rel_err = {0, 0, -0.2 / 0.9 * 3.5, -0.7}};
    run_compare_verdict(&m, v, sizeof v);
    CHECK(strstr(v, "the cost model misses on this run: 0.3 ms a token predicted against 1 measured (-70%, beyond "
                    "±15%). The largest gap is compute: 0.2 against 0.9 ms") != NULL);
    CHECK(strstr(v, "100% of the components' gaps in ms. A token this short is mostly fixed per-token costs") != NULL);
    char tiny[40];
    run_compare_verdict(&m, tiny, sizeof tiny); /* cut, terminated */
    CHECK(strlen(tiny) == sizeof tiny - 1);
}

/* A sliding window (Mistral 7B's 4096) caps the KV cache a token reads:
 * attention's time stops growing with the context there, while the same
 * shape without the window keeps growing (linearly). */
static void test_sliding_window(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s, dummy;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[512];
    load_opt67(&set, "m1max-metal", &dummy, hw);
    hw->device = (struct hw_device){0};
    CHECK(model_shape_load(&set, "mistral-7b", &s, err, sizeof err) == 0);
    double attn[2][3];
    static const double ctx[] = {2048, 4096, 16384};
    for (int windowed = 0; windowed < 2; windowed++)
        for (int i = 0; i < 3; i++) {
            s.sliding_window = windowed ? 4096 : 0;
            struct cost_config c = {.shape = &s, .hw = hw, .io_threads = 32, .context_tokens = ctx[i],
                                    .dram_share = 0.5, .policy = POLICY("naive"), .layout = LAYOUT("bundled")};
            snprintf(c.dtype, sizeof c.dtype, "f16");
            struct cost_prediction p;
            CHECK(cost_predict(&c, &p, err, sizeof err) == 0);
            attn[windowed][i] = p.attention_ms;
        }
    CHECK(attn[1][0] == attn[0][0] && attn[1][1] == attn[0][1]); /* within the window: the same */
    CHECK(attn[1][2] == attn[1][1]);                             /* past it: capped */
    CHECK(attn[0][2] > attn[0][1] && attn[0][1] > attn[0][0]);
    free(hw);
}

int main(void)
{
    char *argv[] = {"test_cost_model", NULL};
    provenance_set_argv(1, argv);
    test_accounting();
    test_device_pricing();
    test_run_summary();
    test_run_predictor_rows();
    test_paper_tables();
    test_s_agg();
    test_policy_list();
    test_predictor_pricing();
    test_window_auto();
    test_window_within_budget();
    test_rows_copied();
    test_fixed_naive_tiny();
    test_fixed_window_tiny();
    test_fixed_jobs_13b();
    test_every_job_kind();
    test_engine_type_pricing();
    test_fixed_profile_json();
    test_sliding_window();
    test_compare_verdict();
    return check_report("test_cost_model");
}
