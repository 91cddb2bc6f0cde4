/* REPORT.md's first screen (harness/reproduce_summary.h), from result
 * files this test writes into a tiny plan's folder (opt alone): the
 * summary is the report's first section; it says what ran (steps done,
 * not run, started and not finished, their seconds) and on what (the
 * runs' machine and disk, the page cache bypassed); the speedups naive
 * over all and hybrid, total and I/O, are the runs' and the paper's
 * (configs/paper/table3.json, read here) ratios; the cost model's errors
 * land in holds or misses by the 15% line; the best policy per budget is
 * the cheapest feasible row but belady's; the policy section folds its
 * table into replay.csv and says the friends notes once. Where runs, the
 * replay or Fig. 7 are missing it says "did not run", never a number. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "common/strbuf.h"
#include "harness/reproduce.h"
#include "test_files.h"

static char root[] = "/tmp/fb_test_reproduce_summary_XXXXXX";
static struct fb_settings set;

#define CHECK_HAS(text, want)                                                                    \
    do {                                                                                         \
        bool has_ = (text) && strstr((text), (want)) != NULL;                                    \
        CHECK(has_);                                                                             \
        if (!has_)                                                                               \
            fprintf(stderr, "  missing: %s\n", (want));                                          \
    } while (0)

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4400];
    CHECK(mkdir_p(dir, 0755) == 0);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    test_write_text(path, text);
}

/* One round (r1) of a Table 3 configuration and its price. */
static void write_cell(const struct repro_plan *p, const char *mode, const double ms[3], const double model[3])
{
    char dir[4400], text[1024];
    snprintf(dir, sizeof dir, "%s/runs/opt-tiny/%s-trace-r1", p->config.out, mode);
    snprintf(text, sizeof text,
             "{\"provenance\": {\"machine\": {\"cpu\": \"Test CPU\", \"logical_cpus\": 4, \"memory_bytes\": "
             "8589934592, \"os\": \"TestOS 1\"}, \"disk\": {\"disk\": \"testdisk\", \"file_system\": \"ext4\", "
             "\"rotational\": false}, \"page_cache_bypassed\": true, \"parameters\": {\"dram-budget\": \"75%%\"}}, "
             "\"summary\": {\"io_ms\": %.17g, \"mem_ms\": %.17g, \"compute_ms\": %.17g, \"tokens\": 7}}\n",
             ms[0], ms[1], ms[2]);
    write_file(dir, "run.json", text);
    snprintf(dir, sizeof dir, "%s/runs/opt-tiny/%s-trace-predict", p->config.out, mode);
    snprintf(text, sizeof text, "{\"predictions\": [{\"prediction\": {\"io_ms\": %.17g, \"mem_ms\": %.17g, "
             "\"compute_ms\": %.17g}}]}\n", model[0], model[1], model[2]);
    write_file(dir, "predict.json", text);
}

static const double naive_ms[3] = {800, 0, 200}, hybrid_ms[3] = {400, 50, 150}, all_ms[3] = {100, 20, 80};
/* modelled: naive +10%, hybrid +20% (a miss), all -5% */
static const double naive_model[3] = {880, 0, 220}, hybrid_model[3] = {480, 60, 180}, all_model[3] = {95, 19, 76};

/* A replay of opt-tiny: at 10% an infeasible lru and belady cheaper than
 * the best feasible one (hybrid, split); at 50% lru bundled best but
 * belady; friends reading 1.5x bundled's bytes for lru at 50%. */
