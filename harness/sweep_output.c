/* The sweep's result files: sweep.json (provenance + points), sweep.csv,
 * sweep.md, and the gnuplot throughput plot. One table of fields feeds the
 * JSON and the CSV so the two can never disagree. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/gnuplot.h"
#include "common/result_fields.h"
#include "common/strbuf.h"
#include "harness/sweep.h"
#include "harness/sweep_verdict.h"

/* Every key of a point, in the order the CSV columns take. fio's keys are
 * present only when the point was compared (has_fio). */
static int point_fields(const struct sweep_point *p, struct field *f)
{
    const struct point_result *r = &p->result;
    int n = 0;
#define FIELD(k, kind_, str, val) FIELD_ADD(f, &n, k, kind_, str, val)
    FIELD("engine", FIELD_STR, p->params.engine->name, 0);
    FIELD("chunk_bytes", FIELD_INT, NULL, p->params.chunk);
    FIELD("threads", FIELD_INT, NULL, p->params.threads);
    FIELD("iodepth", FIELD_INT, NULL, r->iodepth);
    FIELD("direct", FIELD_BOOL, NULL, r->direct);
    FIELD("bytes", FIELD_INT, NULL, r->bytes);
    FIELD("ios", FIELD_INT, NULL, r->ios);
    FIELD("seconds", FIELD_REAL, NULL, r->seconds);
    FIELD("bw_bytes", FIELD_REAL, NULL, r->bw_bytes);
    FIELD("iops", FIELD_REAL, NULL, r->iops);
    FIELD("lat_mean_ns", FIELD_REAL, NULL, hist_mean(&r->lat));
    FIELD("lat_p50_ns", FIELD_INT, NULL, hist_percentile(&r->lat, 50));
    FIELD("lat_p90_ns", FIELD_INT, NULL, hist_percentile(&r->lat, 90));
    FIELD("lat_p99_ns", FIELD_INT, NULL, hist_percentile(&r->lat, 99));
    FIELD("lat_p999_ns", FIELD_INT, NULL, hist_percentile(&r->lat, 99.9));
    FIELD("cpu_user_s", FIELD_REAL, NULL, r->cpu_user_s);
    FIELD("cpu_sys_s", FIELD_REAL, NULL, r->cpu_sys_s);
    FIELD("seed", FIELD_INT, NULL, p->params.seed);
    FIELD("huge_pages", FIELD_BOOL, NULL, r->huge_pages);
    FIELD("retries", FIELD_INT, NULL, r->retries);
    FIELD("read_failed", FIELD_BOOL, NULL, p->error[0] != '\0'); /* the message: sweep.json's and .md's */
    if (p->params.fault) {
        FIELD("fault_attempts", FIELD_INT, NULL, p->faults.attempts);
        FIELD("injected_eio", FIELD_INT, NULL, p->faults.injected[IO_FAULT_EIO]);
        FIELD("injected_short", FIELD_INT, NULL, p->faults.injected[IO_FAULT_SHORT]);
        FIELD("injected_delay", FIELD_INT, NULL, p->faults.injected[IO_FAULT_DELAY]);
        FIELD("failed_offset", FIELD_STR, p->failed_offset, 0);
    }
    if (p->has_fio) {
        FIELD("fio_bw_bytes", FIELD_REAL, NULL, p->fio.bw_bytes);
        FIELD("fio_iops", FIELD_REAL, NULL, p->fio.iops);
        FIELD("fio_lat_p50_ns", FIELD_INT, NULL, p->fio.lat_p50_ns);
        FIELD("fio_lat_p90_ns", FIELD_INT, NULL, p->fio.lat_p90_ns);
        FIELD("fio_lat_p99_ns", FIELD_INT, NULL, p->fio.lat_p99_ns);
        FIELD("fio_lat_p999_ns", FIELD_INT, NULL, p->fio.lat_p999_ns);
        FIELD("bw_ratio_vs_fio", FIELD_REAL, NULL, p->fio.bw_bytes > 0 ? r->bw_bytes / p->fio.bw_bytes : 0);
    }
#undef FIELD
    return n;
}

static bool any_fio(const struct sweep *s)
{
    for (size_t i = 0; i < s->n_points; i++)
        if (s->points[i].has_fio)
            return true;
    return false;
}

