/* The flash-resident FFN (see ffn_flash.h for the modes). One layer step:
 *   1. which neurons: the oracle's up-projection, or the trace's set
 *   2. memory management: the cache drops what left the window and reserves
 *      rows for the misses (naive and hybrid have no cache)
 *   3. I/O: one batch of reads straight into the reserved rows
 *   4. compute: the backend's ffn_rows over the rows held
 * Every step is timed separately; nothing is allocated per token. */
#include "engine/ffn_flash.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "engine/activation.h"
#include "io/flash_reader.h"
#include "engine/model_format.h"
#include "engine/neuron_cache.h"
#include "io/io_buffer.h"

enum { NAIVE_SCRATCH = 64u << 20, MAX_READ = 1u << 20 };

struct flash_ffn {
    struct ffn_flash_config cfg;
    struct flash_reader *reader;       /* ffn.bin */
    struct flash_reader *dram_reader;  /* naive: dram.bin */
    struct neuron_cache *caches;       /* [n_layers]: predictor, window, all */
    uint8_t *staging;                  /* naive, hybrid: one layer's streamed bundles */
    uint8_t *resident;                 /* hybrid: [n_layers][hybrid_resident] bundles */
    uint8_t *scratch;                  /* naive: dram.bin passes through here */
    struct io_buffer staging_mem, resident_mem, scratch_mem;
    uint64_t dram_file_bytes, align;
    void *oracle_up, *oracle_gate;     /* oracle: [n_layers][d_ff][d_model] in the model's dtype */
    float *z, *g;                      /* [d_ff] oracle pre-activations */
    float *tmp_out;                    /* [d_model] hybrid's second half */
    uint32_t *needed;                  /* [d_ff] the neurons this layer loads */
    uint32_t *recorded;                /* [d_ff] the active ones, when recording needs its own */
    struct neuron_run *runs;           /* [d_ff] */
    struct flash_read *reqs;           /* [3 * d_ff + 1] */
    uint64_t staging_bytes, resident_bytes, scratch_bytes, cache_bytes, oracle_bytes;
    int64_t token;                     /* index of the token being computed */
    unsigned next_flags;
    struct ffn_flash_token acc;
    char error[512];                   /* the first failure; the run stops on it */
};

static const char *const mode_names[] = {"naive", "hybrid", "predictor", "window", "all"};

const char *flash_mode_name(enum flash_mode m)
{
    return mode_names[m];
}

int flash_mode_parse(const char *s, enum flash_mode *m)
{
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, mode_names[i])) {
            *m = (enum flash_mode)i;
            return 0;
        }
    return -1;
}

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

/* Reads into the oracle's matrices the up (and gate) rows of every layer:
 * what a deployable system would replace with a predictor. */
static int load_oracle(struct ffn *f, struct flash_ffn *ff)
{
    const struct model *m = f->m;
    const struct model_shape *s = &m->shape;
    uint64_t row = (uint64_t)s->d_model * dtype_size(m->dtype);
    uint64_t per = (uint64_t)s->n_layers * s->d_ff * row;
    ff->oracle_up = malloc(per);
    ff->oracle_gate = m->arch.glu ? malloc(per) : NULL;
    if (!ff->oracle_up || (m->arch.glu && !ff->oracle_gate)) {
        fb_error("run --active oracle: cannot allocate %llu bytes for the up-projection rows",
                 (unsigned long long)(per * (m->arch.glu ? 2 : 1)));
        return -1;
    }
    ff->oracle_bytes = per * (m->arch.glu ? 2 : 1);
    FILE *in = fopen(m->ffn_path, "rb");
    if (!in) {
        fb_error("%s: cannot open: %s", m->ffn_path, strerror(errno));
        return -1;
    }
    uint8_t *bundle = malloc(m->bundle_stride);
    int rc = bundle ? 0 : -1;
    for (uint64_t i = 0; rc == 0 && i < (uint64_t)s->n_layers * s->d_ff; i++) {
        if (fread(bundle, 1, m->bundle_stride, in) != m->bundle_stride) {
            fb_error("%s: short read at bundle %llu", m->ffn_path, (unsigned long long)i);
            rc = -1;
            break;
        }
        memcpy((uint8_t *)ff->oracle_up + i * row, bundle, row);
        if (ff->oracle_gate)
            memcpy((uint8_t *)ff->oracle_gate + i * row, bundle + ffn_bundle_gate(s) * dtype_size(m->dtype), row);
    }
    free(bundle);
    fclose(in);
    return rc;
}

