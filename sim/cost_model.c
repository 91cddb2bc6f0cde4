#include "sim/cost_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/transposed.h"
#include "common/errbuf.h"
#include "common/limits.h"
#include "common/settings.h"
#include "common/wtype.h"
#include "sim/cost_engine.h"
#include "sim/device_terms.h"

uint64_t cost_row_bytes(const char *dtype, uint64_t n)
{
    enum fb_dtype t;
    return wtype_parse(dtype, &t) == 0 ? wtype_row_bytes(t, n) : 0;
}

double cost_weight_bytes(const char *dtype)
{
    enum fb_dtype t;
    return wtype_parse(dtype, &t) == 0 ? engine_weight_bytes(t) : 0;
}

double cost_predictor_params(const struct model_shape *s, double rank)
{
    return (double)s->n_layers * (rank * ((double)s->d_model + s->d_ff) + s->d_ff);
}

bool cost_policy_needs_trace(const struct policy_ops *p)
{
    return !p->reads_whole_layers && !p->keeps_recent;
}

bool cost_layout_needs_trace(const struct layout_ops *l)
{
    return l->needs_rows; /* its reads depend on which rows, not only how many */
}

#define NEEDS_TRACE "lru, lfu, hot, belady and the layouts friends and coalesce:G need volumes replayed from a trace"

int cost_check_policy(const struct policy_spec *policy, bool have_trace, char *err, size_t errlen)
{
    char name[POLICY_NAME_MAX];
    cache_policy_name(policy, name, sizeof name);
    if (!policy->ops)
        return err_set(err, errlen, "no policy to price");
    if (!have_trace && cost_policy_needs_trace(policy->ops))
        return err_set(err, errlen, "policy '%s' is priced from a trace's exact sets only: %s", name, NEEDS_TRACE);
    return 0;
}

int cost_check_layout(const struct layout_spec *layout, bool have_trace, char *err, size_t errlen)
{
    char name[LAYOUT_NAME_MAX];
    cache_layout_name(layout, name, sizeof name);
    if (!layout->ops)
        return err_set(err, errlen, "no layout to price");
    if (!have_trace && cost_layout_needs_trace(layout->ops))
        return err_set(err, errlen, "layout '%s' is priced from a trace's exact sets only: %s", name, NEEDS_TRACE);
    return 0;
}

void volumes_from_fractions(const struct model_shape *s, const struct policy_ops *p, double loaded,
                            double resident, struct token_volumes *v)
{
    double neurons = (double)s->d_ff * s->n_layers;
    memset(v, 0, sizeof *v);
    v->neurons_loaded = loaded * neurons;
    v->rows_inserted = v->neurons_loaded;
    /* The predictor alone keeps nothing: each token overwrites the last
     * token's rows, so nothing is deleted. The window evicts as many rows as
     * it admits once it is full (the steady state). */
    v->rows_deleted = p->keeps_reads ? v->neurons_loaded : 0;
    v->cache_rows = p->keeps_reads ? resident * neurons : v->neurons_loaded;
}

void volumes_transposed_from_densities(const struct model_shape *s, double channel_density, double down_density,
                                       struct token_volumes *v)
{
    memset(v, 0, sizeof *v);
    v->transposed = true;
    double chan = channel_density * s->d_model * s->n_layers, down = down_density * s->d_ff * s->n_layers;
    v->chan = (struct stream_volumes){.rows_loaded = chan, .rows_inserted = chan, .cache_rows = chan, .computed = chan};
    v->down = (struct stream_volumes){.rows_loaded = down, .rows_inserted = down, .cache_rows = down, .computed = down};
    snprintf(v->source, sizeof v->source, "densities given: %.2f%% of the input channels, %.2f%% of the rows of down",
             100 * channel_density, 100 * down_density);
}

/* Parameter counts of the parts the cost model tells apart. */
struct parts {
    struct param_counts pc;
    double out_proj;   /* vocab x d_model read once per token to produce logits */
    double kv_per_ctx; /* KV-cache values per token of context, all layers */
    double ffn_bias;   /* biases of the FFN, all layers (resident with the rows) */
};

