/* The flash FFN's set-up and tear-down (ffn_flash_impl.h): the readers of
 * ffn.bin (and naive's dram.bin), the policy and layout's decisions, each
 * layer's neuron cache with the rows the policy starts with, the step's
 * buffers, what chooses the neurons, and on a device whose memory is not
 * the host's the caches' mirrors, the pinned staging ring and the
 * predictor there. Everything a token needs is allocated here. */
#include "engine/ffn/ffn_flash_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/model/model_format.h"

/* Read buffers: 2 MiB-aligned huge pages, touched now (io/io_buffer.h),
 * so page faults belong to set-up, not to the first token. */
static uint8_t *read_buffer(struct io_buffer *b, uint64_t bytes)
{
    return io_buffer_alloc(b, bytes ? bytes : 1, true) == 0 ? b->base : NULL;
}

static int open_readers(struct ffn *f, struct flash_ffn *ff)
{
    const struct ioengine_ops *eng = ioengine_find(ff->cfg.io_engine ? ff->cfg.io_engine : "psync");
    if (!eng) {
        err_set(ff->err, ff->errlen, "I/O engine: unknown '%s' (%s)", ff->cfg.io_engine, ioengine_names());
        return -1;
    }
    struct flash_reader_config rc = {
        .path = f->m->ffn_path,
        .engine = eng,
        .threads = ff->cfg.io_threads ? ff->cfg.io_threads : 32,
        .iodepth = ff->cfg.iodepth ? ff->cfg.iodepth : 1,
        .direct = ff->cfg.direct,
        .max_read = MAX_READ,
        .fault = ff->cfg.fault,
    };
    char err[512];
    if (!(ff->reader = flash_reader_open(&rc, err, sizeof err))) {
        err_set(ff->err, ff->errlen, "%s", err);
        return -1;
    }
    ff->align = flash_reader_alignment(ff->reader);
    if (f->m->bundle_stride % ff->align) {
        err_set(ff->err, ff->errlen, "%s: bundles of %llu bytes are not multiples of the file system's direct-I/O alignment %llu",
                 f->m->ffn_path, (unsigned long long)f->m->bundle_stride, (unsigned long long)ff->align);
        return -1;
    }
    if (ff->cfg.stream_dram) {
        char dram_path[4300];
        snprintf(dram_path, sizeof dram_path, "%s/%s", f->m->dir, MODEL_DRAM_FILE);
        rc.path = dram_path;
        if (!(ff->dram_reader = flash_reader_open(&rc, err, sizeof err))) {
            err_set(ff->err, ff->errlen, "%s", err);
            return -1;
        }
        ff->dram_file_bytes = f->m->dram_bytes;
    }
    return 0;
}

uint32_t ffn_flash_default_rows(const struct ffn_flash_config *cfg, uint32_t d_ff)
{
    if (!cfg->policy.ops)
        return 0;
    return (uint32_t)policy_layer_rows(cfg->policy.ops, cfg->capacity_rows, d_ff);
}

/* Where rows [row, row + n) of layer's cache are read to: the host
 * cache's rows, or on a device the pinned ring, sent to the mirror's rows
 * (room for n made first: n <= the ring's slot). */
static uint8_t *load_home(struct ffn *f, struct flash_ffn *ff, int layer, uint32_t row, uint32_t n)
{
    const struct neuron_cache *c = &ff->caches[layer];
    if (!ff->on_device)
        return c->rows + (uint64_t)row * ff->stride;
    if ((fring_room(&ff->ring) < n && fring_send(&ff->ring) != 0) || fring_ready(&ff->ring) != 0)
        return NULL;
    const float *bias = f->m->layers[layer].ffn_up_bias;
    const struct neuron_cache_dev *d = &ff->mirrors[layer];
    uint8_t *at = NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *p = fring_place(&ff->ring, ncd_rows(d, row + i), ncd_bias(d, row + i), bias ? c->up_bias[row + i] : 0);
        at = i ? at : p;
    }
    return at;
}

/* Appends ids[0..n) (ascending) to layer's cache and reads them straight
 * into their rows: one read per run of adjacent ids (per ring slot on a
 * device). The resident part a policy starts with (hybrid's), not
 * counted per token. */