static int open_readers(struct ffn *f, struct flash_ffn *ff)
{
    const struct ioengine_ops *eng = ioengine_find(ff->cfg.io_engine ? ff->cfg.io_engine : "psync");
    if (!eng) {
        fb_error("run --io-engine: unknown '%s' (%s)", ff->cfg.io_engine, ioengine_names());
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
        fb_error("%s", err);
        return -1;
    }
    ff->align = flash_reader_alignment(ff->reader);
    if (f->m->bundle_stride % ff->align) {
        fb_error("%s: bundles of %llu bytes are not multiples of the file system's direct-I/O alignment %llu",
                 f->m->ffn_path, (unsigned long long)f->m->bundle_stride, (unsigned long long)ff->align);
        return -1;
    }
    if (ff->cfg.mode == FLASH_NAIVE) {
        char dram_path[4300];
        snprintf(dram_path, sizeof dram_path, "%s/%s", f->m->dir, MODEL_DRAM_FILE);
        rc.path = dram_path;
        if (!(ff->dram_reader = flash_reader_open(&rc, err, sizeof err))) {
            fb_error("%s", err);
            return -1;
        }
        ff->dram_file_bytes = f->m->dram_bytes;
    }
    return 0;
}

static int flash_create(struct ffn *f)
{
    const struct ffn_flash_config *cfg = f->config;
    const struct model *m = f->m;
    const struct model_shape *s = &m->shape;
    struct flash_ffn *ff = calloc(1, sizeof *ff);
    if (!ff || !cfg) {
        free(ff);
        fb_error("the flash FFN needs its configuration");
        return -1;
    }
    f->priv = ff;
    ff->cfg = *cfg;
    ff->token = -1;
    if (cfg->active == ACTIVE_TRACE) {
        char err[512];
        if (trace_matches_shape(cfg->trace, "the trace", s, err, sizeof err) != 0) {
            fb_error("%s", err);
            return -1;
        }
        if (cfg->use_predicted && !cfg->trace->meta.has_predicted) {
            fb_error("the trace has no predicted sets");
            return -1;
        }
    }
    if (open_readers(f, ff) != 0)
        return -1;
    uint64_t stride = m->bundle_stride;
    ff->needed = malloc(s->d_ff * sizeof *ff->needed);
    ff->runs = malloc(s->d_ff * sizeof *ff->runs);
    ff->reqs = malloc((3 * (size_t)s->d_ff + 1) * sizeof *ff->reqs);
    ff->tmp_out = calloc(s->d_model, sizeof(float));
    if (!ff->needed || !ff->runs || !ff->reqs || !ff->tmp_out)
        goto nomem;
    switch (cfg->mode) {
    case FLASH_NAIVE:
    case FLASH_HYBRID: {
        uint32_t keep = cfg->mode == FLASH_HYBRID ? cfg->hybrid_resident : 0;
        if (keep > s->d_ff)
            keep = s->d_ff;
        ff->cfg.hybrid_resident = keep;
        ff->staging_bytes = (uint64_t)(s->d_ff - keep) * stride;
        if (!(ff->staging = read_buffer(&ff->staging_mem, ff->staging_bytes)))
            goto nomem;
        if (keep) {
            ff->resident_bytes = (uint64_t)s->n_layers * keep * stride;
            if (!(ff->resident = read_buffer(&ff->resident_mem, ff->resident_bytes)))
                goto nomem;
            /* the resident part is loaded once, at start (not per token) */
            for (uint32_t l = 0; l < s->n_layers; l++) {
                struct flash_read rq = {bundle_offset(m, (int)l, 0), (uint64_t)keep * stride,
                                        ff->resident + (uint64_t)l * keep * stride};
                char err[512];
                if (flash_reader_read(ff->reader, &rq, 1, err, sizeof err) != 0) {
                    fb_error("%s", err);
                    return -1;
                }
            }
        }
        if (cfg->mode == FLASH_NAIVE) {
            ff->scratch_bytes = NAIVE_SCRATCH;
            if (!(ff->scratch = read_buffer(&ff->scratch_mem, ff->scratch_bytes)))
                goto nomem;
        }
        break;
    }
    default: {
        ff->caches = calloc(s->n_layers, sizeof *ff->caches);
        if (!ff->caches)
            goto nomem;
        char err[512];
        for (uint32_t l = 0; l < s->n_layers; l++) {
            uint32_t cap = cfg->layer_rows ? cfg->layer_rows[l] : cfg->cache_rows;
            if (cap == 0 || cap > s->d_ff)
                cap = s->d_ff;
            if (neuron_cache_init(&ff->caches[l], s->d_ff, cap, stride, m->layers[l].ffn_up_bias, err,
                                  sizeof err) != 0) {
                fb_error("neuron cache of layer %u (%u rows of %llu bytes): %s", l, cap,
                         (unsigned long long)stride, err);
                return -1;
            }
            ff->cache_bytes += (uint64_t)cap * stride;
        }
        break;
    }
    }
    bool cached = cfg->mode != FLASH_NAIVE && cfg->mode != FLASH_HYBRID;
    if ((cached && cfg->active == ACTIVE_ORACLE) || cfg->record) {
        ff->z = malloc(s->d_ff * sizeof *ff->z);
        ff->g = malloc(s->d_ff * sizeof *ff->g);
        ff->recorded = malloc(s->d_ff * sizeof *ff->recorded);
        if (!ff->z || !ff->g || !ff->recorded || load_oracle(f, ff) != 0)
            return -1;
    }
    return 0;
nomem:
    fb_error("the flash FFN cannot allocate its buffers");
    return -1;
}

