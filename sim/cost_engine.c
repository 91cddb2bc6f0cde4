#include "sim/cost_engine.h"

#include <math.h>
#include <string.h>

#include "common/limits.h"

double engine_row_stride(const struct model_shape *s, int bytes)
{
    double b = (double)model_shape_neuron_weights(s) * bytes;
    return ceil(b / FB_BUNDLE_ALIGN) * FB_BUNDLE_ALIGN;
}

double engine_dram_bytes(const struct model_shape *s, int bytes)
{
    struct param_counts pc;
    model_shape_params(s, &pc);
    double rows = (double)model_shape_neuron_weights(s) * s->d_ff * s->n_layers;
    return bytes * ((double)pc.total - rows);
}

/* run_plan.c's hybrid_capacity on the cost model's sizes: the KV cache
 * at twice the mean context (the run's longest), in f32. */
double engine_hybrid_rows(const struct engine_view *v)
{
    const struct model_shape *s = v->shape;
    double stride = engine_row_stride(s, v->bytes), dram = engine_dram_bytes(s, v->bytes);
    double model = dram + stride * s->d_ff * s->n_layers;
    double kv = 2.0 * s->n_layers * (2 * v->context + 1) * ((double)s->d_model / s->n_heads * s->n_kv_heads) * 4;
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
    double L = s->n_layers, stride = engine_row_stride(s, v->bytes);
    memset(out, 0, sizeof *out);
    if (!v->whole) {
        if (v->reads > 0)
            out->kind[out->n_kinds++] = (struct io_batch_kind){L, v->reads / L, v->read_bytes / L};
        return;
    }
    if (v->streams_all) {
        double per = ceil(engine_dram_bytes(s, v->bytes) / L / FB_BUNDLE_ALIGN) * FB_BUNDLE_ALIGN;
        double scratch = fmin(per, ENGINE_STREAM_SCRATCH), fills = ceil(per / scratch);
        add_requests(out, L * fills, per / fills);
    }
    double rows = v->streams_all ? s->d_ff : s->d_ff - engine_hybrid_rows(v);
    add_requests(out, L, rows * stride);
}

/* Two jobs (groups, sum) for an FFN call over n rows of d, when parallel. */
static double ffn_jobs(double n, double d, double w)
{
    return n >= 1 && n * d >= w ? 2 : 0;
}

void engine_jobs_of(const struct engine_view *v, double *jobs, double *cold)
{
    const struct model_shape *s = v->shape;
    double d = s->d_model, w = v->min_parallel, L = s->n_layers;
    double hd = d / s->n_heads, kv = hd * s->n_kv_heads;
    double per = (d * d >= w) * 2 + (kv * d >= w) * 2 + (v->context * s->n_heads * hd >= w / 2);
    double before = 0, after; /* the FFN's rows computed before the layer's reads, and after */
    if (v->whole) {
        double held = v->streams_all ? 0 : engine_hybrid_rows(v);
        before = held;
        after = s->d_ff - held;
    } else {
        after = v->rows_loaded / L;
        before = v->keeps ? fmax(0, v->rows_held - v->rows_loaded) / L : 0;
    }
    double f_after = ffn_jobs(after, d, w);
    per += ffn_jobs(before, d, w) + f_after;
    if (v->predictor && v->predictor_rank > 0)
        per += (v->predictor_rank * d >= w) + (s->d_ff * v->predictor_rank >= w);
    double head = (double)s->vocab_size * d >= w;
    *jobs = L * per + head;
    /* the first FFN job after each layer's reads; else the token's first job, the team asleep since the last */
    *cold = f_after > 0 ? L : 0;
    if (per == 0 && head > 0)
        *cold = 1;
}