static int load_rows(struct ffn *f, struct flash_ffn *ff, int layer, const uint32_t *ids, uint32_t n)
{
    struct neuron_cache *c = &ff->caches[layer];
    uint32_t most = ff->on_device ? ff->ring.slot_rows : n;
    for (uint32_t j = 0, k; j < n; j = k) {
        for (k = j + 1; k < n && k - j < most && ids[k] == ids[k - 1] + 1;)
            k++;
        uint32_t row = neuron_cache_append(c, ids[j]);
        for (uint32_t i = j + 1; i < k; i++)
            neuron_cache_append(c, ids[i]);
        uint8_t *dst = load_home(f, ff, layer, row, k - j);
        struct flash_read rq = {ffn_flash_bundle_offset(f->m, layer, ids[j]), (uint64_t)(k - j) * ff->stride, dst};
        char err[512];
        if (!dst)
            return err_set(ff->err, ff->errlen, "%s backend: %s", ff->fdev.ops->name, ff->fdev.ops->error(ff->fdev.be));
        if (flash_reader_read(ff->reader, &rq, 1, err, sizeof err) != 0)
            return err_set(ff->err, ff->errlen, "%s", err);
    }
    return 0;
}

/* The rows the policy starts layer l with (hybrid's resident part). */
static int preload(struct ffn *f, struct flash_ffn *ff, uint32_t l)
{
    if (ff->decide.p.ops->preload_is_read)
        return 0; /* hot's pinned rows are read with the first token */
    uint32_t n = cache_preloaded_rows(&ff->decide, l, ff->late);
    if (n > ff->caches[l].capacity)
        return err_set(ff->err, ff->errlen, "layer %u: the policy starts with %u rows, the cache holds %u", l, n,
                       ff->caches[l].capacity);
    return load_rows(f, ff, (int)l, ff->late, n);
}

static int open_decisions(struct ffn *f, struct flash_ffn *ff)
{
    const struct model *m = f->m;
    const struct model_shape *s = &m->shape;
    bool traced = ff->cfg.active == SOURCE_TRACE;
    /* capacity 0 stays "none" here, as the run plan means it */
    struct cache_config cc = {ff->cfg.policy, ff->cfg.layout, ff->cfg.capacity_rows,
                              traced ? ff->cfg.trace : ff->cfg.profile, traced && ff->cfg.use_predicted, false};
    struct cache_geometry g = {s->n_layers, s->d_ff, ff->vec_bytes, m->arch.glu ? 3 : 2, ff->stride, ff->align};
    char err[512];
    if (cache_open(&ff->decide, &cc, &g, err, sizeof err) != 0) {
        err_set(ff->err, ff->errlen, "%s", err);
        return -1;
    }
    if (!ff->decide.lo.ops->lists_reads) {
        char layout[LAYOUT_NAME_MAX];
        cache_layout_name(&ff->cfg.layout, layout, sizeof layout);
        err_set(ff->err, ff->errlen, "layout %s: the engine cannot run it (its reads are not ranges of ffn.bin, whose bundles are "
                 "in neuron order)", layout);
        return -1;
    }
    return 0;
}

/* The neuron cache of every layer, sized as configured, with the rows the
 * policy starts with read in (hybrid's resident part). */
static int open_caches(struct ffn *f, struct flash_ffn *ff)
{
    const struct model *m = f->m;
    const struct model_shape *s = &m->shape;
    ff->caches = calloc(s->n_layers, sizeof *ff->caches);
    if (!ff->caches)
        return -1;
    char err[512];
    for (uint32_t l = 0; l < s->n_layers; l++) {
        uint32_t cap = ff->cfg.layer_rows ? ff->cfg.layer_rows[l] : ffn_flash_default_rows(&ff->cfg, s->d_ff);
        if (cap == 0)
            continue;
        if (neuron_cache_init(&ff->caches[l], s->d_ff, cap, ff->stride, m->layers[l].ffn_up_bias, !ff->on_device,
                              err, sizeof err) != 0) {
            err_set(ff->err, ff->errlen, "neuron cache of layer %u (%u rows of %llu bytes): %s", l, cap, (unsigned long long)ff->stride,
                     err);
            return -1;
        }
        if (!ff->on_device) /* else the device's (open_device) */
            ff->cache_bytes += (uint64_t)cap * ff->stride;
        if (!ff->on_device && preload(f, ff, l) != 0)
            return -1;
    }
    return 0;
}

