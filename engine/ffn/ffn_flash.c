/* The flash-resident FFN (see ffn_flash.h for the modes). One layer step:
 *   1. which neurons: the oracle, the predictor, the gate (neuron_select.h),
 *      or the trace's set
 *   2. memory management: the cache drops what left the window and reserves
 *      rows for the misses (naive and hybrid have no cache)
 *   3. I/O: one batch of reads straight into the reserved rows
 *   4. compute: the backend's ffn_rows over the rows held
 * Every step is timed separately; nothing is allocated per token (set-up
 * and tear-down: ffn_flash_open.c). */
#include "engine/ffn/ffn_flash_impl.h"
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

/* A batch waited for: its reads' own time, requests and bytes as the
 * reader issued them, since the stats in before. */
static void count_batch(struct flash_ffn *ff, struct flash_reader *r, const struct flash_reader_stats *before,
                        uint64_t *bytes)
{
    struct flash_reader_stats after;
    flash_reader_stats(r, &after);
    ff->acc.read_ms += after.last_batch_ms; /* 0 for a batch of nothing */
    ff->acc.io_requests += after.reads - before->reads;
    ff->acc.read_retries += after.retries - before->retries;
    *bytes += after.bytes - before->bytes; /* completed reads only */
}

/* A failed batch of ffn.bin's: its reason, and which bundle the failed
 * offset falls in (ffn.bin is layer-major bundles: ffn_flash_impl.h). */
static void read_fail(struct flash_ffn *ff, struct flash_reader *r, const char *err)
{
    struct flash_reader_stats st;
    flash_reader_stats(r, &st);
    char why[sizeof ff->error];
    snprintf(why, sizeof why, "%s", err);
    if (r == ff->reader && st.failed) {
        uint64_t bundle = st.failed_offset / ff->stride, d_ff = ff->caches[0].d_ff;
        snprintf(why, sizeof why, "%.380s (layer %llu, neuron %llu)", err, (unsigned long long)(bundle / d_ff),
                 (unsigned long long)(bundle % d_ff));
    }
    ff->read_failed |= r == ff->reader;
    fail(ff, why);
}

/* Hands reqs[0..n) to r without waiting (its stats before into *before);
 * true when a batch is in flight. The time it takes is I/O. */
static bool submit_batch(struct flash_ffn *ff, struct flash_reader *r, const struct flash_read *reqs, size_t n,
                         struct flash_reader_stats *before)
{
    if (!n || ff->read_failed) /* after a failed read the token reads nothing more: the run stops at it */
        return false;
    char err[512];
    flash_reader_stats(r, before);
    double t0 = now_ms();
    bool in_flight = flash_reader_submit(r, reqs, n, err, sizeof err) == 0;
    ff->acc.io_ms += now_ms() - t0;
    if (!in_flight)
        read_fail(ff, r, err);
    return in_flight;
}

/* Waits for the batch in flight on r: the wait is I/O (exposed, when the
 * batch went ahead); then its counts (count_batch). */
static int wait_batch(struct flash_ffn *ff, struct flash_reader *r, const struct flash_reader_stats *before,
                      uint64_t *bytes)
{
    char err[512];
    double t0 = now_ms();
    int rc = flash_reader_wait(r, err, sizeof err);
    ff->acc.io_ms += now_ms() - t0;
    count_batch(ff, r, before, bytes);
    if (rc != 0)
        read_fail(ff, r, err);
    return rc;
}

/* Issues reqs[0..n) and waits; bytes and requests as the reader issued
 * them. On a device the host first waits for the device: that wait is its
 * compute, not I/O. */
