#include "sim/replay_report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/result_fields.h"
#include "common/strbuf.h"
#include "sim/replay_verdict.h"

/* The transposed layout's streams: chan_* (channel bundles) and down_*
 * (rows of down), appended to f[0..n); returns the new count. */
static int stream_fields(const struct replay_result *r, struct field *f, int n)
{
    static const char *const keys[2][8] = {
        {"chan_bytes_per_token", "chan_reads_per_token", "chan_hit_ratio", "chan_row_bytes",
         "chan_budget_rows_per_layer", "chan_max_needed_rows_per_layer", "chan_bytes_total", "chan_reads_total"},
        {"down_bytes_per_token", "down_reads_per_token", "down_hit_ratio", "down_row_bytes",
         "down_budget_rows_per_layer", "down_max_needed_rows_per_layer", "down_bytes_total", "down_reads_total"},
    };
    for (int k = 0; k < 2; k++) {
        const struct replay_stream *st = k ? &r->down : &r->chan;
        FIELD_ADD(f, &n, keys[k][0], FIELD_REAL, NULL, st->bytes_per_token);
        FIELD_ADD(f, &n, keys[k][1], FIELD_REAL, NULL, st->reads_per_token);
        FIELD_ADD(f, &n, keys[k][2], FIELD_REAL, NULL, st->hit_ratio);
        FIELD_ADD(f, &n, keys[k][3], FIELD_INT, NULL, st->row_bytes);
        FIELD_ADD(f, &n, keys[k][4], FIELD_INT, NULL, st->budget_rows);
        FIELD_ADD(f, &n, keys[k][5], FIELD_INT, NULL, st->max_needed_rows);
        FIELD_ADD(f, &n, keys[k][6], FIELD_INT, NULL, st->total.bytes);
        FIELD_ADD(f, &n, keys[k][7], FIELD_INT, NULL, st->total.reads);
    }
    return n;
}

static int result_fields(const struct replay_row *row, struct field *f)
{
    const struct replay_result *r = &row->res;
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
    /* the budget study: the budget, whether the replay fits (sim/replay.h) */
    FIELD("dram_budget", FIELD_STR, row->budget, 0);
    FIELD("dram_budget_bytes", FIELD_INT, NULL, r->dram_budget);
    FIELD("dram_budget_share", FIELD_REAL, NULL, row->budget_share);
    FIELD("budget_rows_per_layer", FIELD_INT, NULL, r->budget_rows);
    FIELD("max_needed_rows_per_layer", FIELD_INT, NULL, r->max_needed_rows);
    FIELD("feasible", FIELD_BOOL, NULL, r->feasible);
    FIELD("infeasible", FIELD_STR, r->infeasible, 0);
    if (r->transposed) /* the two streams (sim/replay.h), whose sums the fields above are */
        n = stream_fields(r, f, n);
    if (row->priced) {
        FIELD("io_ms", FIELD_REAL, NULL, row->modelled.prediction.io_ms);
        FIELD("mem_ms", FIELD_REAL, NULL, row->modelled.prediction.mem_ms);
        FIELD("compute_ms", FIELD_REAL, NULL, row->modelled.prediction.compute_ms);
        FIELD("total_ms", FIELD_REAL, NULL, row->modelled.prediction.serial_ms);
        FIELD("overlapped_total_ms", FIELD_REAL, NULL, row->modelled.prediction.overlapped_ms);
    }
    /* feasible with a transient (sim/replay.h): rows over a layer's share while a token is computed */
    FIELD("transient_rows_per_layer", FIELD_INT, NULL, r->transient_rows);
    FIELD("transient_bytes", FIELD_INT, NULL, r->transient_bytes);
#undef FIELD
    return n;
}

/* The definition the files state (sim/replay.h has the full one). */
static const char feasibility_text[] =
    "a row is infeasible when some token needs more rows in one layer than the layer's share of the budget "
    "holds (the budget split evenly over the layers): the rows the token is computed from cannot all be in "
    "DRAM at once. It applies to every policy that computes from its needed rows in DRAM (predictor, "
    "window, lru, lfu, hot, belady), the predictor included though it ignores the budget; naive and hybrid "
    "stream whole layers and are never infeasible. An infeasible row's numbers are what it costs when the "
    "rows that do not fit are read and dropped after use. DRAM peak: the most the FFN cache holds while a "
    "token is computed, as the paper's preallocated matrix holds it (rows evicted to make room leave before "
    "the misses take their slots; rows dropped after use count; the rows naive and hybrid stream through do "
    "not): at most the budget for a feasible row, except hot's misses beside its pinned rows and the needed "
    "rows lfu and belady drop after use rather than rows they keep, said as a transient beside \"yes\" with "
    "its size";