static void model_parts(const struct model_shape *s, struct parts *p)
{
    model_shape_params(s, &p->pc);
    p->out_proj = (double)s->vocab_size * s->d_model;
    double head_dim = model_shape_head_dim(s);
    p->kv_per_ctx = 2.0 * s->n_layers * s->n_kv_heads * head_dim;
    p->ffn_bias = s->biases ? (double)s->n_layers * s->d_ff : 0;
}

/* Bytes of weights and KV touched per token by dense decode. */
static double dense_compute_bytes(const struct model_shape *s, double bytes, double context)
{
    struct parts p;
    model_parts(s, &p);
    return bytes * ((double)p.pc.attention + (double)p.pc.ffn + (double)p.pc.norms + p.out_proj +
                    p.kv_per_ctx * model_shape_attended(s, context));
}

static double row_bytes(const struct model_shape *s, double bytes)
{
    return (double)unit_neuron_weights(s) * bytes;
}

static int load_rule_shape(const struct fb_settings *set, const struct derive_rule *r, struct model_shape *s,
                           double *bytes, const char *what, char *err, size_t errlen)
{
    if (model_shape_load(set, r->model, s, err, errlen) != 0)
        return -1;
    *bytes = cost_weight_bytes(r->dtype[0] ? r->dtype : "f16");
    if (!*bytes) {
        err_set(err, errlen, "%s derive_from: unknown dtype '%s'", what, r->dtype);
        return -1;
    }
    return 0;
}

/* Rows copied in DRAM per token, as the engine moves them
 * (engine/ffn/streamer_step.c): each deleted row's hole is filled with the layer's
 * last row (Fig. 6); an inserted row is read straight into its cache slot
 * unless its read also spans rows not kept (coalesce:G with G > 0,
 * friends), which lands in a bounce buffer and is copied from there.
 * Policies that keep nothing they read (predictor, hot's misses) copy
 * nothing: their rows are computed in the staging area and dropped. */
static double rows_copied(const struct policy_ops *pol, const struct layout_spec *layout,
                          const struct token_volumes *v)
{
    if (!pol->keeps_reads)
        return 0;
    const struct layout_ops *lay = layout->ops;
    bool bounced = lay->reads_unneeded && (!lay->takes_arg || layout->arg > 0);
    return v->rows_deleted + (bounced ? v->rows_inserted : 0);
}

/* Context of the paper's runs: a 128-token prompt, then 256 generated. */
#define PAPER_CONTEXT 256.0

int cost_resolve_profile(struct hw_profile *hw, const struct fb_settings *set, char *err, size_t errlen)
{
    struct model_shape s;
    double bytes;
    for (size_t i = 0; i < hw->n_compute; i++) {
        struct compute_rate *c = &hw->compute[i];
        if (c->derive.ms <= 0)
            continue;
        if (load_rule_shape(set, &c->derive, &s, &bytes, "compute", err, errlen) != 0)
            return -1;
        c->bw = dense_compute_bytes(&s, bytes, PAPER_CONTEXT) / (c->derive.ms * 1e-3);
    }
    if (hw->mem_derive.ms > 0) {
        if (load_rule_shape(set, &hw->mem_derive, &s, &bytes, "dram", err, errlen) != 0)
            return -1;
        struct token_volumes v;
        volumes_from_fractions(&s, &policy_window, hw->mem_derive.fraction, 0, &v);
        double rb = row_bytes(&s, bytes);
        /* the paper's window over bundled rows */
        const struct layout_spec bundled = layout_spec_of(&layout_bundled, 0);
        double moved = rows_copied(&policy_window, &bundled, &v) * rb;
        hw->copy_row_bytes[0] = rb;
        hw->copy_bw[0] = moved / (hw->mem_derive.ms * 1e-3);
        hw->n_copy = 1;
        hw->per_row_ns = 0;
    }
    if (hw->flash_derive.ms > 0 && hw->flash.n_grid < HW_MAX_POINTS) {
        if (load_rule_shape(set, &hw->flash_derive, &s, &bytes, "flash", err, errlen) != 0)
            return -1;
        double rb = row_bytes(&s, bytes);
        double moved = hw->flash_derive.fraction * s.d_ff * s.n_layers * rb;
        struct flash_point pt = {rb, hw->io_threads, moved / (hw->flash_derive.ms * 1e-3)};
        hw->points[hw->flash.n_grid++] = pt;
        /* One point: only the read-rate ceiling can move. */
        if (flash_fit(hw->points + hw->flash.n_grid - 1, 1, FIT_IOPS, &hw->flash.fit) < 0) {
            err_set(err, errlen, "%s: cannot fit the derived flash point", hw->path);
            return -1;
        }
        hw->flash_derive.ms = 0; /* resolved once */
    }
    return 0;
}