static int read_batch(struct flash_ffn *ff, struct flash_reader *r, const struct flash_read *reqs, size_t n,
                      uint64_t *bytes)
{
    struct flash_reader_stats before;
    if (!submit_batch(ff, r, reqs, n, &before))
        return n ? -1 : 0;
    if (ff->on_device && !ff->dev_failed)
        wait_device(ff);
    return wait_batch(ff, r, &before, bytes);
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
        ff->dram_req = (struct flash_read){lo, len, ff->scratch};
        if (read_batch(ff, ff->dram_reader, &ff->dram_req, 1, &ff->acc.dram_bytes_read) != 0)
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

/* Bundle id of layer was read whole into at: to be checked once its
 * batch completes (--verify, a model with checksums). */
static void land(struct flash_ffn *ff, int layer, uint32_t id, uint8_t *at)
{
    if (ff->verify)
        ff->landed[ff->n_landed++] = (struct landed_row){(uint32_t)layer, id, at};
}

/* A bundle whose check failed, read once more into the same place: true
 * when it now matches (a transient error), false when it does not or the
 * read fails. */
static bool reread_bundle(struct ffn *f, struct flash_ffn *ff, const struct landed_row *r)
{
    struct flash_read req = {ffn_flash_bundle_offset(f->m, (int)r->layer, r->id), ff->stride, r->at};
    ff->acc.verify_retries++;
    return read_batch(ff, ff->reader, &req, 1, &ff->acc.bytes_read) == 0 &&
           model_bundle_intact(f->m, r->layer, r->id, r->at);
}

/* Rows r[0..3) checked side by side: bit k set when r[k] matches. */
static unsigned intact3(const struct model *m, const struct landed_row *r)
{
    const uint32_t l[3] = {r[0].layer, r[1].layer, r[2].layer}, i[3] = {r[0].id, r[1].id, r[2].id};
    const void *const at[3] = {r[0].at, r[1].at, r[2].at};
    return model_bundles_intact3(m, l, i, at);
}

/* The rows of a completed batch against ffn.crc32c; a mismatch is read
 * again once, and a second one stops the run as a failed read does (the
 * step's appended rows then leave the cache: forget_appended). */
static void verify_landed(struct ffn *f, struct flash_ffn *ff, const struct landed_row *rows, uint32_t n)
{
    if (!ff->verify || ff->read_failed)
        return;
    double t0 = now_ms();
    unsigned ok = 0;
    for (uint32_t k = 0; k < n && !ff->read_failed; k++) {
        ff->acc.rows_verified++;
        if (k % 3 == 0) /* three chains at once (crc32c_x3); a short last group checks one at a time */
            ok = k + 3 <= n ? intact3(f->m, rows + k) : 0;
        if ((ok >> (k % 3) & 1) || model_bundle_intact(f->m, rows[k].layer, rows[k].id, rows[k].at) ||
            reread_bundle(f, ff, &rows[k]))
            continue;
        if (ff->read_failed) /* the re-read itself failed: its error says where */
            break;
        char why[sizeof ff->error];
        model_bundle_damaged(f->m, rows[k].layer, rows[k].id, why, sizeof why);
        ff->read_failed = true;
        fail(ff, why);
    }
    double ms = now_ms() - t0;
    ff->acc.verify_ms += ms;
    ff->acc.mem_ms += ms;
}

/* Issues the queued reads and copies rows out of the bounce buffer, then
 * checks the bundles read whole; on a device the ring's slot then goes up
 * (transfer). */
static void issue_reads(struct ffn *f, struct flash_ffn *ff)
{
    read_batch(ff, ff->reader, ff->reqs, ff->n_reqs, &ff->acc.bytes_read);
    double t0 = now_ms();
    for (uint32_t k = 0; k < ff->n_copies; k++)
        memcpy(ff->copies[k].to, ff->bounce + ff->copies[k].from, ff->stride);
    ff->acc.mem_ms += now_ms() - t0;
    ff->n_reqs = ff->n_copies = ff->bounce_used = 0;
    verify_landed(f, ff, ff->landed, ff->n_landed);
    ff->n_landed = 0;
}

static void transfer(struct ffn *f, struct flash_ffn *ff)
{
    issue_reads(f, ff);
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
        transfer(f, ff);
        double t0 = now_ms();
        if (ff->n_staged)
            dev_check(ff, fdev_rows(&ff->fdev, fdev_stage_rows(&ff->fdev, 0), ff->n_staged,
                                    fdev_stage_bias(&ff->fdev, 0)));
        ff->acc.staged_groups += ff->n_staged > 0;
        ff->acc.ffn_ms += now_ms() - t0;
        ff->n_staged = 0;
        return;
    }
    issue_reads(f, ff);
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
static void ring_room(struct ffn *f, struct flash_ffn *ff, uint32_t n)
{
    if (!ff->on_device)
        return;
    if (fring_room(&ff->ring) < n)
        transfer(f, ff);
    if (!fring_slot_pending(&ff->ring)) /* per row placed: no clock read unless there is a wait */
        return;
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
        ring_room(f, ff, 1); /* the caller made room for its read: only a flush between makes a new slot */
        return fring_place(&ff->ring, ncd_rows(d, r), ncd_bias(d, r), bias ? bias[id] : 0);
    }
    if (ff->n_staged == ff->staging_rows)
        flush(f, ff, layer, x, out);
    uint32_t k = ff->n_staged++;
    ff->staged[k] = id;
    if (!ff->on_device)
        return ff->staging + (uint64_t)k * ff->stride;
    ring_room(f, ff, 1);
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
        ring_room(f, ff, piece);
        uint64_t from = (uint64_t)ff->bounce_used * ff->stride;
        ff->reqs[ff->n_reqs++] = (struct flash_read){ffn_flash_bundle_offset(f->m, layer, first + done),
                                                     (uint64_t)piece * ff->stride, ff->bounce + from};
        for (uint32_t i = 0; i < piece; i++) {
            uint32_t id = first + done + i;
            if (ff->mark[id] & MARK_READ) {
                uint8_t *to = row_home(f, ff, layer, id, x, out);
                ff->copies[ff->n_copies++] = (struct bounce_copy){id, from + (uint64_t)i * ff->stride, to};
                land(ff, layer, id, to);
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
        ring_room(f, ff, rd->count);
        dst = row_home(f, ff, layer, rd->first, x, out);
        for (uint32_t i = 1; i < rd->count; i++)
            row_home(f, ff, layer, rd->first + i, x, out);
        ff->last_id = rd->first + rd->count - 1;
        ff->last_home = rd->count == 1 ? dst : NULL;
    }
    uint64_t off = ffn_flash_bundle_offset(f->m, layer, rd->first), len = (uint64_t)rd->count * ff->stride;
    for (uint32_t i = 0; rd->vec < 0 && i < rd->count; i++)
        land(ff, layer, rd->first + i, dst + (uint64_t)i * ff->stride);
    /* split reads a row's vectors in order, into one home, in one batch: with
     * its last one queued the whole bundle lands when the batch completes,
     * and its checksum covers exactly what was read */
    if (rd->vec == (int32_t)ff->unit.n_extents - 1)
        land(ff, layer, rd->first, dst);
    if (rd->vec >= 0) {
        /* one vector of the bundle (model_format.h: up | gate | down), widened to
         * the direct-I/O alignment as the split layout counts it */
        uint64_t lo;
        layout_vector_span(ff->unit.ext[0].bytes, ff->stride, ff->align, (uint32_t)rd->vec, &lo, &len);
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

/* After a failed read of ffn.bin: the rows this step appended leave the
 * cache (the last first, so nothing moves), so that no row whose read may
 * not have completed is held as resident. The run stops at this token. */
static void forget_appended(struct flash_ffn *ff, int layer, uint32_t first_new)
{
    struct neuron_cache *c = &ff->caches[layer];
    while (ff->read_failed && c->capacity && c->num_used > first_new)
        drop_row(ff, layer, c->pointer[c->num_used - 1]);
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
        else if (!c->row_of || c->row_of[id] < 0 || (ff->mark[id] & MARK_READ)) /* read ahead: appended already */
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

/* The policy's decision for layer on ff->needed[0..n_needed): the step's
 * rows marked. */
static void decide(struct flash_ffn *ff, int layer, uint32_t n_needed, struct flash_step *s)
{
    double t0 = now_ms();
    s->layer = layer;
    s->n_needed = n_needed;
    s->went_ahead = s->in_flight = false;
    s->shrinks = ff->decide.p.shrinks;
    cache_request(&ff->decide, (uint64_t)ff->token, (uint32_t)layer, ff->needed, n_needed, true, NULL, &s->st);
    s->n_late = classify(ff, &s->st, n_needed);
    ff->acc.mem_ms += now_ms() - t0;
}

/* A decided layer's memory management, reads and compute; truth (check)
 * is counted against what the step computes. On a device (x and out NULL
 * unless the host reads them) the deletions are moved there in a batch
 * before the held rows are computed (a second one after, when needed rows
 * the policy dropped leave), and the rows appended are uploaded once read. */
static void policy_forward(struct ffn *f, struct flash_ffn *ff, const struct flash_step *s, const uint32_t *truth,
                           uint32_t n_truth, const float *x, float *out)
{
    int layer = s->layer;
    uint32_t n_late = s->n_late, n_needed = s->n_needed;
    const struct cache_step st = s->st;
    struct neuron_cache *c = &ff->caches[layer];
    struct neuron_cache_dev *d = &ff->mirrors[layer];
    if (out)
        memset(out, 0, f->m->shape.d_model * sizeof *out);
    double t0 = now_ms();
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
        forget_appended(ff, layer, first_new);
        ff->acc.append_groups += d->be && c->num_used > first_new;
        compute_cached(f, ff, layer, first_new, c->num_used - first_new, x, out);
        ff->acc.cache_rows += once;
    }
    dev_check(ff, ncd_end(d));
    clear_marks(ff, &st, n_needed);
    count_step(ff, c, &st, s->shrinks);
}

/* The neurons the source chooses for this layer (none for naive and
 * hybrid, which read all they do not hold whatever is needed). */
static uint32_t choose_needed(struct ffn *f, struct flash_ffn *ff, int layer, const float *x, bool cached)
{
    if (!cached)
        return 0;
    if (select_source(&ff->cfg.select)->replays)
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
    bool oracle = select_source(&ff->cfg.select)->truth;
    if (oracle && cached) {
        *n = n_needed;
        return ff->needed;
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
    const uint32_t *active = truth ? truth : ff->needed;
    uint32_t n_active = truth ? n_truth : n_needed;
    bool pred = ffn_flash_deployable(&ff->cfg);
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
    const struct neuron_source_ops *src = select_source(&c->select);
    bool chooses = cached && !src->replays && !ff->dev_predict;
    bool truth = (c->record || c->check) && !(src->truth && cached) && (src->truth || ff->have_truth);
    return chooses || truth;
}

/* Whether a layer's step may be decided before its turn: on the host,
 * with sets that do not need the layer's input. */
static bool reads_ahead(const struct flash_ffn *ff)
{
    return ffn_flash_reads_ahead(&ff->cfg, ff->on_device);
}

/* Whether a decided step's reads can run while another layer computes:
 * every row read is kept and lands in its own cache row. */
static bool can_go_ahead(const struct flash_ffn *ff, const struct flash_step *s)
{
    if (s->n_late || s->st.n_extra)
        return false;
    for (uint32_t r = 0; r < s->st.n_reads; r++) {
        const struct layout_read *rd = &s->st.reads[r];
        if ((ff->mark[rd->first] & MARK_ONCE) || !lands_in_place(ff, rd->first, rd->count))
            return false;
    }
    return true;
}

/* A decided step's memory management done and its reads handed to the
 * reader without waiting; its counts taken, its marks cleared. */
static void go_ahead(struct ffn *f, struct flash_ffn *ff, struct flash_step *s)
{
    struct neuron_cache *c = &ff->caches[s->layer];
    double t0 = now_ms();
    make_room(ff, s->layer, &s->st);
    s->first_new = c->capacity ? c->num_used : 0;
    int rc = append_kept(ff, s->layer, &s->st);
    uint32_t mine = ff->n_landed;
    if (rc == 0)
        queue_reads(f, ff, s->layer, &s->st, NULL, NULL); /* all in place: nothing flushes */
    s->n_landed = ff->n_landed - mine; /* its rows are checked when its reads complete */
    memcpy(s->landed, ff->landed + mine, s->n_landed * sizeof *s->landed);
    ff->n_landed = mine;
    ff->acc.mem_ms += now_ms() - t0;
    s->went_ahead = true;
    ff->acc.layers_ahead++;
    if (rc == 0)
        s->in_flight = submit_batch(ff, ff->reader, ff->reqs, ff->n_reqs, &s->before);
    ff->n_reqs = 0;
    count_step(ff, c, &s->st, s->shrinks);
    clear_marks(ff, &s->st, s->n_needed);
}

/* Layer's neurons chosen and its step decided (gone ahead when it can). */
static struct flash_step *decide_layer(struct ffn *f, struct flash_ffn *ff, int layer, const float *x, bool cached)
{
    struct flash_step *s = &ff->steps[layer % 2];
    decide(ff, layer, choose_needed(f, ff, layer, x, cached), s);
    if (reads_ahead(ff) && can_go_ahead(ff, s))
        go_ahead(f, ff, s);
    return s;
}

/* A step gone ahead, in its turn: the exposed wait for its reads, check's
 * counts (the rows read count as not held, as in the step's own order). */
static void finish_ahead(struct ffn *f, struct flash_ffn *ff, const struct flash_step *s, const uint32_t *truth,
                         uint32_t n_truth)
{
    if (s->in_flight)
        wait_batch(ff, ff->reader, &s->before, &ff->acc.bytes_read);
    verify_landed(f, ff, s->landed, s->n_landed);
    forget_appended(ff, s->layer, s->first_new);
    if (!truth)
        return;
    for (uint32_t j = 0; j < s->n_needed; j++)
        ff->mark[ff->needed[j]] |= MARK_NEED;
    for (uint32_t j = 0; j < s->st.n_rows; j++)
        ff->mark[s->st.rows[j]] |= MARK_READ;
    count_misses(ff, s->layer, truth, n_truth, s->n_needed);
    clear_marks(ff, &s->st, s->n_needed);
}

/* A step gone ahead computed as its own order would: the rows held, then
 * those appended (the same groups, the same bits). */
static void compute_ahead(struct ffn *f, struct flash_ffn *ff, const struct flash_step *s, const float *x,
                          float *out)
{
    const struct neuron_cache *c = &ff->caches[s->layer];
    memset(out, 0, f->m->shape.d_model * sizeof *out);
    compute_cached(f, ff, s->layer, 0, s->first_new, x, out);
    uint32_t used = c->capacity ? c->num_used : 0;
    compute_cached(f, ff, s->layer, s->first_new, used - s->first_new, x, out);
}

/* The token's start at layer 0: its count and, recording, its trace entry. */
static void begin_token(struct flash_ffn *ff)
{
    ff->token++;
    ff->read_failed = false; /* a failed token's rows left the caches: the next one reads afresh */
    ff->steps[0].layer = ff->steps[1].layer = -1;
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
    bool cached = !ff->decide.p.ops->extra_reads;
    struct flash_step *s = ff->steps[layer % 2].layer == layer ? &ff->steps[layer % 2]
                                                                : decide_layer(f, ff, layer, x, cached);
    uint32_t n_needed = s->n_needed, n_truth = 0;
    const uint32_t *truth = ff->cfg.record || ff->cfg.check ? true_set(f, ff, layer, x, cached, n_needed, &n_truth)
                                                             : NULL;
    if (ff->cfg.record)
        record_layer(ff, layer, truth, n_truth, n_needed);
    ff->acc.needed += n_needed;
    const uint32_t *counted = ff->cfg.check && cached ? truth : NULL;
    bool next = reads_ahead(ff) && layer + 1 < (int)m->shape.n_layers && !ff->error[0];
    if (s->went_ahead) {
        finish_ahead(f, ff, s, counted, n_truth);
        if (next)
            decide_layer(f, ff, layer + 1, NULL, cached);
        if (ff->cfg.stream_dram)
            naive_read_dram(ff, layer, (int)m->shape.n_layers);
        compute_ahead(f, ff, s, x, out);
    } else {
        if (ff->cfg.stream_dram)
            naive_read_dram(ff, layer, (int)m->shape.n_layers);
        policy_forward(f, ff, s, counted, n_truth, x, out);
        if (next)
            decide_layer(f, ff, layer + 1, NULL, cached);
    }
    s->layer = -1;
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

void ffn_flash_next_token(struct ffn *f, unsigned trace_flags)
{
    if (ffn_is_transposed(f)) {
        ffn_transposed_next_token(f, trace_flags);
        return;
    }
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
    if (ffn_is_transposed(f)) {
        ffn_transposed_take_token(f, out);
        return;
    }
    struct flash_ffn *ff = f->priv;
    if (ff->on_device) /* the pass ended with a sync: everything enqueued is complete */
        take_device(f, ff);
    *out = ff->acc;
    memset(&ff->acc, 0, sizeof ff->acc);
}

const char *ffn_flash_error(const struct ffn *f)
{
    if (ffn_is_transposed(f))
        return ffn_transposed_error(f);
    const struct flash_ffn *ff = f->priv;
    return ff && ff->error[0] ? ff->error : NULL;
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
    return ff->staging_bytes + ff->bounce_bytes + ff->scratch_bytes + ff->cache_bytes + ff->predictor_bytes;
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
        *pinned = !ff->on_device || ff->ring.pinned;
    return ff->device_bytes;
}

uint64_t ffn_flash_read_align(const struct ffn *f)
{
    if (ffn_is_transposed(f))
        return ffn_transposed_read_align(f);
    const struct flash_ffn *ff = f->priv;
    return ff->align;
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
