#include "sim/replay_report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/result_fields.h"
#include "common/strbuf.h"

static int result_fields(const struct replay_result *r, struct field *f)
{
    int n = 0;
#define FIELD(k, kind_, str, val) FIELD_ADD(f, &n, k, kind_, str, val)
    FIELD("policy", FIELD_STR, r->policy, 0);
    FIELD("layout", FIELD_STR, r->layout, 0);
    FIELD("sets", FIELD_STR, r->use_predicted ? "predicted" : "active", 0);
    FIELD("tokens", FIELD_INT, NULL, r->n_tokens);
    FIELD("bytes_per_token", FIELD_REAL, NULL, r->bytes_per_token);
    FIELD("reads_per_token", FIELD_REAL, NULL, r->reads_per_token);
    FIELD("mean_read_bytes", FIELD_REAL, NULL, r->total.reads ? (double)r->total.bytes / r->total.reads : 0);
    FIELD("read_bytes_p50", FIELD_INT, NULL, read_size_hist_percentile(&r->read_sizes, 50));
    FIELD("read_bytes_p99", FIELD_INT, NULL, read_size_hist_percentile(&r->read_sizes, 99));
    FIELD("hit_ratio", FIELD_REAL, NULL, r->hit_ratio);
    FIELD("dram_peak_bytes", FIELD_INT, NULL, r->dram_peak_bytes);
    FIELD("dram_mean_bytes", FIELD_REAL, NULL, r->dram_mean_bytes);
    FIELD("dram_kept_mean_bytes", FIELD_REAL, NULL, r->dram_kept_mean_bytes);
    FIELD("capacity_rows_per_layer", FIELD_INT, NULL, r->capacity_rows);
    FIELD("preload_bytes", FIELD_INT, NULL, r->preload_bytes);
    FIELD("rows_inserted_per_token", FIELD_REAL, NULL, r->rows_inserted_per_token);
    FIELD("rows_deleted_per_token", FIELD_REAL, NULL, r->rows_deleted_per_token);
    FIELD("row_bytes", FIELD_INT, NULL, r->row_bytes);
    FIELD("bytes_total", FIELD_INT, NULL, r->total.bytes);
    FIELD("reads_total", FIELD_INT, NULL, r->total.reads);
    FIELD("hits_total", FIELD_INT, NULL, r->total.hits);
    FIELD("needed_total", FIELD_INT, NULL, r->total.needed);
    FIELD("events", FIELD_INT, NULL, r->events);
    FIELD("seconds", FIELD_REAL, NULL, r->seconds);
    FIELD("events_per_second", FIELD_REAL, NULL, r->events_per_second);
#undef FIELD
    return n;
}

static cJSON *u64_array(const struct replay_result *r, size_t offset)
{
    cJSON *a = cJSON_CreateArray();
    for (uint64_t t = 0; t < r->n_tokens; t++) {
        const uint64_t *v = (const uint64_t *)((const char *)&r->per_token[t] + offset);
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)*v));
    }
    return a;
}

cJSON *replay_result_json(const struct replay_result *r, bool per_token)
{
    cJSON *o = cJSON_CreateObject();
    struct field f[FIELDS_MAX];
    int n = result_fields(r, f);
    fields_to_json(o, f, n);
    if (r->friends_tokens)
        cJSON_AddNumberToObject(o, "friends_tokens_counted", (double)r->friends_tokens);
    cJSON *h = cJSON_AddArrayToObject(o, "read_size_histogram");
    for (int b = 0; b < 64; b++) {
        if (!r->read_sizes.count[b])
            continue;
        cJSON *bin = cJSON_CreateObject();
        cJSON_AddNumberToObject(bin, "min_bytes", (double)(1ull << b));
        cJSON_AddNumberToObject(bin, "max_bytes", (double)((2ull << b) - 1));
        cJSON_AddNumberToObject(bin, "reads", (double)r->read_sizes.count[b]);
        cJSON_AddItemToArray(h, bin);
    }
    if (per_token) {
        cJSON *pt = cJSON_AddObjectToObject(o, "per_token");
        cJSON_AddItemToObject(pt, "bytes", u64_array(r, offsetof(struct replay_token, bytes)));
        cJSON_AddItemToObject(pt, "reads", u64_array(r, offsetof(struct replay_token, reads)));
        cJSON_AddItemToObject(pt, "hits", u64_array(r, offsetof(struct replay_token, hits)));
        cJSON_AddItemToObject(pt, "needed", u64_array(r, offsetof(struct replay_token, needed)));
        cJSON_AddItemToObject(pt, "rows_inserted", u64_array(r, offsetof(struct replay_token, inserted)));
        cJSON_AddItemToObject(pt, "rows_deleted", u64_array(r, offsetof(struct replay_token, deleted)));
        cJSON_AddItemToObject(pt, "dram_rows", u64_array(r, offsetof(struct replay_token, peak_rows)));
    }
    return o;
}

