/* The streamer's set-up and tear-down (streamer.h): the reader of the unit
 * file, the policy and layout's decisions, each layer's unit cache with the
 * rows the policy starts with, the step's buffers, and on a device whose
 * memory is not the host's the caches' mirrors and the pinned ring.
 * Everything a token needs is allocated here. */
#include "engine/ffn/streamer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

/* Read buffers: 2 MiB-aligned huge pages, touched now (io/io_buffer.h),
 * so page faults belong to set-up, not to the first token. */
static uint8_t *read_buffer(struct io_buffer *b, uint64_t bytes)
{
    return io_buffer_alloc(b, bytes ? bytes : 1, true) == 0 ? b->base : NULL;
}

struct flash_reader *streamer_config_reader(const struct streamer_config *cfg, const char *path, char *err,
                                           size_t errlen)
{
    const struct ioengine_ops *eng = ioengine_find(cfg->io_engine ? cfg->io_engine : "psync");
    if (!eng) {
        err_set(err, errlen, "I/O engine: unknown '%s' (%s)", cfg->io_engine, ioengine_names());
        return NULL;
    }
    struct flash_reader_config rc = {
        .path = path,
        .engine = eng,
        .threads = cfg->io_threads ? cfg->io_threads : 32,
        .iodepth = cfg->iodepth ? cfg->iodepth : 1,
        .direct = cfg->direct,
        .max_read = STREAMER_MAX_READ,
        .fault = cfg->fault,
    };
    return flash_reader_open(&rc, err, errlen);
}

struct flash_reader *streamer_open_reader(const struct streamer *s, const char *path, char *err, size_t errlen)
{
    return streamer_config_reader(&s->cfg, path, err, errlen);
}

static int open_reader(struct streamer *s, const struct streamer_open_args *a, char *err, size_t errlen)
{
    const char *path = a->path;
    s->owns_reader = !a->reader;
    if (!(s->reader = a->reader ? a->reader : streamer_open_reader(s, path, err, errlen)))
        return -1;
    s->align = flash_reader_alignment(s->reader);
    if (s->stride % s->align)
        return err_set(err, errlen, "%s: bundles of %llu bytes are not multiples of the file system's direct-I/O alignment %llu",
                       path, (unsigned long long)s->stride, (unsigned long long)s->align);
    return 0;
}

static int open_decisions(struct streamer *s, const struct cache_config *cc, char *err, size_t errlen)
{
    struct cache_geometry g;
    cache_geometry_of_unit(&s->unit, s->align, &g);
    char why[512];
    if (cache_open(&s->decide, cc, &g, why, sizeof why) != 0)
        return err_set(err, errlen, "%s", why);
    if (!s->decide.lo.ops->lists_reads) {
        char layout[LAYOUT_NAME_MAX];
        cache_layout_name(&cc->layout, layout, sizeof layout);
        return err_set(err, errlen, "layout %s: the engine cannot run it (its reads are not ranges of ffn.bin, whose bundles are "
                       "in neuron order)", layout);
    }
    return 0;
}

/* Where rows [row, row + n) of layer's cache are read to: the host
 * cache's rows, or on a device the pinned ring, sent to the mirror's rows
 * (room for n made first: n <= the ring's slot). */
static uint8_t *load_home(struct streamer *s, int layer, uint32_t row, uint32_t n)
{
    const struct neuron_cache *c = &s->caches[layer];
    if (!s->on_device)
        return c->rows + (uint64_t)row * s->stride;
    if ((fring_room(&s->ring) < n && fring_send(&s->ring) != 0) || fring_ready(&s->ring) != 0)
        return NULL;
    const float *bias = s->bias[layer];
    const struct neuron_cache_dev *d = &s->mirrors[layer];
    uint8_t *at = NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *p = fring_place(&s->ring, ncd_rows(d, row + i), ncd_bias(d, row + i), bias ? c->up_bias[row + i] : 0);
        at = i ? at : p;
    }
    return at;
}

