/* flashbed run's result files (engine/run/run_report.h) from a hand-made
 * setup and hand-made token rows, read back through the one reader the
 * commands that compare with a run use (sim/run_summary.h): the steady
 * state's means with the cold tokens left out, the prompt, generated and
 * cold parts apart, the policy and layout by name, read_align, what chose
 * the neurons and --check's counts; tokens.csv's rows; run.md's text as it
 * comes back to the caller; and the failures, with their return codes. The
 * row values are sums of powers of two, so every mean is exact. */
#include "check.h"
#include "policy_text.h"

#include <math.h>
#include <stdlib.h>

#include "common/fsutil.h"
#include "common/json_file.h"
#include "engine/run/run_report.h"
#include "sim/run_summary.h"

static char root[] = "/tmp/fb_test_run_report_XXXXXX";

enum { N_ROWS = 6, N_PROMPT = 4, COLD = 2 };

/* 2 layers of 8 neurons, f32, ReLU, rows at ffn.bin's 4096-byte stride. */
static struct model fake_model(void)
{
    struct model m;
    memset(&m, 0, sizeof m);
    snprintf(m.shape.name, sizeof m.shape.name, "fake");
    m.shape.n_layers = 2;
    m.shape.d_ff = 8;
    m.shape.d_model = 4;
    m.arch.act = ACT_RELU;
    m.dtype = DTYPE_F32;
    m.bundle_stride = 4096;
    m.dram_bytes = 1000;
    m.ffn_bytes = 2 * 8 * 4096;
    snprintf(m.dir, sizeof m.dir, "/nonexistent-model");
    return m;
}

static uint32_t layer_rows[2] = {5, 6};

/* window:3 + bundled under a 50% budget, its cache 5 rows per layer; the
 * gate chooses, with --check beside it. */
static struct run_setup flash_setup(void)
{
    struct run_setup p;
    memset(&p, 0, sizeof p);
    p.policy = POLICY("window:3");
    p.layout = LAYOUT("bundled");
    p.plan.policy = p.policy;
    p.plan.window_k = 3;
    p.plan.capacity_rows = 5;
    p.plan.ffn_cache_bytes = 5 * 2 * 4096;
    p.plan.layer_rows = layer_rows;
    p.plan.staging_rows = 7;
    p.plan.bounce_rows = 2;
    p.cfg.select.ops = &source_gate;
    p.cfg.select.threshold = 0.5f;
    p.cfg.neuron.check = true;
    p.cfg.stream.io_engine = "psync";
    p.cfg.stream.io_threads = 4;
    p.cfg.stream.iodepth = 1;
    p.cfg.stream.direct = true;
    p.budget = 66536;
    p.model_bytes = 1000 + 2 * 8 * 4096;
    p.kv_bytes = 100;
    snprintf(p.active_desc, sizeof p.active_desc, "gate: |act(gate.x)| > 0.5");
    return p;
}

/* Token i of 6: 4 prompt tokens, then 2 generated; the first COLD are cold.
 * Steady state (tokens 2..5): I/O 36, mem 1.75, compute 4.5 ms; with the
 * cold ones it would be 28, 1.25, 3.5. Tokens 1, 3 and 5 miss a neuron. */
static void fill_rows(struct token_row *rows)
{
    memset(rows, 0, N_ROWS * sizeof *rows);
    for (int i = 0; i < N_ROWS; i++) {
        struct token_row *r = &rows[i];
        r->id = 10 + i;
        r->generated = i >= N_PROMPT;
        r->io_ms = 8.0 * (i + 1);
        r->mem_ms = 0.5 * i;
        r->compute_ms = 1.0 + i;
        r->total_ms = r->io_ms + r->mem_ms + r->compute_ms;
        r->ffn_ms = 0.5;
        r->predictor_ms = 0.25;
        r->check_ms = 0.0625;
        r->attention_ms = r->compute_ms - r->ffn_ms - r->predictor_ms - r->check_ms;
        r->bytes_read = 4096.0 * (i + 1);
        r->reads = r->io_requests = 2.0 * (i + 1);
        r->rows_inserted = 2;
        r->rows_deleted = 1;
        r->cache_rows = 5;
        r->needed = 4;
        r->active = 5;
        r->missed = i % 2;
    }
}