static void write_replay(const struct repro_plan *p)
{
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/policies/opt-tiny", p->config.out);
    static const struct {
        const char *policy, *layout, *budget;
        bool feasible;
        double ms, bytes;
    } rows[] = {
        {"naive", "bundled", "10%", true, 50, 1000},  {"hybrid", "split", "10%", true, 40, 900},
        {"lru", "bundled", "10%", false, 5, 100},     {"belady", "bundled", "10%", true, 3, 50},
        {"lru", "bundled", "50%", true, 12.5, 200},   {"lru", "friends", "50%", true, 14, 300},
        {"window:5", "bundled", "50%", true, 13, 210}, {"belady", "bundled", "50%", true, 1, 20},
    };
    struct strbuf b = {0};
    strbuf_add(&b, "{\"notes\": [\"lru at 50%%: friends reads 1.50x\"], \"results\": [");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        strbuf_add(&b, "%s{\"policy\": \"%s\", \"layout\": \"%s\", \"sets\": \"active\", \"dram_budget\": \"%s\", "
                       "\"feasible\": %s, \"total_ms\": %.17g, \"bytes_per_token\": %.17g}",
                   i ? ", " : "", rows[i].policy, rows[i].layout, rows[i].budget, rows[i].feasible ? "true" : "false",
                   rows[i].ms, rows[i].bytes);
    strbuf_add(&b, "]}\n");
    char *text = strbuf_take(&b);
    write_file(dir, "replay.json", text);
    free(text);
    /* its Markdown: a table of ten rows, and the friends note */
    b = (struct strbuf){0};
    strbuf_add(&b, "# Replay\n\n| budget | policy |\n|---|---|\n");
    for (int i = 0; i < 10; i++)
        strbuf_add(&b, "| 10%% | row%d |\n", i);
    strbuf_add(&b, "\n- lru at 50%%: friends reads 1.50x the bytes per token of bundled (300 vs 200).\n");
    text = strbuf_take(&b);
    write_file(dir, "replay.md", text);
    free(text);
}

/* Every step's marker (10 s each) but the first two; a log for the second
 * (it started and stopped). *done: how many markers. */
static void write_markers(const struct repro_plan *p, size_t *done)
{
    char dir[4400], name[200];
    snprintf(dir, sizeof dir, "%s/steps", p->config.out);
    *done = 0;
    for (size_t i = 2; i < p->n; i++, (*done)++) {
        snprintf(name, sizeof name, "%s.json", p->steps[i].id);
        write_file(dir, name, "{\"seconds\": 10}\n");
    }
    snprintf(dir, sizeof dir, "%s/logs", p->config.out);
    snprintf(name, sizeof name, "%s.log", p->steps[1].id);
    write_file(dir, name, "it failed\n");
}

/* The paper's Table 3 figure (configs/paper/table3.json), read here. */
static double paper(const char *method, const char *key)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/paper/table3.json", set.configs_dir);
    cJSON *t = read_json_file(path);
    double v = NAN;
    const cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(t, "rows"))
    {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "model")), "opt-6.7b") &&
            !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "method")), method) &&
            !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "backend")), "CPU"))
            v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(row, key));
    }
    cJSON_Delete(t);
    return v;
}

static double total(const double ms[3])
{
    return ms[0] + ms[1] + ms[2];
}

static char *report(const struct repro_plan *p)
{
    char err[512], path[4400];
    CHECK(repro_report_write(p, "flashbed reproduce --tiny", err, sizeof err) == 0);
    snprintf(path, sizeof path, "%s/REPORT.md", p->config.out);
    return read_text_file(path, NULL);
}

static void check_first(const char *text)
{
    const char *first = text ? strstr(text, "\n## ") : NULL;
    CHECK(first && !strncmp(first, "\n## At a glance\n", 16));
    CHECK(text && !strncmp(text, "# flashbed reproduce (tiny)", 27));
}

static void check_ran(const char *text, const struct repro_plan *p, size_t done)
{
    char want[1024];
    double seconds = 10.0 * (double)done; /* a minute or more, under an hour */
    snprintf(want, sizeof want, "- **Ran:** the tiny tier (`--tiny`), models opt; %zu of %zu steps finished, "
             "%.0f min %02.0f s of step time; **did not run:** `%s` (1); **started but did not finish** (failed or "
             "interrupted; its log in `logs/`): `%s` (1).\n", done, p->n, floor(seconds / 60), fmod(seconds, 60),
             p->steps[0].id, p->steps[1].id);
    CHECK_HAS(text, want);
    CHECK_HAS(text, "- **On:** Test CPU, 4 logical CPUs, 8.0 GiB of memory, TestOS 1; models read from testdisk "
                    "(ext4), the page cache bypassed (direct I/O) in all 3 measured runs of Table 3.\n");
}

#define FEW " (1 round × 7 tokens: too few)"

