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
#include "harness/sweep_rounds.h"
#include "harness/sweep_verdict.h"

/* The keys of each round's figure (static strings the fields point at). */
static const char *const ours_round_keys[SWEEP_MAX_ROUNDS] = {
    "bw_bytes_round1", "bw_bytes_round2", "bw_bytes_round3", "bw_bytes_round4", "bw_bytes_round5",
    "bw_bytes_round6", "bw_bytes_round7", "bw_bytes_round8", "bw_bytes_round9", "bw_bytes_round10",
};
static const char *const fio_round_keys[SWEEP_MAX_ROUNDS] = {
    "fio_bw_bytes_round1", "fio_bw_bytes_round2", "fio_bw_bytes_round3", "fio_bw_bytes_round4",
    "fio_bw_bytes_round5", "fio_bw_bytes_round6", "fio_bw_bytes_round7", "fio_bw_bytes_round8",
    "fio_bw_bytes_round9", "fio_bw_bytes_round10",
};

/* The point's fields, its round figures and the ratio's spread always fit. */
_Static_assert(33 + 2 * (2 + SWEEP_MAX_ROUNDS) + 2 <= FIELDS_MAX, "a sweep point's columns exceed FIELDS_MAX");

/* min, max and each of `rounds` rounds' figure of one series (bytes/s);
 * a round the point stopped before is FIELD_NONE. */
static void round_fields(struct field *f, int *n, const char *min_key, const char *max_key,
                         const char *const *keys, struct spread sp, const struct sweep_point *p, bool fio,
                         unsigned rounds)
{
    FIELD_ADD(f, n, min_key, FIELD_REAL, NULL, sp.min);
    FIELD_ADD(f, n, max_key, FIELD_REAL, NULL, sp.max);
    for (unsigned r = 0; r < rounds; r++) {
        bool have = r < p->n_rounds;
        double v = !have ? 0 : fio ? p->rounds[r].fio.bw_bytes : p->rounds[r].bw_bytes;
        FIELD_ADD(f, n, keys[r], have ? FIELD_REAL : FIELD_NONE, NULL, v);
    }
}

/* Every key of a point, in the order the CSV columns take. fio's keys are
 * present only when the point was compared (has_fio); each round's figures
 * and their min and max only when the sweep has rounds > 1 (bw_bytes, iops,
 * fio's figures and the ratio being the rounds' medians). */
static int point_fields(const struct sweep_point *p, unsigned rounds, struct field *f)
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
    if (rounds > 1)
        round_fields(f, &n, "bw_bytes_min", "bw_bytes_max", ours_round_keys, point_ours_spread(p), p, false, rounds);
    if (p->has_fio) {
        FIELD("fio_bw_bytes", FIELD_REAL, NULL, p->fio.bw_bytes);
        FIELD("fio_iops", FIELD_REAL, NULL, p->fio.iops);
        FIELD("fio_lat_p50_ns", FIELD_INT, NULL, p->fio.lat_p50_ns);
        FIELD("fio_lat_p90_ns", FIELD_INT, NULL, p->fio.lat_p90_ns);
        FIELD("fio_lat_p99_ns", FIELD_INT, NULL, p->fio.lat_p99_ns);
        FIELD("fio_lat_p999_ns", FIELD_INT, NULL, p->fio.lat_p999_ns);
        if (rounds > 1)
            round_fields(f, &n, "fio_bw_bytes_min", "fio_bw_bytes_max", fio_round_keys, point_fio_spread(p), p, true,
                         rounds);
        struct spread ratio = point_ratio_spread(p);
        FIELD("bw_ratio_vs_fio", FIELD_REAL, NULL, ratio.median);
        if (rounds > 1) {
            FIELD("bw_ratio_min", FIELD_REAL, NULL, ratio.min);
            FIELD("bw_ratio_max", FIELD_REAL, NULL, ratio.max);
        }
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
    unsigned rounds = sweep_rounds_of(s->cfg);
    struct field f[FIELDS_MAX];
    for (size_t i = 0; i < s->n_points; i++) {
        cJSON *o = cJSON_CreateObject();
        fields_to_json(o, f, point_fields(&s->points[i], rounds, f));
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
    unsigned rounds = sweep_rounds_of(s->cfg);
    int ncols = point_fields(&header_src, rounds, f);
    fields_csv_header(out, f, ncols);
    for (size_t i = 0; i < s->n_points; i++)
        fields_csv_row(out, f, point_fields(&s->points[i], rounds, f), ncols);
    return memtext_take(&t);
}

static const char *prov_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The run's settings above the table: command, machine, file, engine, time, buffers. */
static void markdown_settings(const struct sweep *s, struct strbuf *t)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(s->provenance, "machine");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(s->provenance, "disk");
    bool fio = any_fio(s);
    bool direct = s->n_points ? s->points[0].result.direct : s->cfg->direct;
    unsigned rounds = sweep_rounds_of(s->cfg);
    strbuf_add(t, "# flashbed sweep: random-read throughput\n\n");
    strbuf_add(t, "- command: `%s`\n", prov_str(s->provenance, "command_line"));
    strbuf_add(t, "- commit: %s\n- date: %s\n", prov_str(s->provenance, "git_commit"),
             prov_str(s->provenance, "date"));
    strbuf_add(t, "- machine: %s, %s\n", prov_str(m, "cpu"), prov_str(m, "os"));
    const char *model = prov_str(d, "model");
    strbuf_add(t, "- file: %s on %s (%s%s%s)\n", s->cfg->path, prov_str(d, "device"),
               prov_str(d, "file_system"), model[0] ? ", " : "", model);
    strbuf_add(t, "- engine: %s, page cache %s, runtime %.3g s after %.3g s ramp%s\n",
             s->cfg->engine->name, direct ? "bypassed (direct I/O)" : "used", s->cfg->runtime_s,
             s->cfg->ramp_s, s->complete ? "" : " — **interrupted: partial results**");
    if (rounds > 1)
        strbuf_add(t, "- rounds: %u per point of %.3g s each after %.3g s ramp (the point's split)%s; every "
                      "figure below is the rounds' median, min–max beside it\n",
                   rounds, s->cfg->runtime_s / rounds, s->cfg->ramp_s / rounds, fio ? ", ours and fio's "
                   "alternating (ours first in odd rounds, fio first in even ones)" : "");
    strbuf_add(t, "- read buffers: %s%s%s\n\n",
             ours_on_huge_pages(s) ? "transparent huge pages" : "4 KiB pages",
             fio ? "; fio's buffers: --mem=" : "", fio ? (s->cfg->fio_mem ? s->cfg->fio_mem : "malloc (fio's default)") : "");
}

