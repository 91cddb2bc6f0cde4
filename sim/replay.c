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
#include "cache/transposed.h"
#include "common/clock.h"
#include "common/errbuf.h"
#include "common/limits.h"
#include "common/model_shape.h"
#include "common/parse.h"

struct unit_dims replay_unit_dims(const struct trace_meta *m)
{
    return (struct unit_dims){m->n_layers, m->d_model, m->d_ff, (enum ffn_kind)m->ffn_kind, m->dtype};
}

int replay_unit_geometry(const struct trace_meta *m, enum unit_kind kind, uint64_t align, struct unit_geometry *g,
                         char *err, size_t errlen)
{
    struct unit_dims d = replay_unit_dims(m);
    return unit_geometry_make(kind, &d, align, g, err, errlen);
}

/* The trace's neuron bundles, packed; a shape the header check lets
 * through always makes one (zeroes otherwise). */
static struct unit_geometry neuron_bundle(const struct trace_meta *m)
{
    struct unit_geometry g;
    char err[256];
    if (replay_unit_geometry(m, UNIT_NEURON_BUNDLE, 0, &g, err, sizeof err) != 0)
        g = (struct unit_geometry){0};
    return g;
}

uint64_t replay_row_bytes(const struct trace_meta *m)
{
    return neuron_bundle(m).bytes;
}

/* A trace with channel sets (the transposed layout's two streams): the
 * alignment both streams' rows are padded to (replay.h). */
static int transposed_row_align(const char *text, uint64_t *out, char *err, size_t errlen)
{
    uint64_t v;
    char why[256];
    if (!strcmp(text, "aligned")) {
        *out = FB_BUNDLE_ALIGN;
        return 0;
    }
    if (parse_size(text, &v, why, sizeof why) != 0)
        return err_set(err, errlen, "%s (packed, aligned or bytes)", why);
    if (v < 2 || (v & (v - 1)) || v > (1u << 20))
        return err_set(err, errlen, "%llu bytes: a trace with channel sets (layout transposed) takes the alignment "
                       "each stream's rows are padded to: a power of two from 2 bytes to 1 MiB (aligned: %u)",
                       (unsigned long long)v, FB_BUNDLE_ALIGN);
    *out = v;
    return 0;
}

int replay_row_stride(const struct trace_meta *m, const char *text, uint64_t *out, char *err, size_t errlen)
{
    uint64_t packed = replay_row_bytes(m), v;
    char why[256];
    if (!strcmp(text, "packed")) {
        *out = 0;
        return 0;
    }
    if (m->has_channels)
        return transposed_row_align(text, out, err, errlen);
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

int replay_transposed_geometry(const struct trace_meta *m, uint64_t row_align, uint64_t read_align,
                               struct transposed_geometry *g, char *err, size_t errlen)
{
    if (replay_unit_geometry(m, UNIT_CHANNEL_BUNDLE, row_align, &g->chan_unit, err, errlen) != 0 ||
        replay_unit_geometry(m, UNIT_DOWN_ROW, row_align, &g->down_unit, err, errlen) != 0)
        return -1;
    cache_geometry_of_unit(&g->chan_unit, read_align, &g->chan);
    cache_geometry_of_unit(&g->down_unit, read_align, &g->down);
    return 0;
}

/* The trace's units at row_stride (replay_row_stride's value), as its
 * header describes them: its neuron bundles, or for a trace with channel
 * sets its channel bundles and rows of down (replay_check_layout pairs
 * those with the transposed layout, whose row_stride is the alignment both
 * are padded to). Returns how many; 0 with err for a shape that makes none. */
static uint32_t trace_units(const struct trace_meta *m, uint64_t row_stride, struct unit_geometry u[2], char *err,
                            size_t errlen)
{
    if (m->has_channels) {
        struct transposed_geometry g;
        if (replay_transposed_geometry(m, row_stride, 0, &g, err, errlen) != 0)
            return 0;
        u[0] = g.chan_unit;
        u[1] = g.down_unit;
        return 2;
    }
    if (replay_unit_geometry(m, UNIT_NEURON_BUNDLE, 0, &u[0], err, errlen) != 0 ||
        unit_geometry_set_stride(&u[0], row_stride, err, errlen) != 0)
        return 0;
    return 1;
}

uint64_t replay_ffn_bytes(const struct trace_meta *m, uint64_t row_stride)
{
    struct unit_geometry u[2];
    char err[256];
    uint32_t n = trace_units(m, row_stride, u, err, sizeof err);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < n; i++)
        bytes += unit_geometry_file_bytes(&u[i]);
    return bytes;
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
    free(res->chan.per_token);
    free(res->down.per_token);
    res->per_token = res->chan.per_token = res->down.per_token = NULL;
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
        s->peak_rows = k->peak_rows > s->peak_rows ? k->peak_rows : s->peak_rows;
        s->kept_rows = k->kept_rows > s->kept_rows ? k->kept_rows : s->kept_rows;
        s->peak_bytes = k->peak_bytes > s->peak_bytes ? k->peak_bytes : s->peak_bytes;
        s->kept_bytes = k->kept_bytes > s->kept_bytes ? k->kept_bytes : s->kept_bytes;
        peak_sum += (double)k->peak_bytes;
        kept_sum += (double)k->kept_bytes;
    }
    double T = res->n_tokens ? (double)res->n_tokens : 1;
    res->bytes_per_token = s->bytes / T;
    res->reads_per_token = s->reads / T;
    res->hit_ratio = s->needed ? (double)s->hits / s->needed : 0;
    res->rows_inserted_per_token = s->inserted / T;
    res->rows_deleted_per_token = s->deleted / T;
    res->dram_peak_bytes = s->peak_bytes;
    res->dram_mean_bytes = peak_sum / T;
    res->dram_kept_mean_bytes = kept_sum / T;
    res->events = s->needed;
}

