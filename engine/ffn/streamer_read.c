/* The streamer's reads (streamer.h): batches handed to the reader and
 * waited for, with their counts; where each row lands (its cache row, the
 * staging area, the bounce buffer, on a device the ring); the checks
 * against the unit file's checksums. */
#include "engine/ffn/streamer_impl.h"

#include <stdio.h>
#include <string.h>

#include "cache/layout.h"
#include "common/clock.h"
#include "common/crc32c.h"
#include "common/errbuf.h"
#include "engine/ffn/ffn_flash.h"

void streamer_fail(struct streamer *s, const char *what)
{
    if (!s->error[0])
        snprintf(s->error, sizeof s->error, "%s", what);
}

/* A device failure: the step's host decisions go on (they stay in step
 * with replay), the layer returns -1 and the token fails. */
void streamer_fail_dev(struct streamer *s, const char *why)
{
    s->dev_failed = true;
    streamer_fail(s, why);
}

void streamer_dev_check(struct streamer *s, int rc)
{
    if (rc != 0 && !s->dev_failed) {
        char why[sizeof s->error];
        err_set(why, sizeof why, "%s backend: %s", s->dev_ops->name, s->dev_ops->error(s->dev_be));
        streamer_fail_dev(s, why);
    }
}
/* On a device, while a batch of reads is in flight: waits until the
 * device has done all it was given, so that what the reads still take
 * after is the exposed I/O (the rest overlapped the device's work). */
static void wait_device(struct streamer *s)
{
    uint64_t ev;
    streamer_dev_check(s, s->dev_ops->event_record(s->dev_be, &ev) || s->dev_ops->event_wait(s->dev_be, ev));
    fring_covered(&s->ring, ev);
    s->acc->read_waits++;
}

/* A batch waited for: its reads' own time, requests and bytes as the
 * reader issued them, since the stats in before. */
static void count_batch(struct streamer *s, struct flash_reader *r, const struct flash_reader_stats *before,
                        uint64_t *bytes)
{
    struct flash_reader_stats after;
    flash_reader_stats(r, &after);
    s->acc->read_ms += after.last_batch_ms; /* 0 for a batch of nothing */
    s->acc->io_requests += after.reads - before->reads;
    s->acc->read_retries += after.retries - before->retries;
    *bytes += after.bytes - before->bytes; /* completed reads only */
}

/* A failed batch of the unit file's: its reason, and which unit the
 * failed offset falls in (a layer's units lie together: streamer_unit_offset). */
static void read_fail(struct streamer *s, struct flash_reader *r, const char *err)
{
    struct flash_reader_stats st;
    flash_reader_stats(r, &st);
    char why[sizeof s->error];
    snprintf(why, sizeof why, "%s", err);
    if (r == s->reader && st.failed) {
        uint64_t off = st.failed_offset - s->base;
        snprintf(why, sizeof why, "%.380s (layer %llu, %s %llu)", err, (unsigned long long)(off / s->layer_pitch),
                 s->unit_word, (unsigned long long)(off % s->layer_pitch / s->stride));
    }
    s->read_failed |= r == s->reader;
    streamer_fail(s, why);
}

/* Hands reqs[0..n) to r without waiting (its stats before into *before);
 * true when a batch is in flight. The time it takes is I/O. */
bool streamer_submit_batch(struct streamer *s, struct flash_reader *r, const struct flash_read *reqs, size_t n,
                         struct flash_reader_stats *before)
{
    if (!n || s->read_failed) /* after a failed read the token reads nothing more: the run stops at it */
        return false;
    char err[512];
    flash_reader_stats(r, before);
    double t0 = now_ms();
    bool in_flight = flash_reader_submit(r, reqs, n, err, sizeof err) == 0;
    s->acc->io_ms += now_ms() - t0;
    if (!in_flight)
        read_fail(s, r, err);
    return in_flight;
}

/* Waits for the batch in flight on r: the wait is I/O (exposed, when the
 * batch went ahead); then its counts (count_batch). */
int streamer_wait_batch(struct streamer *s, struct flash_reader *r, const struct flash_reader_stats *before,
                      uint64_t *bytes)
{
    char err[512];
    double t0 = now_ms();
    int rc = flash_reader_wait(r, err, sizeof err);
    s->acc->io_ms += now_ms() - t0;
    count_batch(s, r, before, bytes);
    if (rc != 0)
        read_fail(s, r, err);
    return rc;
}

/* Issues reqs[0..n) and waits; bytes and requests as the reader issued
 * them. On a device the host first waits for the device: that wait is its
 * compute, not I/O. */
