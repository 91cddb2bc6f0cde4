/* The transposed flash FFN's set-up, tear-down and accessors
 * (ffn_transposed.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/ffn/ffn_transposed_impl.h"

uint32_t ffn_transposed_staging_rows(uint32_t rows, uint64_t row_bytes)
{
    uint64_t fit = row_bytes ? FFN_T_STAGING_BYTES / row_bytes : rows;
    if (fit < FFN_T_STAGING_MIN_ROWS)
        fit = FFN_T_STAGING_MIN_ROWS;
    return fit < rows ? (uint32_t)fit : rows;
}

/* ffn_t.bin checked against its record, its checksums (--verify), and
 * the one reader of its two streams, with the streamers' settings. */
static int open_reader(const struct ffn *f, struct t_ffn *tf, char *err, size_t errlen)
{
    if (ffn_transposed_open(f->m, &tf->file, err, errlen) != 0 ||
        (tf->cfg.stream.verify && ffn_t_checksums_read(f->m, &tf->file, &tf->crc, err, errlen) != 0) ||
        !(tf->reader = streamer_config_reader(&tf->cfg.stream, tf->file.path, err, errlen)))
        return -1;
    tf->align = flash_reader_alignment(tf->reader);
    if (tf->file.g.chan.row_bytes % tf->align || tf->file.g.down.row_bytes % tf->align)
        return err_set(err, errlen, "%s: rows of %llu and %llu bytes are not multiples of the file system's direct-I/O "
                       "alignment %llu", tf->file.path, (unsigned long long)tf->file.g.chan.row_bytes,
                       (unsigned long long)tf->file.g.down.row_bytes, (unsigned long long)tf->align);
    return 0;
}

/* A stream's streamer on ffn_t.bin's reader: its units (a layer's
 * channel bundles, or rows of down, at the file's per-layer pitch), the
 * policy's rows for its capacity kept in place, its checksums, its reads
 * counted as they complete into the stream's own counts. */
static int open_stream(struct ffn *f, struct t_ffn *tf, struct t_stream *ts, bool down, uint64_t capacity,
                       uint32_t staging_rows, char *err, size_t errlen)
{
    const struct ffn_t_layout *t = &tf->file;
    const struct unit_geometry *u = down ? &t->g.down_unit : &t->g.chan_unit;
    ts->f = f;
    ts->down = down;
    ts->word = down ? "row of down" : "channel";
    struct streamer_config sc = tf->cfg.stream;
    sc.read_ahead = false; /* no set is known before the layer's input (ffn_transposed.h) */
    sc.staging_rows = staging_rows ? staging_rows : ffn_transposed_staging_rows(u->units, u->stride);
    struct streamer_open_args a = {
        .path = t->path,
        .unit_word = ts->word,
        .unit = *u,
        .decide = {tf->cfg.policy, tf->cfg.layout, capacity, NULL, false, false},
        .default_rows = (uint32_t)policy_layer_rows(tf->cfg.policy.ops, capacity, u->units),
        .crc = tf->crc,
        .order = STREAMER_NEEDED_ORDER,
        .base = down ? unit_geometry_layer_bytes(&t->g.chan_unit) : 0,
        .layer_pitch = t->layer_bytes,
        .crc_base = down ? t->g.chan.d_ff : 0,
        .crc_pitch = t->g.chan.d_ff + t->g.down.d_ff,
        .reader = tf->reader,
        .done_reads = down ? &tf->acc.down_reads : &tf->acc.chan_reads,
        .done_bytes = down ? &tf->acc.down_bytes : &tf->acc.chan_bytes,
        .no_preload = "input sparsity on flash",
        .one_mapping = true, /* a stream's rows in one store, as one layer's few channels would not fill a huge page */
    };
    struct streamer_hooks hooks = ffn_transposed_hooks;
    hooks.ctx = ts;
    char why[512];
    if (streamer_open(&ts->s, &sc, &a, &hooks, &tf->acc, why, sizeof why) != 0)
        return err_set(err, errlen, "the %s cache: %s", down ? "down" : "channel", why);
    ts->ptr = malloc(u->units * sizeof *ts->ptr);
    ts->coef = malloc(u->units * sizeof *ts->coef);
    return ts->ptr && ts->coef ? 0 : err_set(err, errlen, "the transposed flash FFN: out of memory");
}

static void close_stream(struct t_stream *ts)
{
    streamer_close(&ts->s);
    free(ts->ptr);
    free(ts->coef);
    memset(ts, 0, sizeof *ts);
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
        open_stream(f, tf, &tf->chan, false, cfg->capacity_rows, cfg->stream.staging_rows, err, errlen) ||
        open_stream(f, tf, &tf->down, true, cfg->down.capacity_rows, cfg->down.staging_rows, err, errlen))
        return -1;
    tf->zg = malloc(2 * (size_t)sh->d_ff * sizeof *tf->zg);
    tf->h = malloc(sh->d_ff * sizeof *tf->h);
    if (!tf->zg || !tf->h)
        return err_set(err, errlen, "the transposed flash FFN: out of memory");
    return 0;
}

static void t_destroy(struct ffn *f)
{
    struct t_ffn *tf = f->priv;
    if (!tf)
        return;
    close_stream(&tf->chan);
    close_stream(&tf->down);
    if (tf->reader) /* the streamers' (after them: nothing of theirs is in flight) */
        flash_reader_close(tf->reader);
    free(tf->crc);
    free(tf->zg);
    free(tf->h);
    free(tf);
    f->priv = NULL;
}

void ffn_transposed_take_token(struct ffn *f, struct ffn_flash_token *out)
{
    struct t_ffn *tf = f->priv;
    tf->acc.cache_rows = streamer_resident_rows(&tf->chan.s) + streamer_resident_rows(&tf->down.s);
    *out = tf->acc;
    memset(&tf->acc, 0, sizeof tf->acc);
}

void ffn_transposed_next_token(struct ffn *f, unsigned trace_flags)
{
    struct t_ffn *tf = f->priv;
    tf->next_flags = trace_flags;
}

struct ffn_flash_sanity ffn_transposed_sanity(const struct ffn *f)
{
    const struct t_ffn *tf = f->priv;
    return tf->acc.sanity;
}

const char *ffn_transposed_error(const struct ffn *f)
{
    const struct t_ffn *tf = f->priv;
    if (!tf)
        return NULL;
    return tf->error[0] ? tf->error : tf->chan.s.error[0] ? tf->chan.s.error : tf->down.s.error[0] ? tf->down.s.error : NULL;
}

uint64_t ffn_transposed_dram_bytes(const struct ffn *f)
{
    const struct t_ffn *tf = f->priv;
    const struct streamer *c = &tf->chan.s, *d = &tf->down.s;
    /* the caches and staging areas (each streamer's one-row bounce buffer, unused: every read is one row, is not) */
    return c->cache_bytes + c->staging_bytes + d->cache_bytes + d->staging_bytes;
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
