#include "sim/trace_volumes.h"

#include <stdio.h>
#include <string.h>

#include "cache/cache.h"
#include "common/errbuf.h"
#include "sim/replay.h"

int trace_volumes(const struct trace *tr, const char *trace_path, const struct trace_volume_spec *spec,
                  struct token_volumes *v, char *err, size_t errlen)
{
    const struct policy_ops *ops = spec->policy.ops;
    if (ops->reads_whole_layers) {
        err_set(err, errlen, "naive and hybrid read the whole (or the non-resident) model: they need no trace");
        return -1;
    }
    if (spec->use_predicted && !tr->meta.has_predicted) {
        err_set(err, errlen, "%s has no predicted sets (replay its active sets instead)", trace_path);
        return -1;
    }
    double scale = spec->dtype_bytes / cost_weight_bytes(wtype_name(tr->meta.dtype));
    struct replay_spec rs = {
        .policy = spec->policy,
        .layout = spec->layout,
        /* within the budget as run and replay keep it: a window the FFN
         * cache cannot hold shrinks (drops its oldest token early) */
        .dram_budget = spec->ffn_budget_bytes > 0 && (ops->uses_budget || ops->honours_budget)
                           ? (uint64_t)(spec->ffn_budget_bytes / scale)
                           : 0,
        .use_predicted = spec->use_predicted,
    };
    struct replay_result r;
    char why[512];
    if (replay_run(tr, &rs, &r, why, sizeof why) != 0) {
        err_set(err, errlen, "replaying %s: %s", trace_path, why);
        return -1;
    }
    trace_volumes_of_replay(&r, trace_path, spec->dtype_bytes, tr->meta.dtype, v);
    replay_result_free(&r);
    return 0;
}

/* A transposed replay's stream: per token, at the cost model's dtype
 * (scale); held rows as the replay held them (keeps_recent: the window's
 * matrix, its mean after a token's loads) or the needed ones. */
static void stream_of_replay(const struct replay_stream *st, double tokens, double scale, bool matrix,
                             struct stream_volumes *v)
{
    v->rows_loaded = st->row_bytes ? st->bytes_per_token / (double)st->row_bytes : 0;
    v->reads = st->reads_per_token;
    v->read_bytes = st->bytes_per_token * scale;
    v->rows_inserted = st->total.inserted / tokens;
    v->rows_deleted = st->total.deleted / tokens;
    v->computed = st->total.needed / tokens;
    v->cache_rows = matrix && st->row_bytes ? st->total.peak_bytes / tokens / (double)st->row_bytes : v->computed;
}

void trace_volumes_of_replay(const struct replay_result *r, const char *trace_path, double dtype_bytes,
                             enum fb_dtype trace_type, struct token_volumes *v)
{
    bool matrix = r->pol.ops->keeps_recent;
    double scale = dtype_bytes / cost_weight_bytes(wtype_name(trace_type));
    double tokens = r->n_tokens ? (double)r->n_tokens : 1;
    memset(v, 0, sizeof *v);
    v->read_bytes = r->bytes_per_token * scale;
    v->reads = r->reads_per_token;
    v->neurons_loaded = r->bytes_per_token / (double)r->row_bytes;
    v->rows_inserted = r->rows_inserted_per_token;
    v->rows_deleted = r->rows_deleted_per_token;
    v->replayed = true;
    v->cache_rows = matrix ? r->dram_mean_bytes / (double)r->row_bytes : (double)r->total.needed / tokens;
    if (r->transposed) {
        v->transposed = true;
        stream_of_replay(&r->chan, tokens, scale, matrix, &v->chan);
        stream_of_replay(&r->down, tokens, scale, matrix, &v->down);
    }
    snprintf(v->source, sizeof v->source, "replay of %s: %s, %s layout, %s sets, %llu tokens%s", trace_path,
             r->policy, r->layout, r->use_predicted ? "predicted" : "active", (unsigned long long)r->n_tokens,
             matrix ? "" : "; FFN computed on the needed rows");
}