int streamer_read_batch(struct streamer *s, struct flash_reader *r, const struct flash_read *reqs, size_t n,
                      uint64_t *bytes)
{
    struct flash_reader_stats before;
    if (!streamer_submit_batch(s, r, reqs, n, &before))
        return n ? -1 : 0;
    if (s->on_device && !s->dev_failed)
        wait_device(s);
    return streamer_wait_batch(s, r, &before, bytes);
}


/* Unit id of layer was read whole into at: to be checked once its
 * batch completes (--verify, a model with checksums). */
static void land(struct streamer *s, int layer, uint32_t id, uint8_t *at)
{
    if (s->verify)
        s->landed[s->n_landed++] = (struct landed_row){(uint32_t)layer, id, at};
}

/* A unit whose check failed, read once more into the same place: true
 * when it now matches (a transient error), false when it does not or the
 * read fails. */
static bool intact(const struct streamer *s, const struct landed_row *r)
{
    return !s->crc || crc32c(r->at, s->unit.bytes) == streamer_unit_crc(s, r->layer, r->id);
}

static bool reread_unit(struct streamer *s, const struct landed_row *r)
{
    struct flash_read req = {streamer_unit_offset(s, (int)r->layer, r->id), s->stride, r->at};
    s->acc->verify_retries++;
    return streamer_read_batch(s, s->reader, &req, 1, &s->acc->bytes_read) == 0 &&
           intact(s, r);
}

/* Rows r[0..3) checked side by side: bit k set when r[k] matches. */
static unsigned intact3(const struct streamer *s, const struct landed_row *r)
{
    if (!s->crc)
        return 7;
    const void *const at[3] = {r[0].at, r[1].at, r[2].at};
    uint32_t got[3];
    crc32c_x3(at, s->unit.bytes, got);
    unsigned ok = 0;
    for (int k = 0; k < 3; k++)
        ok |= (unsigned)(got[k] == streamer_unit_crc(s, r[k].layer, r[k].id)) << k;
    return ok;
}

/* The rows of a completed batch against their checksums; a mismatch is read
 * again once, and a second one stops the run as a failed read does (the
 * step's appended rows then leave the cache: forget_appended). */
void streamer_verify_landed(struct streamer *s, const struct landed_row *rows, uint32_t n)
{
    if (!s->verify || s->read_failed)
        return;
    double t0 = now_ms();
    unsigned ok = 0;
    for (uint32_t k = 0; k < n && !s->read_failed; k++) {
        s->acc->rows_verified++;
        if (k % 3 == 0) /* three chains at once (crc32c_x3); a short last group checks one at a time */
            ok = k + 3 <= n ? intact3(s, rows + k) : 0;
        if ((ok >> (k % 3) & 1) || intact(s, &rows[k]) ||
            reread_unit(s, &rows[k]))
            continue;
        if (s->read_failed) /* the re-read itself failed: its error says where */
            break;
        char why[sizeof s->error];
        s->hooks.damaged(s->hooks.ctx, rows[k].layer, rows[k].id, why, sizeof why);
        s->read_failed = true;
        streamer_fail(s, why);
    }
    double ms = now_ms() - t0;
    s->acc->verify_ms += ms;
    s->acc->mem_ms += ms;
}

/* Issues the queued reads and copies rows out of the bounce buffer, then
 * checks the units read whole; on a device the ring's slot then goes up
 * (transfer). */
/* A batch that completed, counted as its reads (done_reads: before the
 * checks, as a failed check is a read that happened). */
static void count_done(struct streamer *s)
{
    uint64_t bytes = 0;
    for (uint32_t k = 0; k < s->n_reqs; k++)
        bytes += s->reqs[k].len;
    s->acc->reads += s->n_reqs;
    *s->done_reads += s->n_reqs;
    *s->done_bytes += bytes;
}

static void issue_reads(struct streamer *s)
{
    if (streamer_read_batch(s, s->reader, s->reqs, s->n_reqs, &s->acc->bytes_read) == 0 && s->done_reads)
        count_done(s);
    double t0 = now_ms();
    for (uint32_t k = 0; k < s->n_copies; k++)
        memcpy(s->copies[k].to, s->bounce + s->copies[k].from, s->stride);
    s->acc->mem_ms += now_ms() - t0;
    s->n_reqs = s->n_copies = s->bounce_used = 0;
    streamer_verify_landed(s, s->landed, s->n_landed);
    s->n_landed = 0;
}

static void transfer(struct streamer *s)
{
    issue_reads(s);
    double t0 = now_ms();
    streamer_dev_check(s, fring_send(&s->ring));
    s->acc->mem_ms += now_ms() - t0;
}

/* Issues the queued reads, computes the staged rows as one group and
 * empties the staging (on a device: sends the ring's slot, then the group
 * on the device's staging area). */
