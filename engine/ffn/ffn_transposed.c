/* A layer of input sparsity on flash (ffn_transposed.h): the kept input
 * channels chosen and summed through the channel streamer into z and g,
 * then the kept rows of down chosen from h and summed through the down
 * streamer into y. The reads, the caches and the checks are the
 * streamers' (streamer.h, in needed order). */
#include <math.h>
#include <string.h>

#include "common/clock.h"
#include "engine/compute/activation.h"
#include "engine/ffn/ffn_sanity.h"
#include "engine/ffn/ffn_transposed_impl.h"

/* The streamers' hook: units ids[0..n) at rows[] summed into y in that
 * order, each weighted by its entry of w (x_j, or h_i). */
static void sum_rows(void *ctx, int layer, const uint32_t *ids, const uint8_t *const *rows, uint32_t n,
                     const float *w, float *y)
{
    (void)layer;
    struct t_stream *ts = ctx;
    struct t_ffn *tf = ts->f->priv;
    for (uint32_t k = 0; k < n; k++) {
        ts->ptr[k] = rows[k];
        ts->coef[k] = w[ids[k]];
    }
    double t0 = now_ms();
    ck_axpy_rows(ts->f->ck, y, ts->len, ts->ptr, ts->coef, (int)n, ts->f->m->dtype);
    tf->acc.ffn_ms += now_ms() - t0;
}

/* The streamers' hook: the message for a unit that does not match its checksum. */
static void damaged(void *ctx, uint32_t layer, uint32_t id, char *why, size_t len)
{
    const struct t_stream *ts = ctx;
    const struct t_ffn *tf = ts->f->priv;
    ffn_t_unit_damaged(&tf->file, layer, ts->down, id, why, len);
}

const struct streamer_hooks ffn_transposed_hooks = {.compute_rows = sum_rows, .damaged = damaged};

static int fail(struct t_ffn *tf, const char *why)
{
    if (!tf->error[0])
        snprintf(tf->error, sizeof tf->error, "%s", why);
    return -1;
}

/* One stream's step for layer l on its needed[0..n) (ascending), summed
 * with weights w into y (len floats, zeroed first). */
static int stream_step(struct t_ffn *tf, struct t_stream *ts, int l, uint32_t n, const float *w, float *y, int len)
{
    tf->acc.needed += n;
    struct streamer_step *st = streamer_decide(&ts->s, l, n);
    if (st->st.n_extra)
        return fail(tf, "internal: a policy that reads rows besides the needed ones (refused by the setup)");
    ts->len = len;
    streamer_forward(&ts->s, st, NULL, 0, w, y, (uint32_t)len);
    return ts->s.error[0] ? -1 : 0;
}

/* The input channels kept: |x_j| above the layer's input cut. */
static uint32_t keep_channels(struct t_ffn *tf, const struct model_shape *sh, int layer, const float *x)
{
    float cut = tf->cfg.select.input_thresholds[layer];
    uint32_t *ids = tf->chan.s.needed, n = 0;
    for (uint32_t j = 0; j < sh->d_model; j++)
        if (fabsf(x[j]) > cut)
            ids[n++] = j;
    return n;
}

/* h from z and g over the kept channels, and the rows of down kept: as
 * neuron_select's teal_layer chooses them (|act(g)·z|, or |act(z + b)|,
 * above the layer's intermediate cut), valued as the FFN computes them. */
static uint32_t keep_rows(const struct model *m, struct t_ffn *tf, int layer)
{
    const struct arch *a = &m->arch;
    const float *bias = m->layers[layer].ffn_up_bias;
    float cut = tf->cfg.select.inter_thresholds[layer];
    uint32_t d_ff = m->shape.d_ff, *ids = tf->down.s.needed, n = 0;
    for (uint32_t i = 0; i < d_ff; i++) {
        float z = tf->zg[i] + (bias ? bias[i] : 0.0f), g = a->glu ? tf->zg[d_ff + i] : 0.0f;
        float chosen = a->glu ? activation_apply_t(g, a->act, a->fatrelu_threshold) * z
                              : activation_apply_t(z, a->act, a->fatrelu_threshold);
        tf->h[i] = ffn_neuron_value(a, z, g);
        if (fabsf(chosen) > cut)
            ids[n++] = i;
    }
    return n;
}

/* The recorded trace (cfg.record): layer 0 begins the token, then each
 * layer's kept channels (channels set) and kept rows of down (active set),
 * as chosen. 0, or -1 with the sink's reason in tf->error. */
static int record_begin(struct t_ffn *tf)
{
    const struct trace_sink *rec = tf->cfg.record;
    char err[512];
    if (rec && rec->begin_token(rec->impl, tf->next_flags, err, sizeof err) != 0)
        return fail(tf, err);
    return 0;
}

static int record_set(struct t_ffn *tf, int layer, const struct t_stream *ts, uint32_t n)
{
    const struct trace_sink *rec = tf->cfg.record;
    char err[512];
    if (!rec)
        return 0;
    const uint32_t *ids = ts->s.needed;
    int rc = !ts->down ? rec->channels(rec->impl, (uint32_t)layer, ids, n, err, sizeof err)
                       : rec->layer(rec->impl, (uint32_t)layer, ids, n, NULL, 0, err, sizeof err);
    return rc != 0 ? fail(tf, err) : 0;
}

/* Layer 0 begins a token in both streams and the recording. */
static int begin_token(struct t_ffn *tf)
{
    streamer_begin_token(&tf->chan.s);
    streamer_begin_token(&tf->down.s);
    return record_begin(tf);
}

void ffn_transposed_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    struct t_ffn *tf = f->priv;
    const struct model *m = f->m;
    const struct model_shape *sh = &m->shape;
    memset(out, 0, sh->d_model * sizeof *out);
    if (ffn_transposed_error(f) || (layer == 0 && begin_token(tf) != 0)) /* the run stops after this token */
        return;
    ffn_sanity_look(&tf->acc.sanity, (uint32_t)layer, true, x, sh->d_model);
    double t0 = now_ms();
    uint32_t n = keep_channels(tf, sh, layer, x);
    tf->acc.kept_channels += n;
    tf->acc.predictor_ms += now_ms() - t0;
    if (record_set(tf, layer, &tf->chan, n) != 0 ||
        stream_step(tf, &tf->chan, layer, n, x, tf->zg, (int)sh->d_ff * (m->arch.glu ? 2 : 1)) != 0)
        return;
    t0 = now_ms();
    n = keep_rows(m, tf, layer);
    tf->acc.predictor_ms += now_ms() - t0;
    if (record_set(tf, layer, &tf->down, n) != 0 || stream_step(tf, &tf->down, layer, n, tf->h, out, (int)sh->d_model) != 0)
        return;
    if (m->layers[layer].ffn_down_bias)
        ck_add(f->ck, out, m->layers[layer].ffn_down_bias, (int)sh->d_model);
    ffn_sanity_look(&tf->acc.sanity, (uint32_t)layer, false, out, sh->d_model);
}