/* A transposed stream's per-token means. */
static void summarize_stream(struct replay_stream *st, uint64_t n_tokens)
{
    double T = n_tokens ? (double)n_tokens : 1;
    st->bytes_per_token = st->total.bytes / T;
    st->reads_per_token = st->total.reads / T;
    st->hit_ratio = st->total.needed ? (double)st->total.hits / st->total.needed : 0;
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
    if (!res->budget_given || ops->extra_reads)
        return;
    if (res->transposed) { /* each stream in its share; the channel bundles first */
        const struct replay_stream *st = res->chan.max_needed_rows > res->chan.budget_rows ? &res->chan : &res->down;
        if (st->max_needed_rows <= st->budget_rows)
            return;
        res->feasible = false;
        res->transient_rows = res->transient_bytes = 0;
        snprintf(res->infeasible, sizeof res->infeasible,
                 "a token needs up to %" PRIu64 " %s in one layer; the budget holds %" PRIu64 " per layer",
                 st->max_needed_rows, st == &res->chan ? "channel bundles" : "rows of down", st->budget_rows);
        return;
    }
    if (res->max_needed_rows <= res->budget_rows)
        return;
    res->feasible = false;
    res->transient_rows = res->transient_bytes = 0; /* the overflow is what makes it infeasible */
    if (res->budget_rows == 0)
        snprintf(res->infeasible, sizeof res->infeasible,
                 "the budget holds no row per layer (%" PRIu64 " bytes < %u layers x %" PRIu64 "-byte rows)",
                 res->dram_budget, res->n_layers, res->row_bytes);
    else
        snprintf(res->infeasible, sizeof res->infeasible,
                 "a token needs up to %" PRIu64 " rows in one layer; the budget holds %" PRIu64 " per layer",
                 res->max_needed_rows, res->budget_rows);
}

/* Rows a layer holds while the token of st is computed, as the paper's
 * matrix (§3.3, Fig. 6) is used: preallocated at the layer's share of the
 * budget (cap rows; capped false: no budget) and written in place, the
 * rows a policy evicts to make room are deleted before the misses are
 * inserted (their slots take the misses), so they never sit beside them;
 * the rows it drops only after use (needed rows it does not keep:
 * overflow, or every miss of the policies that keep none) are there while
 * the token is computed; and a window's rows that leave only after this
 * token stay for it while there is room. The rows a policy that reads
 * whole layers streams through (naive, hybrid) pass through a read buffer
 * and are not counted, as the paper's Table 2 counts their DRAM (hybrid:
 * its resident half; naive: none). */
static uint64_t rows_held(const struct cache_step *st, const struct policy_ops *ops, bool capped, uint64_t cap)
{
    if (ops->reads_whole_layers)
        return st->resident_after;
    uint64_t dropped_after_use = ops->keeps_reads ? st->overflow : st->n_deleted;
    uint64_t evictable = st->n_deleted - dropped_after_use;
    uint64_t before_evictions = (uint64_t)st->resident_after + st->n_deleted;
    uint64_t over = capped && before_evictions > cap ? before_evictions - cap : 0;
    return before_evictions - (over < evictable ? over : evictable);
}

