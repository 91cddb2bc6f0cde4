/* The flash-resident FFN (see ffn_flash.h for the modes). One layer step:
 *   1. which neurons: the oracle, the predictor, the gate (neuron_select.h),
 *      or the trace's set
 *   2. memory management: the cache drops what left the window and reserves
 *      rows for the misses (naive and hybrid have no cache)
 *   3. I/O: one batch of reads straight into the reserved rows
 *   4. compute: the backend's ffn_rows over the rows held
 * Every step is timed separately; nothing is allocated per token. */
#include "engine/ffn/ffn_flash.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "common/clock.h"
#include "common/errbuf.h"
#include "engine/compute/activation.h"
#include "engine/ffn/ffn_flash_dev.h"
#include "engine/ffn/flash_ring.h"
#include "engine/ffn/predictor_dev.h"
#include "engine/ffn/neuron_cache.h"
#include "engine/ffn/neuron_cache_dev.h"
#include "engine/ffn/neuron_select.h"
#include "engine/model/model_format.h"
#include "io/flash_reader.h"
#include "io/io_buffer.h"

enum { MAX_READ = 1u << 20 };

/* Where a row read this token goes (mark[] bits, cleared after the step). */
enum { MARK_NEED = 1, MARK_MISS = 2, MARK_ONCE = 4, MARK_READ = 8 };

struct flash_ffn {
    struct ffn_flash_config cfg;
    char *err;                         /* create's error buffer (ffn.h), while it runs */
    size_t errlen;
    struct flash_reader *reader;       /* ffn.bin */
    struct flash_reader *dram_reader;  /* naive: dram.bin */
    struct cache decide;               /* the policy and layout: cache/cache.h */
    struct neuron_cache *caches;       /* [n_layers] storage of the rows kept */
    /* A backend whose memory is not the host's (on_device): each cache's
     * rows mirrored in device memory and the FFN computed there; zeroed
     * mirrors (no-ops) otherwise. */
    struct neuron_cache_dev *mirrors;  /* [n_layers] */
    struct flash_dev fdev;
    struct flash_ring ring;            /* on_device: where rows read from flash land (pinned); its
                                        * covered is the latest event waited for, for every wait here */
    struct predictor_dev pdev;         /* on_device with the predictor: computed there */
    bool on_device, dev_failed, dev_predict;
    uint8_t *staging, *bounce, *scratch;
    struct io_buffer staging_mem, bounce_mem, scratch_mem;
    uint32_t staging_rows, bounce_rows;
    uint64_t dram_file_bytes, align, stride, vec_bytes;
    struct neuron_select choose;       /* oracle, predictor, gate: what drives the reads */
    struct neuron_select truth;        /* the oracle beside another source (check, record) */
    bool have_choose, have_truth;
    float *z;                          /* [d_ff] staged rows' biases */
    float *tmp_out;                    /* [d_model] a partial FFN output */
    uint32_t *needed;                  /* [d_ff] the neurons this layer needs */
    uint32_t *recorded;                /* [d_ff] the true active ones, when the choice is not them */
    uint32_t *late;                    /* [d_ff] needed rows the policy dropped: leave after compute */
    uint32_t *staged;                  /* [staging_rows] the neuron in each staging row */
    uint8_t *mark;                     /* [d_ff] MARK_* of the rows in this step */
    struct flash_read *reqs;           /* [3 * d_ff + 1] */
    struct bounce_copy { uint32_t id; uint64_t from; uint8_t *to; } *copies; /* [bounce_rows] */
    uint32_t n_reqs, n_staged, n_copies, bounce_used;
    uint32_t last_id;                  /* the row last read in place, when one row */
    uint8_t *last_home;                /* where it went (NULL: none) */
    uint64_t staging_bytes, bounce_bytes, scratch_bytes, cache_bytes, oracle_bytes, predictor_bytes;
    uint64_t device_bytes;             /* on_device: the mirrors' rows and biases, the device staging area */
    int64_t token;                     /* index of the token being computed */
    unsigned next_flags;
    struct ffn_flash_token acc;
    char error[512];                   /* the first failure; the run stops on it */
};

/* Read buffers: 2 MiB-aligned huge pages, touched now (io/io_buffer.h),
 * so page faults belong to set-up, not to the first token. */
static uint8_t *read_buffer(struct io_buffer *b, uint64_t bytes)
{
    return io_buffer_alloc(b, bytes ? bytes : 1, true) == 0 ? b->base : NULL;
}

