/* REPORT.md's first screen (harness/reproduce_summary.h): what ran, on
 * what and how long, then the figures (harness/reproduce_summary_figures.c). */
#include "harness/reproduce_summary.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache/mode.h"
#include "common/fsutil.h"
#include "common/json_file.h"

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

size_t repro_summary_list(const char *dir, const char *rel_inside, char (*names)[64], size_t max)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && n < max && (e = readdir(d));) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= 64)
            continue;
        bool has = false;
        char want[256], path[4400];
        snprintf(want, sizeof want, "%s", rel_inside);
        for (char *w = strtok(want, "|"); w && !has; w = strtok(NULL, "|")) {
            snprintf(path, sizeof path, "%.3800s/%.63s/%.255s", dir, e->d_name, w);
            has = path_exists(path);
        }
        if (has)
            snprintf(names[n++], 64, "%.63s", e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, n, 64, cmp_name);
    return n;
}

static void add_row(struct repro_summary_row *rows, size_t *n, size_t max, const struct repro_plan *p,
                    const char *study, const char *shape)
{
    const char *arch = repro_shape_arch(shape);
    size_t len = strlen(shape);
    if (*n == max || !len || len >= sizeof rows[*n].shape) /* a folder's name: at most 63 bytes (names[][64]) */
        return;
    rows[*n].p = p;
    memcpy(rows[*n].shape, shape, len + 1);
    rows[*n].tiny = arch && !strcmp(repro_shape(arch, REPRO_TINY), shape);
    snprintf(rows[*n].label, sizeof rows[*n].label, "%.255s%s%.47s", study ? study : "", study ? ": " : "", shape);
    (*n)++;
}

size_t repro_summary_rows(const struct repro_plan *const *plans, const char *const *names, size_t n,
                          struct repro_summary_row *rows, size_t max)
{
    size_t k = 0;
    for (size_t s = 0; s < n; s++) {
        const struct repro_plan *p = plans[s];
        const char *study = names ? names[s] : NULL;
        for (size_t i = 0; i < p->config.n_models; i++) {
            add_row(rows, &k, max, p, study, p->table3_shape[i]);
            add_row(rows, &k, max, p, study, repro_shape(p->config.models[i], p->config.tier));
        }
        if (p->config.n_models)
            continue;
        char dir[4400], names[REPRO_SUMMARY_MAX_ROWS][64], first_runs[256];
        snprintf(dir, sizeof dir, "%s/runs", p->config.out);
        /* the folders of Table 3's CPU modes' first rounds, one of which makes a shape a row */
        cache_mode_table_join(CACHE_MODE_TABLE3_CPU, "|", "-trace-r1", first_runs, sizeof first_runs);
        size_t m = repro_summary_list(dir, first_runs, names, REPRO_SUMMARY_MAX_ROWS);
        for (size_t i = 0; i < m; i++)
            add_row(rows, &k, max, p, study, names[i]);
    }
    return k;
}

size_t repro_summary_traces(const struct repro_plan *p, char (*names)[64], size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n && n < max; i++)
        if (!strcmp(p->steps[i].section, "policies"))
            snprintf(names[n++], 64, "%.63s", p->steps[i].id + 9); /* "policies-" */
    if (p->n)
        return n;
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/policies", p->config.out);
    return repro_summary_list(dir, ".", names, max); /* a trace's folder: its replay started */
}

/* The step markers: how many finished and their seconds. */
struct step_tally {
    size_t planned, done;
    double seconds;
    char not_done[512], stopped[512];
    size_t n_not_done, n_stopped;
};

static double marker_seconds(const char *path)
{
    cJSON *m = read_json_file(path);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(m, "seconds");
    double v = cJSON_IsNumber(s) ? s->valuedouble : NAN;
    cJSON_Delete(m);
    return v;
}

/* A step without a marker: listed (the first few), as stopped when it
 * left a log (it started: it failed or was interrupted). */