static const char baselines_text[] =
    "naive and hybrid are priced as predict prices them, as sequential reads: naive of the whole model, "
    "hybrid of what is not resident (its bytes above are the FFN's alone)";

static cJSON *u64_array_of(const struct replay_token *tokens, uint64_t n, size_t offset)
{
    cJSON *a = cJSON_CreateArray();
    for (uint64_t t = 0; t < n; t++) {
        const uint64_t *v = (const uint64_t *)((const char *)&tokens[t] + offset);
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)*v));
    }
    return a;
}

static cJSON *u64_array(const struct replay_result *r, size_t offset)
{
    return u64_array_of(r->per_token, r->n_tokens, offset);
}

/* The transposed layout: each stream's own counts per token (chan_*,
 * down_*), which a run's tokens (run.json) have too. */
static void add_stream_per_token(cJSON *pt, const struct replay_result *r)
{
    static const char *const names[2][5] = {{"chan_bytes", "chan_reads", "chan_hits", "chan_needed", "chan_rows_inserted"},
                                            {"down_bytes", "down_reads", "down_hits", "down_needed", "down_rows_inserted"}};
    static const size_t offsets[5] = {offsetof(struct replay_token, bytes), offsetof(struct replay_token, reads),
                                      offsetof(struct replay_token, hits), offsetof(struct replay_token, needed),
                                      offsetof(struct replay_token, inserted)};
    for (int k = 0; k < 2; k++) {
        const struct replay_stream *st = k ? &r->down : &r->chan;
        for (int i = 0; i < 5 && st->per_token; i++)
            cJSON_AddItemToObject(pt, names[k][i], u64_array_of(st->per_token, r->n_tokens, offsets[i]));
    }
}

static void add_histogram(cJSON *o, const struct read_size_hist *rs)
{
    cJSON *h = cJSON_AddArrayToObject(o, "read_size_histogram");
    for (int b = 0; b < 64; b++) {
        if (!rs->count[b])
            continue;
        cJSON *bin = cJSON_CreateObject();
        cJSON_AddNumberToObject(bin, "min_bytes", (double)(1ull << b));
        cJSON_AddNumberToObject(bin, "max_bytes", (double)((2ull << b) - 1));
        cJSON_AddNumberToObject(bin, "reads", (double)rs->count[b]);
        cJSON_AddItemToArray(h, bin);
    }
}

static void add_per_token(cJSON *o, const struct replay_result *r)
{
    cJSON *pt = cJSON_AddObjectToObject(o, "per_token");
    cJSON_AddItemToObject(pt, "bytes", u64_array(r, offsetof(struct replay_token, bytes)));
    cJSON_AddItemToObject(pt, "reads", u64_array(r, offsetof(struct replay_token, reads)));
    cJSON_AddItemToObject(pt, "hits", u64_array(r, offsetof(struct replay_token, hits)));
    cJSON_AddItemToObject(pt, "needed", u64_array(r, offsetof(struct replay_token, needed)));
    cJSON_AddItemToObject(pt, "rows_inserted", u64_array(r, offsetof(struct replay_token, inserted)));
    cJSON_AddItemToObject(pt, "rows_deleted", u64_array(r, offsetof(struct replay_token, deleted)));
    cJSON_AddItemToObject(pt, "dram_rows", u64_array(r, offsetof(struct replay_token, peak_rows)));
    if (r->transposed)
        add_stream_per_token(pt, r);
}

static cJSON *row_json(const struct replay_row *row, const struct friends_note *fn)
{
    cJSON *o = cJSON_CreateObject();
    struct field f[FIELDS_MAX];
    fields_to_json(o, f, result_fields(row, f));
    if (row->res.friends_tokens)
        cJSON_AddNumberToObject(o, "friends_tokens_counted", (double)row->res.friends_tokens);
    if (fn) {
        cJSON_AddNumberToObject(o, "friends_bytes_over_bundled", fn->ratio);
        cJSON_AddStringToObject(o, "friends_note", fn->text);
    }
    add_histogram(o, &row->res.read_sizes);
    add_per_token(o, &row->res);
    return o;
}

