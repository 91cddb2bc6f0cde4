/* The flash-resident FFN (see ffn_flash.h for the modes): the neuron
 * bundle's unit operations around the streamer (engine/ffn/streamer.h).
 * One layer step:
 *   1. which neurons: the oracle, the predictor, the gate (neuron_select.h),
 *      or a replaying source's recorded set (its replay hook)
 *   2. the streamer decides, reads and lands them (memory management, one
 *      batch of reads straight into the reserved rows, read-ahead)
 *   3. compute: the backend's ffn_rows over the rows held (its hooks)
 *   4. record: the trace gets the sets
 * Every step is timed separately; nothing is allocated per token (set-up
 * and tear-down: ffn_flash_open.c). */
#include "engine/ffn/ffn_flash_impl.h"
#include "engine/ffn/ffn_sanity.h"
#include "engine/ffn/ffn_transposed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "engine/compute/activation.h"
#include "engine/model/model_integrity.h"

static void fail(struct flash_ffn *ff, const char *what)
{
    streamer_fail(&ff->s, what);
}

static void dev_check(struct flash_ffn *ff, int rc)
{
    streamer_dev_check(&ff->s, rc);
}

/* naive: dram.bin streamed through the scratch buffer, a slice per layer so
 * the whole file passes once per token. */
static void naive_read_dram(struct flash_ffn *ff, int layer, int n_layers)
{
    uint64_t per = (ff->dram_file_bytes + (uint64_t)n_layers - 1) / (uint64_t)n_layers;
    per = (per + ff->s.align - 1) / ff->s.align * ff->s.align;
    uint64_t lo = per * (uint64_t)layer, hi = lo + per;
    uint64_t end = (ff->dram_file_bytes + ff->s.align - 1) / ff->s.align * ff->s.align;
    if (hi > end)
        hi = end;
    while (lo < hi) {
        uint64_t len = hi - lo < ff->scratch_bytes ? hi - lo : ff->scratch_bytes;
        /* the last aligned piece may pass the end of the file: read what exists */
        uint64_t exist = ff->dram_file_bytes > lo ? ff->dram_file_bytes - lo : 0;
        if (len > exist)
            len = (exist / ff->s.align) * ff->s.align;
        if (len == 0)
            break;
        ff->dram_req = (struct flash_read){lo, len, ff->scratch};
        if (streamer_read_batch(&ff->s, ff->dram_reader, &ff->dram_req, 1, &ff->acc.dram_bytes_read) != 0)
            return;
        lo += len;
    }
}

/* out += the FFN over rows[0..n) (bias: one per row, or NULL) */
static void compute_rows(struct ffn *f, struct flash_ffn *ff, const uint8_t *rows, uint32_t n, const float *bias,
                         const float *x, float *out)
{
    if (!n)
        return;
    const struct model *m = f->m;
    double t0 = now_ms();
    ck_ffn_rows(f->ck, ff->tmp_out, rows, m->bundle_stride, (int)n, bias, x, (int)m->shape.d_model, m->dtype,
                        &m->arch);
    ck_add(f->ck, out, ff->tmp_out, (int)m->shape.d_model);
    ff->acc.ffn_ms += now_ms() - t0;
}

/* The streamer's hook: the staged rows as one group, on the host at the
 * staging area with their biases gathered, on a device at its staging area. */
static void compute_staged(void *ctx, int layer, const uint32_t *ids, uint32_t n, const float *x, float *out)
{
    struct ffn *f = ctx;
    struct flash_ffn *ff = f->priv;
    if (ff->s.on_device) {
        double t0 = now_ms();
        if (n)
            dev_check(ff, fdev_rows(&ff->fdev, fdev_stage_rows(&ff->fdev, 0), n, fdev_stage_bias(&ff->fdev, 0)));
        ff->acc.ffn_ms += now_ms() - t0;
        return;
    }
    const float *bias = f->m->layers[layer].ffn_up_bias;
    float *staged_bias = bias ? ff->z : NULL; /* z is free once the needed set is known */
    for (uint32_t k = 0; bias && k < n; k++)
        staged_bias[k] = bias[ids[k]];
    compute_rows(f, ff, ff->s.staging, n, staged_bias, x, out);
}

/* The streamer's hook: rows [first, first + n) of layer's cache, computed
 * into out: on the host, or on the device's mirror of them. */