/* The neurons whose activation is not zero (ReLU) or above the threshold,
 * from the full up (and gate) projection: what the oracle knows. */
static uint32_t oracle_needed(struct ffn *f, struct flash_ffn *ff, int layer, const float *x, uint32_t *out)
{
    const struct model *m = f->m;
    const struct model_shape *s = &m->shape;
    uint64_t mat = (uint64_t)s->d_ff * s->d_model * dtype_size(m->dtype) * (uint64_t)layer;
    f->be_ops->matvec(f->be, ff->z, (const uint8_t *)ff->oracle_up + mat, m->dtype, x, m->layers[layer].ffn_up_bias,
                      (int)s->d_ff, (int)s->d_model);
    if (m->arch.glu)
        f->be_ops->matvec(f->be, ff->g, (const uint8_t *)ff->oracle_gate + mat, m->dtype, x, NULL, (int)s->d_ff,
                          (int)s->d_model);
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->d_ff; i++) {
        float h = m->arch.glu ? activation_apply(ff->g[i], m->arch.act) * ff->z[i] : activation_apply(ff->z[i], m->arch.act);
        if (m->arch.act == ACT_RELU && !m->arch.glu ? h > 0 : fabsf(h) > ff->cfg.threshold)
            out[n++] = i;
    }
    return n;
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

static int read_batch(struct flash_ffn *ff, struct flash_reader *r, size_t n)
{
    char err[512];
    struct flash_reader_stats before, after;
    flash_reader_stats(r, &before);
    double t0 = now_ms();
    int rc = flash_reader_read(r, ff->reqs, n, err, sizeof err);
    ff->acc.io_ms += now_ms() - t0;
    flash_reader_stats(r, &after);
    ff->acc.reads += after.reads - before.reads;
    ff->acc.bytes_read += after.bytes - before.bytes;
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
        if (read_batch(ff, ff->dram_reader, 1) != 0)
            return;
        lo += len;
    }
}