static bool same_budget(const struct replay_row *a, const struct replay_row *b)
{
    return a->res.dram_budget == b->res.dram_budget && a->res.budget_given == b->res.budget_given &&
           !strcmp(a->budget, b->budget);
}

/* Whether rows[i] is the first row of its budget (the budgets, in order). */
static bool first_of_budget(const struct replay_row *rows, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (same_budget(&rows[j], &rows[i]))
            return false;
    return true;
}

int replay_friends_note(const struct replay_row *rows, size_t n, size_t i, bool synthetic,
                        struct friends_note *note)
{
    const struct replay_row *fr = &rows[i];
    const struct layout_ops *lo = fr->res.lay.ops;
    if (!lo->needs_known || !lo->structure)
        return 0;
    for (size_t j = 0; j < n; j++) {
        const struct replay_row *b = &rows[j];
        if (!b->res.lay.ops->baseline || !policy_spec_equal(&b->res.pol, &fr->res.pol) ||
            b->res.use_predicted != fr->res.use_predicted || !same_budget(b, fr))
            continue;
        if (!(fr->res.bytes_per_token > b->res.bytes_per_token) || b->res.bytes_per_token <= 0)
            return 0;
        note->ratio = fr->res.bytes_per_token / b->res.bytes_per_token;
        snprintf(note->text, sizeof note->text, "%s reads %.2fx the bytes per token of %s: %s %s structure%s",
                 fr->res.layout, note->ratio, b->res.layout, synthetic ? "synthetic traces have no" : "no",
                 lo->structure, synthetic ? "" : " found in this trace");
        return 1;
    }
    return 0;
}

void replay_trace_title(const struct replay_report_info *info, char *buf, size_t len)
{
    const struct trace_meta *m = info->meta;
    snprintf(buf, len, "%s%s(%u layers, d_model %u, d_ff %u), %s trace", info->model,
             info->model[0] ? " shape " : "shape ", m->n_layers, m->d_model, m->d_ff,
             info->synthetic ? "synthetic" : "recorded");
}

static cJSON *budgets_json(const struct replay_row *rows, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        if (!first_of_budget(rows, i))
            continue;
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "given", rows[i].budget);
        cJSON_AddNumberToObject(b, "bytes", (double)rows[i].res.dram_budget);
        cJSON_AddNumberToObject(b, "share_of_ffn", rows[i].budget_share);
        cJSON_AddNumberToObject(b, "rows_per_layer", (double)rows[i].res.budget_rows);
        cJSON_AddItemToArray(a, b);
    }
    return a;
}

static cJSON *pricing_json(const struct replay_pricing *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "hw_profile", p->hw->name);
    cJSON_AddStringToObject(o, "hw_path", p->hw->path);
    cJSON_AddStringToObject(o, "dtype", p->dtype);
    cJSON_AddStringToObject(o, "dtype_note", p->dtype_note);
    cJSON_AddStringToObject(o, "shape_source", p->shape_source);
    cJSON_AddNumberToObject(o, "io_threads", p->setup.io_threads);
    cJSON_AddNumberToObject(o, "context_tokens", p->setup.context_tokens);
    cJSON_AddStringToObject(o, "baselines", baselines_text);
    return o;
}

/* A row the verdict names: {"policy", "layout", "total_ms"}, or null. */
static cJSON *named_row(const struct replay_row *r)
{
    if (!r)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "policy", r->res.policy);
    cJSON_AddStringToObject(o, "layout", r->res.layout);
    cJSON_AddNumberToObject(o, "total_ms", r->modelled.prediction.serial_ms);
    return o;
}