/* Our read buffers' pages, as the first point found them (every point
 * allocates the same way). */
static bool ours_on_huge_pages(const struct sweep *s)
{
    return s->n_points && s->points[0].result.huge_pages;
}

cJSON *sweep_to_json(const struct sweep *s)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(root, "provenance", s->provenance);
    bool direct = s->n_points ? s->points[0].result.direct : s->cfg->direct;
    cJSON_AddBoolToObject(root, "page_cache_bypassed", direct);
    cJSON_AddBoolToObject(root, "complete", s->complete);
    cJSON *points = cJSON_AddArrayToObject(root, "points");
    struct field f[FIELDS_MAX];
    for (size_t i = 0; i < s->n_points; i++) {
        cJSON *o = cJSON_CreateObject();
        fields_to_json(o, f, point_fields(&s->points[i], f));
        if (s->points[i].error[0])
            cJSON_AddStringToObject(o, "error", s->points[i].error);
        cJSON_AddItemToArray(points, o);
    }
    return root;
}

char *sweep_to_csv(const struct sweep *s)
{
    struct memtext t;
    if (memtext_open(&t) != 0)
        return NULL;
    FILE *out = t.f;
    struct field f[FIELDS_MAX];
    /* The header comes from a point with fio keys when any was compared, so
     * every row has the same columns (empty where fio did not run). */
    struct sweep_point header_src;
    memset(&header_src, 0, sizeof header_src);
    header_src.params.engine = s->cfg->engine;
    header_src.params.fault = s->cfg->fault;
    header_src.has_fio = any_fio(s);
    int ncols = point_fields(&header_src, f);
    fields_csv_header(out, f, ncols);
    for (size_t i = 0; i < s->n_points; i++)
        fields_csv_row(out, f, point_fields(&s->points[i], f), ncols);
    return memtext_take(&t);
}

static const char *prov_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

char *sweep_to_markdown(const struct sweep *s)
{
    struct strbuf t = {0};
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(s->provenance, "machine");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(s->provenance, "disk");
    bool fio = any_fio(s);
    bool direct = s->n_points ? s->points[0].result.direct : s->cfg->direct;
    strbuf_add(&t, "# flashbed sweep: random-read throughput\n\n");
    strbuf_add(&t, "- command: `%s`\n", prov_str(s->provenance, "command_line"));
    strbuf_add(&t, "- commit: %s\n- date: %s\n", prov_str(s->provenance, "git_commit"),
             prov_str(s->provenance, "date"));
    strbuf_add(&t, "- machine: %s, %s\n", prov_str(m, "cpu"), prov_str(m, "os"));
    const char *model = prov_str(d, "model");
    strbuf_add(&t, "- file: %s on %s (%s%s%s)\n", s->cfg->path, prov_str(d, "device"),
               prov_str(d, "file_system"), model[0] ? ", " : "", model);
    strbuf_add(&t, "- engine: %s, page cache %s, runtime %.3g s after %.3g s ramp%s\n",
             s->cfg->engine->name, direct ? "bypassed (direct I/O)" : "used", s->cfg->runtime_s,
             s->cfg->ramp_s, s->complete ? "" : " — **interrupted: partial results**");
    strbuf_add(&t, "- read buffers: %s%s%s\n\n",
             ours_on_huge_pages(s) ? "transparent huge pages" : "4 KiB pages",
             fio ? "; fio's buffers: --mem=" : "", fio ? (s->cfg->fio_mem ? s->cfg->fio_mem : "malloc (fio's default)") : "");
    char *verdict = sweep_verdict(s);
    if (verdict)
        strbuf_add(&t, "## Verdict\n\n%s\n## Every point\n\n", verdict);
    free(verdict);
    strbuf_add(&t, "| chunk | threads | iodepth | GiB/s | IOPS | p50 µs | p99 µs | p99.9 µs |");
    if (fio)
        strbuf_add(&t, " fio GiB/s | ours / fio |");
    strbuf_add(&t, "\n|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", fio ? "---:|---:|" : "");
    for (size_t i = 0; i < s->n_points; i++) {
        const struct sweep_point *p = &s->points[i];
        char chunk[32];
        format_size(p->params.chunk, chunk, sizeof chunk);
        strbuf_add(&t, "| %s | %u | %u | %.3f | %.0f | %.1f | %.1f | %.1f |", chunk, p->params.threads,
                 p->result.iodepth, p->result.bw_bytes / (1u << 30), p->result.iops,
                 (double)hist_percentile(&p->result.lat, 50) / 1e3,
                 (double)hist_percentile(&p->result.lat, 99) / 1e3,
                 (double)hist_percentile(&p->result.lat, 99.9) / 1e3);
        if (p->has_fio)
            strbuf_add(&t, " %.3f | %.3f |", p->fio.bw_bytes / (1u << 30),
                     p->fio.bw_bytes > 0 ? p->result.bw_bytes / p->fio.bw_bytes : 0);
        else if (fio)
            strbuf_add(&t, " | |");
        strbuf_add(&t, "\n");
    }
    for (size_t i = 0; i < s->n_points; i++)
        if (s->points[i].error[0])
            strbuf_add(&t, "%s- **point %zu stopped at a failed read**, what completed before it kept: %s\n",
                       i == 0 || !s->points[i - 1].error[0] ? "\n" : "", i + 1, s->points[i].error);
    return strbuf_take(&t);
}