static void tally_missing(struct step_tally *t, const char *out, const char *id)
{
    char log[4400];
    snprintf(log, sizeof log, "%s/logs/%s.log", out, id);
    bool started = path_exists(log);
    char *list = started ? t->stopped : t->not_done;
    size_t *count = started ? &t->n_stopped : &t->n_not_done;
    size_t len = strlen(list);
    if (*count < 4)
        snprintf(list + len, 512 - len, "%s`%s`", *count ? ", " : "", id);
    (*count)++;
}

static void tally_plan(struct step_tally *t, const struct repro_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/steps/%s.json", p->config.out, p->steps[i].id);
        t->planned++;
        if (!path_exists(path)) {
            tally_missing(t, p->config.out, p->steps[i].id);
            continue;
        }
        t->done++;
        double s = marker_seconds(path);
        t->seconds += isfinite(s) ? s : 0;
    }
}

/* A merge's study: every marker in its steps/ folder (what was planned is
 * not known here). */
static void tally_folder(struct step_tally *t, const char *out)
{
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/steps", out);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%.4000s/%.255s", dir, e->d_name);
        double s = marker_seconds(path);
        t->done++;
        t->seconds += isfinite(s) ? s : 0;
    }
    if (d)
        closedir(d);
}

static void add_duration(struct strbuf *b, double seconds)
{
    if (seconds >= 3600)
        strbuf_add(b, "%.0f h %02.0f min", floor(seconds / 3600), floor(fmod(seconds, 3600) / 60));
    else if (seconds >= 60)
        strbuf_add(b, "%.0f min %02.0f s", floor(seconds / 60), fmod(seconds, 60));
    else
        strbuf_add(b, "%.1f s", seconds);
}

static void ran_steps(struct strbuf *b, const struct step_tally *t, bool planned)
{
    if (planned)
        strbuf_add(b, "%zu of %zu steps finished, ", t->done, t->planned);
    else
        strbuf_add(b, "%zu steps finished, ", t->done);
    add_duration(b, t->seconds);
    strbuf_add(b, " of step time");
    if (t->n_not_done)
        strbuf_add(b, "; **did not run:** %s%s (%zu)", t->not_done, t->n_not_done > 4 ? ", …" : "", t->n_not_done);
    if (t->n_stopped)
        strbuf_add(b, "; **started but did not finish** (failed or interrupted; its log in `logs/`): %s%s (%zu)",
                   t->stopped, t->n_stopped > 4 ? ", …" : "", t->n_stopped);
    strbuf_add(b, ".\n");
}

/* "Ran:": the tier and models (a merge: each study's), the steps. */
static void summary_ran(struct strbuf *b, const struct repro_plan *const *plans, const char *const *names, size_t n)
{
    struct step_tally t = {0};
    bool planned = true;
    strbuf_add(b, "- **Ran:** ");
    for (size_t s = 0; s < n; s++) {
        const struct repro_plan *p = plans[s];
        if (names)
            strbuf_add(b, "%s`%s` (the %s tier)", s ? ", " : "", names[s], repro_tier_name(p->config.tier));
        else
            strbuf_add(b, "the %s tier (`--%s`), models ", repro_tier_name(p->config.tier),
                       repro_tier_name(p->config.tier));
        for (size_t i = 0; i < p->config.n_models; i++)
            strbuf_add(b, "%s%s", i ? ", " : "", p->config.models[i]);
        if (p->n)
            tally_plan(&t, p);
        else
            tally_folder(&t, p->config.out), planned = false;
    }
    strbuf_add(b, names ? ": %zu studies; " : "; ", n);
    ran_steps(b, &t, planned);
}

/* The first measured run's provenance (Table 3's rows), else Fig. 2b's
 * sweep's: where the machine and disk are read from. */