static uint64_t bundle_offset(const struct model *m, int layer, uint32_t neuron)
{
    return ((uint64_t)layer * m->shape.d_ff + neuron) * m->bundle_stride;
}

static void fail(struct flash_ffn *ff, const char *what)
{
    if (!ff->error[0])
        snprintf(ff->error, sizeof ff->error, "%s", what);
}

/* A device failure: the step's host decisions go on (they stay in step
 * with replay), the layer returns -1 and the token fails. */
static void fail_dev(struct flash_ffn *ff, const char *why)
{
    ff->dev_failed = true;
    fail(ff, why);
}

static void dev_check(struct flash_ffn *ff, int rc)
{
    if (rc != 0 && !ff->dev_failed) {
        char why[sizeof ff->error];
        err_set(why, sizeof why, "%s backend: %s", ff->fdev.ops->name, ff->fdev.ops->error(ff->fdev.be));
        fail_dev(ff, why);
    }
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
        struct flash_read rq = {bundle_offset(f->m, layer, ids[j]), (uint64_t)(k - j) * ff->stride, dst};
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
    ff->tmp_out = calloc(s->d_model, sizeof(float));
    ff->z = malloc(N * sizeof *ff->z); /* staged biases */
    /* on a device rows used once go through the pinned ring (open_device) */
    ff->staging = ff->on_device ? NULL : read_buffer(&ff->staging_mem, ff->staging_bytes);
    ff->bounce = read_buffer(&ff->bounce_mem, ff->bounce_bytes);
    if (ff->cfg.stream_dram) {
        ff->scratch_bytes = ffn_flash_stream_scratch(ff->dram_file_bytes, s->n_layers, ff->align);
        ff->scratch = read_buffer(&ff->scratch_mem, ff->scratch_bytes);
    }
    return ff->needed && ff->late && ff->mark && ff->staged && ff->copies && ff->reqs && ff->tmp_out && ff->z &&
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
        return (struct select_config){SOURCE_PREDICTOR, cfg->predictor, 0};
    if (cfg->active == SOURCE_GATE)
        return (struct select_config){SOURCE_GATE, NULL, cfg->gate_threshold};
    return (struct select_config){SOURCE_ORACLE, NULL, cfg->threshold};
}

static bool deployable(const struct ffn_flash_config *cfg)
{
    return cfg->active == SOURCE_PREDICTOR || cfg->active == SOURCE_GATE;
}

uint64_t ffn_flash_predictor_bytes(const struct model *m, const struct ffn_flash_config *cfg)
{
    struct select_config c = choose_config(cfg);
    return deployable(cfg) ? neuron_select_bytes(m, &c) : 0;
}

