/* A layer's step in needed order (streamer.h, STREAMER_NEEDED_ORDER):
 * input sparsity's sum, which adds only the rows it needs, in the order it
 * needs them (float sums: the order is the bits), where the neuron FFN
 * adds every row its cache holds. The cache keeps its rows in place, so a
 * deletion moves nothing and a row read lands in the hole freed last. */
#include "engine/ffn/streamer_impl.h"

#include <string.h>

#include "common/clock.h"
#include "engine/ffn/ffn_flash.h"

/* The needed rows held (not missed), in needed order, computed as one
 * group, before the needed rows the policy dropped leave. */
static void sum_held(struct streamer *s, int layer, uint32_t n_needed, const float *x, float *out)
{
    const struct neuron_cache *c = &s->caches[layer];
    uint32_t k = 0;
    for (uint32_t j = 0; j < n_needed; j++) {
        uint32_t id = s->needed[j];
        if (s->mark[id] & MARK_MISS)
            continue;
        if (!c->row_of || c->row_of[id] < 0) {
            streamer_fail(s, "internal: a row the cache holds has no storage");
            return;
        }
        s->sum_ids[k] = id;
        s->sum_rows[k++] = c->rows + (uint64_t)c->row_of[id] * s->stride;
    }
    s->hooks.compute_rows(s->hooks.ctx, layer, s->sum_ids, s->sum_rows, k, x, out);
}

/* After a failed read: the kept rows of this step whose batch did not
 * complete (or did not match its checksums) leave the cache, so that it
 * never holds a row that was not read whole; those of the batches before
 * stay, as they were read and checked. The run stops at this token. */
static void forget_unread(struct streamer *s, int layer, const struct cache_step *st)
{
    if (!s->read_failed)
        return;
    uint32_t kept = 0;
    for (uint32_t j = 0; j < st->n_rows; j++) { /* rows: read order, ascending */
        uint32_t id = st->rows[j];
        if (!(s->mark[id] & MARK_ONCE) && kept++ >= s->kept_done)
            streamer_drop_row(s, layer, id);
    }
}

void streamer_forward_needed(struct streamer *s, const struct streamer_step *sp, const float *x, float *out,
                             uint32_t len)
{
    int layer = sp->layer;
    const struct cache_step st = sp->st;
    if (out)
        memset(out, 0, len * sizeof *out);
    double t0 = now_ms();
    streamer_make_room(s, layer, &st);
    s->acc->mem_ms += now_ms() - t0;
    s->n_sum = s->n_sum_kept = s->kept_done = 0;
    sum_held(s, layer, sp->n_needed, x, out);
    t0 = now_ms();
    for (uint32_t j = 0; j < sp->n_late; j++)
        streamer_drop_row(s, layer, s->late[j]);
    int rc = s->error[0] ? -1 : streamer_append_kept(s, layer, &st);
    s->acc->mem_ms += now_ms() - t0;
    if (rc == 0) {
        streamer_queue_reads(s, layer, &st, x, out); /* each batch computed as it lands */
        streamer_flush(s, layer, x, out);
        forget_unread(s, layer, &st);
    }
    streamer_clear_marks(s, &st, sp->n_needed);
    streamer_count_step(s, &s->caches[layer], &st, sp->shrinks);
}