static void streamed_forward(struct ffn *f, struct flash_ffn *ff, int layer, const float *x, float *out)
{
    const struct model *m = f->m;
    const struct model_shape *s = &m->shape;
    const struct layer_weights *L = &m->layers[layer];
    uint32_t keep = ff->cfg.hybrid_resident;
    if (ff->cfg.mode == FLASH_NAIVE)
        naive_read_dram(ff, layer, (int)s->n_layers);
    ff->reqs[0] = (struct flash_read){bundle_offset(m, layer, keep), ff->staging_bytes, ff->staging};
    if (ff->staging_bytes)
        read_batch(ff, ff->reader, 1);
    double t0 = now_ms();
    int d = (int)s->d_model;
    f->be_ops->ffn_rows(f->be, out, ff->staging, m->bundle_stride, (int)(s->d_ff - keep),
                        L->ffn_up_bias ? L->ffn_up_bias + keep : NULL, x, d, m->dtype, m->arch.act, m->arch.glu);
    if (keep) {
        f->be_ops->ffn_rows(f->be, ff->tmp_out, ff->resident + (uint64_t)layer * keep * m->bundle_stride,
                            m->bundle_stride, (int)keep, L->ffn_up_bias, x, d, m->dtype, m->arch.act, m->arch.glu);
        f->be_ops->add(f->be, out, ff->tmp_out, d);
    }
    ff->acc.ffn_ms += now_ms() - t0;
    ff->acc.cache_rows += keep;
}

/* Reads for the rows just reserved: a run at a time (bundled, coalesced
 * runs in one read) or each bundle as its aligned pieces (split). */
static size_t plan_reads(const struct ffn *f, struct flash_ffn *ff, const struct neuron_cache *c, int layer,
                         const struct neuron_run *runs, int n_runs)
{
    const struct model *m = f->m;
    uint64_t stride = m->bundle_stride;
    size_t n = 0;
    bool split = ff->cfg.mode != FLASH_ALL;
    /* split pieces: [0, cut) holds up (and gate), [cut, stride) the down column */
    uint64_t down = ffn_bundle_down(&m->shape) * dtype_size(m->dtype);
    uint64_t cut = down / ff->align * ff->align;
    if (cut == 0)
        cut = ff->align < stride ? ff->align : stride;
    for (int r = 0; r < n_runs; r++) {
        uint8_t *dst = c->rows + (uint64_t)runs[r].row * stride;
        uint64_t off = bundle_offset(m, layer, runs[r].first);
        if (!split) {
            ff->reqs[n++] = (struct flash_read){off, (uint64_t)runs[r].count * stride, dst};
            continue;
        }
        for (uint32_t k = 0; k < runs[r].count; k++, off += stride, dst += stride) {
            ff->reqs[n++] = (struct flash_read){off, cut, dst};
            if (cut < stride)
                ff->reqs[n++] = (struct flash_read){off + cut, stride - cut, dst + cut};
        }
    }
    return n;
}

static void cached_forward(struct ffn *f, struct flash_ffn *ff, int layer, uint32_t n_needed, const float *x,
                           float *out)
{
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    struct neuron_cache *c = &ff->caches[layer];
    double t0 = now_ms();
    uint32_t window = ff->cfg.mode == FLASH_PREDICTOR ? 0 : ff->cfg.window;
    uint32_t gap = ff->cfg.mode == FLASH_ALL ? ff->cfg.coalesce : 0;
    /* Rows of tokens older than the window go whether or not this token
     * needs them (the paper keeps the past K - 1 tokens' neurons between
     * tokens, as sim/policy_window.c does); then this token's needs are
     * marked. */
    uint64_t deleted = neuron_cache_evict(c, NULL, 0, ff->token, window);
    neuron_cache_mark(c, ff->needed, n_needed, ff->token);
    uint32_t added = 0;
    int n_runs;
    /* The cache is full: shrink the window (the paper does so for Persimmon
     * and Phi-2) until this token's neurons fit. */
    while ((n_runs = neuron_cache_reserve(c, ff->needed, n_needed, gap, ff->runs, &added)) < 0 && window > 0) {
        window = window > 1 ? window - 1 : 0;
        deleted += neuron_cache_evict(c, NULL, 0, ff->token, window);
        ff->acc.window_shrinks++;
        if (window == 0 && gap) /* without room for gap rows, read the needed ones only */
            gap = 0;
    }
    if (n_runs < 0 && gap) {
        gap = 0;
        n_runs = neuron_cache_reserve(c, ff->needed, n_needed, gap, ff->runs, &added);
    }
    ff->acc.mem_ms += now_ms() - t0;
    if (n_runs < 0) {
        char why[256];
        snprintf(why, sizeof why, "token %lld, layer %d needs %u neurons but the cache holds %u rows",
                 (long long)ff->token, layer, n_needed, c->capacity);
        fail(ff, why);
        memset(out, 0, m->shape.d_model * sizeof *out);
        return;
    }
    ff->acc.rows_deleted += deleted;
    ff->acc.rows_inserted += added;
    size_t n_reqs = plan_reads(f, ff, c, layer, ff->runs, n_runs);
    if (n_reqs)
        read_batch(ff, ff->reader, n_reqs);
    double t1 = now_ms();
    f->be_ops->ffn_rows(f->be, out, c->rows, m->bundle_stride, (int)c->num_used, L->ffn_up_bias ? c->up_bias : NULL,
                        x, (int)m->shape.d_model, m->dtype, m->arch.act, m->arch.glu);
    ff->acc.ffn_ms += now_ms() - t1;
    ff->acc.cache_rows += c->num_used;
}

