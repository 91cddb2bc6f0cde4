/* The replay: one shared request path per (token, layer) for every policy
 * and layout. Needed rows already resident are hits; the misses (plus any
 * extra rows the policy reads) go through the layout into reads; misses are
 * inserted; the policy then deletes what it does not keep. */
#include "sim/replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "common/clock.h"
#include "common/errbuf.h"
#include "common/limits.h"
#include "common/model_shape.h"
#include "common/parse.h"

uint64_t replay_row_bytes(const struct trace_meta *m)
{
    return (uint64_t)(m->ffn_kind == FFN_GLU ? 3 : 2) * m->d_model * m->bytes_per_weight;
}

int replay_row_stride(const struct trace_meta *m, const char *text, uint64_t *out, char *err, size_t errlen)
{
    uint64_t packed = replay_row_bytes(m), v;
    char why[256];
    if (!strcmp(text, "packed")) {
        *out = 0;
        return 0;
    }
    if (!strcmp(text, "aligned")) {
        *out = (packed + FB_BUNDLE_ALIGN - 1) / FB_BUNDLE_ALIGN * FB_BUNDLE_ALIGN;
        return 0;
    }
    if (parse_size(text, &v, why, sizeof why) != 0) {
        err_set(err, errlen, "%s (packed, aligned or bytes)", why);
        return -1;
    }
    if (v < packed || v > packed * MODEL_MAX_D_FF) {
        err_set(err, errlen, "%llu bytes: a row of this trace's shape is %llu bytes, and its stride is no less "
                 "(nor more than %u rows)", (unsigned long long)v, (unsigned long long)packed, MODEL_MAX_D_FF);
        return -1;
    }
    *out = v == packed ? 0 : v;
    return 0;
}

int replay_read_align(uint64_t row_bytes, const char *text, uint64_t *out, char *err, size_t errlen)
{
    uint64_t v;
    char why[256];
    if (parse_size(text, &v, why, sizeof why) != 0) {
        err_set(err, errlen, "%s (0 or bytes)", why);
        return -1;
    }
    if (v && ((v & (v - 1)) || row_bytes % v)) {
        err_set(err, errlen, "%llu bytes: an alignment is a power of two dividing the row stride (%llu bytes)",
                (unsigned long long)v, (unsigned long long)row_bytes);
        return -1;
    }
    *out = v;
    return 0;
}

uint64_t read_size_hist_percentile(const struct read_size_hist *h, double p)
{
    uint64_t total = 0;
    for (int b = 0; b < 64; b++)
        total += h->count[b];
    if (!total)
        return 0;
    uint64_t want = (uint64_t)(p / 100 * (double)total + 0.999999), seen = 0;
    for (int b = 0; b < 64; b++) {
        seen += h->count[b];
        if (seen >= want && h->count[b])
            return 1ull << b;
    }
    return UINT64_MAX;
}

void replay_result_free(struct replay_result *res)
{
    free(res->per_token);
    res->per_token = NULL;
}

static void summarize(struct replay_result *res)
{
    struct replay_token *s = &res->total;
    memset(s, 0, sizeof *s);
    double peak_sum = 0, kept_sum = 0;
    for (uint64_t t = 0; t < res->n_tokens; t++) {
        const struct replay_token *k = &res->per_token[t];
        s->bytes += k->bytes;
        s->reads += k->reads;
        s->needed += k->needed;
        s->hits += k->hits;
        s->inserted += k->inserted;
        s->deleted += k->deleted;
        if (k->peak_rows > s->peak_rows)
            s->peak_rows = k->peak_rows;
        if (k->kept_rows > s->kept_rows)
            s->kept_rows = k->kept_rows;
        peak_sum += (double)k->peak_rows;
        kept_sum += (double)k->kept_rows;
    }
    double T = res->n_tokens ? (double)res->n_tokens : 1;
    res->bytes_per_token = s->bytes / T;
    res->reads_per_token = s->reads / T;
    res->hit_ratio = s->needed ? (double)s->hits / s->needed : 0;
    res->rows_inserted_per_token = s->inserted / T;
    res->rows_deleted_per_token = s->deleted / T;
    res->dram_peak_bytes = s->peak_rows * res->row_bytes;
    res->dram_mean_bytes = peak_sum / T * res->row_bytes;
    res->dram_kept_mean_bytes = kept_sum / T * res->row_bytes;
    res->events = s->needed;
}

/* Feasibility under the budget (replay.h): a token's rows of one layer must
 * fit in the layer's share of it. Only for the policies that compute a
 * token from its needed rows held in DRAM: all but those that read rows
 * besides the misses (naive, hybrid), which compute densely on rows
 * streamed through. */