static int alloc_step_buffers(struct flash_ffn *ff, const struct model_shape *s)
{
    uint32_t N = s->d_ff;
    ff->staging_rows = ff->cfg.staging_rows ? ff->cfg.staging_rows : 1;
    ff->bounce_rows = ff->cfg.bounce_rows ? ff->cfg.bounce_rows : 1;
    ff->staging_bytes = (uint64_t)ff->staging_rows * ff->stride;
    ff->bounce_bytes = (uint64_t)ff->bounce_rows * ff->stride;
    ff->needed = malloc(N * sizeof *ff->needed);
    ff->late = malloc(N * sizeof *ff->late);
    ff->mark = calloc(N, 1);
    ff->staged = malloc(ff->staging_rows * sizeof *ff->staged);
    ff->copies = malloc(ff->bounce_rows * sizeof *ff->copies);
    ff->reqs = malloc((3 * (size_t)N + 1) * sizeof *ff->reqs);
    ff->landed = malloc((3 * (size_t)N + 1) * sizeof *ff->landed);
    for (int k = 0; k < 2; k++)
        ff->steps[k].landed = malloc((size_t)N * sizeof *ff->steps[k].landed);
    ff->tmp_out = calloc(s->d_model, sizeof(float));
    ff->z = malloc(N * sizeof *ff->z); /* staged biases */
    /* on a device rows used once go through the pinned ring (open_device) */
    ff->staging = ff->on_device ? NULL : read_buffer(&ff->staging_mem, ff->staging_bytes);
    ff->bounce = read_buffer(&ff->bounce_mem, ff->bounce_bytes);
    if (ff->cfg.stream_dram) {
        ff->scratch_bytes = ffn_flash_stream_scratch(ff->dram_file_bytes, s->n_layers, ff->align);
        ff->scratch = read_buffer(&ff->scratch_mem, ff->scratch_bytes);
    }
    return ff->needed && ff->late && ff->mark && ff->staged && ff->copies && ff->reqs && ff->landed &&
                   ff->steps[0].landed && ff->steps[1].landed && ff->tmp_out && ff->z &&
                   (ff->staging || ff->on_device) && ff->bounce && (!ff->cfg.stream_dram || ff->scratch)
               ? 0
               : -1;
}

static int check_trace(const struct ffn_flash_config *cfg, const struct model_shape *s, char *err, size_t errlen)
{
    if (trace_matches_shape(cfg->trace, "the trace", s, err, errlen) != 0)
        return -1;
    if (cfg->use_predicted && !cfg->trace->meta.has_predicted)
        return err_set(err, errlen, "the trace has no predicted sets");
    return 0;
}

/* The selector for cfg's source (the oracle for SOURCE_ORACLE and SOURCE_TRACE). */
static struct select_config choose_config(const struct ffn_flash_config *cfg)
{
    if (cfg->active == SOURCE_PREDICTOR)
        return (struct select_config){.source = SOURCE_PREDICTOR, .predictor = cfg->predictor};
    if (cfg->active == SOURCE_GATE)
        return (struct select_config){.source = SOURCE_GATE, .threshold = cfg->gate_threshold,
                                      .layer_thresholds = cfg->gate_layer_thresholds};
    return (struct select_config){.source = SOURCE_ORACLE, .threshold = cfg->threshold};
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
    struct select_config c = choose_config(cfg);
    if (cfg->active != SOURCE_TRACE) {
        if (neuron_select_open(&ff->choose, f->m, &c, ff->err, ff->errlen) != 0)
            return -1;
        ff->have_choose = true;
    }
    bool truth = cfg->active != SOURCE_ORACLE && (cfg->check || (cfg->record && cfg->active == SOURCE_TRACE));
    struct select_config oracle = {.source = SOURCE_ORACLE, .threshold = cfg->threshold};
    if (truth) {
        if (neuron_select_open(&ff->truth, f->m, &oracle, ff->err, ff->errlen) != 0)
            return -1;
        ff->have_truth = true;
    }
    ff->recorded = malloc(f->m->shape.d_ff * sizeof *ff->recorded);
    if (!ff->recorded)
        return err_set(ff->err, ff->errlen, "the flash FFN cannot allocate its buffers");
    ff->oracle_bytes = cfg->active == SOURCE_ORACLE ? ff->choose.rows_bytes : ff->truth.rows_bytes;
    ff->predictor_bytes = ffn_flash_predictor_bytes(f->m, cfg);
    return 0;
}

/* Whether the engine's backend computes in memory the host cannot reach
 * (sim, opencl, cuda): then the caches live there (open_device). */
static bool backend_off_host(const struct ffn *f)
{
    const struct dev_model *dm = f->dev;
    struct backend_info info = {.host_visible = true};
    if (dm && dm->be)
        dm->ops->info(dm->be, &info);
    return !info.host_visible;
}

/* The backend's error as the FFN's create error. */
static int dev_create_fail(struct flash_ffn *ff)
{
    return err_set(ff->err, ff->errlen, "%s backend: %s", ff->fdev.ops->name, ff->fdev.ops->error(ff->fdev.be));
}

/* Each cache's mirror on the device, with the rows the policy starts
 * with (hybrid's) read through the ring now (set-up, not a token's), the
 * ring and the staging area; zeroed mirrors (no-ops) on the host path. */