static void add_step(struct replay_token *tok, const struct cache_step *st, uint64_t row_bytes, uint64_t held)
{
    tok->needed += st->needed;
    tok->hits += st->hits;
    tok->bytes += st->bytes;
    tok->reads += st->n_flash_reads;
    tok->inserted += st->n_rows;
    tok->deleted += st->n_deleted + st->n_extra;
    tok->overflow += st->overflow;
    tok->peak_rows += held;
    tok->kept_rows += st->resident_after;
    tok->peak_bytes += held * row_bytes;
    tok->kept_bytes += (uint64_t)st->resident_after * row_bytes;
}

/* The most rows one layer held over its share of the budget while a token
 * was computed (rows_held), for the stream st. */
static void note_transient(struct replay_stream *st, uint64_t held, bool capped, uint64_t cap)
{
    if (capped && held > cap && held - cap > st->transient_rows)
        st->transient_rows = held - cap;
}

/* One cache over the sets of view (the trace, or its channel sets seen as
 * a trace: transposed_views) with geometry g and capacity rows per layer;
 * each step added to res's tokens and to st's totals. 0, or -1 with err. */
static int replay_cache(const struct trace *view, bool predicted, const struct replay_spec *spec,
                        const struct cache_geometry *g, uint64_t capacity, struct replay_result *res,
                        struct replay_stream *st, char *err, size_t errlen)
{
    struct cache_config cfg = {spec->policy, spec->layout, capacity, view, predicted, res->budget_given};
    struct cache c;
    if (cache_open(&c, &cfg, g, err, errlen) != 0)
        return -1;
    st->rows = g->d_ff;
    st->row_bytes = g->row_bytes;
    st->capacity_rows = c.p.capacity;
    st->budget_rows = capacity;
    st->preload_bytes = (c.p.ops->preload_is_read ? 0 : c.p.preloaded) * g->row_bytes;
    res->friends_tokens = c.lo.info;
    /* Layers are independent (each has its own matrix, window and share of
     * the budget), so the replay walks one layer through all tokens at a
     * time: that layer's policy state stays in cache. */
    for (uint32_t l = 0; l < g->n_layers; l++)
        for (uint64_t t = 0; t < view->n_tokens; t++) {
            uint32_t n;
            const uint32_t *need = trace_set(view, predicted, t, l, &n);
            struct cache_step step;
            cache_request(&c, t, l, need, n, false, &res->read_sizes, &step);
            uint64_t held = rows_held(&step, c.p.ops, res->budget_given, capacity);
            note_transient(st, held, res->budget_given, capacity);
            add_step(&res->per_token[t], &step, g->row_bytes, held);
            add_step(&st->total, &step, g->row_bytes, held);
            if (st->per_token)
                add_step(&st->per_token[t], &step, g->row_bytes, held);
            if (n > st->max_needed_rows)
                st->max_needed_rows = n;
        }
    res->window_shrinks += c.p.shrinks;
    cache_close(&c);
    return 0;
}

/* tr's channel sets seen as a trace of d_model rows whose "active" sets
 * they are: hot and belady see the channels to come. */
static void channel_view(const struct trace *tr, struct trace *view)
{
    *view = *tr;
    view->meta.d_ff = tr->meta.d_model;
    view->meta.unit_kind = UNIT_CHANNEL_BUNDLE; /* its ids: d_model of them per layer */
    view->meta.units = tr->meta.d_model;
    view->meta.has_predicted = view->meta.has_channels = false;
    view->active_off = tr->chan_off;
    view->active_ids = tr->chan_ids;
    view->pred_off = NULL;
    view->pred_ids = NULL;
}

/* Where the streams' own counts go: the transposed layout's two streams
 * into the result's (per token too), a single stream into own. */
static int stream_results(const struct trace *tr, uint32_t n, struct replay_result *res, struct replay_stream *own,
                          struct replay_stream *st[2], char *err, size_t errlen)
{
    st[0] = own;
    if (n == 1)
        return 0;
    size_t tokens = tr->n_tokens ? tr->n_tokens : 1;
    res->chan.per_token = calloc(tokens, sizeof *res->chan.per_token);
    res->down.per_token = calloc(tokens, sizeof *res->down.per_token);
    if (!res->chan.per_token || !res->down.per_token)
        return err_set(err, errlen, "replay: out of memory");
    st[0] = &res->chan;
    st[1] = &res->down;
    res->transposed = true;
    return 0;
}