/* The verdict (sim/replay_verdict.h) per budget, with the lines replay.md says. */
static cJSON *verdict_json(const struct replay_row *rows, size_t n, const struct replay_report_info *info)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "profile_note", info->profile_note ? info->profile_note : "");
    cJSON *a = cJSON_AddArrayToObject(o, "budgets");
    struct replay_verdict *v = calloc(n ? n : 1, sizeof *v);
    size_t nv = v ? replay_verdicts(rows, n, v) : 0;
    for (size_t i = 0; i < nv; i++) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "dram_budget", v[i].first->budget);
        cJSON_AddItemToObject(b, "best", named_row(v[i].best));
        cJSON_AddItemToObject(b, "runner_up", named_row(v[i].runner_up));
        cJSON_AddNumberToObject(b, "caching_rows", (double)v[i].n_caching);
        cJSON_AddNumberToObject(b, "caching_rows_feasible", (double)v[i].n_caching_feasible);
        char *text = replay_verdict_lines(&v[i], info->pricing->hw);
        cJSON_AddStringToObject(b, "text", text ? text : "");
        free(text);
        cJSON_AddItemToArray(a, b);
    }
    free(v);
    return o;
}

cJSON *replay_report_json(const struct replay_row *rows, size_t n, const struct replay_report_info *info,
                          cJSON *prov)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "provenance", prov);
    cJSON_AddStringToObject(root, "trace", info->trace_path);
    cJSON_AddBoolToObject(root, "complete", info->complete);
    cJSON *src = cJSON_AddObjectToObject(root, "trace_source");
    cJSON_AddBoolToObject(src, "synthetic", info->synthetic);
    cJSON_AddStringToObject(src, "model", info->model);
    cJSON_AddItemToObject(root, "dram_budgets", budgets_json(rows, n));
    cJSON_AddStringToObject(root, "feasibility", feasibility_text);
    if (info->pricing)
        cJSON_AddItemToObject(root, "pricing", pricing_json(info->pricing));
    if (info->pricing && n && rows[0].priced)
        cJSON_AddItemToObject(root, "verdict", verdict_json(rows, n, info));
    cJSON *notes = cJSON_AddArrayToObject(root, "notes");
    cJSON *a = cJSON_AddArrayToObject(root, "results");
    for (size_t i = 0; i < n; i++) {
        struct friends_note fn;
        bool noted = replay_friends_note(rows, n, i, info->synthetic, &fn) == 1;
        cJSON_AddItemToArray(a, row_json(&rows[i], noted ? &fn : NULL));
        if (noted) {
            char line[400];
            snprintf(line, sizeof line, "%s at %s: %s", rows[i].res.policy, rows[i].budget, fn.text);
            cJSON_AddItemToArray(notes, cJSON_CreateString(line));
        }
    }
    return root;
}

char *replay_report_csv(const struct replay_row *rows, size_t n)
{
    struct memtext t;
    if (memtext_open(&t) != 0)
        return NULL;
    struct field f[FIELDS_MAX];
    struct replay_row empty;
    memset(&empty, 0, sizeof empty);
    empty.budget = "";
    int ncols = result_fields(n ? &rows[0] : &empty, f);
    fields_csv_header(t.f, f, ncols);
    for (size_t i = 0; i < n; i++)
        fields_csv_row(t.f, f, result_fields(&rows[i], f), ncols);
    return memtext_take(&t);
}

/* "yes", "yes, with a transient ...", or "infeasible: why". */
static const char *feasible_cell(const struct replay_result *r, char *buf, size_t len)
{
    if (r->feasible && r->transient_rows) {
        snprintf(buf, len, "yes, with a transient of up to %llu row%s (%.1f KB) over a layer's share while a token "
                           "is computed",
                 (unsigned long long)r->transient_rows, r->transient_rows == 1 ? "" : "s", r->transient_bytes / 1e3);
        return buf;
    }
    if (r->feasible)
        return "yes";
    snprintf(buf, len, "infeasible: %s", r->infeasible);
    return buf;
}

static void md_budgets(FILE *f, const struct replay_row *rows, size_t n)
{
    fprintf(f, "DRAM budgets (the FFN cache, split evenly over the layers):\n\n");
    for (size_t i = 0; i < n; i++) {
        if (!first_of_budget(rows, i))
            continue;
        if (rows[i].res.transposed)
            fprintf(f, "- %s: %llu bytes, %.2f%% of the FFN, %llu channel bundles and %llu rows of down per layer\n",
                    rows[i].budget, (unsigned long long)rows[i].res.dram_budget, 100 * rows[i].budget_share,
                    (unsigned long long)rows[i].res.chan.budget_rows, (unsigned long long)rows[i].res.down.budget_rows);
        else
            fprintf(f, "- %s: %llu bytes, %.2f%% of the FFN, %llu rows per layer\n", rows[i].budget,
                    (unsigned long long)rows[i].res.dram_budget, 100 * rows[i].budget_share,
                    (unsigned long long)rows[i].res.budget_rows);
    }
    fprintf(f, "\nFeasibility: %s.\n\n", feasibility_text);
}