/* What every part of one prediction shares. */
struct pricing {
    const struct cost_config *c;
    const struct policy_ops *pol;
    const struct compute_rate *rate;
    struct parts p;
    enum fb_dtype type; /* the weights' type */
    double B;          /* bytes per weight: its share of a block (engine_weight_bytes) */
    double rb;         /* bytes of one row */
    bool whole;        /* reads whole layers (naive, hybrid): the model streamed */
    bool streams_all;  /* holds no part of any layer (naive) */
    bool split;        /* each vector its own read */
    bool engine;       /* the profile has fixed costs: priced as the engine reads and computes */
    bool transposed;   /* the transposed layout's two streams (cost_model.h), not whole layers */
    double chan_rb, down_rb; /* transposed: a channel bundle's and a row of down's bytes */
    uint32_t pieces;   /* a neuron bundle's parts (its unit geometry's extents): split's reads per row */
    uint32_t chan_parts; /* transposed: a channel bundle's parts */
};

/* One transposed stream's reads at its mean read size; its bytes and reads
 * added to o. Returns its ms per token. */
static double stream_io_ms(const struct pricing *x, const struct stream_volumes *v, double rb,
                           struct cost_prediction *o)
{
    double bytes = v->read_bytes > 0 ? v->read_bytes : v->rows_loaded * rb;
    double reads = v->reads > 0 ? v->reads : v->rows_loaded;
    if (bytes <= 0 || reads <= 0)
        return 0;
    double thr = flash_throughput(&x->c->hw->flash, bytes / reads, x->c->io_threads, &o->throughput_interpolated);
    o->bytes_per_token += bytes;
    o->reads_per_token += reads;
    return thr > 0 ? 1e3 * bytes / thr : 0;
}

static void price_transposed_io(const struct pricing *x, struct cost_prediction *o)
{
    o->io_ms = stream_io_ms(x, &x->c->vol.chan, x->chan_rb, o) + stream_io_ms(x, &x->c->vol.down, x->down_rb, o);
    o->chunk_bytes = o->reads_per_token > 0 ? o->bytes_per_token / o->reads_per_token : 0;
    o->throughput = o->io_ms > 0 ? o->bytes_per_token / (o->io_ms * 1e-3) : 0;
}

/* One transposed stream's memory management: its copied rows (a keeping
 * policy's deletions) at its row size, and the per-row cost. */
static double stream_mem_ms(const struct pricing *x, const struct stream_volumes *v, double rb)
{
    double moved = (x->pol->keeps_reads ? v->rows_deleted : 0) * rb, bw = hw_copy_bw(x->c->hw, rb);
    return (bw > 0 ? 1e3 * moved / bw : 0) + 1e-6 * (v->rows_inserted + v->rows_deleted) * x->c->hw->per_row_ns;
}

static void price_transposed_memory(const struct pricing *x, struct cost_prediction *o)
{
    const struct token_volumes *v = &x->c->vol;
    o->rows_inserted = v->chan.rows_inserted + v->down.rows_inserted;
    o->rows_deleted = v->chan.rows_deleted + v->down.rows_deleted;
    o->cache_rows = v->chan.cache_rows + v->down.cache_rows;
    o->mem_ms = stream_mem_ms(x, &v->chan, x->chan_rb) + stream_mem_ms(x, &v->down, x->down_rb);
}