/* What flashbed run's provenance gives the writer, the budget as given among the parameters. */
static cJSON *fake_provenance(void)
{
    cJSON *prov = cJSON_CreateObject();
    cJSON_AddStringToObject(prov, "command_line", "flashbed run --model fake");
    cJSON_AddStringToObject(prov, "git_commit", "abc");
    cJSON_AddStringToObject(prov, "date", "2024-01-01T00:00:00Z");
    cJSON *params = cJSON_AddObjectToObject(prov, "parameters");
    cJSON_AddStringToObject(params, "dram-budget", "50%");
    return prov;
}

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static double num(const cJSON *o, const char *key)
{
    return cJSON_GetNumberValue(get(o, key));
}

static int write_report(const char *dir, const struct run_setup *p, const struct run_outcome *out, int cold,
                        char **md, char *err)
{
    struct model m = fake_model();
    struct run_report_extra x = {.mode = "all", .cold = cold, .held_bytes = 300, .oracle_bytes = 0,
                                 .read_align = 4096, .predictor_bytes = 128, .predictor_madds = 64};
    err[0] = '\0';
    return run_report_write(dir, &m, p, out, &x, fake_provenance(), md, err, 4400);
}

/* What sim/run_summary.h gives predict --compare and reproduce. */
static void check_summary_reader(const char *dir)
{
    char path[4200], err[4400];
    snprintf(path, sizeof path, "%s/run.json", dir);
    struct run_summary s;
    CHECK(run_summary_read(path, &s, err, sizeof err) == 0);
    CHECK(s.part_ms[RUN_IO] == 36 && s.part_ms[RUN_MEM] == 1.75 && s.part_ms[RUN_COMPUTE] == 4.5);
    CHECK(s.part_ms[RUN_TOTAL] == 42.25);
    CHECK(s.window_k == 3 && s.capacity_rows == 5);
    CHECK(s.predictor_ms == 0.25 && s.predictor_dram_bytes == 128);
    CHECK_STR(s.active_source, "gate");
    CHECK_STR(s.dram_budget, "50%");
    CHECK_STR(cJSON_GetStringValue(get(s.provenance, "mode")), "all");
    const cJSON *pol = get(s.provenance, "policy");
    CHECK_STR(cJSON_GetStringValue(get(pol, "policy")), "window:3");
    CHECK_STR(cJSON_GetStringValue(get(pol, "policy_requested")), "window:3");
    CHECK_STR(cJSON_GetStringValue(get(pol, "layout")), "bundled");
    const cJSON *lr = get(pol, "cache_rows_by_layer");
    CHECK(cJSON_GetArraySize(lr) == 2 && cJSON_GetArrayItem(lr, 1)->valuedouble == 6);
    CHECK(num(pol, "staging_rows") == 7 && num(pol, "bounce_rows") == 2);
    run_summary_free(&s);
}