static void md_replay_table(FILE *f, const struct replay_row *rows, size_t n)
{
    fprintf(f, "| budget | policy | layout | DRAM peak (MB) | DRAM kept, mean (MB) | flash→DRAM per token (MB) | "
               "reads per token | mean read (KiB) | hit ratio | rows inserted / deleted per token | feasible |\n"
               "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct replay_result *x = &rows[i].res;
        char why[200];
        fprintf(f, "| %s | %s | %s | %.1f | %.1f | %.2f | %.0f | %.1f | %.3f | %.0f / %.0f | %s |\n", rows[i].budget,
                x->policy, x->layout, x->dram_peak_bytes / 1e6, x->dram_kept_mean_bytes / 1e6,
                x->bytes_per_token / 1e6, x->reads_per_token,
                x->total.reads ? (double)x->total.bytes / x->total.reads / 1024 : 0, x->hit_ratio,
                x->rows_inserted_per_token, x->rows_deleted_per_token, feasible_cell(x, why, sizeof why));
    }
}

/* The transposed layout's two streams, row by row (the table above holds their sums). */
static void md_streams(FILE *f, const struct replay_row *rows, size_t n)
{
    if (!n || !rows[0].res.transposed)
        return;
    fprintf(f, "\ntransposed (input sparsity): the channel bundles (%llu bytes each, d_model per layer) and the "
               "rows of down (%llu bytes, d_ff per layer), each a cache of the policy, the budget split in "
               "proportion to their sizes:\n\n| budget | policy | channels: MB / reads per token | channels: hit "
               "ratio | channels: rows per layer (budget / most needed) | down: MB / reads per token | down: hit "
               "ratio | down: rows per layer (budget / most needed) |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
            (unsigned long long)rows[0].res.chan.row_bytes, (unsigned long long)rows[0].res.down.row_bytes);
    for (size_t i = 0; i < n; i++) {
        const struct replay_stream *c = &rows[i].res.chan, *d = &rows[i].res.down;
        fprintf(f, "| %s | %s | %.2f / %.0f | %.3f | %llu / %llu | %.2f / %.0f | %.3f | %llu / %llu |\n",
                rows[i].budget, rows[i].res.policy, c->bytes_per_token / 1e6, c->reads_per_token, c->hit_ratio,
                (unsigned long long)c->budget_rows, (unsigned long long)c->max_needed_rows, d->bytes_per_token / 1e6,
                d->reads_per_token, d->hit_ratio, (unsigned long long)d->budget_rows,
                (unsigned long long)d->max_needed_rows);
    }
}

/* The friends notes, beside the table they explain. */
static void md_friends_notes(FILE *f, const struct replay_row *rows, size_t n, bool synthetic)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        struct friends_note fn;
        if (replay_friends_note(rows, n, i, synthetic, &fn) != 1)
            continue;
        if (!any)
            fprintf(f, "\nfriends (co-activation bundling, App. D) against bundled:\n\n");
        any = true;
        fprintf(f, "- %s at %s: %s (%.4g MB vs %.4g MB per token).\n", rows[i].res.policy, rows[i].budget,
                fn.text, rows[i].res.bytes_per_token / 1e6, rows[i].res.bytes_per_token / fn.ratio / 1e6);
    }
}

/* The predictor the pricing gave the first policy that runs one. */
static const char *predictor_source(const struct replay_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].priced && rows[i].modelled.config.predictor_source[0])
            return rows[i].modelled.config.predictor_source;
    return "none";
}