/* The weights the kept channels and rows touch: up (and gate) over the kept
 * channels, down over the kept rows (cost_model.h). */
static double transposed_ffn_bytes(const struct pricing *x)
{
    const struct model_shape *s = x->c->shape;
    const struct token_volumes *v = &x->c->vol;
    double vecs = x->chan_parts; /* a channel bundle's columns of d_ff: up, and a GLU's gate */
    return x->B * (vecs * v->chan.computed * s->d_ff + v->down.computed * s->d_model + x->p.ffn_bias);
}

/* The device's rate for reads of c bytes: the best the profile's flash
 * gives at any of its thread counts up to the reader's (a low point of a
 * noisy sweep does not set it; one thread's chain of reads is priced by
 * the per-read cost instead). */
static double device_rate(const struct hw_profile *hw, double c, double threads)
{
    bool interp;
    double best = flash_throughput(&hw->flash, c, threads, &interp);
    for (size_t i = 0; i < hw->flash.n_grid; i++)
        if (hw->points[i].threads <= threads)
            best = fmax(best, flash_throughput(&hw->flash, c, hw->points[i].threads, &interp));
    return best;
}

/* One kind of batch (sim/cost_engine.h), as cost_model.h's formula prices
 * it; its parts beyond the bytes into o. Returns its ms per token. */
static double batch_ms(const struct pricing *x, const struct io_batch_kind *k, struct cost_prediction *o)
{
    const struct hw_profile *hw = x->c->hw;
    const struct hw_fixed *f = &hw->fixed;
    double most = x->c->io_threads ? x->c->io_threads : hw->io_threads;
    double T = fmax(1, fmin(k->reads, most)), c = k->bytes / k->reads;
    double X = device_rate(hw, c, most);
    if (X <= 0)
        return 0;
    /* the slowest thread's lag is a skew in time (threads woken one after
     * another, one read's latency), measured on 4 KiB reads: it does not
     * grow with the read's size */
    double Xs = device_rate(hw, HW_TAIL_READ_BYTES, most);
    double bytes_s = k->reads * c / X, round_s = Xs > 0 ? T * HW_TAIL_READ_BYTES / Xs : 0;
    int e = hw_io_engine(x->c->io_engine[0] ? x->c->io_engine : "psync");
    double one = e < 0 ? 0 : f->read_s[e] + (f->read_bw[e] > 0 ? c / f->read_bw[e] : 0);
    double t = fmax(bytes_s + (hw_read_tail(hw, T) - 1) * round_s, ceil(k->reads / T) * one);
    o->io_batches += k->n;
    o->io_batch_ms += 1e3 * k->n * f->batch_s;
    o->io_tail_ms += 1e3 * k->n * (t - bytes_s);
    return 1e3 * k->n * (f->batch_s + t);
}

/* One job's cost beyond its work: the hand-off (hot) or the wake-up after
 * its wait (cold: the profile's cold job after a layer's share of the
 * token's reads, or after all of them), less what the caller hides of a
 * late worker's delay w by taking its chunks: w/2 while the job's work
 * per thread h lasts, w - h after (an empty job, as calibrate times it,
 * hides nothing). */
static double job_s(const struct pricing *x, const struct job_kind *k, double io_s)
{
    const struct hw_profile *hw = x->c->hw;
    double w = k->after == JOB_HOT ? hw->fixed.job_hot_s
                                   : hw_job_cold(hw, k->after == JOB_AFTER_LAYER ? io_s / x->c->shape->n_layers : io_s);
    double threads = hw->fixed.team_threads > 1 ? hw->fixed.team_threads : 1;
    double h = k->bytes / x->rate->bw / threads;
    return fmax(w / 2, w - h);
}

