/* The transposed flash FFN's set-up, tear-down and accessors
 * (ffn_transposed.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/ffn/ffn_transposed_impl.h"
#include "io/ioengine.h"

uint32_t ffn_transposed_staging_rows(uint32_t rows, uint64_t row_bytes)
{
    uint64_t fit = row_bytes ? FFN_T_STAGING_BYTES / row_bytes : rows;
    if (fit < FFN_T_STAGING_MIN_ROWS)
        fit = FFN_T_STAGING_MIN_ROWS;
    return fit < rows ? (uint32_t)fit : rows;
}

static int open_reader(const struct ffn *f, struct t_ffn *tf, char *err, size_t errlen)
{
    const struct ioengine_ops *eng = ioengine_find(tf->cfg.stream.io_engine ? tf->cfg.stream.io_engine : "psync");
    if (!eng)
        return err_set(err, errlen, "I/O engine: unknown '%s' (%s)", tf->cfg.stream.io_engine, ioengine_names());
    if (ffn_transposed_open(f->m, &tf->file, err, errlen) != 0 ||
        (tf->cfg.stream.verify && ffn_t_checksums_read(f->m, &tf->file, &tf->crc, err, errlen) != 0))
        return -1;
    struct flash_reader_config rc = {.path = tf->file.path,
                                     .engine = eng,
                                     .threads = tf->cfg.stream.io_threads ? tf->cfg.stream.io_threads : 32,
                                     .iodepth = tf->cfg.stream.iodepth ? tf->cfg.stream.iodepth : 1,
                                     .direct = tf->cfg.stream.direct,
                                     .max_read = FFN_FLASH_MAX_READ,
                                     .fault = tf->cfg.stream.fault};
    if (!(tf->reader = flash_reader_open(&rc, err, errlen)))
        return -1;
    tf->align = flash_reader_alignment(tf->reader);
    if (tf->file.g.chan.row_bytes % tf->align || tf->file.g.down.row_bytes % tf->align)
        return err_set(err, errlen, "%s: rows of %llu and %llu bytes are not multiples of the file system's direct-I/O "
                       "alignment %llu", tf->file.path, (unsigned long long)tf->file.g.chan.row_bytes,
                       (unsigned long long)tf->file.g.down.row_bytes, (unsigned long long)tf->align);
    return 0;
}

/* A stream's cache decisions and its storage: slots per layer (the
 * policy's rows for its capacity), the staging area, the step's lists. */
static int open_stream(struct t_ffn *tf, struct t_stream *s, const char *name, const struct cache_geometry *g,
                       uint64_t capacity, uint32_t staging_rows, char *err, size_t errlen)
{
    s->name = name;
    s->g = *g;
    struct cache_config cc = {tf->cfg.policy, tf->cfg.layout, capacity, NULL, false, false};
    char why[512];
    if (cache_open(&s->decide, &cc, g, why, sizeof why) != 0)
        return err_set(err, errlen, "the %s cache: %s", name, why);
    uint32_t n = g->d_ff, layers = g->n_layers;
    s->slots = (uint32_t)policy_layer_rows(tf->cfg.policy.ops, capacity, n);
    s->staging_rows = staging_rows ? staging_rows : ffn_transposed_staging_rows(n, g->row_bytes);
    uint64_t store = (uint64_t)layers * s->slots * g->row_bytes, staging = (uint64_t)s->staging_rows * g->row_bytes;
    if (io_buffer_alloc(&s->store_mem, store ? store : 1, true) != 0 ||
        io_buffer_alloc(&s->staging_mem, staging ? staging : 1, true) != 0)
        return err_set(err, errlen, "the %s cache: cannot allocate %llu + %llu bytes", name, (unsigned long long)store,
                       (unsigned long long)staging);
    s->store = s->store_mem.base;
    s->staging = s->staging_mem.base;
    tf->held_bytes += store + staging;
    s->slot_of = malloc((size_t)layers * n * sizeof *s->slot_of);
    s->free_slots = malloc(((size_t)layers * s->slots + 1) * sizeof *s->free_slots);
    s->n_free = malloc(layers * sizeof *s->n_free);
    s->mark = calloc(n, 1);
    s->reqs = malloc(((size_t)s->staging_rows + n) * sizeof *s->reqs);
    s->batch_ids = malloc(((size_t)s->staging_rows + n) * sizeof *s->batch_ids);
    s->ptr = malloc(n * sizeof *s->ptr);
    s->coef = malloc(n * sizeof *s->coef);
    if (!s->slot_of || !s->free_slots || !s->n_free || !s->mark || !s->reqs || !s->batch_ids || !s->ptr || !s->coef)
        return err_set(err, errlen, "the %s cache: out of memory", name);
    for (size_t i = 0; i < (size_t)layers * n; i++)
        s->slot_of[i] = T_NO_SLOT;
    for (uint32_t l = 0; l < layers; l++) {
        s->n_free[l] = s->slots;
        for (uint32_t k = 0; k < s->slots; k++) /* popped from the top: slot 0 first */
            s->free_slots[(uint64_t)l * s->slots + k] = s->slots - 1 - k;
        uint32_t pre = cache_preloaded_rows(&s->decide, l, s->batch_ids);
        if (pre) /* the run's setup refuses the policies that start with rows */
            return err_set(err, errlen, "the %s cache: policy %s starts with %u rows in layer %u, which input sparsity "
                           "on flash does not load", name, tf->cfg.policy.ops->name, pre, l);
    }
    return 0;
}

