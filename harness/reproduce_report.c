/* REPORT.md from a study's result files (harness/reproduce.h): each
 * section quotes or computes from the files its steps wrote, so every
 * number in the report comes from a result file; a part whose steps have
 * not run says so. */
#include "harness/reproduce.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/atomic_file.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "common/provenance.h"
#include "common/strbuf.h"

/* A result file of the study, by its path under the study's folder. */
static void study_path(const struct repro_plan *p, char *buf, size_t len, const char *rel)
{
    snprintf(buf, len, "%s/%s", p->config.out, rel);
}

/* Appends a Markdown file of a step, its headings moved two levels down so
 * they sit under the report's section. false when it is not there. */
static bool quote_markdown(struct strbuf *b, const struct repro_plan *p, const char *rel)
{
    char path[4400];
    study_path(p, path, sizeof path, rel);
    char *text = read_text_file(path, NULL);
    if (!text)
        return false;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        strbuf_add(b, "%s%s\n", line[0] == '#' ? "##" : "", line);
    strbuf_add(b, "\n(from `%s`)\n\n", rel);
    free(text);
    return true;
}

/* An image of a step, when it was drawn. */
static void link_image(struct strbuf *b, const struct repro_plan *p, const char *rel, const char *title)
{
    char path[4400];
    study_path(p, path, sizeof path, rel);
    if (path_exists(path))
        strbuf_add(b, "![%s](%s)\n\n", title, rel);
}

static void section_fig2b(struct strbuf *b, const struct repro_plan *p)
{
    strbuf_add(b, "## Fig. 2b: this disk's random-read throughput\n\n");
    if (!quote_markdown(b, p, "fig2b/sweep.md")) {
        strbuf_add(b, "Not measured yet.\n\n");
        return;
    }
    link_image(b, p, "fig2b/throughput.png", "Fig. 2b");
    if (!p->config.fio)
        strbuf_add(b, "fio is not installed here: no fio column.\n\n");
}

/* Every number under key of the profile, as "path: value" lines. */
static void list_numbers(struct strbuf *b, const cJSON *o, const char *prefix)
{
    for (const cJSON *c = o ? o->child : NULL; c; c = c->next) {
        char name[256];
        snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", c->string ? c->string : "?");
        if (cJSON_IsNumber(c))
            strbuf_add(b, "- `%s`: %.6g\n", name, c->valuedouble);
        else if (cJSON_IsObject(c))
            list_numbers(b, c, name);
    }
}

static void section_calibration(struct strbuf *b, const struct repro_plan *p)
{
    char path[4400];
    study_path(p, path, sizeof path, "calibration/hw.json");
    strbuf_add(b, "## This machine's profile (the cost model's input)\n\n");
    cJSON *hw = read_json_file(path);
    if (!hw) {
        strbuf_add(b, "Not calibrated yet.\n\n");
        return;
    }
    strbuf_add(b, "Flash from Fig. 2b's points (closed-form fit), DRAM row copies and compute measured by "
                  "`calibrate --quick` (from `calibration/hw.json`):\n\n");
    list_numbers(b, cJSON_GetObjectItemCaseSensitive(hw, "flash"), "flash");
    list_numbers(b, cJSON_GetObjectItemCaseSensitive(hw, "dram"), "dram");
    list_numbers(b, cJSON_GetObjectItemCaseSensitive(hw, "compute"), "compute");
    strbuf_add(b, "\n");
    cJSON_Delete(hw);
}

/* The traces' statistics: one row per trace, from trace info's JSON. */
static void section_traces(struct strbuf *b, const struct repro_plan *p)
{
    strbuf_add(b, "## Traces and Fig. 4a\n\n");
    bool any = false;
    for (size_t i = 0; i < p->n; i++) {
        const struct repro_step *s = &p->steps[i];
        if (strncmp(s->id, "trace-info-", 11))
            continue;
        char rel[300], json[4400];
        snprintf(rel, sizeof rel, "traces/%s-info", s->id + 11);
        snprintf(json, sizeof json, "%s/trace_info.json", s->out);
        if (!path_exists(json))
            continue;
        any = true;
        strbuf_add(b, "### %s\n\n", s->id + 11);
        char md[400];
        snprintf(md, sizeof md, "%s/trace_info.md", rel);
        if (!quote_markdown(b, p, md))
            strbuf_add(b, "Statistics in `%s/trace_info.json`.\n\n", rel);
        char png[400];
        snprintf(png, sizeof png, "%s/fig4a.png", rel);
        link_image(b, p, png, "Fig. 4a");
    }
    if (!any)
        strbuf_add(b, "No trace yet.\n\n");
    if (p->missing[0])
        strbuf_add(b, "Left out: %s.\n\n", p->missing);
}