/* Appends ids[0..n) (ascending) to layer's cache and reads them straight
 * into their rows: one read per run of adjacent ids (per ring slot on a
 * device). The resident part a policy starts with (hybrid's), not
 * counted per token. */
static int load_rows(struct streamer *s, int layer, const uint32_t *ids, uint32_t n, char *err, size_t errlen)
{
    struct neuron_cache *c = &s->caches[layer];
    uint32_t most = s->on_device ? s->ring.slot_rows : n;
    for (uint32_t j = 0, k; j < n; j = k) {
        for (k = j + 1; k < n && k - j < most && ids[k] == ids[k - 1] + 1;)
            k++;
        uint32_t row = neuron_cache_append(c, ids[j]);
        for (uint32_t i = j + 1; i < k; i++)
            neuron_cache_append(c, ids[i]);
        uint8_t *dst = load_home(s, layer, row, k - j);
        struct flash_read rq = {streamer_unit_offset(s, layer, ids[j]), (uint64_t)(k - j) * s->stride, dst};
        char why[512];
        if (!dst)
            return err_set(err, errlen, "%s backend: %s", s->dev_ops->name, s->dev_ops->error(s->dev_be));
        if (flash_reader_read(s->reader, &rq, 1, why, sizeof why) != 0)
            return err_set(err, errlen, "%s", why);
    }
    return 0;
}

/* The rows the policy starts layer l with (hybrid's resident part). */
static int preload(struct streamer *s, uint32_t l, char *err, size_t errlen)
{
    if (s->decide.p.ops->preload_is_read)
        return 0; /* hot's pinned rows are read with the first token */
    uint32_t n = cache_preloaded_rows(&s->decide, l, s->late);
    if (n && s->no_preload)
        return err_set(err, errlen, "policy %s starts with %u rows in layer %u, which %s does not load",
                       s->decide.p.ops->name, n, l, s->no_preload);
    if (n > s->caches[l].capacity)
        return err_set(err, errlen, "layer %u: the policy starts with %u rows, the cache holds %u", l, n,
                       s->caches[l].capacity);
    return load_rows(s, (int)l, s->late, n, err, errlen);
}

/* The unit cache of every layer, sized as configured, with the rows the
 * policy starts with read in on the host (hybrid's resident part). */
static uint32_t layer_cap(const struct streamer_open_args *a, uint32_t l)
{
    return a->layer_rows ? a->layer_rows[l] : a->default_rows;
}

/* one_mapping: every layer's cache rows in one read buffer, layer after layer. */
static int open_store(struct streamer *s, const struct streamer_open_args *a, char *err, size_t errlen)
{
    uint64_t bytes = 0;
    for (uint32_t l = 0; l < s->unit.n_layers; l++)
        bytes += (uint64_t)layer_cap(a, l) * s->stride;
    if (!read_buffer(&s->store_mem, bytes))
        return err_set(err, errlen, "the streamer cannot allocate its caches' %llu bytes", (unsigned long long)bytes);
    return 0;
}

static int open_caches(struct streamer *s, const struct streamer_open_args *a, char *err, size_t errlen)
{
    uint32_t L = s->unit.n_layers;
    s->caches = calloc(L, sizeof *s->caches);
    s->mirrors = calloc(L, sizeof *s->mirrors);
    if (!s->caches || !s->mirrors)
        return err_set(err, errlen, "the streamer cannot allocate its buffers");
    if (a->one_mapping && !s->on_device && open_store(s, a, err, errlen) != 0)
        return -1;
    char why[512];
    uint8_t *next = s->store_mem.base;
    for (uint32_t l = 0; l < L; l++) {
        uint32_t cap = layer_cap(a, l);
        if (cap == 0)
            continue;
        if (neuron_cache_init(&s->caches[l], s->unit.units, cap, s->stride, s->bias[l], !s->on_device && !next, why,
                              sizeof why) != 0)
            return err_set(err, errlen, "neuron cache of layer %u (%u rows of %llu bytes): %s", l, cap,
                           (unsigned long long)s->stride, why);
        if (next) { /* the rows are the store's (the cache frees none) */
            s->caches[l].rows = next;
            next += (uint64_t)cap * s->stride;
        }
        if (s->order == STREAMER_NEEDED_ORDER && neuron_cache_keep_in_place(&s->caches[l], err, errlen) != 0)
            return -1;
        if (!s->on_device) /* else the device's (streamer_open_device) */
            s->cache_bytes += (uint64_t)cap * s->stride;
        if (!s->on_device && preload(s, l, err, errlen) != 0)
            return -1;
    }
    return 0;
}