static int open_device(struct ffn *f, struct flash_ffn *ff)
{
    const struct dev_model *dm = f->dev;
    ff->mirrors = calloc(f->m->shape.n_layers, sizeof *ff->mirrors);
    if (!ff->mirrors)
        return err_set(ff->err, ff->errlen, "the flash FFN cannot allocate its buffers");
    if (!ff->on_device)
        return 0;
    if (fdev_init(&ff->fdev, dm->ops, dm->be, f->m, ff->staging_rows, ff->err, ff->errlen) != 0 ||
        fring_init(&ff->ring, dm->ops, dm->be, ff->staging_rows, ff->stride, ff->err, ff->errlen) != 0)
        return -1;
    ff->staging_bytes = FLASH_RING_SLOTS * ff->staging_bytes; /* the ring, pinned, is the host's staging */
    if (ff->cfg.active == SOURCE_PREDICTOR) {
        if (pdev_init(&ff->pdev, dm->ops, dm->be, ff->cfg.predictor, ff->err, ff->errlen) != 0)
            return -1;
        ff->dev_predict = true;
    }
    ff->device_bytes = ff->staging_bytes / FLASH_RING_SLOTS + pdev_bytes(&ff->pdev);
    for (uint32_t l = 0; l < f->m->shape.n_layers; l++) {
        const struct neuron_cache *c = &ff->caches[l];
        if (!c->capacity)
            continue;
        if (ncd_init(&ff->mirrors[l], dm->ops, dm->be, c->capacity, ff->stride, c->up_bias != NULL, ff->err,
                     ff->errlen) != 0)
            return -1;
        ff->device_bytes += (uint64_t)c->capacity * (ff->stride + (c->up_bias ? sizeof(float) : 0) +
                                                     sizeof(struct row_move));
        if (preload(f, ff, l) != 0)
            return -1;
    }
    double ms;
    if (fring_send(&ff->ring) != 0 || dm->ops->sync(dm->be) != 0 || fring_take_ms(&ff->ring, &ms) != 0)
        return dev_create_fail(ff);
    ff->ring.sends = ff->ring.runs_sent = ff->ring.waits = ff->ring.bytes_up = 0; /* set-up, not a token's */
    return 0;
}

int ffn_flash_create(struct ffn *f, char *err, size_t errlen)
{
    const struct ffn_flash_config *cfg = f->config;
    const struct model *m = f->m;
    const struct model_shape *s = &m->shape;
    struct flash_ffn *ff = calloc(1, sizeof *ff);
    if (!ff || !cfg) {
        free(ff);
        return err_set(err, errlen, "the flash FFN needs its configuration");
    }
    f->priv = ff;
    ff->err = err;
    ff->errlen = errlen;
    ff->cfg = *cfg;
    ff->token = -1;
    ff->steps[0].layer = ff->steps[1].layer = -1;
    ff->stride = m->bundle_stride;
    ff->vec_bytes = wtype_row_bytes(m->dtype, s->d_model);
    ff->on_device = backend_off_host(f);
    ff->verify = cfg->verify && m->ffn_crc;
    if (cfg->active == SOURCE_TRACE && check_trace(cfg, s, err, errlen) != 0)
        return -1;
    if (open_readers(f, ff) != 0 || open_decisions(f, ff) != 0)
        return -1;
    if (alloc_step_buffers(ff, s) != 0) {
        err_set(ff->err, ff->errlen, "the flash FFN cannot allocate its buffers");
        return -1;
    }
    if (open_caches(f, ff) != 0 || open_selectors(f, ff) != 0 || open_device(f, ff) != 0)
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
    if (ff->fdev.be)
        ff->fdev.ops->sync(ff->fdev.be); /* nothing in flight reads what is freed */
    /* nor writes it: a read-ahead batch lands in the caches' rows */
    if (ff->reader)
        flash_reader_close(ff->reader);
    if (ff->dram_reader)
        flash_reader_close(ff->dram_reader);
    for (uint32_t l = 0; ff->mirrors && l < f->m->shape.n_layers; l++)
        ncd_free(&ff->mirrors[l]);
    free(ff->mirrors);
    if (ff->ring.be)
        fring_free(&ff->ring);
    pdev_free(&ff->pdev);
    fdev_free(&ff->fdev);
    if (ff->caches)
        for (uint32_t l = 0; l < f->m->shape.n_layers; l++)
            neuron_cache_free(&ff->caches[l]);
    free(ff->caches);
    if (ff->staging)
        io_buffer_free(&ff->staging_mem);
    if (ff->bounce)
        io_buffer_free(&ff->bounce_mem);
    cache_close(&ff->decide);
    if (ff->scratch)
        io_buffer_free(&ff->scratch_mem);
    neuron_select_close(&ff->choose);
    neuron_select_close(&ff->truth);
    free(ff->z);
    free(ff->tmp_out);
    free(ff->needed);
    free(ff->recorded);
    free(ff->late);
    free(ff->mark);
    free(ff->staged);
    free(ff->copies);
    free(ff->reqs);
    free(ff->landed);
    free(ff->steps[0].landed);
    free(ff->steps[1].landed);
    free(ff);
    f->priv = NULL;
}