static void section_policies(struct strbuf *b, const struct repro_plan *p)
{
    strbuf_add(b, "## The policy study: bytes and reads per token under every policy and layout\n\n");
    bool any = false;
    for (size_t i = 0; i < p->n; i++) {
        const struct repro_step *s = &p->steps[i];
        if (strcmp(s->section, "policies"))
            continue;
        char rel[300];
        snprintf(rel, sizeof rel, "policies/%s/replay.md", s->id + 9);
        strbuf_add(b, "### %s\n\n", s->id + 9);
        any = quote_markdown(b, p, rel) || any;
    }
    if (!any)
        strbuf_add(b, "Not replayed yet.\n\n");
}

/* Median of n values (sorted in place). */
static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : NAN;
}

#define MAX_ROUNDS 16

/* One Table 3 cell: a mode's runs on a model, measured and modelled. */
struct t3_row {
    char budget[32];            /* the runs' --dram-budget ("none") */
    int rounds;
    double part[4][MAX_ROUNDS]; /* io, mem, compute, their sum; per round */
    double model[4];            /* predicted io, mem, compute, sum */
    bool modelled;
};

static const char *const t3_keys[] = {"io_ms", "mem_ms", "compute_ms"};

static void t3_read_round(struct t3_row *r, const char *run_json)
{
    cJSON *run = read_json_file(run_json);
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(run, "summary");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(run, "provenance"),
                                                           "parameters");
    const cJSON *budget = cJSON_GetObjectItemCaseSensitive(params, "dram-budget");
    snprintf(r->budget, sizeof r->budget, "%s", cJSON_IsString(budget) ? budget->valuestring : "none");
    if (sum && r->rounds < MAX_ROUNDS) {
        double total = 0;
        for (int k = 0; k < 3; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(sum, t3_keys[k]);
            r->part[k][r->rounds] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            total += r->part[k][r->rounds];
        }
        r->part[3][r->rounds++] = total;
    }
    cJSON_Delete(run);
}

static void t3_read_model(struct t3_row *r, const char *predict_json)
{
    cJSON *pr = read_json_file(predict_json);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pr, "predictions"), 0);
    const cJSON *pred = cJSON_GetObjectItemCaseSensitive(first, "prediction");
    if (pred) {
        r->model[3] = 0;
        for (int k = 0; k < 3; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(pred, t3_keys[k]);
            r->model[k] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            r->model[3] += r->model[k];
        }
        r->modelled = true;
    }
    cJSON_Delete(pr);
}

static void t3_print_row(struct strbuf *b, const char *shape, const char *mode, struct t3_row *r)
{
    double med[4], lo[4], hi[4];
    for (int k = 0; k < 4; k++) {
        double v[MAX_ROUNDS];
        memcpy(v, r->part[k], sizeof v);
        med[k] = median(v, r->rounds);
        lo[k] = v[0];
        hi[k] = v[r->rounds - 1];
    }
    strbuf_add(b, "| %s | %s | %s | %d | %.1f (%.1f–%.1f) | %.1f | %.1f | %.1f |", shape, mode, r->budget, r->rounds,
               med[3], lo[3], hi[3], med[0], med[1], med[2]);
    if (!r->modelled) {
        strbuf_add(b, " not modelled yet | | | | | | | |\n");
        return;
    }
    strbuf_add(b, " %.1f | %.1f | %.1f | %.1f |", r->model[3], r->model[0], r->model[1], r->model[2]);
    const int order[] = {3, 0, 1, 2};
    for (int i = 0; i < 4; i++) {
        double me = med[order[i]], mo = r->model[order[i]];
        if (me > 0 && isfinite(me) && isfinite(mo))
            strbuf_add(b, " %+.0f%% |", 100 * (mo - me) / me);
        else /* nothing measured: no ratio */
            strbuf_add(b, " n/a |");
    }
    strbuf_add(b, "\n");
}

