/* The flash FFN's set-up and tear-down (ffn_flash_impl.h): the streamer
 * of ffn.bin's neuron bundles (its reader, the policy and layout's
 * decisions, each layer's neuron cache with the rows the policy starts
 * with, on a device their mirrors and the pinned ring), naive's dram.bin
 * reader, the step's buffers, what chooses the neurons, and on a device
 * whose memory is not the host's the FFN's compute and the predictor
 * there. Everything a token needs is allocated here. */
#include "engine/ffn/ffn_flash_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/model/model_format.h"

uint32_t ffn_flash_default_rows(const struct ffn_flash_config *cfg, uint32_t d_ff)
{
    if (!cfg->policy.ops)
        return 0;
    return (uint32_t)policy_layer_rows(cfg->policy.ops, cfg->capacity_rows, d_ff);
}


/* The streamer's settings, from the FFN's configuration. */
static struct streamer_config stream_config(const struct ffn_flash_config *cfg)
{
    struct streamer_config sc = cfg->stream;
    sc.read_ahead = cfg->stream.read_ahead && select_source(&cfg->select)->replays;
    return sc;
}


/* The streamer of ffn.bin's neuron bundles (on a device, its mirrors and
 * ring come later: open_device). */
static int open_streamer(struct ffn *f, struct flash_ffn *ff, bool on_device)
{
    const struct ffn_flash_config *cfg = &ff->cfg;
    bool traced = select_source(&cfg->select)->replays;
    /* capacity 0 stays "none" here, as the run plan means it */
    struct streamer_open_args a = {
        .path = f->m->ffn_path,
        .unit_word = "neuron",
        .unit = ff->unit,
        .decide = {cfg->policy, cfg->layout, cfg->capacity_rows, traced ? cfg->select.trace : cfg->profile,
                   traced && cfg->select.use_predicted, false},
        .layer_rows = cfg->layer_rows,
        .default_rows = ffn_flash_default_rows(cfg, f->m->shape.d_ff),
        .crc = f->m->ffn_crc,
        .on_device = on_device,
    };
    struct streamer_config sc = stream_config(cfg);
    struct streamer_hooks hooks = ffn_flash_hooks;
    hooks.ctx = f;
    return streamer_open(&ff->s, &sc, &a, &hooks, &ff->acc, ff->err, ff->errlen);
}

/* naive: dram.bin's reader and the scratch buffer it streams through. */
static int open_dram(struct ffn *f, struct flash_ffn *ff)
{
    if (!ff->cfg.neuron.stream_dram)
        return 0;
    char dram_path[4300], err[512];
    snprintf(dram_path, sizeof dram_path, "%s/%s", f->m->dir, MODEL_DRAM_FILE);
    if (!(ff->dram_reader = streamer_open_reader(&ff->s, dram_path, err, sizeof err)))
        return err_set(ff->err, ff->errlen, "%s", err);
    ff->dram_file_bytes = f->m->dram_bytes;
    ff->scratch_bytes = ffn_flash_stream_scratch(ff->dram_file_bytes, f->m->shape.n_layers, ff->s.align);
    if (io_buffer_alloc(&ff->scratch_mem, ff->scratch_bytes ? ff->scratch_bytes : 1, true) != 0)
        return err_set(ff->err, ff->errlen, "the flash FFN cannot allocate its buffers");
    ff->scratch = ff->scratch_mem.base;
    return 0;
}

static int alloc_step_buffers(struct flash_ffn *ff, const struct model_shape *s)
{
    ff->tmp_out = calloc(s->d_model, sizeof(float));
    ff->z = malloc(s->d_ff * sizeof *ff->z); /* staged biases */
    return ff->tmp_out && ff->z ? 0 : err_set(ff->err, ff->errlen, "the flash FFN cannot allocate its buffers");
}

static int check_trace(const struct ffn_flash_config *cfg, const struct model_shape *s, char *err, size_t errlen)
{
    if (trace_matches_shape(cfg->select.trace, "the trace", s, err, errlen) != 0)
        return -1;
    if (cfg->select.use_predicted && !cfg->select.trace->meta.has_predicted)
        return err_set(err, errlen, "the trace has no predicted sets");
    return 0;
}

/* The true activations, with the run's threshold: the oracle's. */
static struct select_config truth_config(const struct ffn_flash_config *cfg)
{
    return (struct select_config){.ops = &source_oracle, .threshold = cfg->neuron.threshold};
}

/* The selector for cfg's source: its value; the truth's when its choice is
 * the truth (one threshold for the choice, check and record). */
static struct select_config choose_config(const struct ffn_flash_config *cfg)
{
    return select_source(&cfg->select)->truth ? truth_config(cfg) : cfg->select;
}

uint64_t ffn_flash_predictor_bytes(const struct model *m, const struct ffn_flash_config *cfg)
{
    struct select_config c = choose_config(cfg);
    return ffn_flash_deployable(cfg) ? neuron_select_bytes(m, &c) : 0;
}