int sweep_write_files(const struct sweep *s, const char *dir, char *err, size_t errlen)
{
    if (mkdir_p(dir, 0755) != 0)
        return err_set(err, errlen, "cannot create output directory %s: %s", dir, strerror(errno));
    /* the three appear together, or none changes (common/atomic_file.h's set) */
    char path[4200];
    struct atomic_set set = {.n = 0, .folder = s->cfg->folder};
    cJSON *j = sweep_to_json(s);
    char *csv = sweep_to_csv(s), *md = sweep_to_markdown(s);
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    int rc = atomic_set_json(&set, path, j, err, errlen);
    snprintf(path, sizeof path, "%s/sweep.csv", dir);
    rc = rc ? rc : atomic_set_text(&set, path, csv, err, errlen);
    snprintf(path, sizeof path, "%s/sweep.md", dir);
    rc = rc ? rc : atomic_set_text(&set, path, md, err, errlen);
    if (rc == 0)
        rc = atomic_set_commit(&set, err, errlen);
    else
        atomic_set_abort(&set);
    cJSON_Delete(j);
    free(csv);
    free(md);
    return rc;
}

int sweep_plot(const struct sweep *s, const char *dir, char *err, size_t errlen)
{
    char csv[4200], stem[4200], threads[1024] = "", title[512];
    snprintf(csv, sizeof csv, "%s/sweep.csv", dir);
    snprintf(stem, sizeof stem, "%s/throughput", dir);
    for (size_t i = 0; i < s->cfg->threads.n; i++) {
        char one[24];
        snprintf(one, sizeof one, "%s%llu", i ? " " : "", (unsigned long long)s->cfg->threads.v[i]);
        strncat(threads, one, sizeof threads - strlen(threads) - 1);
    }
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(s->provenance, "disk");
    bool direct = s->n_points ? s->points[0].result.direct : s->cfg->direct;
    /* like for like or said plainly: whose buffers were on which pages */
    char pages[160] = "";
    if (any_fio(s))
        snprintf(pages, sizeof pages, "; buffers: flashbed on %s, fio --mem=%s%s",
                 ours_on_huge_pages(s) ? "huge pages" : "4 KiB pages",
                 s->cfg->fio_mem ? s->cfg->fio_mem : "malloc", s->cfg->fio_mem ? "" : " (4 KiB pages)");
    snprintf(title, sizeof title, "random reads, %s, %s, %s%s", s->cfg->engine->name,
             direct ? "direct I/O" : "page cache", prov_str(d, "device"), pages);
    const struct gnuplot_arg args[] = {GP_TEXT("csv", csv), GP_TEXT("threads", threads),
                                       GP_NUMBER("has_fio", any_fio(s) ? 1 : 0), GP_TEXT("plot_title", title)};
    return gnuplot_draw(s->cfg->settings, s->cfg->folder, "sweep_throughput.gp", args, 4, stem, err, errlen);
}