static void compute_cached(void *ctx, int layer, uint32_t first, uint32_t n, const float *x, float *out)
{
    struct ffn *f = ctx;
    struct flash_ffn *ff = f->priv;
    const struct neuron_cache *c = &ff->s.caches[layer];
    bool bias = f->m->layers[layer].ffn_up_bias != NULL;
    if (!ff->s.on_device) {
        if (c->rows)
            compute_rows(f, ff, c->rows + (uint64_t)first * ff->s.stride, n, bias ? c->up_bias + first : NULL, x,
                         out);
        return;
    }
    const struct neuron_cache_dev *d = &ff->s.mirrors[layer];
    double t0 = now_ms();
    dev_check(ff, fdev_rows(&ff->fdev, d->be ? ncd_rows(d, first) : (struct dev_ref){0}, n,
                            d->be && bias ? ncd_bias(d, first) : (struct dev_ref){0}));
    ff->acc.ffn_ms += now_ms() - t0;
}

static void damaged(void *ctx, uint32_t layer, uint32_t id, char *why, size_t len)
{
    const struct ffn *f = ctx;
    model_bundle_damaged(f->m, layer, id, why, len);
}

static const float *layer_bias(void *ctx, uint32_t layer)
{
    const struct ffn *f = ctx;
    return f->m->layers[layer].ffn_up_bias;
}

const struct streamer_hooks ffn_flash_hooks = {
    .compute_staged = compute_staged,
    .compute_cached = compute_cached,
    .damaged = damaged,
    .layer_bias = layer_bias,
};

/* The neurons the source chooses for this layer (none for naive and
 * hybrid, which read all they do not hold whatever is needed). */
static uint32_t choose_needed(struct ffn *f, struct flash_ffn *ff, int layer, const float *x, bool cached)
{
    if (!cached)
        return 0;
    const struct neuron_source_ops *src = select_source(&ff->cfg.select);
    if (src->replays)
        return src->replay(&ff->cfg.select, (uint64_t)ff->s.token, layer, ff->s.needed);
    double t0 = now_ms();
    uint32_t n = 0;
    if (ff->dev_predict) { /* x stays on the device; its logits come down */
        uint64_t ev = 0;
        dev_check(ff, pdev_choose(&ff->pdev, (uint32_t)layer, ff->fdev.x, ff->s.needed, &n, &ev));
        fring_covered(&ff->s.ring, ev);
        ff->acc.predictor_ms += now_ms() - t0;
        return n;
    }
    n = neuron_select_layer(&ff->choose, layer, f->ck, x, ff->s.needed);
    ff->acc.predictor_ms += now_ms() - t0;
    return n;
}

/* The true active set: the oracle's choice when it drove the step, else
 * computed beside it (the oracle under naive and hybrid, check, a traced
 * record). NULL (n 0) when unknown: a predictor or the gate without check. */
static const uint32_t *true_set(struct ffn *f, struct flash_ffn *ff, int layer, const float *x, bool cached,
                                uint32_t n_needed, uint32_t *n)
{
    *n = 0;
    bool oracle = select_source(&ff->cfg.select)->truth;
    if (oracle && cached) {
        *n = n_needed;
        return ff->s.needed;
    }
    struct neuron_select *s = oracle ? &ff->choose : ff->have_truth ? &ff->truth : NULL;
    if (!s)
        return NULL;
    double t0 = now_ms();
    *n = neuron_select_layer(s, layer, f->ck, x, ff->recorded);
    ff->acc.check_ms += now_ms() - t0;
    return ff->recorded;
}

/* The trace gets the true sets (or, unknown, the choice in their place)
 * and, under a predictor or the gate, the choice as predicted sets. */
static void record_layer(struct flash_ffn *ff, int layer, const uint32_t *truth, uint32_t n_truth, uint32_t n_needed)
{
    const uint32_t *active = truth ? truth : ff->s.needed;
    uint32_t n_active = truth ? n_truth : n_needed;
    bool pred = ffn_flash_deployable(&ff->cfg);
    char err[512];
    const struct trace_sink *rec = ff->cfg.record;
    if (rec->layer(rec->impl, (uint32_t)layer, active, n_active, pred ? ff->s.needed : NULL, pred ? n_needed : 0, err,
                   sizeof err) != 0)
        fail(ff, err);
}

