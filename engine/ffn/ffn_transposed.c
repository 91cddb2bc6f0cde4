/* A layer of input sparsity on flash (ffn_transposed.h): the kept
 * channels through the channel cache into z and g, the kept rows of down
 * through the down cache into y. */
#include <math.h>
#include <string.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/errbuf.h"
#include "engine/compute/activation.h"
#include "engine/ffn/ffn_transposed_impl.h"

/* What a stream's rows are summed into: y[len] += w[id] * row id. */
struct t_target {
    float *y;
    int len;
    const float *w;
};

static uint64_t row_offset(const struct t_ffn *tf, const struct t_stream *s, uint32_t l, uint32_t id)
{
    return s == &tf->chan ? ffn_t_chan_offset(&tf->file, l, id) : ffn_t_down_offset(&tf->file, l, id);
}

static uint32_t *slot_ref(struct t_stream *s, uint32_t l, uint32_t id)
{
    return &s->slot_of[(uint64_t)l * s->g.d_ff + id];
}

static void free_slot(struct t_stream *s, uint32_t l, uint32_t id)
{
    uint32_t *slot = slot_ref(s, l, id);
    if (*slot == T_NO_SLOT)
        return;
    s->free_slots[(uint64_t)l * s->slots + s->n_free[l]++] = *slot;
    *slot = T_NO_SLOT;
    s->resident--;
}

/* A free slot of layer l for row id (its cache row into *row); false when
 * the layer's slots are all taken. */
static bool take_slot(struct t_stream *s, uint32_t l, uint32_t id, uint8_t **row)
{
    if (!s->n_free[l])
        return false;
    uint32_t slot = s->free_slots[(uint64_t)l * s->slots + --s->n_free[l]];
    *slot_ref(s, l, id) = slot;
    s->resident++;
    *row = t_slot_row(s, l, slot);
    return true;
}

static int fail(struct t_ffn *tf, const char *why)
{
    if (!tf->error[0])
        snprintf(tf->error, sizeof tf->error, "%s", why);
    return -1;
}

/* The cache's decision, counted; the step's rows marked. */
static void decide(struct t_ffn *tf, struct t_stream *s, uint32_t l, const uint32_t *need, uint32_t n,
                   struct cache_step *st)
{
    cache_request(&s->decide, (uint64_t)tf->token, l, need, n, false, NULL, st);
    /* the reads (each miss one row: layout_transposed) are counted as they complete (flush) */
    tf->acc.needed += n;
    tf->acc.overflow_rows += st->overflow;
    /* as ffn_flash and replay count them: a miss the policy drops is inserted and deleted */
    tf->acc.rows_inserted += st->n_rows;
    tf->acc.rows_deleted += st->n_deleted;
    for (uint32_t i = 0; i < n; i++)
        s->mark[need[i]] |= T_NEED;
    for (uint32_t i = 0; i < st->n_misses; i++)
        s->mark[st->misses[i]] |= T_MISS;
    for (uint32_t i = 0; i < st->n_deleted; i++)
        s->mark[st->deleted[i]] |= T_DROP;
}

/* The needed rows held (hits) summed into t; then the held rows the
 * policy dropped leave, making room for the misses it keeps. */
static int use_hits(struct ffn *f, struct t_ffn *tf, struct t_stream *s, uint32_t l, const uint32_t *need,
                    uint32_t n, const struct t_target *t, const struct cache_step *st)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = need[i], slot = *slot_ref(s, l, id);
        if (s->mark[id] & T_MISS)
            continue;
        if (slot == T_NO_SLOT)
            return fail(tf, "internal: a row the cache holds has no storage");
        s->ptr[k] = t_slot_row(s, l, slot);
        s->coef[k++] = t->w[id];
    }
    double t0 = now_ms();
    ck_axpy_rows(f->ck, t->y, t->len, s->ptr, s->coef, (int)k, f->m->dtype);
    tf->acc.ffn_ms += now_ms() - t0;
    for (uint32_t i = 0; i < st->n_deleted; i++)
        if (!(s->mark[st->deleted[i]] & T_MISS))
            free_slot(s, l, st->deleted[i]);
    return 0;
}

