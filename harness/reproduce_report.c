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
#include "common/median.h"
#include "common/provenance.h"
#include "common/strbuf.h"
#include "harness/reproduce_summary.h"
#include "harness/reproduce_tables.h"

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
    /* line by line, blank lines kept: a Markdown table needs the one before it */
    for (char *line = text, *end; *line; line = end + (*end != '\0')) {
        end = line + strcspn(line, "\n");
        strbuf_add(b, "%s%.*s\n", line[0] == '#' ? "##" : "", (int)(end - line), line);
    }
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

/* The sweep at rel's points as {chunk, threads, bw}; n of them (at most max). */
static size_t sweep_points(const struct repro_plan *p, const char *rel, double (*pts)[3], size_t max)
{
    char path[4400];
    study_path(p, path, sizeof path, rel);
    cJSON *sw = read_json_file(path);
    size_t n = 0;
    const cJSON *pt;
    cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(sw, "points"))
    {
        if (n == max)
            break;
        const char *k[] = {"chunk_bytes", "threads", "bw_bytes"};
        for (int i = 0; i < 3; i++)
            pts[n][i] = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, k[i]));
        n++;
    }
    cJSON_Delete(sw);
    return n;
}

/* The median over the thread counts of huge / small at chunk; NAN without a pair. */
static double gain_at(double (*small)[3], size_t ns, double (*huge)[3], size_t nh, double chunk)
{
    double r[64];
    size_t n = 0;
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < nh && n < 64; j++)
            if (small[i][0] == chunk && huge[j][0] == chunk && small[i][1] == huge[j][1] && small[i][2] > 0)
                r[n++] = huge[j][2] / small[i][2];
    return n ? median_sorting(r, n) : NAN;
}

/* The engine's buffers on huge pages against the same reads into 4 KiB
 * pages (Fig. 2b's, like fio's): at the smallest and largest chunk. */
static void huge_page_gain(struct strbuf *b, const struct repro_plan *p)
{
    static double small[256][3], huge[256][3];
    size_t ns = sweep_points(p, "fig2b/sweep.json", small, 256), nh = sweep_points(p, "fig2b-huge/sweep.json", huge, 256);
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < ns; i++)
        lo = fmin(lo, small[i][0]), hi = fmax(hi, small[i][0]);
    double g_lo = gain_at(small, ns, huge, nh, lo), g_hi = gain_at(small, ns, huge, nh, hi);
    if (isnan(g_lo) || isnan(g_hi))
        return;
    strbuf_add(b, "The huge-page gain, its own series: flashbed reading into huge pages (as the engine's buffers "
                  "are: `fig2b-huge/`, the profile's flash) against the same reads into 4 KiB pages above, "
                  "%.2fx at %.0f KiB and %.2fx at %.0f KiB (medians over the thread counts).\n\n",
               g_lo, lo / 1024, g_hi, hi / 1024);
    link_image(b, p, "fig2b-huge/throughput.png", "Fig. 2b on huge pages");
}

static void section_fig2b(struct strbuf *b, const struct repro_plan *p)
{
    strbuf_add(b, "## Fig. 2b: this disk's random-read throughput\n\n");
    if (!repro_quote_folded(b, p, "fig2b/sweep.md", "fig2b/sweep.csv", 8, NULL)) {
        strbuf_add(b, "Not measured yet.\n\n");
        return;
    }
    link_image(b, p, "fig2b/throughput.png", "Fig. 2b");
    if (!p->config.fio)
        strbuf_add(b, "fio is not installed here: no fio column.\n\n");
    else
        huge_page_gain(b, p);
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

/* Mean of a JSON array of numbers; NAN when there is none. */
static double json_mean(const cJSON *a)
{
    double sum = 0;
    int n = 0;
    for (const cJSON *v = a ? a->child : NULL; v; v = v->next)
        if (cJSON_IsNumber(v))
            sum += v->valuedouble, n++;
    return n ? sum / n : NAN;
}

static double json_at(const cJSON *a, int i)
{
    const cJSON *v = cJSON_GetArrayItem(a, i);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* One trace's row from trace info's JSON: how it was made, its size, its
 * density and s_agg(k) (Fig. 4a: the share of neurons used by any of the
 * last k tokens). */
static void trace_row(struct strbuf *b, const char *name, const cJSON *info)
{
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(info, "source");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(src, "source");
    const cJSON *profile = cJSON_GetObjectItemCaseSensitive(src, "profile");
    const cJSON *thr = cJSON_GetObjectItemCaseSensitive(src, "threshold");
    char how[128];
    if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "synthetic"))
        snprintf(how, sizeof how, "synthetic, %s statistics", cJSON_IsString(profile) ? profile->valuestring : "?");
    else
        snprintf(how, sizeof how, "recorded (active: abs(act) > %g)", cJSON_IsNumber(thr) ? thr->valuedouble : 0.0);
    const cJSON *sagg = cJSON_GetObjectItemCaseSensitive(info, "sagg_active");
    double pred = json_mean(cJSON_GetObjectItemCaseSensitive(info, "density_predicted"));
    strbuf_add(b, "| %s | %s | %.0f | %.0f x %.0f | %.2f%% |", name, how,
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(info, "tokens")),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(info, "n_layers")),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(info, "d_ff")),
               100 * json_mean(cJSON_GetObjectItemCaseSensitive(info, "density_active")));
    if (isnan(pred))
        strbuf_add(b, " none |");
    else
        strbuf_add(b, " %.2f%% |", 100 * pred);
    strbuf_add(b, " %.2f%% | %.2f%% | %.2f%% |\n", 100 * json_at(sagg, 0), 100 * json_at(sagg, 3),
               100 * json_at(sagg, 15));
}

