#include "sim/cost_engine.h"

#include <math.h>
#include <string.h>

#include "cache/unit_geometry.h"
#include "common/limits.h"

double engine_weight_bytes(enum fb_dtype t)
{
    return wtype_valid(t) ? (double)wtype_block_bytes(t) / wtype_block_elems(t) : 0;
}

double engine_row_stride(const struct model_shape *s, enum fb_dtype t)
{
    struct unit_dims d = unit_dims_of_shape(s, t);
    struct unit_geometry g;
    char err[160];
    if (unit_geometry_make(UNIT_NEURON_BUNDLE, &d, FB_BUNDLE_ALIGN, &g, err, sizeof err) != 0)
        return 0;
    return (double)g.stride;
}

double engine_dram_bytes(const struct model_shape *s, enum fb_dtype t)
{
    struct param_counts pc;
    model_shape_params(s, &pc);
    double rows = (double)unit_neuron_weights(s) * s->d_ff * s->n_layers;
    return engine_weight_bytes(t) * ((double)pc.total - rows);
}

/* run_plan.c's hybrid_capacity on the cost model's sizes: the KV cache
 * at twice the mean context (the run's longest), in f32. */
double engine_hybrid_rows(const struct engine_view *v)
{
    const struct model_shape *s = v->shape;
    double stride = engine_row_stride(s, v->type), dram = engine_dram_bytes(s, v->type);
    double model = dram + stride * s->d_ff * s->n_layers;
    double kv = 2.0 * s->n_layers * (2 * v->context + 1) * ((double)model_shape_head_dim(s) * s->n_kv_heads) * 4;
    double room = v->share * model - dram - kv - (double)s->d_ff * stride;
    double per = (double)s->n_layers * stride - stride;
    if (room <= 0)
        return 0;
    double r = per > 0 ? floor(room / per) : s->d_ff;
    return fmin(r, s->d_ff);
}

/* n batches of one request of `bytes` each, split at ENGINE_MAX_READ. */
static void add_requests(struct engine_reads *out, double n, double bytes)
{
    if (n <= 0 || bytes <= 0)
        return;
    out->kind[out->n_kinds++] = (struct io_batch_kind){n, ceil(bytes / ENGINE_MAX_READ), bytes};
}

void engine_reads_of(const struct engine_view *v, struct engine_reads *out)
{
    const struct model_shape *s = v->shape;
    double L = s->n_layers, stride = engine_row_stride(s, v->type);
    memset(out, 0, sizeof *out);
    if (!v->whole) {
        if (v->reads > 0)
            out->kind[out->n_kinds++] = (struct io_batch_kind){L, v->reads / L, v->read_bytes / L};
        return;
    }
    if (v->streams_all) {
        double per = ceil(engine_dram_bytes(s, v->type) / L / FB_BUNDLE_ALIGN) * FB_BUNDLE_ALIGN;
        double scratch = fmin(per, ENGINE_STREAM_SCRATCH), fills = ceil(per / scratch);
        add_requests(out, L * fills, per / fills);
    }
    double rows = v->streams_all ? s->d_ff : s->d_ff - engine_hybrid_rows(v);
    add_requests(out, L, rows * stride);
}

static void add_jobs(struct engine_jobs *out, double n, double bytes, int after)
{
    if (n <= 0 || out->n_kinds == ENGINE_JOB_KINDS) /* the count above is every kind engine_jobs_of adds */
        return;
    out->kind[out->n_kinds++] = (struct job_kind){n, bytes, after};
    out->jobs += n;
    out->cold += after != JOB_HOT ? n : 0;
}

/* An FFN call over n rows of d (ck_ffn_rows): its groups, then their sum
 * (no work to speak of), when parallel; the groups' job after a wait. */
static void ffn_call(struct engine_jobs *out, const struct engine_view *v, double L, double n, int after)
{
    double d = v->shape->d_model;
    if (n < 1 || n * d < v->min_parallel)
        return;
    add_jobs(out, L, n * (double)unit_neuron_weights(v->shape) * engine_weight_bytes(v->type), after);
    add_jobs(out, L, 0, JOB_HOT);
}

/* A matrix-vector product of r x c, when parallel. */
static void matvec(struct engine_jobs *out, const struct engine_view *v, double n, double r, double c, int after)
{
    if (r * c >= v->min_parallel)
        add_jobs(out, n, r * c * engine_weight_bytes(v->type), after);
}

void engine_jobs_of(const struct engine_view *v, struct engine_jobs *out)
{
    const struct model_shape *s = v->shape;
    double d = s->d_model, L = s->n_layers;
    double hd = model_shape_head_dim(s), kv = hd * s->n_kv_heads;
    memset(out, 0, sizeof *out);
    matvec(out, v, 2 * L, d, d, JOB_HOT);  /* q, o */
    matvec(out, v, 2 * L, kv, d, JOB_HOT); /* k, v */
    double attended = model_shape_attended(s, v->context); /* a sliding window reads its last W */
    if (attended * s->n_heads * hd >= v->min_parallel / 2)
        add_jobs(out, L, 2 * attended * kv * sizeof(float), JOB_HOT);
    double before = 0, after; /* the FFN's rows computed before the layer's reads, and after */
    if (v->whole) {
        before = v->streams_all ? 0 : engine_hybrid_rows(v);
        after = s->d_ff - before;
    } else {
        after = v->rows_loaded / L;
        before = v->keeps ? fmax(0, v->rows_held - v->rows_loaded) / L : 0;
    }
    ffn_call(out, v, L, before, JOB_HOT);
    ffn_call(out, v, L, after, JOB_AFTER_LAYER);
    if (v->predictor && v->predictor_rank > 0) {
        matvec(out, v, L, v->predictor_rank, d, JOB_HOT);
        matvec(out, v, L, s->d_ff, v->predictor_rank, JOB_HOT);
    }
    /* the lm_head: after the token's wait when no layer woke the team (it slept since the last token) */
    matvec(out, v, 1, s->vocab_size, d, out->jobs > 0 ? JOB_HOT : JOB_AFTER_TOKEN);
}