/* Whether the host reads this layer's x (choose_needed, true_set): a
 * device run downloads it only then. */
static bool host_reads_x(const struct flash_ffn *ff, bool cached)
{
    const struct ffn_flash_config *c = &ff->cfg;
    const struct neuron_source_ops *src = select_source(&c->select);
    bool chooses = cached && !src->replays && !ff->dev_predict;
    bool truth = (c->record || c->neuron.check) && !(src->truth && cached) && (src->truth || ff->have_truth);
    return chooses || truth;
}

/* Layer's neurons chosen and its step decided by the streamer. */
static struct streamer_step *decide_layer(struct ffn *f, struct flash_ffn *ff, int layer, const float *x, bool cached)
{
    return streamer_decide(&ff->s, layer, choose_needed(f, ff, layer, x, cached));
}

/* The token's start at layer 0: its count and, recording, its trace entry. */
static void begin_token(struct flash_ffn *ff)
{
    streamer_begin_token(&ff->s);
    if (ff->cfg.record) {
        char err[512];
        if (ff->cfg.record->begin_token(ff->cfg.record->impl, ff->next_flags, err, sizeof err) != 0)
            fail(ff, err);
    }
}

/* One layer but its down bias: x on the host (NULL on a device when the
 * host does not read it), out on the host (NULL on a device). With
 * read-ahead, the next layer's step is decided (and its reads in flight)
 * before this one computes. */
static void flash_layer(struct ffn *f, int layer, const float *x, float *out)
{
    struct flash_ffn *ff = f->priv;
    const struct model *m = f->m;
    if (layer == 0)
        begin_token(ff);
    bool cached = !ff->s.decide.p.ops->extra_reads;
    struct streamer_step *s = ff->s.steps[layer % 2].layer == layer ? &ff->s.steps[layer % 2]
                                                                     : decide_layer(f, ff, layer, x, cached);
    uint32_t n_needed = s->n_needed, n_truth = 0;
    if (cached && select_source(&ff->cfg.select)->truth) /* the true sets: none in every layer is wrong */
        ffn_sanity_chosen(&ff->acc.sanity, n_needed);
    const uint32_t *truth = ff->cfg.record || ff->cfg.neuron.check ? true_set(f, ff, layer, x, cached, n_needed, &n_truth)
                                                             : NULL;
    if (ff->cfg.record)
        record_layer(ff, layer, truth, n_truth, n_needed);
    ff->acc.needed += n_needed;
    const uint32_t *counted = ff->cfg.neuron.check && cached ? truth : NULL;
    bool next = streamer_reads_ahead(&ff->s) && layer + 1 < (int)m->shape.n_layers && !ff->s.error[0];
    if (s->went_ahead) {
        streamer_finish_ahead(&ff->s, s, counted, n_truth);
        if (next)
            decide_layer(f, ff, layer + 1, NULL, cached);
        if (ff->cfg.neuron.stream_dram)
            naive_read_dram(ff, layer, (int)m->shape.n_layers);
        streamer_compute_ahead(&ff->s, s, x, out, m->shape.d_model);
    } else {
        if (ff->cfg.neuron.stream_dram)
            naive_read_dram(ff, layer, (int)m->shape.n_layers);
        streamer_forward(&ff->s, s, counted, n_truth, x, out, m->shape.d_model);
        if (next)
            decide_layer(f, ff, layer + 1, NULL, cached);
    }
    s->layer = -1;
}

static void flash_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    const struct model *m = f->m;
    struct ffn_flash_sanity *sane = &((struct flash_ffn *)f->priv)->acc.sanity;
    ffn_sanity_look(sane, (uint32_t)layer, true, x, m->shape.d_model);
    flash_layer(f, layer, x, out);
    if (m->layers[layer].ffn_down_bias)
        ck_add(f->ck, out, m->layers[layer].ffn_down_bias, (int)m->shape.d_model);
    ffn_sanity_look(sane, (uint32_t)layer, false, out, m->shape.d_model);
}

/* On the engine's buffers: where the host reaches them (cpu), the host
 * path in place, as the engine runs a host FFN; else on the device. */