/* " a–b |": a spread's extremes, in GiB/s when gib, else as they are. */
static void markdown_range(struct strbuf *t, struct spread sp, bool gib)
{
    double k = gib ? 1.0 / (1u << 30) : 1;
    strbuf_add(t, " %.3f–%.3f |", sp.min * k, sp.max * k);
}

static void markdown_row(struct strbuf *t, const struct sweep_point *p, bool fio, unsigned rounds)
{
    char chunk[32];
    format_size(p->params.chunk, chunk, sizeof chunk);
    strbuf_add(t, "| %s | %u | %u | %.3f |", chunk, p->params.threads, p->result.iodepth,
               p->result.bw_bytes / (1u << 30));
    if (rounds > 1)
        markdown_range(t, point_ours_spread(p), true);
    strbuf_add(t, " %.0f | %.1f | %.1f | %.1f |", p->result.iops, (double)hist_percentile(&p->result.lat, 50) / 1e3,
               (double)hist_percentile(&p->result.lat, 99) / 1e3, (double)hist_percentile(&p->result.lat, 99.9) / 1e3);
    if (p->has_fio) {
        strbuf_add(t, " %.3f |", p->fio.bw_bytes / (1u << 30));
        if (rounds > 1)
            markdown_range(t, point_fio_spread(p), true);
        strbuf_add(t, " %.3f |", point_ratio_spread(p).median);
        if (rounds > 1)
            markdown_range(t, point_ratio_spread(p), false);
    } else if (fio)
        strbuf_add(t, "%s", rounds > 1 ? " | | | |" : " | |");
    strbuf_add(t, "\n");
}

char *sweep_to_markdown(const struct sweep *s)
{
    struct strbuf t = {0};
    bool fio = any_fio(s);
    unsigned rounds = sweep_rounds_of(s->cfg);
    markdown_settings(s, &t);
    char *verdict = sweep_verdict(s);
    if (verdict)
        strbuf_add(&t, "## Verdict\n\n%s\n## Every point\n\n", verdict);
    free(verdict);
    const char *range = rounds > 1 ? " min–max |" : "", *align = rounds > 1 ? "---:|" : "";
    strbuf_add(&t, "| chunk | threads | iodepth | GiB/s |%s IOPS | p50 µs | p99 µs | p99.9 µs |", range);
    if (fio)
        strbuf_add(&t, " fio GiB/s |%s ours / fio |%s", range, range);
    strbuf_add(&t, "\n|---:|---:|---:|---:|%s---:|---:|---:|---:|", align);
    if (fio)
        strbuf_add(&t, "---:|%s---:|%s", align, align);
    strbuf_add(&t, "\n");
    for (size_t i = 0; i < s->n_points; i++)
        markdown_row(&t, &s->points[i], fio, rounds);
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
                                       GP_NUMBER("has_fio", any_fio(s) ? 1 : 0),
                                       GP_NUMBER("rounds", sweep_rounds_of(s->cfg)),
                                       GP_TEXT("plot_title", title)};
    return gnuplot_draw(s->cfg->settings, s->cfg->folder, "sweep_throughput.gp", args, 5, stem, err, errlen);
}