/* The engine's view of c (sim/cost_engine.h). */
static void engine_view_of(const struct pricing *x, struct engine_view *v)
{
    const struct cost_config *c = x->c;
    memset(v, 0, sizeof *v);
    v->shape = c->shape;
    v->type = x->type;
    v->whole = x->whole;
    v->streams_all = x->streams_all;
    v->keeps = x->pol->keeps_reads;
    v->predictor = c->predictor_fraction > 0 || c->predictor_rank > 0;
    v->predictor_rank = c->predictor_rank;
    v->share = c->dram_share;
    v->context = c->context_tokens;
    v->reads = c->vol.reads > 0 ? c->vol.reads : c->vol.neurons_loaded;
    v->read_bytes = c->vol.neurons_loaded * engine_row_stride(c->shape, x->type);
    v->rows_held = c->vol.cache_rows;
    v->rows_loaded = c->vol.neurons_loaded;
    v->min_parallel = c->hw->fixed.min_parallel_work > 0 ? c->hw->fixed.min_parallel_work : FB_MIN_PARALLEL_WORK_DEFAULT;
}

/* Flash as the engine reads it: its batches, each priced (batch_ms). */
static void price_engine_io(const struct pricing *x, struct cost_prediction *o)
{
    struct engine_view v;
    struct engine_reads r;
    engine_view_of(x, &v);
    engine_reads_of(&v, &r);
    o->fixed = true;
    o->bytes_per_token = o->reads_per_token = 0;
    for (int i = 0; i < r.n_kinds; i++) {
        o->bytes_per_token += r.kind[i].n * r.kind[i].bytes;
        o->reads_per_token += r.kind[i].n * r.kind[i].reads;
        o->io_ms += batch_ms(x, &r.kind[i], o);
    }
    o->chunk_bytes = o->reads_per_token > 0 ? o->bytes_per_token / o->reads_per_token : 0;
    o->throughput = o->io_ms > 0 ? o->bytes_per_token / (o->io_ms * 1e-3) : 0;
}

/* Flash: sequential for whole layers, else the rows the volumes load. */
static int price_io(const struct pricing *x, struct cost_prediction *o, char *err, size_t errlen)
{
    const struct cost_config *c = x->c;
    const struct token_volumes *v = &c->vol;
    if (x->engine) {
        price_engine_io(x, o);
        return 0;
    }
    if (x->transposed) {
        price_transposed_io(x, o);
        return 0;
    }
    if (x->whole) {
        double bb = c->baseline_io_dtype[0] ? cost_weight_bytes(c->baseline_io_dtype) : x->B;
        double all = bb * (double)x->p.pc.total;
        o->bytes_per_token = x->streams_all ? all : all * (1 - c->dram_share);
        o->throughput = c->hw->flash.sequential_bw;
        if (o->throughput <= 0)
            return err_set(err, errlen, "%s gives no sequential bandwidth for naive/hybrid", c->hw->path);
        o->chunk_bytes = 0; /* sequential */
        o->reads_per_token = 0;
    } else {
        double pieces = x->pieces;
        o->chunk_bytes = x->split ? x->rb / pieces : x->rb;
        o->bytes_per_token = v->read_bytes > 0 ? v->read_bytes : v->neurons_loaded * x->rb;
        o->reads_per_token = v->reads > 0 ? v->reads : v->neurons_loaded * (x->split ? pieces : 1);
        /* With coalesced reads the mean read is larger than one bundle. */
        double chunk = o->reads_per_token > 0 ? o->bytes_per_token / o->reads_per_token : o->chunk_bytes;
        if (chunk > 0)
            o->chunk_bytes = chunk;
        o->throughput = flash_throughput(&c->hw->flash, o->chunk_bytes, c->io_threads, &o->throughput_interpolated);
    }
    o->io_ms = o->throughput > 0 ? 1e3 * o->bytes_per_token / o->throughput : 0;
    return 0;
}

/* Memory management: the policies that place what they read into the cache. */
static void price_memory(const struct pricing *x, struct cost_prediction *o)
{
    const struct cost_config *c = x->c;
    const struct token_volumes *v = &c->vol;
    if (x->whole)
        return;
    if (x->transposed) {
        price_transposed_memory(x, o);
        return;
    }
    o->rows_inserted = v->rows_inserted;
    o->rows_deleted = v->rows_deleted;
    o->cache_rows = v->cache_rows;
    double moved = rows_copied(x->pol, &c->layout, v) * x->rb;
    double bw = hw_copy_bw(c->hw, x->rb);
    o->mem_ms = (bw > 0 ? 1e3 * moved / bw : 0) + 1e-6 * (v->rows_inserted + v->rows_deleted) * c->hw->per_row_ns;
}