cJSON *replay_report_json(const struct replay_result *r, size_t n, cJSON *prov, const char *trace_path,
                          bool complete)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "provenance", prov);
    cJSON_AddStringToObject(root, "trace", trace_path);
    cJSON_AddBoolToObject(root, "complete", complete);
    cJSON *a = cJSON_AddArrayToObject(root, "results");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, replay_result_json(&r[i], true));
    return root;
}

char *replay_report_csv(const struct replay_result *r, size_t n)
{
    struct memtext t;
    if (memtext_open(&t) != 0)
        return NULL;
    struct field f[FIELDS_MAX];
    struct replay_result empty;
    memset(&empty, 0, sizeof empty);
    fields_csv_header(t.f, f, result_fields(n ? &r[0] : &empty, f));
    for (size_t i = 0; i < n; i++)
        {
            int nf = result_fields(&r[i], f);
            fields_csv_row(t.f, f, nf, nf);
        }
    return memtext_take(&t);
}

char *replay_report_markdown(const struct replay_result *r, size_t n, const char *trace_path)
{
    struct memtext t;
    if (memtext_open(&t) != 0)
        return NULL;
    fprintf(t.f, "# Replay of %s\n\n", trace_path);
    if (n)
        fprintf(t.f, "%llu tokens, %s sets; FFN row = %llu bytes; DRAM is the FFN cache only "
                     "(peak: after a token's loads; kept: held between tokens).\n\n",
                 (unsigned long long)r[0].n_tokens, r[0].use_predicted ? "predicted" : "active",
                 (unsigned long long)r[0].row_bytes);
    fprintf(t.f, "| policy | layout | DRAM peak (MB) | DRAM kept, mean (MB) | flash→DRAM per token (MB) | "
                 "reads per token | mean read (KiB) | hit ratio | rows inserted / deleted per token |\n"
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < n; i++) {
        const struct replay_result *x = &r[i];
        fprintf(t.f, "| %s | %s | %.1f | %.1f | %.2f | %.0f | %.1f | %.3f | %.0f / %.0f |\n", x->policy,
                 x->layout, x->dram_peak_bytes / 1e6, x->dram_kept_mean_bytes / 1e6, x->bytes_per_token / 1e6,
                 x->reads_per_token, x->total.reads ? (double)x->total.bytes / x->total.reads / 1024 : 0,
                 x->hit_ratio, x->rows_inserted_per_token, x->rows_deleted_per_token);
    }
    return memtext_take(&t);
}

char *replay_window_sweep_csv(const struct replay_result *r, size_t n_k, size_t n_layouts)
{
    struct memtext t;
    if (memtext_open(&t) != 0)
        return NULL;
    fprintf(t.f, "k,window,layout,bytes_per_token,reads_per_token,dram_mean_bytes\n");
    for (size_t li = 0; li < n_layouts; li++)
        for (size_t k = 0; k < n_k; k++) {
            const struct replay_result *x = &r[li * n_k + k];
            fprintf(t.f, "%zu,%zu,%s,%.10g,%.10g,%.10g\n", k, k + 1, x->layout, x->bytes_per_token,
                     x->reads_per_token, x->dram_mean_bytes);
        }
    return memtext_take(&t);
}