/* The traces' statistics: one row per trace, from trace info's JSON. */
static void section_traces(struct strbuf *b, const struct repro_plan *p)
{
    strbuf_add(b, "## Traces and Fig. 4a\n\n"
                  "Density: mean over layers of the share of neurons active per token; s_agg(k): the share "
                  "used by any of the last k tokens (the paper's Fig. 4a), active sets.\n\n"
                  "| trace | made how | tokens | layers x d_ff | density | predicted | s_agg(1) | s_agg(4) | "
                  "s_agg(16) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    bool any = false;
    for (size_t i = 0; i < p->n; i++) {
        const struct repro_step *s = &p->steps[i];
        char json[4400];
        snprintf(json, sizeof json, "%s/trace_info.json", s->out);
        cJSON *info = strncmp(s->id, "trace-info-", 11) ? NULL : read_json_file(json);
        if (!info)
            continue;
        trace_row(b, s->id + 11, info);
        cJSON_Delete(info);
        any = true;
    }
    strbuf_add(b, any ? "\n(from `traces/<trace>-info/trace_info.json`)\n\n" : "\nNo trace yet.\n\n");
    for (size_t i = 0; i < p->n; i++) {
        const struct repro_step *s = &p->steps[i];
        char png[400];
        snprintf(png, sizeof png, "traces/%s-info/fig4a.png", s->id + 11);
        if (!strncmp(s->id, "trace-info-", 11))
            link_image(b, p, png, s->id + 11);
    }
    if (p->missing[0])
        strbuf_add(b, "Left out: %s.\n\n", p->missing);
}

/* The paper's Table 3 priced by the cost model: this machine's profile
 * for the CPU rows, the paper's profiles for the backends it lacks. */
static void section_paper_table3(struct strbuf *b, const struct repro_plan *p)
{
    strbuf_add(b, "## Table 3 on every backend, modelled\n\n"
                  "The paper's Table 3 (its 7B models, its densities), priced by the cost model: the CPU rows "
                  "with this machine's profile, the Metal and GPU rows with the paper's profiles (this machine "
                  "has neither), each cell as paper / model.\n\n");
    if (!quote_markdown(b, p, "paper-table3/table3.md"))
        strbuf_add(b, "Not modelled yet.\n\n");
}

/* Fig. 8: the long run's plot, and its cold tokens beside the steady ones. */
static void section_fig8(struct strbuf *b, const struct repro_plan *p)
{
    static const char *const keys[] = {"total_ms", "io_ms", "mem_ms", "compute_ms"};
    char path[4400];
    study_path(p, path, sizeof path, "fig8/run.json");
    strbuf_add(b, "## Fig. 8: every token's latency over a long generation\n\n");
    cJSON *run = read_json_file(path);
    if (!run) {
        strbuf_add(b, "Not measured yet.\n\n");
        return;
    }
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(run, "provenance");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(prov, "model");
    strbuf_add(b, "%s in all mode, a window of 5 tokens, the trace's neurons. The first tokens start with an "
                  "empty cache (cold); the steady state is the rest.\n\n| tokens | count | ms/token | I/O | mem | "
                  "compute |\n|---|---:|---:|---:|---:|---:|\n",
               cJSON_IsString(model) ? model->valuestring : "the model");
    const char *parts[] = {"cold", "summary"}, *names[] = {"cold start", "steady"};
    for (int i = 0; i < 2; i++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(run, parts[i]);
        strbuf_add(b, "| %s | %.0f |", names[i], cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "tokens")));
        for (int k = 0; k < 4; k++)
            strbuf_add(b, " %.2f |", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, keys[k])));
        strbuf_add(b, "\n");
    }
    strbuf_add(b, "\n(from `fig8/run.json`; every token in `fig8/tokens.csv`)\n\n");
    link_image(b, p, "fig8/fig8.png", "Fig. 8");
    cJSON_Delete(run);
}