/* Rows of the FFN read whole from flash per token, as the engine checks
 * them (engine/ffn/streamer_read.c: land): none for split (single vectors)
 * or the transposed file; naive's every row, hybrid's non-resident ones
 * (the engine's count with fixed costs, else the streamed bytes' rows);
 * the volumes' rows loaded for the other policies. */
static double rows_read_whole(const struct pricing *x, const struct cost_prediction *o)
{
    const struct model_shape *s = x->c->shape;
    double all = (double)s->n_layers * (double)s->d_ff;
    if (x->split || x->transposed)
        return 0;
    if (!x->whole)
        return x->c->vol.neurons_loaded;
    if (x->engine) {
        struct engine_view ev;
        engine_view_of(x, &ev);
        return (double)s->n_layers * (double)(s->d_ff - (x->streams_all ? 0 : engine_hybrid_rows(&ev)));
    }
    return fmin(all, o->bytes_per_token / x->rb);
}

/* Verification: the checked bundles' bytes at the CRC rate, into mem_ms. */
static void price_verify(const struct pricing *x, struct cost_prediction *o)
{
    if (!x->c->verify)
        return;
    o->verify = true;
    o->verify_bytes = rows_read_whole(x, o) * x->rb;
    double bw = x->c->hw->crc_bw;
    o->verify_unpriced = bw <= 0 && o->verify_bytes > 0;
    o->verify_ms = bw > 0 ? 1e3 * o->verify_bytes / bw : 0;
    o->mem_ms += o->verify_ms;
}

/* Compute: bandwidth-bound unless the FLOPs take longer. */
static double compute_ms(const struct pricing *x, double bytes)
{
    return 1e3 * fmax(bytes / x->rate->bw, x->rate->flops > 0 ? bytes / x->B * 2 / x->rate->flops : 0);
}

static void price_compute(const struct pricing *x, struct cost_prediction *o)
{
    const struct cost_config *c = x->c;
    const struct token_volumes *v = &c->vol;
    double B = x->B;
    double attn_b =
        B * (double)x->p.pc.attention + B * x->p.kv_per_ctx * model_shape_attended(c->shape, c->context_tokens);
    double other_b = B * ((double)x->p.pc.norms + x->p.out_proj);
    double pred_params = 0, ffn_b;
    if (x->whole) {
        ffn_b = B * (double)x->p.pc.ffn;
    } else if (x->transposed) { /* no predictor: the source thresholds the input */
        ffn_b = transposed_ffn_bytes(x);
    } else {
        pred_params = c->predictor_rank > 0 ? cost_predictor_params(c->shape, c->predictor_rank)
                                            : c->predictor_fraction * (double)x->p.pc.total;
        ffn_b = v->cache_rows * x->rb + B * x->p.ffn_bias;
    }
    o->dram_predictor = B * pred_params;
    o->attention_ms = compute_ms(x, attn_b);
    o->other_ms = compute_ms(x, other_b);
    o->predictor_ms = compute_ms(x, o->dram_predictor);
    o->ffn_ms = compute_ms(x, ffn_b);
    o->compute_ms = o->attention_ms + o->other_ms + o->predictor_ms + o->ffn_ms;
    if (!x->engine)
        return;
    const struct hw_fixed *f = &c->hw->fixed;
    struct engine_view ev;
    struct engine_jobs j;
    engine_view_of(x, &ev);
    engine_jobs_of(&ev, &j);
    o->team_jobs = j.jobs;
    o->team_cold_jobs = j.cold;
    o->jobs_ms = 0;
    for (int i = 0; i < j.n_kinds; i++)
        o->jobs_ms += 1e3 * j.kind[i].n * job_s(x, &j.kind[i], 1e-3 * o->io_ms);
    o->token_fixed_ms = 1e3 * f->token_s;
    o->other_ms += o->jobs_ms + o->token_fixed_ms;
    o->compute_ms += o->jobs_ms + o->token_fixed_ms;
}