/* Every unit of the trace through a cache of its own, the same way whatever
 * the unit: channel bundles are asked the kept channels (always the actual
 * sets: channel_view), the others the active or predicted sets. What
 * differs for two units for real: their caches share the budget
 * (cache_shared_capacity) and each keeps its own counts. The result's own
 * fields are the first unit's (the channel bundles' for the transposed
 * layout), the preload every unit's. */
static int replay_units(const struct trace *tr, const struct replay_spec *spec, struct replay_result *res,
                        char *err, size_t errlen)
{
    struct unit_geometry u[2];
    uint64_t capacity[2];
    struct replay_stream own = {0}, *st[2];
    struct trace view;
    uint32_t n = trace_units(&tr->meta, spec->row_stride, u, err, errlen);
    if (!n || stream_results(tr, n, res, &own, st, err, errlen) != 0)
        return -1;
    channel_view(tr, &view);
    cache_shared_capacity(spec->dram_budget, u, n, capacity);
    for (uint32_t i = 0; i < n; i++) {
        bool chan = u[i].kind == UNIT_CHANNEL_BUNDLE;
        struct cache_geometry g;
        cache_geometry_of_unit(&u[i], spec->read_align, &g);
        if (replay_cache(chan ? &view : tr, !chan && spec->use_predicted, spec, &g, capacity[i], res, st[i], err,
                         errlen) != 0)
            return -1;
        summarize_stream(st[i], tr->n_tokens);
        res->preload_bytes += st[i]->preload_bytes;
    }
    res->row_bytes = st[0]->row_bytes;
    res->budget_rows = st[0]->budget_rows;
    res->capacity_rows = st[0]->capacity_rows;
    res->max_needed_rows = st[0]->max_needed_rows;
    for (uint32_t i = 0; i < n; i++)
        if (st[i]->transient_rows * st[i]->row_bytes > res->transient_bytes) {
            res->transient_rows = st[i]->transient_rows;
            res->transient_bytes = st[i]->transient_rows * st[i]->row_bytes;
        }
    return 0;
}

int replay_check_layout(const struct trace_meta *m, const struct layout_spec *layout, uint64_t row_stride,
                        uint64_t read_align, char *err, size_t errlen)
{
    bool transposed = layout->ops && layout->ops->transposed;
    if (transposed && !m->has_channels)
        return err_set(err, errlen, "layout transposed needs a trace with channel sets (input sparsity's kept channels: "
                                    "flashbed run --active teal --record, or trace synth --channel-density)");
    if (!transposed && m->has_channels)
        return err_set(err, errlen, "the trace has channel sets (input sparsity), which only layout transposed reads: "
                                    "a neuron layout would read every bundle");
    if (transposed && read_align && (!row_stride || row_stride % read_align))
        return err_set(err, errlen, "layout transposed reads whole rows: --read-align %llu must divide the alignment "
                       "its rows are padded to (--row-stride %llu; packed: --read-align 0)",
                       (unsigned long long)read_align, (unsigned long long)row_stride);
    return 0;
}

int replay_run(const struct trace *tr, const struct replay_spec *spec, struct replay_result *res,
               char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    if (spec->use_predicted && !tr->meta.has_predicted) {
        err_set(err, errlen, "predicted sets asked for, but the trace has none");
        return -1;
    }
    if (replay_check_layout(&tr->meta, &spec->layout, spec->row_stride, spec->read_align, err, errlen) != 0)
        return -1;
    res->pol = spec->policy;
    cache_policy_name(&spec->policy, res->policy, sizeof res->policy);
    res->lay = spec->layout;
    cache_layout_name(&spec->layout, res->layout, sizeof res->layout);
    res->use_predicted = spec->use_predicted;
    res->n_tokens = tr->n_tokens;
    res->n_layers = tr->meta.n_layers;
    res->d_ff = tr->meta.d_ff;
    res->budget_given = spec->dram_budget > 0 || spec->budget_binds;
    res->dram_budget = spec->dram_budget;
    res->per_token = calloc(tr->n_tokens ? tr->n_tokens : 1, sizeof *res->per_token);
    if (!res->per_token) {
        err_set(err, errlen, "replay: out of memory");
        return -1;
    }
    uint64_t start = now_ns();
    if (replay_units(tr, spec, res, err, errlen) != 0) {
        replay_result_free(res);
        return -1;
    }
    res->seconds = (double)(now_ns() - start) * 1e-9;
    summarize(res);
    judge_feasible(res, spec->policy.ops);
    res->events_per_second = res->seconds > 0 ? (double)res->events / res->seconds : 0;
    return 0;
}