int repro_report_write(const struct repro_plan *p, const char *command_line, char *err, size_t errlen)
{
    struct strbuf b = {0};
    char date[64];
    provenance_date(date, sizeof date);
    strbuf_add(&b, "# flashbed reproduce (%s): LLM in a flash on this machine\n\n", repro_tier_name(p->config.tier));
    repro_section_summary(&b, &p, NULL, 1);
    strbuf_add(&b, "## This study\n\n- command: `%s`\n- commit: %s\n- written: %s\n- disk swept: %s\n\n"
                   "Models are synthetic (random weights of the real shapes, configs/models/) and traces "
                   "calibrated to the paper's statistics, except stories260K's, recorded from a trained "
                   "model. Each result file beside this report carries its full provenance.\n\n",
               command_line, provenance_git_commit(), date, p->config.disk);
    section_fig2b(&b, p);
    section_calibration(&b, p);
    section_traces(&b, p);
    repro_section_policies(&b, p);
    repro_section_table2(&b, p);
    repro_section_ablation(&b, p);
    repro_section_table3(&b, p);
    section_paper_table3(&b, p);
    repro_section_devices(&b, p);
    section_fig8(&b, p);
    repro_section_fig7(&b, p);
    repro_section_sparsity(&b, p);
    repro_section_real(&b, p);
    repro_section_differences(&b, p);
    char *text = strbuf_take(&b);
    char path[4400];
    study_path(p, path, sizeof path, "REPORT.md");
    int rc = text ? atomic_write_text(p->folder, path, text, err, errlen) : -1;
    if (!text)
        err_set(err, errlen, "out of memory");
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

/* A merged study as a plan the summary can read: its folder and tier
 * (reproduce.json), no steps and no models (read from its files). */
static void merged_plan(const char *folder, const char *name, const struct fb_settings *set, char *out, size_t len,
                        struct repro_plan *p)
{
    char path[4400];
    snprintf(out, len, "%.2000s/%.255s", folder, name);
    snprintf(path, sizeof path, "%.4000s/reproduce.json", out);
    cJSON *j = read_json_file(path);
    const char *tier = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "tier"));
    memset(p, 0, sizeof *p);
    p->config.out = out;
    p->config.settings = set;
    p->config.tier = tier && !strcmp(tier, "tiny") ? REPRO_TINY : tier && !strcmp(tier, "full") ? REPRO_FULL : REPRO_QUICK;
    cJSON_Delete(j);
}

/* The merged studies' summary, over every study's files. */
static void merge_summary(struct strbuf *b, const char *folder, char (*names)[256], int n, const struct fb_settings *set)
{
    static struct repro_plan plans[64];
    static char outs[64][4400];
    const struct repro_plan *ptrs[64];
    const char *labels[64];
    for (int i = 0; i < n; i++) {
        merged_plan(folder, names[i], set, outs[i], sizeof outs[i], &plans[i]);
        ptrs[i] = &plans[i];
        labels[i] = names[i];
    }
    repro_section_summary(b, ptrs, labels, (size_t)n);
}

int repro_merge(const char *folder, const struct fb_settings *set, char *err, size_t errlen)
{
    char names[64][256];
    int n = study_folders(folder, names, 64);
    if (n == 0)
        return err_set(err, errlen, "%s: no study folders in it (subfolders with reproduce.json)", folder);
    struct strbuf b = {0};
    strbuf_add(&b, "# flashbed reproduce: %d studies merged\n\n", n);
    merge_summary(&b, folder, names, n, set);
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
    /* --merge writes into no result folder it opened: nothing to claim in */
    int rc = text ? atomic_write_text(NULL, path, text, err, errlen) : err_set(err, errlen, "out of memory");
    free(text);
    return rc;
}