/* A batch of s's rows that completed: n reads of a row each, the counts
 * the replay of the same sets makes. */
static void count_read(struct t_ffn *tf, const struct t_stream *s, uint32_t n)
{
    bool chan = s == &tf->chan;
    *(chan ? &tf->acc.chan_bytes : &tf->acc.down_bytes) += (uint64_t)n * s->g.row_bytes;
    *(chan ? &tf->acc.chan_reads : &tf->acc.down_reads) += n;
    tf->acc.reads += n;
}

/* Issues reqs[0..n) and waits: the reader's time, requests, retries and
 * the bytes of the reads that completed counted; -1 with err on a failed
 * read (the reader's message: file, offset, tries). */
static int read_rows(struct t_ffn *tf, const struct flash_read *reqs, uint32_t n, char *err, size_t errlen)
{
    struct flash_reader_stats before, after;
    flash_reader_stats(tf->reader, &before);
    double t0 = now_ms();
    int rc = flash_reader_read(tf->reader, reqs, n, err, errlen);
    double ms = now_ms() - t0;
    flash_reader_stats(tf->reader, &after);
    tf->acc.io_ms += ms;
    tf->acc.read_ms += ms;
    tf->acc.io_requests += after.reads - before.reads;
    tf->acc.read_retries += after.retries - before.retries;
    tf->acc.bytes_read += after.bytes - before.bytes; /* completed reads only */
    return rc;
}

/* Whether row k of the batch matches its checksum (got: its CRC-32C). */
static bool row_matches(const struct t_ffn *tf, const struct t_stream *s, uint32_t l, uint32_t k, uint32_t got)
{
    return got == tf->crc[ffn_t_unit_index(&tf->file, l, s == &tf->down, s->batch_ids[k])];
}

/* A failed read's reason with where its offset (the reader's first
 * failed one) falls in ffn_t.bin: the layer, the channel or row of down. */
static int read_failed(struct t_ffn *tf, const char *err)
{
    struct flash_reader_stats st;
    flash_reader_stats(tf->reader, &st);
    if (!st.failed)
        return fail(tf, err);
    const struct ffn_t_layout *t = &tf->file;
    uint64_t l = st.failed_offset / t->layer_bytes, in = st.failed_offset % t->layer_bytes;
    uint64_t chans = (uint64_t)t->g.chan.d_ff * t->g.chan.row_bytes;
    char why[sizeof tf->error];
    snprintf(why, sizeof why, "%.380s (layer %llu, %s %llu)", err, (unsigned long long)l,
             in < chans ? "channel" : "row of down",
             (unsigned long long)(in < chans ? in / t->g.chan.row_bytes : (in - chans) / t->g.down.row_bytes));
    return fail(tf, why);
}

/* Row k of the batch read once more into the same place: true when it now
 * matches (a transient error). */
static bool reread_row(struct t_ffn *tf, struct t_stream *s, uint32_t l, uint32_t k)
{
    char err[512];
    tf->acc.verify_retries++;
    if (read_rows(tf, &s->reqs[k], 1, err, sizeof err) != 0) {
        read_failed(tf, err);
        return false;
    }
    return row_matches(tf, s, l, k, crc32c(s->reqs[k].dst, ffn_t_unit_bytes(&s->g)));
}

/* The batch's n rows against ffn_t.crc32c (three at a time, crc32c_x3): a
 * mismatch is read again once, a second one fails naming the file, the
 * layer, the channel or row and its offset. */