/* The rest of the summary and the parts, as run.json holds them. */
static void check_summary_json(const cJSON *run)
{
    const cJSON *sum = get(run, "summary");
    CHECK(num(sum, "tokens") == 4 && num(sum, "cold_tokens_excluded") == COLD);
    CHECK_STR(cJSON_GetStringValue(get(sum, "policy")), "window:3");
    CHECK_STR(cJSON_GetStringValue(get(sum, "layout")), "bundled");
    CHECK(num(sum, "read_align") == 4096 && num(sum, "row_stride") == 4096);
    CHECK(num(sum, "ffn_cache_stride_bytes") == 5 * 2 * 4096);
    CHECK(num(sum, "density") == 0.25); /* 4 of 16 neurons */
    CHECK(num(sum, "engine_dram_bytes") == 1000 + 100 + 300);
    CHECK(num(sum, "mean_read_bytes") == 18432.0 / 9);
    CHECK(num(sum, "gate_threshold") == 0.5);
    CHECK(num(sum, "true_density") == 5.0 / 16);
    CHECK(num(sum, "recall") == 1 - 0.5 / 5);
    CHECK(num(sum, "missed_all_tokens") == 3 && num(sum, "tokens_with_misses") == 3); /* cold ones counted */
    CHECK(num(sum, "prompt_tokens") == N_PROMPT && num(sum, "generated_tokens") == 2);
    CHECK_STR(cJSON_GetStringValue(get(sum, "stop_reason")), "length");
    const char *parts[] = {"cold", "prompt", "generated"};
    const double tokens[] = {2, 2, 2}, io[] = {12, 28, 44}, mem[] = {0.25, 1.25, 2.25}, compute[] = {1.5, 3.5, 5.5};
    for (int k = 0; k < 3; k++) {
        const cJSON *o = get(run, parts[k]);
        CHECK(num(o, "tokens") == tokens[k]);
        CHECK(num(o, "io_ms") == io[k] && num(o, "mem_ms") == mem[k] && num(o, "compute_ms") == compute[k]);
        CHECK(num(o, "total_ms") == io[k] + mem[k] + compute[k]);
    }
    const cJSON *toks = get(run, "tokens");
    CHECK(cJSON_GetArraySize(toks) == N_ROWS);
    const cJSON *t5 = cJSON_GetArrayItem(toks, 5);
    CHECK(num(t5, "index") == 5 && num(t5, "id") == 15 && num(t5, "io_ms") == 48 && num(t5, "missed") == 1);
    CHECK_STR(cJSON_GetStringValue(get(t5, "phase")), "generated");
}

/* A row per token, cold ones marked, every per-token field at 12 digits. */
static void check_tokens_csv(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tokens.csv", dir);
    char *csv = read_text_file(path, NULL);
    CHECK(csv != NULL);
    if (!csv)
        return;
    const char *want =
        "index,id,phase,cold,total_ms,io_ms,mem_ms,compute_ms,ffn_ms,predictor_ms,attention_ms,bytes_read,reads,"
        "io_requests,dram_bytes_read,rows_inserted,rows_deleted,cache_rows,needed,overflow_rows,window_shrinks,"
        "check_ms,active,missed,extra\n"
        "0,10,prompt,1,9,8,0,1,0.5,0.25,0.1875,4096,2,2,0,2,1,5,4,0,0,0.0625,5,0,0\n"
        "1,11,prompt,1,18.5,16,0.5,2,0.5,0.25,1.1875,8192,4,4,0,2,1,5,4,0,0,0.0625,5,1,0\n"
        "2,12,prompt,0,28,24,1,3,0.5,0.25,2.1875,12288,6,6,0,2,1,5,4,0,0,0.0625,5,0,0\n"
        "3,13,prompt,0,37.5,32,1.5,4,0.5,0.25,3.1875,16384,8,8,0,2,1,5,4,0,0,0.0625,5,1,0\n"
        "4,14,generated,0,47,40,2,5,0.5,0.25,4.1875,20480,10,10,0,2,1,5,4,0,0,0.0625,5,0,0\n"
        "5,15,generated,0,56.5,48,2.5,6,0.5,0.25,5.1875,24576,12,12,0,2,1,5,4,0,0,0.0625,5,1,0\n";
    CHECK_STR(csv, want);
    free(csv);
}