uint64_t ffn_flash_predictor_madds(const struct model *m, const struct ffn_flash_config *cfg)
{
    struct select_config c = choose_config(cfg);
    return ffn_flash_deployable(cfg) ? neuron_select_madds(m, &c) : 0;
}

/* What chooses the neurons, and the true activations beside it when check
 * asks for them or a trace-driven run records (the oracle's choice is
 * them; a predictor's record without check holds its choice only: a
 * deployment has no up rows to know more). */
static int open_selectors(struct ffn *f, struct flash_ffn *ff)
{
    const struct ffn_flash_config *cfg = &ff->cfg;
    const struct neuron_source_ops *src = select_source(&cfg->select);
    struct select_config c = choose_config(cfg);
    if (!src->replays) {
        if (neuron_select_open(&ff->choose, f->m, &c, ff->err, ff->errlen) != 0)
            return -1;
        ff->have_choose = true;
    }
    bool truth = !src->truth && (cfg->neuron.check || (cfg->record && src->replays));
    struct select_config oracle = truth_config(cfg);
    if (truth) {
        if (neuron_select_open(&ff->truth, f->m, &oracle, ff->err, ff->errlen) != 0)
            return -1;
        ff->have_truth = true;
    }
    ff->recorded = malloc(f->m->shape.d_ff * sizeof *ff->recorded);
    if (!ff->recorded)
        return err_set(ff->err, ff->errlen, "the flash FFN cannot allocate its buffers");
    ff->oracle_bytes = src->truth ? ff->choose.rows_bytes : ff->truth.rows_bytes;
    ff->predictor_bytes = ffn_flash_predictor_bytes(f->m, cfg);
    return 0;
}

/* Whether the engine's backend computes in memory the host cannot reach
 * (sim, opencl, cuda): then the caches live there (open_device). */
static bool backend_off_host(const struct ffn *f)
{
    const struct dev_model *dm = f->dev;
    struct backend_device info = {.host_visible = true};
    if (dm && dm->be)
        dm->ops->info(dm->be, &info);
    return !info.host_visible;
}

/* On a device whose memory is not the host's: the FFN's compute there
 * (its staging area), the predictor, and the streamer's ring and mirrors
 * (with the rows the policy starts with, read now: set-up, not a token's). */
static int open_device(struct ffn *f, struct flash_ffn *ff)
{
    const struct dev_model *dm = f->dev;
    if (!ff->s.on_device)
        return 0;
    if (fdev_init(&ff->fdev, dm->ops, dm->be, f->m, ff->s.staging_rows, ff->err, ff->errlen) != 0)
        return -1;
    if (select_source(&ff->cfg.select)->chooses_on_device) {
        if (pdev_init(&ff->pdev, dm->ops, dm->be, ff->cfg.select.predictor, ff->err, ff->errlen) != 0)
            return -1;
        ff->dev_predict = true;
    }
    return streamer_open_device(&ff->s, dm->ops, dm->be, fdev_stage_rows(&ff->fdev, 0), fdev_stage_bias(&ff->fdev, 0),
                                ff->err, ff->errlen);
}

int ffn_flash_create(struct ffn *f, char *err, size_t errlen)
{
    const struct ffn_flash_config *cfg = f->config;
    const struct model *m = f->m;
    struct flash_ffn *ff = calloc(1, sizeof *ff);
    if (!ff || !cfg) {
        free(ff);
        return err_set(err, errlen, "the flash FFN needs its configuration");
    }
    f->priv = ff;
    ff->err = err;
    ff->errlen = errlen;
    ff->cfg = *cfg;
    if (model_unit_geometry(m, &ff->unit, err, errlen) != 0)
        return -1;
    if (select_source(&cfg->select)->replays && check_trace(cfg, &m->shape, err, errlen) != 0)
        return -1;
    if (open_streamer(f, ff, backend_off_host(f)) != 0 || open_dram(f, ff) != 0 ||
        alloc_step_buffers(ff, &m->shape) != 0)
        return -1;
    if (open_selectors(f, ff) != 0 || open_device(f, ff) != 0)
        return -1;
    ff->err = NULL; /* the buffer is create's caller's: later failures go through ffn_flash_error */
    ff->errlen = 0;
    return 0;
}

void ffn_flash_destroy(struct ffn *f)
{
    struct flash_ffn *ff = f->priv;
    if (!ff)
        return;
    streamer_close(&ff->s); /* syncs the device first: nothing in flight reads or writes what is freed */
    if (ff->dram_reader)
        flash_reader_close(ff->dram_reader);
    pdev_free(&ff->pdev);
    fdev_free(&ff->fdev);
    if (ff->scratch)
        io_buffer_free(&ff->scratch_mem);
    neuron_select_close(&ff->choose);
    neuron_select_close(&ff->truth);
    free(ff->z);
    free(ff->tmp_out);
    free(ff->recorded);
    free(ff);
    f->priv = NULL;
}