static int verify_rows(struct t_ffn *tf, struct t_stream *s, uint32_t l, uint32_t n)
{
    if (!tf->crc)
        return 0;
    double t0 = now_ms();
    uint64_t len = ffn_t_unit_bytes(&s->g);
    uint32_t got[3];
    int rc = 0;
    for (uint32_t k = 0; k < n && rc == 0; k++) {
        if (k - k % 3 + 3 > n) /* a short last group: one at a time */
            got[k % 3] = crc32c(s->reqs[k].dst, len);
        else if (k % 3 == 0) {
            const void *const at[3] = {s->reqs[k].dst, s->reqs[k + 1].dst, s->reqs[k + 2].dst};
            crc32c_x3(at, len, got);
        }
        tf->acc.rows_verified++;
        if (row_matches(tf, s, l, k, got[k % 3]) || reread_row(tf, s, l, k))
            continue;
        if (!tf->error[0]) { /* the re-read itself did not fail: the bytes on flash are wrong */
            char why[sizeof tf->error];
            ffn_t_unit_damaged(&tf->file, l, s == &tf->down, s->batch_ids[k], why, sizeof why);
            fail(tf, why);
        }
        rc = -1;
    }
    double ms = now_ms() - t0;
    tf->acc.verify_ms += ms;
    tf->acc.mem_ms += ms;
    return rc;
}

/* After a failed batch: its rows leave their cache rows, so the cache
 * never holds a row whose read failed or did not match (the run stops at
 * this token). */
static void forget_batch(struct t_stream *s, uint32_t l, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (!(s->mark[s->batch_ids[k]] & T_DROP))
            free_slot(s, l, s->batch_ids[k]);
}

/* Reads the batch's n rows of layer l, checks them and sums them into t. */
static int flush(struct ffn *f, struct t_ffn *tf, struct t_stream *s, uint32_t l, uint32_t n, const struct t_target *t)
{
    char err[512];
    if (read_rows(tf, s->reqs, n, err, sizeof err) != 0) {
        forget_batch(s, l, n);
        return read_failed(tf, err);
    }
    count_read(tf, s, n);
    if (verify_rows(tf, s, l, n) != 0) {
        forget_batch(s, l, n);
        return -1;
    }
    double t1 = now_ms();
    for (uint32_t k = 0; k < n; k++) {
        s->ptr[k] = s->reqs[k].dst;
        s->coef[k] = t->w[s->batch_ids[k]];
    }
    ck_axpy_rows(f->ck, t->y, t->len, s->ptr, s->coef, (int)n, f->m->dtype);
    tf->acc.ffn_ms += now_ms() - t1;
    return 0;
}

/* The misses read, into their cache rows when the policy keeps them, else
 * through the staging area a batch at a time, and summed into t. */
static int read_misses(struct ffn *f, struct t_ffn *tf, struct t_stream *s, uint32_t l, const struct cache_step *st,
                       const struct t_target *t)
{
    uint32_t n = 0, staged = 0;
    for (uint32_t i = 0; i < st->n_misses; i++) {
        uint32_t id = st->misses[i];
        uint8_t *dst;
        if (!(s->mark[id] & T_DROP)) {
            if (!take_slot(s, l, id, &dst)) {
                char why[160];
                snprintf(why, sizeof why, "layer %u: the %s cache keeps more rows than its %u", l, s->name, s->slots);
                return fail(tf, why);
            }
        } else
            dst = s->staging + (uint64_t)staged++ * s->g.row_bytes;
        s->reqs[n] = (struct flash_read){row_offset(tf, s, l, id), s->g.row_bytes, dst};
        s->batch_ids[n++] = id;
        if (staged == s->staging_rows) {
            if (flush(f, tf, s, l, n, t) != 0)
                return -1;
            n = staged = 0;
        }
    }
    return n ? flush(f, tf, s, l, n, t) : 0;
}