/* run.md comes back to the caller and is the file's text. */
static void check_markdown(const char *dir, const char *md)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/run.md", dir);
    char *file = read_text_file(path, NULL);
    CHECK(md && file && !strcmp(md, file));
    free(file);
    if (!md)
        return;
    CHECK(!strncmp(md, "# flashbed run: fake (f32), policy window:3, layout bundled\n\n", 61));
    CHECK(strstr(md, "- command: `flashbed run --model fake`\n- commit: abc, date: 2024-01-01T00:00:00Z\n") != NULL);
    CHECK(strstr(md, "- density: 25.00% of the FFN's neurons needed per token (steady state)\n") != NULL);
    CHECK(strstr(md, "Steady state (4 tokens after 2 cold ones)") != NULL);
    CHECK(strstr(md, "| steady state | 36.00 | 1.75 | 4.50 | 0.50 | 0.25 | 42.25 | 0.02 | 9 | 2 | 1 | 5 |\n") != NULL);
    CHECK(strstr(md, "| cold tokens | 12.00 | 0.25 | 1.50 | 0.50 | 0.25 | 13.75 | 0.01 | 3 | 2 | 1 | 5 |\n") != NULL);
    CHECK(strstr(md, "- page cache bypassed (direct I/O); DRAM budget set\n") != NULL);
}