static void close_stream(struct t_stream *s)
{
    cache_close(&s->decide); /* copes with a cache never opened */
    io_buffer_free(&s->store_mem);
    io_buffer_free(&s->staging_mem);
    free(s->slot_of);
    free(s->free_slots);
    free(s->n_free);
    free(s->mark);
    free(s->reqs);
    free(s->batch_ids);
    free(s->ptr);
    free(s->coef);
    memset(s, 0, sizeof *s);
}

static int t_create(struct ffn *f, char *err, size_t errlen)
{
    const struct ffn_flash_config *cfg = f->config;
    const struct model_shape *sh = &f->m->shape;
    struct t_ffn *tf = calloc(1, sizeof *tf);
    if (!tf || !cfg) {
        free(tf);
        return err_set(err, errlen, "the transposed flash FFN needs its configuration");
    }
    f->priv = tf;
    tf->cfg = *cfg;
    if (!select_source(&cfg->select)->reads_channels || !cfg->select.input_thresholds ||
        !cfg->select.inter_thresholds)
        return err_set(err, errlen, "the transposed layout serves input sparsity (--active teal) and its thresholds");
    if (!cfg->policy.ops || !cfg->layout.ops || !cfg->layout.ops->transposed)
        return err_set(err, errlen, "the transposed flash FFN needs a policy and the transposed layout");
    if (open_reader(f, tf, err, errlen) != 0 ||
        open_stream(tf, &tf->chan, "channel", &tf->file.g.chan, cfg->capacity_rows, cfg->stream.staging_rows, err, errlen) ||
        open_stream(tf, &tf->down, "down", &tf->file.g.down, cfg->down.capacity_rows, cfg->down.staging_rows, err,
                    errlen))
        return -1;
    uint32_t most = sh->d_model > sh->d_ff ? sh->d_model : sh->d_ff;
    tf->ids = malloc(most * sizeof *tf->ids);
    tf->zg = malloc(2 * (size_t)sh->d_ff * sizeof *tf->zg);
    tf->h = malloc(sh->d_ff * sizeof *tf->h);
    if (!tf->ids || !tf->zg || !tf->h)
        return err_set(err, errlen, "the transposed flash FFN: out of memory");
    tf->token = -1;
    return 0;
}

static void t_destroy(struct ffn *f)
{
    struct t_ffn *tf = f->priv;
    if (!tf)
        return;
    if (tf->reader)
        flash_reader_close(tf->reader);
    close_stream(&tf->chan);
    close_stream(&tf->down);
    free(tf->crc);
    free(tf->ids);
    free(tf->zg);
    free(tf->h);
    free(tf);
    f->priv = NULL;
}

void ffn_transposed_take_token(struct ffn *f, struct ffn_flash_token *out)
{
    struct t_ffn *tf = f->priv;
    tf->acc.cache_rows = tf->chan.resident + tf->down.resident;
    *out = tf->acc;
    memset(&tf->acc, 0, sizeof tf->acc);
}

void ffn_transposed_next_token(struct ffn *f, unsigned trace_flags)
{
    struct t_ffn *tf = f->priv;
    tf->next_flags = trace_flags;
}

const char *ffn_transposed_error(const struct ffn *f)
{
    const struct t_ffn *tf = f->priv;
    return tf && tf->error[0] ? tf->error : NULL;
}

uint64_t ffn_transposed_dram_bytes(const struct ffn *f)
{
    const struct t_ffn *tf = f->priv;
    return tf->held_bytes;
}

uint64_t ffn_transposed_read_align(const struct ffn *f)
{
    const struct t_ffn *tf = f->priv;
    return tf->align;
}

const struct ffn_ops ffn_transposed = {
    .name = "transposed",
    .create = t_create,
    .destroy = t_destroy,
    .forward = ffn_transposed_forward,
};