uint64_t ffn_flash_predictor_madds(const struct model *m, const struct ffn_flash_config *cfg)
{
    struct select_config c = choose_config(cfg);
    return deployable(cfg) ? neuron_select_madds(m, &c) : 0;
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
    struct select_config oracle = {SOURCE_ORACLE, NULL, cfg->threshold};
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

static int flash_create(struct ffn *f, char *err, size_t errlen)
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
    ff->stride = m->bundle_stride;
    ff->vec_bytes = (uint64_t)s->d_model * dtype_size(m->dtype);
    ff->on_device = backend_off_host(f);
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

static uint32_t trace_needed(const struct flash_ffn *ff, int layer, uint32_t *out)
{
    const struct trace *tr = ff->cfg.trace;
    uint32_t n;
    const uint32_t *ids = trace_set(tr, ff->cfg.use_predicted, (uint64_t)ff->token % tr->n_tokens,
                                    (uint32_t)layer, &n);
    memcpy(out, ids, n * sizeof *out);
    return n;
}

/* On a device, while a batch of reads is in flight: waits until the
 * device has done all it was given, so that what the reads still take
 * after is the exposed I/O (the rest overlapped the device's work). */
static void wait_device(struct flash_ffn *ff)
{
    uint64_t ev;
    dev_check(ff, ff->fdev.ops->event_record(ff->fdev.be, &ev) || ff->fdev.ops->event_wait(ff->fdev.be, ev));
    fring_covered(&ff->ring, ev);
    ff->acc.read_waits++;
}

/* Issues ff->reqs[0..n) and waits; bytes and requests as the reader issued them. */
static int read_batch(struct flash_ffn *ff, struct flash_reader *r, size_t n, uint64_t *bytes)
{
    char err[512];
    struct flash_reader_stats before, after;
    flash_reader_stats(r, &before);
    double t0 = now_ms(), t_dev = t0;
    int rc = n ? flash_reader_submit(r, ff->reqs, n, err, sizeof err) : 0;
    if (rc == 0 && n && ff->on_device && !ff->dev_failed) {
        wait_device(ff);
        t_dev = now_ms();
    }
    if (rc == 0)
        rc = flash_reader_wait(r, err, sizeof err);
    double t1 = now_ms();
    ff->acc.io_ms += t1 - t0;
    ff->acc.exposed_io_ms += t1 - t_dev;
    flash_reader_stats(r, &after);
    ff->acc.io_requests += after.reads - before.reads;
    *bytes += after.bytes - before.bytes;
    if (rc != 0)
        fail(ff, err);
    return rc;
}

/* naive: dram.bin streamed through the scratch buffer, a slice per layer so
 * the whole file passes once per token. */
static void naive_read_dram(struct flash_ffn *ff, int layer, int n_layers)
{
    uint64_t per = (ff->dram_file_bytes + (uint64_t)n_layers - 1) / (uint64_t)n_layers;
    per = (per + ff->align - 1) / ff->align * ff->align;
    uint64_t lo = per * (uint64_t)layer, hi = lo + per;
    uint64_t end = (ff->dram_file_bytes + ff->align - 1) / ff->align * ff->align;
    if (hi > end)
        hi = end;
    while (lo < hi) {
        uint64_t len = hi - lo < ff->scratch_bytes ? hi - lo : ff->scratch_bytes;
        /* the last aligned piece may pass the end of the file: read what exists */
        uint64_t exist = ff->dram_file_bytes > lo ? ff->dram_file_bytes - lo : 0;
        if (len > exist)
            len = (exist / ff->align) * ff->align;
        if (len == 0)
            break;
        ff->reqs[0] = (struct flash_read){lo, len, ff->scratch};
        if (read_batch(ff, ff->dram_reader, 1, &ff->acc.dram_bytes_read) != 0)
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

/* Issues the queued reads and copies rows out of the bounce buffer; on a
 * device the ring's slot then goes up (transfer). */
static void issue_reads(struct flash_ffn *ff)
{
    read_batch(ff, ff->reader, ff->n_reqs, &ff->acc.bytes_read);
    double t0 = now_ms();
    for (uint32_t k = 0; k < ff->n_copies; k++)
        memcpy(ff->copies[k].to, ff->bounce + ff->copies[k].from, ff->stride);
    ff->acc.mem_ms += now_ms() - t0;
    ff->n_reqs = ff->n_copies = ff->bounce_used = 0;
}

static void transfer(struct flash_ffn *ff)
{
    issue_reads(ff);
    double t0 = now_ms();
    dev_check(ff, fring_send(&ff->ring));
    ff->acc.mem_ms += now_ms() - t0;
}

/* Issues the queued reads, computes the staged rows as one group and
 * empties the staging (on a device: sends the ring's slot, then the group
 * on the device's staging area). */
static void flush(struct ffn *f, struct flash_ffn *ff, int layer, const float *x, float *out)
{
    if (ff->on_device) {
        transfer(ff);
        double t0 = now_ms();
        if (ff->n_staged)
            dev_check(ff, fdev_rows(&ff->fdev, fdev_stage_rows(&ff->fdev, 0), ff->n_staged,
                                    fdev_stage_bias(&ff->fdev, 0)));
        ff->acc.staged_groups += ff->n_staged > 0;
        ff->acc.ffn_ms += now_ms() - t0;
        ff->n_staged = 0;
        return;
    }
    issue_reads(ff);
    const float *bias = f->m->layers[layer].ffn_up_bias;
    float *staged_bias = bias ? ff->z : NULL; /* z is free once the needed set is known */
    for (uint32_t k = 0; bias && k < ff->n_staged; k++)
        staged_bias[k] = bias[ff->staged[k]];
    compute_rows(f, ff, ff->staging, ff->n_staged, staged_bias, x, out);
    ff->n_staged = 0;
}

/* On a device: room for n rows in the ring's slot, sending it when full
 * (its reads issued first), so that n rows placed next are adjacent, and
 * the slot ready to be written. */
static void ring_room(struct flash_ffn *ff, uint32_t n)
{
    if (!ff->on_device)
        return;
    if (fring_room(&ff->ring) < n)
        transfer(ff);
    double t0 = now_ms();
    dev_check(ff, fring_ready(&ff->ring));
    ff->acc.mem_ms += now_ms() - t0;
}

/* Where row id lands: its cache row, or the next staging row; on a
 * device the ring's next row, sent to the mirror's or the device
 * staging area's row (the caller made room in the ring). */
static uint8_t *row_home(struct ffn *f, struct flash_ffn *ff, int layer, uint32_t id, const float *x, float *out)
{
    const struct neuron_cache *c = &ff->caches[layer];
    const float *bias = f->m->layers[layer].ffn_up_bias;
    if (!(ff->mark[id] & MARK_ONCE)) {
        uint32_t r = (uint32_t)c->row_of[id];
        if (!ff->on_device)
            return c->rows + (uint64_t)r * ff->stride;
        const struct neuron_cache_dev *d = &ff->mirrors[layer];
        ring_room(ff, 1); /* the caller made room for its read: only a flush between makes a new slot */
        return fring_place(&ff->ring, ncd_rows(d, r), ncd_bias(d, r), bias ? bias[id] : 0);
    }
    if (ff->n_staged == ff->staging_rows)
        flush(f, ff, layer, x, out);
    uint32_t k = ff->n_staged++;
    ff->staged[k] = id;
    if (!ff->on_device)
        return ff->staging + (uint64_t)k * ff->stride;
    ring_room(ff, 1);
    return fring_place(&ff->ring, fdev_stage_rows(&ff->fdev, k), fdev_stage_bias(&ff->fdev, k), bias ? bias[id] : 0);
}

/* Whether a read of ids first..first+count-1 can land in place: all of them
 * read this step, all kept or all used once (then adjacent rows hold them). */
static bool lands_in_place(const struct flash_ffn *ff, uint32_t first, uint32_t count)
{
    uint8_t kind = ff->mark[first] & (MARK_READ | MARK_ONCE);
    if (!(kind & MARK_READ) || ((kind & MARK_ONCE) && count > ff->staging_rows))
        return false;
    for (uint32_t i = 1; i < count; i++)
        if ((ff->mark[first + i] & (MARK_READ | MARK_ONCE)) != kind)
            return false;
    return true;
}

/* A read spanning rows it does not keep (coalescing): into the bounce
 * buffer, a piece at a time, and the rows read this step copied out. */
static void queue_bounced(struct ffn *f, struct flash_ffn *ff, int layer, uint32_t first, uint32_t count,
                          const float *x, float *out)
{
    for (uint32_t done = 0; done < count;) {
        uint32_t piece = count - done < ff->bounce_rows ? count - done : ff->bounce_rows;
        if (ff->bounce_used + piece > ff->bounce_rows)
            flush(f, ff, layer, x, out);
        ring_room(ff, piece);
        uint64_t from = (uint64_t)ff->bounce_used * ff->stride;
        ff->reqs[ff->n_reqs++] = (struct flash_read){bundle_offset(f->m, layer, first + done),
                                                     (uint64_t)piece * ff->stride, ff->bounce + from};
        for (uint32_t i = 0; i < piece; i++) {
            uint32_t id = first + done + i;
            if (ff->mark[id] & MARK_READ) {
                uint8_t *to = row_home(f, ff, layer, id, x, out);
                ff->copies[ff->n_copies++] = (struct bounce_copy){id, from + (uint64_t)i * ff->stride, to};
            }
        }
        ff->bounce_used += piece;
        done += piece;
    }
}

/* A later vector of a row (split reads a row's up, gate and down one
 * after another): where its first vector went, so the vectors meet in one
 * bundle and the row is computed (and on a device sent) once; NULL for
 * anything else. Nothing is flushed or sent between a row's vectors. */
static uint8_t *later_vector_home(const struct flash_ffn *ff, const struct layout_read *rd)
{
    if (rd->vec <= 0 || rd->count != 1 || !ff->last_home || ff->last_id != rd->first)
        return NULL;
    return ff->last_home;
}

/* Rows first..first + count - 1, all read this step and of one kind,
 * read straight into their homes (vec >= 0: one vector of the bundle). */
static void queue_in_place(struct ffn *f, struct flash_ffn *ff, int layer, const struct layout_read *rd,
                           const float *x, float *out)
{
    uint8_t *dst = later_vector_home(ff, rd);
    if (!dst) {
        if ((ff->mark[rd->first] & MARK_ONCE) && ff->n_staged + rd->count > ff->staging_rows)
            flush(f, ff, layer, x, out);
        ring_room(ff, rd->count);
        dst = row_home(f, ff, layer, rd->first, x, out);
        for (uint32_t i = 1; i < rd->count; i++)
            row_home(f, ff, layer, rd->first + i, x, out);
        ff->last_id = rd->first + rd->count - 1;
        ff->last_home = rd->count == 1 ? dst : NULL;
    }
    uint64_t off = bundle_offset(f->m, layer, rd->first), len = (uint64_t)rd->count * ff->stride;
    if (rd->vec >= 0) {
        /* one vector of the bundle (model_format.h: up | gate | down), widened to
         * the direct-I/O alignment as the split layout counts it */
        uint64_t lo;
        layout_vector_span(ff->vec_bytes, ff->stride, ff->align, (uint32_t)rd->vec, &lo, &len);
        off += lo;
        dst += lo;
    }
    ff->reqs[ff->n_reqs++] = (struct flash_read){off, len, dst};
}

/* Queues the layout's reads of this step, flushing whenever the staging or
 * bounce area is full; on a device, a read of kept rows longer than the
 * ring's slot goes in pieces of a slot (the same bytes). */
static void queue_reads(struct ffn *f, struct flash_ffn *ff, int layer, const struct cache_step *st,
                        const float *x, float *out)
{
    ff->last_home = NULL;
    for (uint32_t r = 0; r < st->n_reads; r++) {
        const struct layout_read *rd = &st->reads[r];
        if (!lands_in_place(ff, rd->first, rd->count)) {
            queue_bounced(f, ff, layer, rd->first, rd->count, x, out);
            continue;
        }
        uint32_t most = ff->on_device ? ff->ring.slot_rows : rd->count;
        for (uint32_t done = 0; done < rd->count; done += most) {
            struct layout_read piece = *rd;
            piece.first = rd->first + done;
            piece.count = rd->count - done < most ? rd->count - done : most;
            queue_in_place(f, ff, layer, &piece, x, out);
        }
    }
}

/* Marks what the decision says of each row; collects the needed rows the
 * policy dropped (they leave after the compute). */
static uint32_t classify(struct flash_ffn *ff, const struct cache_step *st, uint32_t n_needed)
{
    for (uint32_t j = 0; j < n_needed; j++)
        ff->mark[ff->needed[j]] |= MARK_NEED;
    for (uint32_t j = 0; j < st->n_rows; j++)
        ff->mark[st->rows[j]] |= MARK_READ;
    for (uint32_t j = 0; j < st->n_misses; j++)
        ff->mark[st->misses[j]] |= MARK_MISS;
    for (uint32_t j = 0; j < st->n_extra; j++)
        ff->mark[st->extra[j]] |= MARK_ONCE;
    uint32_t n_late = 0;
    for (uint32_t j = 0; j < st->n_deleted; j++) {
        uint32_t id = st->deleted[j];
        if (ff->mark[id] & MARK_MISS)
            ff->mark[id] |= MARK_ONCE;
        else if (ff->mark[id] & MARK_NEED)
            ff->late[n_late++] = id;
    }
    return n_late;
}

static void clear_marks(struct flash_ffn *ff, const struct cache_step *st, uint32_t n_needed)
{
    for (uint32_t j = 0; j < n_needed; j++)
        ff->mark[ff->needed[j]] = 0;
    for (uint32_t j = 0; j < st->n_rows; j++)
        ff->mark[st->rows[j]] = 0;
}

/* Neuron id leaves layer's cache (neuron_cache_delete): the last row
 * moving into its hole is counted and, on a device, recorded for the
 * layer's batched move. */
static void drop_row(struct flash_ffn *ff, int layer, uint32_t id)
{
    struct neuron_cache *c = &ff->caches[layer];
    if (id >= c->d_ff || c->row_of[id] < 0)
        return;
    uint32_t r = (uint32_t)c->row_of[id], last = c->num_used - 1;
    if (r != last) {
        ff->acc.row_moves++;
        if (ncd_record_move(&ff->mirrors[layer], r, last) != 0)
            fail_dev(ff, "the flash FFN moved more rows in one step than its cache holds");
    }
    neuron_cache_delete(c, id);
}

/* Rows the policy dropped that this token does not need leave now (room
 * for the new ones); the kept rows read this step are appended in id order. */
static void make_room(struct flash_ffn *ff, int layer, const struct cache_step *st)
{
    struct neuron_cache *c = &ff->caches[layer];
    for (uint32_t j = 0; j < st->n_deleted; j++)
        if (!(ff->mark[st->deleted[j]] & (MARK_NEED | MARK_MISS)) && c->capacity)
            drop_row(ff, layer, st->deleted[j]);
}

static int append_kept(struct flash_ffn *ff, int layer, const struct cache_step *st)
{
    struct neuron_cache *c = &ff->caches[layer];
    for (uint32_t j = 0; j < st->n_rows; j++) {
        uint32_t id = st->rows[j];
        if (ff->mark[id] & MARK_ONCE)
            continue;
        if (!c->capacity || c->num_used == c->capacity) {
            char why[256];
            snprintf(why, sizeof why, "token %lld, layer %d: the policy keeps more rows than the %u the cache holds",
                     (long long)ff->token, layer, c->capacity);
            fail(ff, why);
            return -1;
        }
        neuron_cache_append(c, id);
    }
    return 0;
}

/* check: the true active neurons this step does not compute (neither
 * needed nor held in the layer's cache at compute time, i.e. after the
 * policy's deletions) and the needed ones that are not active. */
static void count_misses(struct flash_ffn *ff, int layer, const uint32_t *truth, uint32_t n_truth, uint32_t n_needed)
{
    const struct neuron_cache *c = &ff->caches[layer];
    uint32_t both = 0, missed = 0;
    for (uint32_t j = 0; j < n_truth; j++) {
        uint32_t id = truth[j];
        if (ff->mark[id] & MARK_NEED)
            both++;
        else if (!c->row_of || c->row_of[id] < 0)
            missed++;
    }
    ff->acc.active += n_truth;
    ff->acc.missed += missed;
    ff->acc.extra += n_needed - both;
}

/* Rows [first, first + n) of layer's cache, computed into out: on the
 * host, or on the device's mirror of them. */
static void compute_cached(struct ffn *f, struct flash_ffn *ff, int layer, uint32_t first, uint32_t n, const float *x,
                           float *out)
{
    const struct neuron_cache *c = &ff->caches[layer];
    bool bias = f->m->layers[layer].ffn_up_bias != NULL;
    if (!ff->on_device) {
        if (c->rows)
            compute_rows(f, ff, c->rows + (uint64_t)first * ff->stride, n, bias ? c->up_bias + first : NULL, x, out);
        return;
    }
    const struct neuron_cache_dev *d = &ff->mirrors[layer];
    double t0 = now_ms();
    dev_check(ff, fdev_rows(&ff->fdev, d->be ? ncd_rows(d, first) : (struct dev_ref){0}, n,
                            d->be && bias ? ncd_bias(d, first) : (struct dev_ref){0}));
    ff->acc.ffn_ms += now_ms() - t0;
}

/* The deletions recorded since the last batch, moved on the device. */
static void apply_moves(struct flash_ffn *ff, struct neuron_cache_dev *d)
{
    uint32_t before = d->n_applied;
    dev_check(ff, ncd_apply_moves(d, &ff->acc.h2d_bytes));
    ff->acc.move_batches += d->n_applied != before;
}

/* The step's counts into the token's. */
static void count_step(struct flash_ffn *ff, const struct neuron_cache *c, const struct cache_step *st,
                       uint64_t shrinks)
{
    ff->acc.reads += st->n_reads;
    ff->acc.rows_inserted += st->n_rows;
    ff->acc.rows_deleted += st->n_deleted + st->n_extra;
    ff->acc.overflow_rows += st->overflow;
    ff->acc.window_shrinks += (uint32_t)(ff->decide.p.shrinks - shrinks);
    ff->acc.cache_rows += c->capacity ? c->num_used : 0;
}

/* One layer's decision, memory management, reads and compute; truth (check)
 * is counted against what the step computes. On a device (x and out NULL
 * unless the host reads them) the deletions are moved there in a batch
 * before the held rows are computed (a second one after, when needed rows
 * the policy dropped leave), and the rows appended are uploaded once read. */
static void policy_forward(struct ffn *f, struct flash_ffn *ff, int layer, uint32_t n_needed, const uint32_t *truth,
                           uint32_t n_truth, const float *x, float *out)
{
    struct neuron_cache *c = &ff->caches[layer];
    struct neuron_cache_dev *d = &ff->mirrors[layer];
    if (out)
        memset(out, 0, f->m->shape.d_model * sizeof *out);
    double t0 = now_ms();
    uint64_t shrinks = ff->decide.p.shrinks;
    struct cache_step st;
    cache_request(&ff->decide, (uint64_t)ff->token, (uint32_t)layer, ff->needed, n_needed, true, NULL, &st);
    uint32_t n_late = classify(ff, &st, n_needed);
    dev_check(ff, ncd_begin(d, ff->ring.covered)); /* the moves list was the last step's upload source */
    make_room(ff, layer, &st);
    apply_moves(ff, d);
    ff->acc.mem_ms += now_ms() - t0;
    if (truth)
        count_misses(ff, layer, truth, n_truth, n_needed);
    /* the rows held: hits, and what the policy keeps from earlier tokens */
    compute_cached(f, ff, layer, 0, c->num_used, x, out);
    t0 = now_ms();
    for (uint32_t j = 0; j < n_late; j++)
        drop_row(ff, layer, ff->late[j]);
    apply_moves(ff, d);
    uint32_t first_new = c->capacity ? c->num_used : 0;
    int rc = append_kept(ff, layer, &st);
    ff->acc.mem_ms += now_ms() - t0;
    if (rc == 0) {
        queue_reads(f, ff, layer, &st, x, out);
        uint32_t once = ff->n_staged;
        flush(f, ff, layer, x, out); /* on a device the appended rows went up with the ring */
        ff->acc.append_groups += d->be && c->num_used > first_new;
        compute_cached(f, ff, layer, first_new, c->num_used - first_new, x, out);
        ff->acc.cache_rows += once;
    }
    dev_check(ff, ncd_end(d));
    clear_marks(ff, &st, n_needed);
    count_step(ff, c, &st, shrinks);
}

/* The neurons the source chooses for this layer (none for naive and
 * hybrid, which read all they do not hold whatever is needed). */
static uint32_t choose_needed(struct ffn *f, struct flash_ffn *ff, int layer, const float *x, bool cached)
{
    if (!cached)
        return 0;
    if (ff->cfg.active == SOURCE_TRACE)
        return trace_needed(ff, layer, ff->needed);
    double t0 = now_ms();
    uint32_t n = 0;
    if (ff->dev_predict) { /* x stays on the device; its logits come down */
        uint64_t ev = 0;
        dev_check(ff, pdev_choose(&ff->pdev, (uint32_t)layer, ff->fdev.x, ff->needed, &n, &ev));
        fring_covered(&ff->ring, ev);
        ff->acc.predictor_ms += now_ms() - t0;
        return n;
    }
    n = neuron_select_layer(&ff->choose, layer, f->ck, x, ff->needed);
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
    if (ff->cfg.active == SOURCE_ORACLE && cached) {
        *n = n_needed;
        return ff->needed;
    }
    struct neuron_select *s = ff->cfg.active == SOURCE_ORACLE ? &ff->choose : ff->have_truth ? &ff->truth : NULL;
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
    const uint32_t *active = truth ? truth : ff->needed;
    uint32_t n_active = truth ? n_truth : n_needed;
    bool pred = deployable(&ff->cfg);
    char err[512];
    const struct trace_sink *rec = ff->cfg.record;
    if (rec->layer(rec->impl, (uint32_t)layer, active, n_active, pred ? ff->needed : NULL, pred ? n_needed : 0, err,
                   sizeof err) != 0)
        fail(ff, err);
}

/* Whether the host reads this layer's x (choose_needed, true_set): a
 * device run downloads it only then. */
static bool host_reads_x(const struct flash_ffn *ff, bool cached)
{
    const struct ffn_flash_config *c = &ff->cfg;
    bool chooses = cached && c->active != SOURCE_TRACE && !ff->dev_predict;
    bool truth = (c->record || c->check) && !(c->active == SOURCE_ORACLE && cached) &&
                 (c->active == SOURCE_ORACLE || ff->have_truth);
    return chooses || truth;
}

/* One layer but its down bias: x on the host (NULL on a device when the
 * host does not read it), out on the host (NULL on a device). */
static void flash_layer(struct ffn *f, int layer, const float *x, float *out)
{
    struct flash_ffn *ff = f->priv;
    const struct model *m = f->m;
    if (layer == 0) {
        ff->token++;
        if (ff->cfg.record) {
            char err[512];
            if (ff->cfg.record->begin_token(ff->cfg.record->impl, ff->next_flags, err, sizeof err) != 0)
                fail(ff, err);
        }
    }
    bool cached = !ff->decide.p.ops->extra_reads;
    uint32_t n_needed = choose_needed(f, ff, layer, x, cached), n_truth = 0;
    const uint32_t *truth = ff->cfg.record || ff->cfg.check ? true_set(f, ff, layer, x, cached, n_needed, &n_truth)
                                                             : NULL;
    if (ff->cfg.stream_dram)
        naive_read_dram(ff, layer, (int)m->shape.n_layers);
    if (ff->cfg.record)
        record_layer(ff, layer, truth, n_truth, n_needed);
    ff->acc.needed += n_needed;
    policy_forward(f, ff, layer, n_needed, ff->cfg.check && cached ? truth : NULL, n_truth, x, out);
}

static void flash_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    const struct model *m = f->m;
    flash_layer(f, layer, x, out);
    if (m->layers[layer].ffn_down_bias)
        ck_add(f->ck, out, m->layers[layer].ffn_down_bias, (int)m->shape.d_model);
}

/* On the engine's buffers: where the host reaches them (cpu), the host
 * path in place, as the engine runs a host FFN; else on the device. */
static int flash_forward_device(struct ffn *f, int layer, int pos, struct dev_ref x, struct dev_ref out)
{
    struct flash_ffn *ff = f->priv;
    const struct dev_model *dm = f->dev;
    if (!ff->on_device) {
        const char *xb = dm->ops->host_ptr(dm->be, x.buf);
        char *ob = dm->ops->host_ptr(dm->be, out.buf);
        flash_forward(f, layer, pos, (const float *)(xb + x.off), (float *)(ob + out.off));
        return 0;
    }
    bool need_x = host_reads_x(ff, !ff->decide.p.ops->extra_reads);
    if (fdev_layer_begin(&ff->fdev, x, out, need_x) != 0)
        return -1;
    flash_layer(f, layer, need_x ? ff->fdev.x_host : NULL, NULL);
    if (ff->dev_failed)
        return -1;
    return fdev_layer_end(&ff->fdev, dev_model_ref(dm, f->m->layers[layer].ffn_down_bias));
}

static void flash_destroy(struct ffn *f)
{
    struct flash_ffn *ff = f->priv;
    if (!ff)
        return;
    if (ff->fdev.be)
        ff->fdev.ops->sync(ff->fdev.be); /* nothing in flight reads what is freed */
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
    if (ff->reader)
        flash_reader_close(ff->reader);
    if (ff->dram_reader)
        flash_reader_close(ff->dram_reader);
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
    free(ff);
    f->priv = NULL;
}

void ffn_flash_next_token(struct ffn *f, unsigned trace_flags)
{
    struct flash_ffn *ff = f->priv;
    ff->next_flags = trace_flags;
}

/* On a device, after the pass's sync: what the ring and the mirrors did
 * this token, and the uploads' device time. */
static void take_device(struct ffn *f, struct flash_ffn *ff)
{
    struct flash_ring *r = &ff->ring;
    fring_synced(r);
    for (uint32_t l = 0; l < f->m->shape.n_layers; l++) {
        ncd_synced(&ff->mirrors[l]);
        ff->acc.step_waits += ff->mirrors[l].waits;
        ff->mirrors[l].waits = 0;
    }
    ff->acc.h2d_bytes += r->bytes_up;
    ff->acc.upload_runs += r->runs_sent;
    ff->acc.ring_waits += r->waits;
    r->bytes_up = r->runs_sent = r->waits = r->sends = 0;
    if (fring_take_ms(r, &ff->acc.h2d_ms) != 0)
        dev_check(ff, -1);
}

void ffn_flash_take_token(struct ffn *f, struct ffn_flash_token *out)
{
    struct flash_ffn *ff = f->priv;
    if (ff->on_device) /* the pass ended with a sync: everything enqueued is complete */
        take_device(f, ff);
    *out = ff->acc;
    memset(&ff->acc, 0, sizeof ff->acc);
}

const char *ffn_flash_error(const struct ffn *f)
{
    const struct flash_ffn *ff = f->priv;
    return ff && ff->error[0] ? ff->error : NULL;
}

uint64_t ffn_flash_dram_bytes(const struct ffn *f, uint64_t *oracle_bytes)
{
    const struct flash_ffn *ff = f->priv;
    if (oracle_bytes)
        *oracle_bytes = ff->oracle_bytes;
    return ff->staging_bytes + ff->bounce_bytes + ff->scratch_bytes + ff->cache_bytes + ff->predictor_bytes;
}

uint64_t ffn_flash_device_bytes(const struct ffn *f, bool *pinned)
{
    const struct flash_ffn *ff = f->priv;
    if (pinned)
        *pinned = !ff->on_device || ff->ring.pinned;
    return ff->device_bytes;
}

uint64_t ffn_flash_read_align(const struct ffn *f)
{
    const struct flash_ffn *ff = f->priv;
    return ff->align;
}

const struct ffn_ops ffn_flash = {
    .name = "flash",
    .create = flash_create,
    .forward = flash_forward,
    .forward_device = flash_forward_device,
    .destroy = flash_destroy,
};