static void test_flash_run(void)
{
    char dir[256], err[4400], *md = NULL;
    snprintf(dir, sizeof dir, "%s/flash/made", root); /* made, parents too */
    struct token_row rows[N_ROWS];
    fill_rows(rows);
    struct run_outcome out = {.rows = rows, .n_rows = N_ROWS, .n_prompt = N_PROMPT, .n_gen = 2, .stop = "length"};
    struct run_setup p = flash_setup();
    CHECK(write_report(dir, &p, &out, COLD, &md, err) == 0);
    CHECK_STR(err, "");
    check_summary_reader(dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/run.json", dir);
    cJSON *run = read_json_file(path);
    CHECK(run != NULL);
    if (run)
        check_summary_json(run);
    cJSON_Delete(run);
    check_tokens_csv(dir);
    check_markdown(dir, md);
    free(md);
}

/* --cold past the run's tokens: every token is cold, the steady state is
 * empty (0, which the reader takes), and the Markdown leaves its rows out. */
static void test_all_cold(void)
{
    char dir[256], err[4400], path[4200], *md = NULL;
    snprintf(dir, sizeof dir, "%s/cold", root);
    struct token_row rows[N_ROWS];
    fill_rows(rows);
    struct run_outcome out = {.rows = rows, .n_rows = N_ROWS, .n_prompt = N_PROMPT, .n_gen = 2, .stop = "length"};
    struct run_setup p = flash_setup();
    p.cfg.select.ops = &source_oracle;
    p.cfg.neuron.check = false;
    CHECK(write_report(dir, &p, &out, 100, &md, err) == 0);
    snprintf(path, sizeof path, "%s/run.json", dir);
    struct run_summary s;
    CHECK(run_summary_read(path, &s, err, sizeof err) == 0);
    CHECK(s.part_ms[RUN_TOTAL] == 0);
    CHECK_STR(s.active_source, "oracle");
    run_summary_free(&s);
    cJSON *run = read_json_file(path);
    CHECK(num(get(run, "summary"), "cold_tokens_excluded") == N_ROWS && num(get(run, "summary"), "tokens") == 0);
    CHECK(num(get(run, "cold"), "tokens") == N_ROWS && num(get(run, "cold"), "io_ms") == 28);
    CHECK(get(get(run, "summary"), "recall") == NULL); /* no --check: nothing compared */
    cJSON_Delete(run);
    CHECK(md && !strstr(md, "| steady state |") && strstr(md, "| cold tokens | 28.00 |"));
    free(md);
}

/* Input sparsity's run names its source (teal) in run.json, as its
 * recorded trace does. */
static void test_teal_source(void)
{
    char dir[256], err[4400], path[4200], *md = NULL;
    snprintf(dir, sizeof dir, "%s/teal", root);
    struct token_row rows[N_ROWS];
    fill_rows(rows);
    struct run_outcome out = {.rows = rows, .n_rows = N_ROWS, .n_prompt = N_PROMPT, .n_gen = 2, .stop = "length"};
    struct run_setup p = flash_setup();
    p.cfg.select = (struct select_config){.ops = &source_teal};
    p.cfg.neuron.check = false;
    CHECK(write_report(dir, &p, &out, COLD, &md, err) == 0);
    snprintf(path, sizeof path, "%s/run.json", dir);
    struct run_summary s;
    CHECK(run_summary_read(path, &s, err, sizeof err) == 0);
    CHECK_STR(s.active_source, "teal");
    run_summary_free(&s);
    free(md);
}

/* A dense run has no policy, cache or chooser: the reader finds none. */
static void test_dense(void)
{
    char dir[256], err[4400], path[4200], *md = NULL;
    snprintf(dir, sizeof dir, "%s/dense", root);
    struct token_row rows[N_ROWS];
    fill_rows(rows);
    struct run_outcome out = {.rows = rows, .n_rows = N_ROWS, .n_prompt = N_PROMPT, .n_gen = 2, .stop = "eos"};
    struct run_setup p;
    memset(&p, 0, sizeof p);
    p.dense = true;
    CHECK(write_report(dir, &p, &out, COLD, &md, err) == 0);
    snprintf(path, sizeof path, "%s/run.json", dir);
    struct run_summary s;
    CHECK(run_summary_read(path, &s, err, sizeof err) == 0);
    CHECK(s.part_ms[RUN_IO] == 36);
    CHECK(isnan(s.window_k) && isnan(s.capacity_rows));
    CHECK_STR(s.active_source, "");
    CHECK(get(s.provenance, "policy") == NULL);
    CHECK_STR(cJSON_GetStringValue(get(s.provenance, "active")), "all (dense)");
    run_summary_free(&s);
    CHECK(md && !strncmp(md, "# flashbed run: fake (f32), dense\n", 34));
    free(md);
}

/* Each failure says why in err; run.md's text comes back whenever it was
 * made, and the plot's failure (-2) comes after the three files. */
static void test_failures(void)
{
    char dir[256], err[4400], path[4200], *md = NULL;
    struct token_row rows[N_ROWS];
    fill_rows(rows);
    struct run_outcome out = {.rows = rows, .n_rows = N_ROWS, .n_prompt = N_PROMPT, .n_gen = 2, .stop = "length"};
    struct run_setup p = flash_setup();

    snprintf(dir, sizeof dir, "%s/flash/made/run.json/below", root); /* under a file */
    CHECK(write_report(dir, &p, &out, COLD, &md, err) == -1);
    CHECK(strstr(err, "cannot create ") && strstr(err, "/below"));
    CHECK(md == NULL);

    snprintf(dir, sizeof dir, "%s/blocked", root); /* run.json cannot be put in place: a folder has its name */
    snprintf(path, sizeof path, "%s/run.json", dir);
    CHECK(mkdir_p(path, 0755) == 0);
    CHECK(write_report(dir, &p, &out, COLD, &md, err) == -1);
    CHECK(strstr(err, path) != NULL);
    CHECK(md && strstr(md, "| steady state | 36.00 |")); /* still shown */
    free(md);
    snprintf(path, sizeof path, "%s/tokens.csv", dir);
    CHECK(!path_exists(path)); /* not tried after run.json failed */

    snprintf(dir, sizeof dir, "%s/noplot", root);
    snprintf(path, sizeof path, "%s/scripts", root);
    CHECK(mkdir_p(path, 0755) == 0);
    struct fb_settings set = fb_settings_defaults();
    set.plots_dir = path; /* no fig8_token_latency.gp there */
    struct model m = fake_model();
    struct run_report_extra x = {.mode = "all", .cold = COLD, .plot = true, .settings = &set};
    CHECK(run_report_write(dir, &m, &p, &out, &x, fake_provenance(), &md, err, sizeof err) == -2);
    CHECK(strstr(err, "fig8_token_latency.gp") != NULL);
    CHECK(md != NULL);
    free(md);
    snprintf(path, sizeof path, "%s/tokens.csv", dir);
    CHECK(path_exists(path));
}

int main(void)
{
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_flash_run();
    test_all_cold();
    test_teal_source();
    test_dense();
    test_failures();
    fs_remove_tree(root);
    return check_report("test_run_report");
}