static int alloc_step_buffers(struct streamer *s)
{
    uint32_t N = s->unit.units;
    s->staging_rows = s->cfg.staging_rows ? s->cfg.staging_rows : 1;
    s->bounce_rows = s->cfg.bounce_rows ? s->cfg.bounce_rows : 1;
    s->staging_bytes = (uint64_t)s->staging_rows * s->stride;
    s->bounce_bytes = (uint64_t)s->bounce_rows * s->stride;
    s->needed = malloc(N * sizeof *s->needed);
    s->late = malloc(N * sizeof *s->late);
    s->mark = calloc(N, 1);
    s->staged = malloc(s->staging_rows * sizeof *s->staged);
    s->copies = malloc(s->bounce_rows * sizeof *s->copies);
    s->reqs = malloc((3 * (size_t)N + 1) * sizeof *s->reqs);
    s->landed = malloc((3 * (size_t)N + 1) * sizeof *s->landed);
    for (int k = 0; k < 2; k++)
        s->steps[k].landed = malloc((size_t)N * sizeof *s->steps[k].landed);
    bool sums = s->order == STREAMER_NEEDED_ORDER;
    s->sum_ids = sums ? malloc(N * sizeof *s->sum_ids) : NULL;
    s->sum_rows = sums ? malloc(N * sizeof *s->sum_rows) : NULL;
    if (sums && (!s->sum_ids || !s->sum_rows))
        return -1;
    /* on a device rows used once go through the pinned ring (streamer_open_device) */
    s->staging = s->on_device ? NULL : read_buffer(&s->staging_mem, s->staging_bytes);
    s->bounce = read_buffer(&s->bounce_mem, s->bounce_bytes);
    return s->needed && s->late && s->mark && s->staged && s->copies && s->reqs && s->landed &&
                   s->steps[0].landed && s->steps[1].landed && (s->staging || s->on_device) && s->bounce
               ? 0
               : -1;
}

static int open_bias(struct streamer *s)
{
    s->bias = calloc(s->unit.n_layers, sizeof *s->bias);
    if (!s->bias)
        return -1;
    for (uint32_t l = 0; l < s->unit.n_layers; l++)
        s->bias[l] = s->hooks.layer_bias ? s->hooks.layer_bias(s->hooks.ctx, l) : NULL;
    return 0;
}

int streamer_open(struct streamer *s, const struct streamer_config *cfg, const struct streamer_open_args *a,
                  const struct streamer_hooks *hooks, struct ffn_flash_token *acc, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->hooks = *hooks;
    s->acc = acc;
    s->unit = a->unit;
    s->unit_word = a->unit_word;
    s->stride = a->unit.stride;
    s->crc = cfg->verify ? a->crc : NULL;
    s->verify = s->crc != NULL;
    s->on_device = a->on_device;
    s->order = a->order;
    s->base = a->base;
    s->layer_pitch = a->layer_pitch ? a->layer_pitch : (uint64_t)a->unit.units * a->unit.stride;
    s->crc_base = a->crc_base;
    s->crc_pitch = a->crc_pitch ? a->crc_pitch : a->unit.units;
    s->done_reads = a->done_reads;
    s->done_bytes = a->done_bytes;
    s->no_preload = a->no_preload;
    s->token = -1;
    s->steps[0].layer = s->steps[1].layer = -1;
    s->ahead = cfg->read_ahead && !s->on_device && a->decide.policy.ops && !a->decide.policy.ops->extra_reads;
    if (s->order == STREAMER_NEEDED_ORDER && (s->on_device || !hooks->compute_rows))
        return err_set(err, errlen, "the streamer sums needed rows in needed order on the host, through compute_rows");
    if (open_bias(s) != 0)
        return err_set(err, errlen, "the streamer cannot allocate its buffers");
    if (open_reader(s, a, err, errlen) != 0 || open_decisions(s, &a->decide, err, errlen) != 0)
        return -1;
    if (alloc_step_buffers(s) != 0)
        return err_set(err, errlen, "the flash FFN cannot allocate its buffers");
    return open_caches(s, a, err, errlen);
}