/* One stream's step for layer l: need[0..n) (ascending) summed into t. */
static int stream_step(struct ffn *f, struct t_ffn *tf, struct t_stream *s, uint32_t l, const uint32_t *need,
                       uint32_t n, const struct t_target *t)
{
    double t0 = now_ms();
    struct cache_step st;
    decide(tf, s, l, need, n, &st);
    tf->acc.mem_ms += now_ms() - t0;
    int rc = st.n_extra ? fail(tf, "internal: a policy that reads rows besides the needed ones (refused by the setup)")
                        : use_hits(f, tf, s, l, need, n, t, &st);
    if (rc == 0)
        rc = read_misses(f, tf, s, l, &st, t);
    for (uint32_t i = 0; i < n; i++)
        s->mark[need[i]] = 0;
    for (uint32_t i = 0; i < st.n_misses; i++)
        s->mark[st.misses[i]] = 0;
    for (uint32_t i = 0; i < st.n_deleted; i++)
        s->mark[st.deleted[i]] = 0;
    return rc;
}

/* The input channels kept: |x_j| above the layer's input cut. */
static uint32_t keep_channels(struct t_ffn *tf, const struct model_shape *sh, int layer, const float *x)
{
    float cut = tf->cfg.select.input_thresholds[layer];
    uint32_t n = 0;
    for (uint32_t j = 0; j < sh->d_model; j++)
        if (fabsf(x[j]) > cut)
            tf->ids[n++] = j;
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
    uint32_t d_ff = m->shape.d_ff, n = 0;
    for (uint32_t i = 0; i < d_ff; i++) {
        float z = tf->zg[i] + (bias ? bias[i] : 0.0f), g = a->glu ? tf->zg[d_ff + i] : 0.0f;
        float chosen = a->glu ? activation_apply_t(g, a->act, a->fatrelu_threshold) * z
                              : activation_apply_t(z, a->act, a->fatrelu_threshold);
        tf->h[i] = ffn_neuron_value(a, z, g);
        if (fabsf(chosen) > cut)
            tf->ids[n++] = i;
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

static int record_set(struct t_ffn *tf, int layer, bool channels, uint32_t n)
{
    const struct trace_sink *rec = tf->cfg.record;
    char err[512];
    if (!rec)
        return 0;
    int rc = channels ? rec->channels(rec->impl, (uint32_t)layer, tf->ids, n, err, sizeof err)
                      : rec->layer(rec->impl, (uint32_t)layer, tf->ids, n, NULL, 0, err, sizeof err);
    return rc != 0 ? fail(tf, err) : 0;
}

void ffn_transposed_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    (void)pos;
    struct t_ffn *tf = f->priv;
    const struct model *m = f->m;
    const struct model_shape *sh = &m->shape;
    memset(out, 0, sh->d_model * sizeof *out);
    if (tf->error[0]) /* the run stops after this token */
        return;
    if (layer == 0) {
        tf->token++;
        if (record_begin(tf) != 0)
            return;
    }
    double t0 = now_ms();
    uint32_t n = keep_channels(tf, sh, layer, x);
    tf->acc.kept_channels += n;
    tf->acc.predictor_ms += now_ms() - t0;
    if (record_set(tf, layer, true, n) != 0)
        return;
    int len = (int)sh->d_ff * (m->arch.glu ? 2 : 1);
    memset(tf->zg, 0, (size_t)len * sizeof *tf->zg);
    struct t_target zg = {tf->zg, len, x};
    if (stream_step(f, tf, &tf->chan, (uint32_t)layer, tf->ids, n, &zg) != 0)
        return;
    t0 = now_ms();
    n = keep_rows(m, tf, layer);
    tf->acc.predictor_ms += now_ms() - t0;
    if (record_set(tf, layer, false, n) != 0)
        return;
    struct t_target y = {out, (int)sh->d_model, tf->h};
    if (stream_step(f, tf, &tf->down, (uint32_t)layer, tf->ids, n, &y) != 0)
        return;
    if (m->layers[layer].ffn_down_bias)
        ck_add(f->ck, out, m->layers[layer].ffn_down_bias, (int)sh->d_model);
}