static void md_modelled(FILE *f, const struct replay_row *rows, size_t n, const struct replay_pricing *p)
{
    fprintf(f, "\n## Modelled time per token: %s profile, %s, %u reader threads\n\n", p->hw->name, p->dtype,
            p->setup.io_threads);
    fprintf(f, "Each row's replayed volumes priced by the cost model (sim/cost_model.h) as predict --trace "
               "prices them; a mean context of %.0f tokens. Shape: %s.%s%s\n\n- Predictor (every policy but "
               "naive and hybrid runs one): %s.\n- %s.\n\n",
            p->setup.context_tokens, p->shape_source, p->dtype_note[0] ? " " : "", p->dtype_note,
            predictor_source(rows, n), baselines_text);
    fprintf(f, "| budget | policy | layout | I/O ms | memory ms | compute ms | total ms (serial) | "
               "total ms (I/O overlapped) | feasible |\n|---|---|---|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct cost_prediction *c = &rows[i].modelled.prediction;
        char why[200];
        fprintf(f, "| %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", rows[i].budget, rows[i].res.policy,
                rows[i].res.layout, c->io_ms, c->mem_ms, c->compute_ms, c->serial_ms, c->overlapped_ms,
                feasible_cell(&rows[i].res, why, sizeof why));
    }
}

static void md_head(FILE *f, const struct replay_row *rows, size_t n, const struct replay_report_info *info)
{
    char title[300];
    replay_trace_title(info, title, sizeof title);
    fprintf(f, "# Replay of %s\n\n%s", info->trace_path, title);
    if (n)
        fprintf(f, "; %llu tokens, %s sets; FFN row = %llu bytes; DRAM is the FFN cache only "
                   "(peak: held while a token is computed, the rows evicted to make room gone before its misses "
                   "are placed; kept: held between tokens). window:K keeps the last K "
                   "tokens, the current one included: the paper's k = K - 1",
                (unsigned long long)rows[0].res.n_tokens, rows[0].res.use_predicted ? "predicted" : "active",
                (unsigned long long)rows[0].res.row_bytes);
    fprintf(f, ".\n\n");
}

static void md_body(FILE *f, const struct replay_row *rows, size_t n, const struct replay_report_info *info)
{
    md_budgets(f, rows, n);
    md_replay_table(f, rows, n);
    md_streams(f, rows, n);
    md_friends_notes(f, rows, n, info->synthetic);
    if (info->pricing && n && rows[0].priced)
        md_modelled(f, rows, n, info->pricing);
}

char *replay_report_verdict(const struct replay_row *rows, size_t n, const struct replay_report_info *info)
{
    if (!info->pricing || !n || !rows[0].priced)
        return strdup("");
    char note[4400];
    if (info->profile_note)
        snprintf(note, sizeof note, "%s", info->profile_note);
    else
        snprintf(note, sizeof note, "Priced by %s (%s).", info->pricing->hw->name, info->pricing->hw->path);
    return replay_verdict_text(rows, n, info->pricing->hw, note);
}

/* The head, then the verdict before the tables (a file) or after them (a terminal). */
static char *report(const struct replay_row *rows, size_t n, const struct replay_report_info *info, bool verdict_last)
{
    char *verdict = replay_report_verdict(rows, n, info);
    struct memtext t;
    if (!verdict || memtext_open(&t) != 0) {
        free(verdict);
        return NULL;
    }
    md_head(t.f, rows, n, info);
    if (!verdict_last && verdict[0])
        fprintf(t.f, "%s\n", verdict);
    md_body(t.f, rows, n, info);
    if (verdict_last && verdict[0])
        fprintf(t.f, "\n%s", verdict);
    free(verdict);
    return memtext_take(&t);
}

char *replay_report_markdown(const struct replay_row *rows, size_t n, const struct replay_report_info *info)
{
    return report(rows, n, info, false);
}

char *replay_report_terminal(const struct replay_row *rows, size_t n, const struct replay_report_info *info)
{
    return report(rows, n, info, true);
}

char *replay_window_sweep_csv(const struct replay_result *r, size_t n_k, size_t n_layouts, const char *budget)
{
    struct memtext t;
    if (memtext_open(&t) != 0)
        return NULL;
    fprintf(t.f, "k,window,layout,bytes_per_token,reads_per_token,dram_mean_bytes,dram_budget\n");
    for (size_t li = 0; li < n_layouts; li++)
        for (size_t k = 0; k < n_k; k++) {
            const struct replay_result *x = &r[li * n_k + k];
            fprintf(t.f, "%zu,%zu,%s,%.10g,%.10g,%.10g,%s\n", k, k + 1, x->layout, x->bytes_per_token,
                     x->reads_per_token, x->dram_mean_bytes, budget);
        }
    return memtext_take(&t);
}