/* DRAM held, by part. */
static void price_dram(const struct pricing *x, struct cost_prediction *o)
{
    double B = x->B;
    o->dram_embeddings = B * ((double)x->p.pc.embeddings + (double)x->p.pc.lm_head);
    o->dram_attention = B * ((double)x->p.pc.attention + (double)x->p.pc.norms);
    if (x->streams_all) {
        o->dram_embeddings = o->dram_attention = 0;
        o->dram_ffn = 0;
    } else if (x->whole) {
        /* Half the model resident: what is not embeddings or attention is FFN. */
        o->dram_ffn = fmax(0, x->c->dram_share * o->model_bytes - o->dram_embeddings - o->dram_attention);
    } else if (x->transposed) {
        o->dram_ffn = x->c->vol.chan.cache_rows * x->chan_rb + x->c->vol.down.cache_rows * x->down_rb + B * x->p.ffn_bias;
    } else {
        o->dram_ffn = x->c->vol.cache_rows * x->rb + B * x->p.ffn_bias;
    }
    o->dram_total = o->dram_embeddings + o->dram_attention + o->dram_predictor + o->dram_ffn;
}

/* The device's terms (a profile with a device only), from the volumes as
 * cost_model.h's struct cost_prediction says. */
static void price_device(const struct pricing *x, struct cost_prediction *o)
{
    const struct cost_config *c = x->c;
    const struct model_shape *s = c->shape;
    if (!c->hw->device.present || x->transposed) /* the transposed file on a device is not modelled */
        return;
    bool predictor = strcmp(x->pol->name, "predictor") == 0, cache = !x->streams_all && !predictor;
    uint64_t L = s->n_layers;
    double rows = x->whole ? fmin((double)L * s->d_ff, o->bytes_per_token / x->rb) : c->vol.rows_inserted;
    if (x->whole && x->engine) { /* bytes_per_token holds dram.bin and the padding: the rows as the engine reads them */
        struct engine_view ev;
        engine_view_of(x, &ev);
        rows = (double)L * (s->d_ff - (x->streams_all ? 0 : engine_hybrid_rows(&ev)));
    }
    /* a row goes up as the engine stores it: its bundle, padded to the direct-I/O alignment */
    uint64_t stride = ((uint64_t)ceil(x->rb) + FB_BUNDLE_ALIGN - 1) / FB_BUNDLE_ALIGN * FB_BUNDLE_ALIGN;
    double moves = cache && !x->whole ? c->vol.rows_deleted : 0;
    struct dev_shape ds = {.n_layers = s->n_layers, .d_model = s->d_model, .vocab = s->vocab_size,
                           .n_heads = s->n_heads, .n_kv_heads = s->n_kv_heads, .row_stride = stride,
                           .up_bias = s->biases, .down_bias = s->biases,
                           .pos_embedding = strcmp(s->position, "learned") == 0,
                           .rope = strcmp(s->position, "rope") == 0, .qk_norm = s->qk_norm,
                           .parallel_block = s->parallel_block,
                           .device_predictor = !x->whole && (c->predictor_fraction > 0 || c->predictor_rank > 0),
                           .d_ff = s->d_ff};
    /* per layer: one group of rows used once or one of rows appended, each
     * one upload run, and one batch of reads with its wait for the device
     * (naive: a second, its slice of dram.bin); that wait covers the ring
     * slot sent a layer before, so reusing it waits for nothing more */
    struct dev_volumes v = {.rows_inserted = (uint64_t)(rows + 0.5), .row_moves = (uint64_t)(moves + 0.5),
                            .staged_groups = x->whole || predictor ? L : 0, .append_groups = cache && !x->whole ? L : 0,
                            .move_batches = moves > 0 ? L : 0, .read_waits = x->streams_all ? 2 * L : L};
    v.upload_runs = v.staged_groups + v.append_groups;
    struct dev_terms t;
    struct dev_time tm;
    dev_terms_token(&ds, &v, &t);
    dev_terms_time(c->hw, &t, true, &tm);
    o->device = true;
    o->dev_bytes_up = (double)t.bytes_up;
    o->dev_bytes_down = (double)t.bytes_down;
    o->dev_row_moves = (double)v.row_moves;
    o->dev_launches = (double)t.launches;
    o->dev_syncs = (double)t.syncs;
    o->dev_uploads = (double)t.uploads;
    o->dev_downloads = (double)t.downloads;
    o->h2d_ms = tm.h2d_ms;
    o->d2h_ms = tm.d2h_ms;
    o->launch_ms = tm.launch_ms;
    o->sync_ms = tm.sync_ms;
    o->device_total_ms = o->serial_ms + tm.h2d_ms + tm.d2h_ms + tm.launch_ms + tm.sync_ms;
}