static cJSON *first_provenance_file(const struct repro_summary_row *rows, size_t n, const struct repro_plan *p)
{
    char path[4400];
    const struct cache_mode *m;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; (m = cache_mode_of_table(CACHE_MODE_TABLE3_CPU, k)); k++) {
            snprintf(path, sizeof path, "%s/runs/%s/%s-trace-r1/run.json", rows[i].p->config.out, rows[i].shape,
                     m->name);
            cJSON *j = read_json_file(path);
            if (j)
                return j;
        }
    snprintf(path, sizeof path, "%s/fig2b/sweep.json", p->config.out);
    return read_json_file(path);
}

/* How many of the rows' measured runs read with the page cache bypassed,
 * of how many. */
static void count_bypassed(const struct repro_summary_row *rows, size_t n, int *bypassed, int *runs)
{
    const struct cache_mode *m;
    *bypassed = *runs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; (m = cache_mode_of_table(CACHE_MODE_TABLE3_CPU, k)); k++)
            for (int r = 1;; r++) {
                char path[4400];
                snprintf(path, sizeof path, "%s/runs/%s/%s-trace-r%d/run.json", rows[i].p->config.out, rows[i].shape,
                         m->name, r);
                cJSON *j = read_json_file(path);
                if (!j)
                    break;
                const cJSON *prov = cJSON_GetObjectItemCaseSensitive(j, "provenance");
                *bypassed += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(prov, "page_cache_bypassed"));
                (*runs)++;
                cJSON_Delete(j);
            }
}

static const char *json_str(const cJSON *o, const char *key, const char *absent)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : absent;
}

static void on_disk(struct strbuf *b, const cJSON *prov, int bypassed, int runs)
{
    const cJSON *disk = cJSON_GetObjectItemCaseSensitive(prov, "disk");
    strbuf_add(b, "; models read from %s (%s%s)", json_str(disk, "disk", "an unnamed disk"),
               json_str(disk, "file_system", "?"),
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(disk, "rotational")) ? ", reported rotational" : "");
    if (runs == 0)
        strbuf_add(b, "; no measured run yet.\n");
    else if (bypassed == runs)
        strbuf_add(b, ", the page cache bypassed (direct I/O) in all %d measured runs of Table 3.\n", runs);
    else
        strbuf_add(b, "; **the page cache was not bypassed in %d of the %d measured runs of Table 3** (buffered "
                      "reads: their I/O times are the page cache's, not the disk's).\n", runs - bypassed, runs);
}

/* "On:": the machine, the disk, whether the page cache was bypassed. */
static void summary_on(struct strbuf *b, const struct repro_summary_row *rows, size_t n, const struct repro_plan *p)
{
    cJSON *j = first_provenance_file(rows, n, p);
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(j, "provenance");
    const cJSON *machine = cJSON_GetObjectItemCaseSensitive(prov, "machine");
    if (!machine) {
        strbuf_add(b, "- **On:** not known yet: no measured run and no Fig. 2b sweep.\n");
        cJSON_Delete(j);
        return;
    }
    strbuf_add(b, "- **On:** %s, %.0f logical CPUs, %.1f GiB of memory, %s", json_str(machine, "cpu", "a CPU"),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(machine, "logical_cpus")),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(machine, "memory_bytes")) / (1024.0 * 1024 * 1024),
               json_str(machine, "os", "?"));
    int bypassed, runs;
    count_bypassed(rows, n, &bypassed, &runs);
    on_disk(b, prov, bypassed, runs);
    cJSON_Delete(j);
}

void repro_section_summary(struct strbuf *b, const struct repro_plan *const *plans, const char *const *names,
                           size_t n)
{
    struct repro_summary_row rows[REPRO_SUMMARY_MAX_ROWS];
    size_t n_rows = repro_summary_rows(plans, names, n, rows, REPRO_SUMMARY_MAX_ROWS);
    strbuf_add(b, "## At a glance\n\n");
    summary_ran(b, plans, names, n);
    if (n)
        summary_on(b, rows, n_rows, plans[0]);
    strbuf_add(b, "\n");
    repro_summary_speedups(b, rows, n_rows);
    repro_summary_cost_model(b, rows, n_rows, plans, names, n);
    repro_summary_policies(b, plans, names, n);
}