static void flash_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    struct flash_ffn *ff = f->priv;
    const struct model *m = f->m;
    if (layer == 0) {
        ff->token++;
        if (ff->cfg.record) {
            char err[512];
            if (trace_writer_begin_token(ff->cfg.record, ff->next_flags, err, sizeof err) != 0)
                fail(ff, err);
        }
    }
    uint32_t n_needed = 0;
    bool cached = ff->cfg.mode != FLASH_NAIVE && ff->cfg.mode != FLASH_HYBRID;
    bool oracle_loads = cached && ff->cfg.active == ACTIVE_ORACLE;
    if (oracle_loads) {
        double t0 = now_ms();
        n_needed = oracle_needed(f, ff, layer, x, ff->needed);
        ff->acc.predictor_ms += now_ms() - t0;
    } else if (cached) {
        n_needed = trace_needed(ff, layer, ff->needed);
    }
    if (ff->cfg.record) {
        /* the trace records the true activations, whatever drove the reads */
        const uint32_t *ids = ff->needed;
        uint32_t n = n_needed;
        if (!oracle_loads) {
            n = oracle_needed(f, ff, layer, x, ff->recorded);
            ids = ff->recorded;
        }
        char err[512];
        if (trace_writer_layer(ff->cfg.record, (uint32_t)layer, ids, n, NULL, 0, err, sizeof err) != 0)
            fail(ff, err);
    }
    ff->acc.needed += n_needed;
    if (cached)
        cached_forward(f, ff, layer, n_needed, x, out);
    else
        streamed_forward(f, ff, layer, x, out);
    if (m->layers[layer].ffn_down_bias)
        f->be_ops->add(f->be, out, m->layers[layer].ffn_down_bias, (int)m->shape.d_model);
}

static void flash_destroy(struct ffn *f)
{
    struct flash_ffn *ff = f->priv;
    if (!ff)
        return;
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
    if (ff->resident)
        io_buffer_free(&ff->resident_mem);
    if (ff->scratch)
        io_buffer_free(&ff->scratch_mem);
    free(ff->oracle_up);
    free(ff->oracle_gate);
    free(ff->z);
    free(ff->g);
    free(ff->tmp_out);
    free(ff->needed);
    free(ff->recorded);
    free(ff->runs);
    free(ff->reqs);
    free(ff);
    f->priv = NULL;
}

void ffn_flash_next_token(struct ffn *f, unsigned trace_flags)
{
    struct flash_ffn *ff = f->priv;
    ff->next_flags = trace_flags;
}

void ffn_flash_take_token(struct ffn *f, struct ffn_flash_token *out)
{
    struct flash_ffn *ff = f->priv;
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
    return ff->staging_bytes + ff->resident_bytes + ff->scratch_bytes + ff->cache_bytes;
}

const struct ffn_ops ffn_flash = {
    .name = "flash",
    .create = flash_create,
    .forward = flash_forward,
    .destroy = flash_destroy,
};