/* The units at the dtype: a neuron bundle's parts, and the transposed
 * layout's rows' sizes, whose volumes are needed (a policy that is not
 * naive or hybrid). */
static int units_setup(struct pricing *x, char *err, size_t errlen)
{
    const struct cost_config *c = x->c;
    enum fb_dtype t;
    if (wtype_parse(c->dtype, &t) != 0)
        return err_set(err, errlen, "unknown dtype '%s' (use %s)", c->dtype, wtype_names());
    struct unit_dims d = unit_dims_of_shape(c->shape, t);
    struct unit_geometry bundle;
    struct transposed_geometry g;
    if (unit_geometry_make(UNIT_NEURON_BUNDLE, &d, 0, &bundle, err, errlen) != 0 ||
        cache_transposed_geometry(&d, 0, &g, err, errlen) != 0)
        return -1;
    x->pieces = bundle.n_extents;
    x->chan_parts = g.chan_unit.n_extents;
    x->transposed = c->layout.ops->transposed && !x->whole;
    if (x->transposed && !c->vol.transposed)
        return err_set(err, errlen, "layout transposed is priced from its two streams' volumes: a trace with channel "
                                    "sets (--trace), or --channel-density and --down-density");
    if (!x->transposed && c->vol.transposed && !x->whole)
        return err_set(err, errlen, "channel and down volumes are the transposed layout's (--layout transposed)");
    x->chan_rb = (double)g.chan.row_bytes;
    x->down_rb = (double)g.down.row_bytes;
    return 0;
}

int cost_predict(const struct cost_config *c, struct cost_prediction *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    struct pricing x = {.c = c};
    if (wtype_parse(c->dtype, &x.type) != 0 || !(x.B = engine_weight_bytes(x.type)))
        return err_set(err, errlen, "unknown dtype '%s' (use %s)", c->dtype, wtype_names());
    x.rate = hw_compute(c->hw, c->dtype);
    if (!x.rate || x.rate->bw <= 0)
        return err_set(err, errlen, "%s has no compute rate for %s", c->hw->path, c->dtype);
    if (cost_check_policy(&c->policy, c->vol.replayed, err, errlen) != 0 ||
        cost_check_layout(&c->layout, c->vol.replayed, err, errlen) != 0)
        return -1;
    x.pol = c->policy.ops;
    x.whole = x.pol->reads_whole_layers;
    x.streams_all = x.whole && !x.pol->keeps_resident_part;
    x.split = c->layout.ops->per_vector;
    if (units_setup(&x, err, errlen) != 0)
        return -1;
    x.engine = c->hw->fixed.present && !x.split && !x.transposed; /* split's vectors: priced by bytes as before */
    model_parts(c->shape, &x.p);
    o->model_bytes = x.B * (double)x.p.pc.total;
    x.rb = row_bytes(c->shape, x.B);
    if (price_io(&x, o, err, errlen) != 0)
        return -1;
    price_memory(&x, o);
    price_verify(&x, o);
    price_compute(&x, o);
    o->serial_ms = o->io_ms + o->mem_ms + o->compute_ms;
    o->overlapped_ms = fmax(o->io_ms, o->compute_ms) + o->mem_ms;
    price_dram(&x, o);
    price_device(&x, o);
    return 0;
}

double cost_rel_err(double predicted, double reference)
{
    return reference != 0 ? (predicted - reference) / reference : 0;
}