void streamer_flush(struct streamer *s, int layer, const float *x, float *out)
{
    if (s->on_device) {
        transfer(s);
        s->acc->staged_groups += s->n_staged > 0;
    } else {
        issue_reads(s);
    }
    if (s->order == STREAMER_NEEDED_ORDER)
        streamer_sum_batch(s, layer, x, out);
    else
        s->hooks.compute_staged(s->hooks.ctx, layer, s->staged, s->n_staged, x, out);
    s->n_staged = 0;
}

/* STREAMER_NEEDED_ORDER: row id, landing at `at` this batch, is computed
 * when the batch has landed, after the rows queued before it. */
static void note_row(struct streamer *s, uint32_t id, const uint8_t *at)
{
    s->sum_ids[s->n_sum] = id;
    s->sum_rows[s->n_sum++] = at;
    s->n_sum_kept += !(s->mark[id] & MARK_ONCE);
}

void streamer_sum_batch(struct streamer *s, int layer, const float *x, float *out)
{
    if (!s->read_failed && s->n_sum) {
        s->hooks.compute_rows(s->hooks.ctx, layer, s->sum_ids, s->sum_rows, s->n_sum, x, out);
        s->kept_done += s->n_sum_kept;
    }
    s->n_sum = s->n_sum_kept = 0;
}

/* Row k of the device staging area, and its bias (none without one). */
static struct dev_ref stage_row(const struct streamer *s, uint32_t k)
{
    return (struct dev_ref){s->stage_rows.buf, s->stage_rows.off + (size_t)k * s->stride};
}

static struct dev_ref stage_bias(const struct streamer *s, uint32_t k)
{
    return s->stage_bias.buf ? (struct dev_ref){s->stage_bias.buf, s->stage_bias.off + (size_t)k * sizeof(float)}
                             : (struct dev_ref){0};
}

/* On a device: room for n rows in the ring's slot, sending it when full
 * (its reads issued first), so that n rows placed next are adjacent, and
 * the slot ready to be written. */
static void ring_room(struct streamer *s, uint32_t n)
{
    if (!s->on_device)
        return;
    if (fring_room(&s->ring) < n)
        transfer(s);
    if (!fring_slot_pending(&s->ring)) /* per row placed: no clock read unless there is a wait */
        return;
    double t0 = now_ms();
    streamer_dev_check(s, fring_ready(&s->ring));
    s->acc->mem_ms += now_ms() - t0;
}

/* Where row id lands: its cache row, or the next staging row; on a
 * device the ring's next row, sent to the mirror's or the device
 * staging area's row (the caller made room in the ring). */
static uint8_t *row_home(struct streamer *s, int layer, uint32_t id, const float *x, float *out)
{
    const struct neuron_cache *c = &s->caches[layer];
    const float *bias = s->bias[layer];
    if (!(s->mark[id] & MARK_ONCE)) {
        uint32_t r = (uint32_t)c->row_of[id];
        if (!s->on_device)
            return c->rows + (uint64_t)r * s->stride;
        const struct neuron_cache_dev *d = &s->mirrors[layer];
        ring_room(s, 1); /* the caller made room for its read: only a flush between makes a new slot */
        return fring_place(&s->ring, ncd_rows(d, r), ncd_bias(d, r), bias ? bias[id] : 0);
    }
    if (s->n_staged == s->staging_rows)
        streamer_flush(s, layer, x, out);
    uint32_t k = s->n_staged++;
    s->staged[k] = id;
    if (!s->on_device)
        return s->staging + (uint64_t)k * s->stride;
    ring_room(s, 1);
    return fring_place(&s->ring, stage_row(s, k), stage_bias(s, k), bias ? bias[id] : 0);
}

/* Whether a read of ids first..first+count-1 can land in place: all of them
 * read this step, all kept or all used once (then adjacent rows hold them). */
bool streamer_lands_in_place(const struct streamer *s, uint32_t first, uint32_t count)
{
    uint8_t kind = s->mark[first] & (MARK_READ | MARK_ONCE);
    if (!(kind & MARK_READ) || ((kind & MARK_ONCE) && count > s->staging_rows))
        return false;
    for (uint32_t i = 1; i < count; i++)
        if ((s->mark[first + i] & (MARK_READ | MARK_ONCE)) != kind)
            return false;
    return true;
}

/* A read spanning rows it does not keep (coalescing): into the bounce
 * buffer, a piece at a time, and the rows read this step copied out. */