static int flash_forward_device(struct ffn *f, int layer, int pos, struct dev_ref x, struct dev_ref out)
{
    struct flash_ffn *ff = f->priv;
    const struct dev_model *dm = f->dev;
    if (!ff->s.on_device) {
        const char *xb = dm->ops->host_ptr(dm->be, x.buf);
        char *ob = dm->ops->host_ptr(dm->be, out.buf);
        flash_forward(f, layer, pos, (const float *)(xb + x.off), (float *)(ob + out.off));
        return 0;
    }
    bool need_x = host_reads_x(ff, !ff->s.decide.p.ops->extra_reads);
    if (fdev_layer_begin(&ff->fdev, x, out, need_x) != 0)
        return -1;
    ffn_sanity_look(&ff->acc.sanity, (uint32_t)layer, true, need_x ? ff->fdev.x_host : NULL, f->m->shape.d_model);
    flash_layer(f, layer, need_x ? ff->fdev.x_host : NULL, NULL);
    if (ff->s.dev_failed)
        return -1;
    return fdev_layer_end(&ff->fdev, dev_model_ref(dm, f->m->layers[layer].ffn_down_bias));
}

void ffn_flash_next_token(struct ffn *f, unsigned trace_flags)
{
    if (ffn_is_transposed(f)) {
        ffn_transposed_next_token(f, trace_flags);
        return;
    }
    struct flash_ffn *ff = f->priv;
    ff->next_flags = trace_flags;
}

void ffn_flash_take_token(struct ffn *f, struct ffn_flash_token *out)
{
    if (ffn_is_transposed(f)) {
        ffn_transposed_take_token(f, out);
        return;
    }
    struct flash_ffn *ff = f->priv;
    if (ff->s.on_device) /* the pass ended with a sync: everything enqueued is complete */
        streamer_take_device(&ff->s);
    *out = ff->acc;
    memset(&ff->acc, 0, sizeof ff->acc);
}

struct ffn_flash_sanity ffn_flash_sanity_of(const struct ffn *f)
{
    if (ffn_is_transposed(f))
        return ffn_transposed_sanity(f);
    const struct flash_ffn *ff = f->priv;
    return ff->acc.sanity;
}

const char *ffn_flash_error(const struct ffn *f)
{
    if (ffn_is_transposed(f))
        return ffn_transposed_error(f);
    const struct flash_ffn *ff = f->priv;
    return ff && ff->s.error[0] ? ff->s.error : NULL;
}

uint64_t ffn_flash_dram_bytes(const struct ffn *f, uint64_t *oracle_bytes)
{
    if (ffn_is_transposed(f)) {
        if (oracle_bytes)
            *oracle_bytes = 0;
        return ffn_transposed_dram_bytes(f);
    }
    const struct flash_ffn *ff = f->priv;
    if (oracle_bytes)
        *oracle_bytes = ff->oracle_bytes;
    return ff->s.staging_bytes + ff->s.bounce_bytes + ff->scratch_bytes + ff->s.cache_bytes + ff->predictor_bytes;
}

uint64_t ffn_flash_device_bytes(const struct ffn *f, bool *pinned)
{
    if (ffn_is_transposed(f)) { /* the cpu backend only */
        if (pinned)
            *pinned = true;
        return 0;
    }
    const struct flash_ffn *ff = f->priv;
    if (pinned)
        *pinned = !ff->s.on_device || ff->s.ring.pinned;
    return ff->s.device_bytes + pdev_bytes(&ff->pdev);
}

uint64_t ffn_flash_read_align(const struct ffn *f)
{
    if (ffn_is_transposed(f))
        return ffn_transposed_read_align(f);
    const struct flash_ffn *ff = f->priv;
    return ff->s.align;
}

float ffn_flash_threshold_cut(struct ffn *f, double share, uint64_t *values)
{
    *values = 0;
    if (ffn_is_transposed(f))
        return -1;
    struct flash_ffn *ff = f->priv;
    if (!ff->have_choose || !select_source(&ff->cfg.select)->truth)
        return -1;
    *values = ff->choose.sample.n;
    return value_sample_cut(&ff->choose.sample, share);
}

const struct ffn_ops ffn_flash = {
    .name = "flash",
    .create = ffn_flash_create,
    .forward = flash_forward,
    .forward_device = flash_forward_device,
    .destroy = ffn_flash_destroy,
};