int streamer_open_device(struct streamer *s, const struct backend_ops *ops, struct backend *be,
                         struct dev_ref stage_rows, struct dev_ref stage_bias, char *err, size_t errlen)
{
    s->dev_ops = ops;
    s->dev_be = be;
    s->stage_rows = stage_rows;
    s->stage_bias = stage_bias;
    if (fring_init(&s->ring, ops, be, s->staging_rows, s->stride, err, errlen) != 0)
        return -1;
    s->staging_bytes = FLASH_RING_SLOTS * s->staging_bytes; /* the ring, pinned, is the host's staging */
    s->device_bytes = s->staging_bytes / FLASH_RING_SLOTS;
    for (uint32_t l = 0; l < s->unit.n_layers; l++) {
        const struct neuron_cache *c = &s->caches[l];
        if (!c->capacity)
            continue;
        if (ncd_init(&s->mirrors[l], ops, be, c->capacity, s->stride, c->up_bias != NULL, err, errlen) != 0)
            return -1;
        s->device_bytes += (uint64_t)c->capacity * (s->stride + (c->up_bias ? sizeof(float) : 0) +
                                                    sizeof(struct row_move));
        if (preload(s, l, err, errlen) != 0)
            return -1;
    }
    double ms;
    if (fring_send(&s->ring) != 0 || ops->sync(be) != 0 || fring_take_ms(&s->ring, &ms) != 0)
        return err_set(err, errlen, "%s backend: %s", ops->name, ops->error(be));
    s->ring.sends = s->ring.runs_sent = s->ring.waits = s->ring.bytes_up = 0; /* set-up, not a token's */
    return 0;
}

void streamer_close(struct streamer *s)
{
    if (s->dev_be)
        s->dev_ops->sync(s->dev_be); /* nothing in flight reads what is freed */
    /* nor writes it: a read-ahead batch lands in the caches' rows */
    if (s->reader && s->owns_reader)
        flash_reader_close(s->reader);
    for (uint32_t l = 0; s->mirrors && l < s->unit.n_layers; l++)
        ncd_free(&s->mirrors[l]);
    free(s->mirrors);
    if (s->ring.be)
        fring_free(&s->ring);
    if (s->caches)
        for (uint32_t l = 0; l < s->unit.n_layers; l++)
            neuron_cache_free(&s->caches[l]);
    free(s->caches);
    io_buffer_free(&s->store_mem); /* one_mapping's (zeroed: none) */
    if (s->staging)
        io_buffer_free(&s->staging_mem);
    if (s->bounce)
        io_buffer_free(&s->bounce_mem);
    cache_close(&s->decide);
    free(s->bias);
    free(s->needed);
    free(s->late);
    free(s->mark);
    free(s->staged);
    free(s->copies);
    free(s->reqs);
    free(s->landed);
    free(s->sum_ids);
    free(s->sum_rows);
    free(s->steps[0].landed);
    free(s->steps[1].landed);
    memset(s, 0, sizeof *s);
}

uint64_t streamer_resident_rows(const struct streamer *s)
{
    uint64_t n = 0;
    for (uint32_t l = 0; s->caches && l < s->unit.n_layers; l++)
        n += s->caches[l].num_used;
    return n;
}