static void section_table3(struct strbuf *b, const struct repro_plan *p)
{
    static const char *const modes[] = {"naive", "hybrid", "all"};
    strbuf_add(b, "## Table 3, this machine's CPU rows: measured beside modelled\n\n"
                  "Synthetic f16 models of the real shapes (random weights), neurons chosen by each shape's "
                  "calibrated synthetic trace, all = window of 5 tokens (the paper's k = 4), bundled rows. "
                  "DRAM budget: the paper's half of the model (three quarters on the tiny shapes, whose "
                  "layers are each too large a share of the model for half); naive keeps nothing between "
                  "tokens and runs without one. Measured: median over the rounds (min–max of the total), "
                  "rounds alternating the modes. Modelled: `flashbed predict` on this machine's profile. "
                  "Errors are modelled against measured.\n\n"
                  "| model | mode | DRAM budget | rounds | measured ms/token | I/O | mem | compute | modelled | I/O | "
                  "mem | compute | total err | I/O err | mem err | compute err |\n"
                  "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    bool any = false;
    for (size_t i = 0; i < p->config.n_models; i++) {
        const char *shape = repro_shape(p->config.models[i], p->config.tier);
        for (int m = 0; m < 3; m++) {
            struct t3_row r = {0};
            char path[4400], rel[400];
            for (int round = 1; round <= MAX_ROUNDS; round++) {
                snprintf(rel, sizeof rel, "table3/%s/%s-r%d/run.json", shape, modes[m], round);
                study_path(p, path, sizeof path, rel);
                if (!path_exists(path))
                    break;
                t3_read_round(&r, path);
            }
            if (!r.rounds)
                continue;
            snprintf(rel, sizeof rel, "table3/%s/%s-predict/predict.json", shape, modes[m]);
            study_path(p, path, sizeof path, rel);
            t3_read_model(&r, path);
            t3_print_row(b, shape, modes[m], &r);
            any = true;
        }
    }
    strbuf_add(b, any ? "\n(from `table3/<model>/<mode>-r<round>/run.json` and `<mode>-predict/predict.json`)\n\n"
                      : "\nNot measured yet.\n\n");
}

/* What the paper has that this study does not yet measure. */
static void section_missing(struct strbuf *b)
{
    strbuf_add(b, "## Not in this study yet\n\n"
                  "- Table 2 measured (the ablation naive / hybrid / predictor / window / all with the trained "
                  "predictor and with the trace): not built yet.\n"
                  "- Fig. 7 measured (latency against DRAM share with `--window auto`): not built yet.\n"
                  "- Fig. 8 (per-token latency over a long generation): not built yet.\n"
                  "- Table 3's rows for the backends this machine lacks (`predict --paper table3`): not "
                  "built yet.\n"
                  "- \"What differs from the paper and why\": not built yet.\n\n");
}

int repro_report_write(const struct repro_plan *p, const char *command_line, char *err, size_t errlen)
{
    struct strbuf b = {0};
    char date[64];
    provenance_date(date, sizeof date);
    strbuf_add(&b, "# flashbed reproduce (%s): LLM in a flash on this machine\n\n", repro_tier_name(p->config.tier));
    strbuf_add(&b, "- command: `%s`\n- commit: %s\n- written: %s\n- disk swept: %s\n\n"
                   "Models are synthetic (random weights of the real shapes, configs/models/) and traces "
                   "calibrated to the paper's statistics, except stories260K's, recorded from a trained "
                   "model. Each result file beside this report carries its full provenance.\n\n",
               command_line, provenance_git_commit(), date, p->config.disk);
    section_fig2b(&b, p);
    section_calibration(&b, p);
    section_traces(&b, p);
    section_policies(&b, p);
    section_table3(&b, p);
    section_missing(&b);
    char *text = strbuf_take(&b);
    char path[4400];
    study_path(p, path, sizeof path, "REPORT.md");
    int rc = text ? atomic_write_text(path, text, err, errlen) : -1;
    if (!text)
        snprintf(err, errlen, "out of memory");
    free(text);
    return rc;
}

/* Subfolder names of folder holding a study, sorted; returns how many. */
static int study_folders(const char *folder, char names[][256], int max)
{
    DIR *d = opendir(folder);
    int n = 0;
    for (struct dirent *e; d && n < max && (e = readdir(d));) {
        char mark[4400];
        snprintf(mark, sizeof mark, "%s/%s/reproduce.json", folder, e->d_name);
        if (e->d_name[0] != '.' && path_exists(mark))
            snprintf(names[n++], 256, "%s", e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
    return n;
}

int repro_merge(const char *folder, char *err, size_t errlen)
{
    char names[64][256];
    int n = study_folders(folder, names, 64);
    if (n == 0)
        return err_set(err, errlen, "%s: no study folders in it (subfolders with reproduce.json)", folder);
    struct strbuf b = {0};
    strbuf_add(&b, "# flashbed reproduce: %d studies merged\n\n", n);
    struct repro_plan top = {.config = {.out = folder}};
    for (int i = 0; i < n; i++) {
        char rel[300];
        snprintf(rel, sizeof rel, "%.255s/REPORT.md", names[i]);
        strbuf_add(&b, "## %s\n\n", names[i]);
        if (!quote_markdown(&b, &top, rel))
            strbuf_add(&b, "Not finished: no `%s` yet.\n\n", rel);
    }
    char *text = strbuf_take(&b), path[4400];
    study_path(&top, path, sizeof path, "REPORT.md");
    int rc = text ? atomic_write_text(path, text, err, errlen) : err_set(err, errlen, "out of memory");
    free(text);
    return rc;
}