static void queue_bounced(struct streamer *s, int layer, uint32_t first, uint32_t count,
                          const float *x, float *out)
{
    for (uint32_t done = 0; done < count;) {
        uint32_t piece = count - done < s->bounce_rows ? count - done : s->bounce_rows;
        if (s->bounce_used + piece > s->bounce_rows)
            streamer_flush(s, layer, x, out);
        ring_room(s, piece);
        uint64_t from = (uint64_t)s->bounce_used * s->stride;
        s->reqs[s->n_reqs++] = (struct flash_read){streamer_unit_offset(s, layer, first + done),
                                                     (uint64_t)piece * s->stride, s->bounce + from};
        for (uint32_t i = 0; i < piece; i++) {
            uint32_t id = first + done + i;
            if (s->mark[id] & MARK_READ) {
                uint8_t *to = row_home(s, layer, id, x, out);
                s->copies[s->n_copies++] = (struct bounce_copy){id, from + (uint64_t)i * s->stride, to};
                land(s, layer, id, to);
                if (s->sum_ids)
                    note_row(s, id, to);
            }
        }
        s->bounce_used += piece;
        done += piece;
    }
}

/* A later vector of a row (split reads a row's up, gate and down one
 * after another): where its first vector went, so the vectors meet in one
 * bundle and the row is computed (and on a device sent) once; NULL for
 * anything else. Nothing is flushed or sent between a row's vectors. */
static uint8_t *later_vector_home(const struct streamer *s, const struct layout_read *rd)
{
    if (rd->vec <= 0 || rd->count != 1 || !s->last_home || s->last_id != rd->first)
        return NULL;
    return s->last_home;
}

/* Rows first..first + count - 1, all read this step and of one kind,
 * read straight into their homes (vec >= 0: one vector of the bundle). */
static void queue_in_place(struct streamer *s, int layer, const struct layout_read *rd,
                           const float *x, float *out)
{
    uint8_t *dst = later_vector_home(s, rd);
    if (!dst) {
        if ((s->mark[rd->first] & MARK_ONCE) && s->n_staged + rd->count > s->staging_rows)
            streamer_flush(s, layer, x, out);
        ring_room(s, rd->count);
        dst = row_home(s, layer, rd->first, x, out);
        for (uint32_t i = 1; i < rd->count; i++)
            row_home(s, layer, rd->first + i, x, out);
        s->last_id = rd->first + rd->count - 1;
        s->last_home = rd->count == 1 ? dst : NULL;
    }
    uint64_t off = streamer_unit_offset(s, layer, rd->first), len = (uint64_t)rd->count * s->stride;
    for (uint32_t i = 0; rd->vec < 0 && i < rd->count; i++)
        land(s, layer, rd->first + i, dst + (uint64_t)i * s->stride);
    for (uint32_t i = 0; s->sum_ids && rd->vec < 0 && i < rd->count; i++)
        note_row(s, rd->first + i, dst + (uint64_t)i * s->stride);
    /* split reads a row's vectors in order, into one home, in one batch: with
     * its last one queued the whole bundle lands when the batch completes,
     * and its checksum covers exactly what was read */
    if (rd->vec == (int32_t)s->unit.n_extents - 1)
        land(s, layer, rd->first, dst);
    if (rd->vec >= 0) {
        /* one vector of the bundle (model_format.h: up | gate | down), widened to
         * the direct-I/O alignment as the split layout counts it */
        uint64_t lo;
        const struct unit_extent *e = &s->unit.ext[rd->vec];
        layout_vector_span(e->offset, e->bytes, s->stride, s->align, &lo, &len);
        off += lo;
        dst += lo;
    }
    s->reqs[s->n_reqs++] = (struct flash_read){off, len, dst};
    /* needed order: the batch ends as the staging fills (the rows after it, kept or not, read next) */
    if (s->sum_ids && (s->mark[rd->first] & MARK_ONCE) && s->n_staged == s->staging_rows)
        streamer_flush(s, layer, x, out);
}

/* Queues the layout's reads of this step, flushing whenever the staging or
 * bounce area is full; on a device, a read of kept rows longer than the
 * ring's slot goes in pieces of a slot (the same bytes). */
void streamer_queue_reads(struct streamer *s, int layer, const struct cache_step *st,
                        const float *x, float *out)
{
    s->last_home = NULL;
    for (uint32_t r = 0; r < st->n_reads; r++) {
        const struct layout_read *rd = &st->reads[r];
        if (!streamer_lands_in_place(s, rd->first, rd->count)) {
            queue_bounced(s, layer, rd->first, rd->count, x, out);
            continue;
        }
        uint32_t most = s->on_device ? s->ring.slot_rows : rd->count;
        for (uint32_t done = 0; done < rd->count; done += most) {
            struct layout_read piece = *rd;
            piece.first = rd->first + done;
            piece.count = rd->count - done < most ? rd->count - done : most;
            queue_in_place(s, layer, &piece, x, out);
        }
    }
}