static void check_figures(const char *text)
{
    char want[1024];
    /* one round of 7 tokens: each speedup says it is too few to mean much */
    snprintf(want, sizeof want, "| opt-tiny (opt-6.7b) | %.1f → %.1f → %.1f | %.2f×" FEW " / %.2f× | %.2f×" FEW " / — | "
             "%.2f×" FEW " / %.2f× |\n", total(naive_ms), total(hybrid_ms), total(all_ms), total(naive_ms) / total(all_ms),
             paper("naive", "total_ms") / paper("all", "total_ms"), total(naive_ms) / total(hybrid_ms),
             naive_ms[0] / all_ms[0], paper("naive", "io_ms") / paper("all", "io_ms"));
    CHECK_HAS(text, want);
    CHECK(isnan(paper("hybrid", "total_ms"))); /* the paper has no OPT hybrid CPU row: "—" */
    CHECK_HAS(text, "\"Too few\": a speedup from under 3 rounds, or rounds of under 32 measured tokens");
    CHECK_HAS(text, "Tiny shapes only: their tokens are mostly fixed costs");
    CHECK_HAS(text, "- **Holds** (total within ±15% of the measured): opt-tiny naive +10%, all -5%.\n");
    CHECK_HAS(text, "- **Misses** (beyond ±15%): opt-tiny hybrid +20%.\n");
    CHECK_HAS(text, "I/O -5% to +20% (furthest: opt-tiny hybrid); memory management -5% to +20% (furthest: "
                    "opt-tiny hybrid); compute -5% to +20% (furthest: opt-tiny hybrid).\n");
    CHECK_HAS(text, "- No figure: Fig. 7 (did not run).\n");
    /* hybrid won at 10%, where lru (the one caching policy a system can run) is infeasible and belady
     * is left out: no caching policy fits; lru at 50% needs no reason */
    CHECK_HAS(text, "| trace | 10% | 50% |\n|---|---|---|\n| opt-tiny | hybrid, split: 40 ms (no caching policy fits) | "
                    "lru, bundled: 12.5 ms |\n");
}

static void check_policy_section(const char *text)
{
    const char *sec = text ? strstr(text, "## The policy study") : NULL;
    CHECK_HAS(sec, "friends reads more bytes per token than bundled in all 1 policy and budget pairs of the 1 "
                   "traces, 1.50× to 1.50× as many");
    CHECK_HAS(sec, "| 10% | row5 |\n\n… and 4 more rows: every row in "
                   "[`policies/opt-tiny/replay.csv`](policies/opt-tiny/replay.csv).\n");
    CHECK(sec && !strstr(sec, "row6"));
    CHECK(sec && !strstr(sec, "- lru at 50%: friends reads"));
}

/* Without the all runs and the replay: "did not run" where the figures were. */
static void check_missing(const struct repro_plan *p)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/runs/opt-tiny/all-trace-r1", p->config.out);
    CHECK(fs_remove_tree(path) == 0);
    snprintf(path, sizeof path, "%s/policies/opt-tiny/replay.json", p->config.out);
    CHECK(remove(path) == 0);
    char *text = report(p), want[512];
    check_first(text);
    snprintf(want, sizeof want, "| opt-tiny (opt-6.7b) | %.1f → %.1f → all did not run | all did not run | "
             "%.2f×" FEW " / — | all did not run |\n", total(naive_ms), total(hybrid_ms), total(naive_ms) / total(hybrid_ms));
    CHECK_HAS(text, want);
    CHECK_HAS(text, "- No figure: opt-tiny all (did not run), Fig. 7 (did not run).\n");
    CHECK_HAS(text, "### The best policy at each DRAM budget\n\nThe policy study did not run.\n");
    free(text);
}

int main(void)
{
    set = fb_settings_defaults();
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    char out[600], err[512];
    snprintf(out, sizeof out, "%s/study", root);
    struct repro_config c = {.tier = REPRO_TINY, .n_models = 1, .models = {"opt"}, .out = out, .disk = out,
                             .settings = &set, .mem_bytes = 1ull << 30};
    struct repro_plan p;
    CHECK(repro_plan_build(&c, &p, err, sizeof err) == 0);
    write_cell(&p, "naive", naive_ms, naive_model);
    write_cell(&p, "hybrid", hybrid_ms, hybrid_model);
    write_cell(&p, "all", all_ms, all_model);
    write_replay(&p);
    size_t done;
    write_markers(&p, &done);
    char *text = report(&p);
    check_first(text);
    check_ran(text, &p, done);
    check_figures(text);
    check_policy_section(text);
    free(text);
    check_missing(&p);
    repro_plan_free(&p);
    fs_remove_tree(root);
    return check_report("test_reproduce_summary");
}