static void judge_feasible(struct replay_result *res, const struct policy_ops *ops)
{
    res->feasible = true;
    res->infeasible[0] = '\0';
    if (!res->budget_given || ops->extra_reads || res->max_needed_rows <= res->budget_rows)
        return;
    res->feasible = false;
    if (res->budget_rows == 0)
        snprintf(res->infeasible, sizeof res->infeasible,
                 "the budget holds no row per layer (%" PRIu64 " bytes < %u layers x %" PRIu64 "-byte rows)",
                 res->dram_budget, res->n_layers, res->row_bytes);
    else
        snprintf(res->infeasible, sizeof res->infeasible,
                 "a token needs up to %" PRIu64 " rows in one layer; the budget holds %" PRIu64 " per layer",
                 res->max_needed_rows, res->budget_rows);
}

static void add_step(struct replay_token *tok, const struct cache_step *st)
{
    tok->needed += st->needed;
    tok->hits += st->hits;
    tok->bytes += st->bytes;
    tok->reads += st->n_flash_reads;
    tok->inserted += st->n_rows;
    tok->deleted += st->n_deleted + st->n_extra;
    tok->overflow += st->overflow;
    /* after the loads the layer held what it kept before, the misses and the extra rows */
    tok->peak_rows += st->resident_after + st->n_deleted + st->n_extra;
    tok->kept_rows += st->resident_after;
}

int replay_run(const struct trace *tr, const struct replay_spec *spec, struct replay_result *res,
               char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    if (spec->use_predicted && !tr->meta.has_predicted) {
        err_set(err, errlen, "predicted sets asked for, but the trace has none");
        return -1;
    }
    const uint32_t L = tr->meta.n_layers, N = tr->meta.d_ff;
    res->pol = spec->policy;
    cache_policy_name(&spec->policy, res->policy, sizeof res->policy);
    res->lay = spec->layout;
    cache_layout_name(&spec->layout, res->layout, sizeof res->layout);
    res->use_predicted = spec->use_predicted;
    res->n_tokens = tr->n_tokens;
    res->n_layers = L;
    res->d_ff = N;
    res->row_bytes = spec->row_stride ? spec->row_stride : replay_row_bytes(&tr->meta);
    uint64_t capacity = cache_capacity_rows(spec->dram_budget, res->row_bytes, L, N);
    res->budget_given = spec->dram_budget > 0 || spec->budget_binds;
    res->dram_budget = spec->dram_budget;
    res->budget_rows = capacity;
    struct cache_config cfg = {spec->policy, spec->layout, capacity, tr, spec->use_predicted, res->budget_given};
    uint32_t vecs = tr->meta.ffn_kind == FFN_GLU ? 3 : 2;
    struct cache_geometry g = {L, N, (uint64_t)tr->meta.d_model * tr->meta.bytes_per_weight, vecs,
                               res->row_bytes, spec->read_align};
    struct cache c;
    uint64_t start = now_ns();
    if (cache_open(&c, &cfg, &g, err, errlen) != 0)
        return -1;
    res->capacity_rows = c.p.capacity;
    res->preload_bytes = (c.p.ops->preload_is_read ? 0 : c.p.preloaded) * res->row_bytes;
    res->friends_tokens = c.lo.info;
    res->per_token = calloc(tr->n_tokens ? tr->n_tokens : 1, sizeof *res->per_token);
    if (!res->per_token) {
        err_set(err, errlen, "replay: out of memory");
        cache_close(&c);
        return -1;
    }
    /* Layers are independent (each has its own matrix, window and share of
     * the budget), so the replay walks one layer through all tokens at a
     * time: that layer's policy state stays in cache. */
    for (uint32_t l = 0; l < L; l++)
        for (uint64_t t = 0; t < tr->n_tokens; t++) {
            uint32_t n;
            const uint32_t *need = trace_set(tr, spec->use_predicted, t, l, &n);
            struct cache_step st;
            cache_request(&c, t, l, need, n, false, &res->read_sizes, &st);
            add_step(&res->per_token[t], &st);
            if (n > res->max_needed_rows)
                res->max_needed_rows = n;
        }
    res->window_shrinks = c.p.shrinks;
    cache_close(&c);
    res->seconds = (double)(now_ns() - start) * 1e-9;
    summarize(res);
    judge_feasible(res, spec->policy.ops);
    res->events_per_second = res->seconds > 0 ? (double)res->events / res->seconds : 0;
    return 0;
}
