/* A layer's step in the streamer (streamer.h): the decision through
 * cache/ and the marks it leaves, the cache's deletions and appends (with
 * their device moves), the step in its turn, and read-ahead's steps
 * decided and read before their turn. */
#include "engine/ffn/streamer_impl.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "engine/ffn/ffn_flash.h"

/* Marks what the decision says of each row; collects the needed rows the
 * policy dropped (they leave after the compute). */
static uint32_t classify(struct streamer *s, const struct cache_step *st, uint32_t n_needed)
{
    for (uint32_t j = 0; j < n_needed; j++)
        s->mark[s->needed[j]] |= MARK_NEED;
    for (uint32_t j = 0; j < st->n_rows; j++)
        s->mark[st->rows[j]] |= MARK_READ;
    for (uint32_t j = 0; j < st->n_misses; j++)
        s->mark[st->misses[j]] |= MARK_MISS;
    for (uint32_t j = 0; j < st->n_extra; j++)
        s->mark[st->extra[j]] |= MARK_ONCE;
    uint32_t n_late = 0;
    for (uint32_t j = 0; j < st->n_deleted; j++) {
        uint32_t id = st->deleted[j];
        if (s->mark[id] & MARK_MISS)
            s->mark[id] |= MARK_ONCE;
        else if (s->mark[id] & MARK_NEED)
            s->late[n_late++] = id;
    }
    return n_late;
}

void streamer_clear_marks(struct streamer *s, const struct cache_step *st, uint32_t n_needed)
{
    for (uint32_t j = 0; j < n_needed; j++)
        s->mark[s->needed[j]] = 0;
    for (uint32_t j = 0; j < st->n_rows; j++)
        s->mark[st->rows[j]] = 0;
}

/* Unit id leaves layer's cache (neuron_cache_delete): the last row
 * moving into its hole is counted and, on a device, recorded for the
 * layer's batched move (a cache kept in place moves nothing). */
void streamer_drop_row(struct streamer *s, int layer, uint32_t id)
{
    struct neuron_cache *c = &s->caches[layer];
    if (id >= c->d_ff || c->row_of[id] < 0)
        return;
    uint32_t r = (uint32_t)c->row_of[id], last = c->num_used - 1;
    if (r != last && !c->free_rows) {
        s->acc->row_moves++;
        if (ncd_record_move(&s->mirrors[layer], r, last) != 0)
            streamer_fail_dev(s, "the streamer moved more rows in one step than its cache holds");
    }
    neuron_cache_delete(c, id);
}

/* After a failed read of the unit file: the rows this step appended leave the
 * cache (the last first, so nothing moves), so that no row whose read may
 * not have completed is held as resident. The run stops at this token. */
static void forget_appended(struct streamer *s, int layer, uint32_t first_new)
{
    struct neuron_cache *c = &s->caches[layer];
    while (s->read_failed && c->capacity && c->num_used > first_new)
        streamer_drop_row(s, layer, c->pointer[c->num_used - 1]);
}

/* Rows the policy dropped that this token does not need leave now (room
 * for the new ones); the kept rows read this step are appended in id order. */
void streamer_make_room(struct streamer *s, int layer, const struct cache_step *st)
{
    struct neuron_cache *c = &s->caches[layer];
    for (uint32_t j = 0; j < st->n_deleted; j++)
        if (!(s->mark[st->deleted[j]] & (MARK_NEED | MARK_MISS)) && c->capacity)
            streamer_drop_row(s, layer, st->deleted[j]);
}

int streamer_append_kept(struct streamer *s, int layer, const struct cache_step *st)
{
    struct neuron_cache *c = &s->caches[layer];
    for (uint32_t j = 0; j < st->n_rows; j++) {
        uint32_t id = st->rows[j];
        if (s->mark[id] & MARK_ONCE)
            continue;
        if (!c->capacity || c->num_used == c->capacity) {
            char why[256];
            snprintf(why, sizeof why, "token %lld, layer %d: the policy keeps more rows than the %u the cache holds",
                     (long long)s->token, layer, c->capacity);
            streamer_fail(s, why);
            return -1;
        }
        neuron_cache_append(c, id);
    }
    return 0;
}

/* check: the true active neurons this step does not compute (neither
 * needed nor held in the layer's cache at compute time, i.e. after the
 * policy's deletions) and the needed ones that are not active. */
static void count_misses(struct streamer *s, int layer, const uint32_t *truth, uint32_t n_truth, uint32_t n_needed)
{
    const struct neuron_cache *c = &s->caches[layer];
    uint32_t both = 0, missed = 0;
    for (uint32_t j = 0; j < n_truth; j++) {
        uint32_t id = truth[j];
        if (s->mark[id] & MARK_NEED)
            both++;
        else if (!c->row_of || c->row_of[id] < 0 || (s->mark[id] & MARK_READ)) /* read ahead: appended already */
            missed++;
    }
    s->acc->active += n_truth;
    s->acc->missed += missed;
    s->acc->extra += n_needed - both;
}

/* Rows [first, first + n) of layer's cache, computed into out (the unit's hook). */
static void compute_cached(struct streamer *s, int layer, uint32_t first, uint32_t n, const float *x, float *out)
{
    s->hooks.compute_cached(s->hooks.ctx, layer, first, n, x, out);
}

/* The deletions recorded since the last batch, moved on the device. */
static void apply_moves(struct streamer *s, struct neuron_cache_dev *d)
{
    uint32_t before = d->n_applied;
    streamer_dev_check(s, ncd_apply_moves(d, &s->acc->h2d_bytes));
    s->acc->move_batches += d->n_applied != before;
}

/* The step's counts into the token's. */
void streamer_count_step(struct streamer *s, const struct neuron_cache *c, const struct cache_step *st,
                       uint64_t shrinks)
{
    s->acc->reads += s->done_reads ? 0 : st->n_reads; /* else as each batch completes */
    s->acc->rows_inserted += st->n_rows;
    s->acc->rows_deleted += st->n_deleted + st->n_extra;
    s->acc->overflow_rows += st->overflow;
    s->acc->window_shrinks += (uint32_t)(s->decide.p.shrinks - shrinks);
    s->acc->cache_rows += c->capacity ? c->num_used : 0;
}

/* The policy's decision for layer on s->needed[0..n_needed): the step's
 * rows marked. */
static void decide(struct streamer *s, int layer, uint32_t n_needed, struct streamer_step *sp)
{
    double t0 = now_ms();
    sp->layer = layer;
    sp->n_needed = n_needed;
    sp->went_ahead = sp->in_flight = false;
    sp->shrinks = s->decide.p.shrinks;
    cache_request(&s->decide, (uint64_t)s->token, (uint32_t)layer, s->needed, n_needed, true, NULL, &sp->st);
    sp->n_late = classify(s, &sp->st, n_needed);
    s->acc->mem_ms += now_ms() - t0;
}

/* A decided layer's memory management, reads and compute; truth (check)
 * is counted against what the step computes. On a device (x and out NULL
 * unless the host reads them) the deletions are moved there in a batch
 * before the held rows are computed (a second one after, when needed rows
 * the policy dropped leave), and the rows appended are uploaded once read. */
void streamer_forward(struct streamer *s, const struct streamer_step *sp, const uint32_t *truth, uint32_t n_truth,
                      const float *x, float *out, uint32_t d_model)
{
    if (s->order == STREAMER_NEEDED_ORDER) {
        streamer_forward_needed(s, sp, x, out, d_model);
        return;
    }
    int layer = sp->layer;
    uint32_t n_late = sp->n_late, n_needed = sp->n_needed;
    const struct cache_step st = sp->st;
    struct neuron_cache *c = &s->caches[layer];
    struct neuron_cache_dev *d = &s->mirrors[layer];
    if (out)
        memset(out, 0, d_model * sizeof *out);
    double t0 = now_ms();
    streamer_dev_check(s, ncd_begin(d, s->ring.covered)); /* the moves list was the last step's upload source */
    streamer_make_room(s, layer, &st);
    apply_moves(s, d);
    s->acc->mem_ms += now_ms() - t0;
    if (truth)
        count_misses(s, layer, truth, n_truth, n_needed);
    /* the rows held: hits, and what the policy keeps from earlier tokens */
    compute_cached(s, layer, 0, c->num_used, x, out);
    t0 = now_ms();
    for (uint32_t j = 0; j < n_late; j++)
        streamer_drop_row(s, layer, s->late[j]);
    apply_moves(s, d);
    uint32_t first_new = c->capacity ? c->num_used : 0;
    int rc = streamer_append_kept(s, layer, &st);
    s->acc->mem_ms += now_ms() - t0;
    if (rc == 0) {
        streamer_queue_reads(s, layer, &st, x, out);
        uint32_t once = s->n_staged;
        streamer_flush(s, layer, x, out); /* on a device the appended rows went up with the ring */
        forget_appended(s, layer, first_new);
        s->acc->append_groups += d->be && c->num_used > first_new;
        compute_cached(s, layer, first_new, c->num_used - first_new, x, out);
        s->acc->cache_rows += once;
    }
    streamer_dev_check(s, ncd_end(d));
    streamer_clear_marks(s, &st, n_needed);
    streamer_count_step(s, c, &st, sp->shrinks);
}


/* Whether a decided step's reads can run while another layer computes:
 * every row read is kept and lands in its own cache row. */
static bool can_go_ahead(const struct streamer *s, const struct streamer_step *sp)
{
    if (sp->n_late || sp->st.n_extra)
        return false;
    for (uint32_t r = 0; r < sp->st.n_reads; r++) {
        const struct layout_read *rd = &sp->st.reads[r];
        if ((s->mark[rd->first] & MARK_ONCE) || !streamer_lands_in_place(s, rd->first, rd->count))
            return false;
    }
    return true;
}

/* A decided step's memory management done and its reads handed to the
 * reader without waiting; its counts taken, its marks cleared. */
static void go_ahead(struct streamer *s, struct streamer_step *sp)
{
    struct neuron_cache *c = &s->caches[sp->layer];
    double t0 = now_ms();
    streamer_make_room(s, sp->layer, &sp->st);
    sp->first_new = c->capacity ? c->num_used : 0;
    int rc = streamer_append_kept(s, sp->layer, &sp->st);
    uint32_t mine = s->n_landed;
    if (rc == 0)
        streamer_queue_reads(s, sp->layer, &sp->st, NULL, NULL); /* all in place: nothing flushes */
    sp->n_landed = s->n_landed - mine; /* its rows are checked when its reads complete */
    memcpy(sp->landed, s->landed + mine, sp->n_landed * sizeof *sp->landed);
    s->n_landed = mine;
    s->acc->mem_ms += now_ms() - t0;
    sp->went_ahead = true;
    s->acc->layers_ahead++;
    if (rc == 0)
        sp->in_flight = streamer_submit_batch(s, s->reader, s->reqs, s->n_reqs, &sp->before);
    s->n_reqs = 0;
    streamer_count_step(s, c, &sp->st, sp->shrinks);
    streamer_clear_marks(s, &sp->st, sp->n_needed);
}

/* Layer's step decided (gone ahead when it can). */
struct streamer_step *streamer_decide(struct streamer *s, int layer, uint32_t n_needed)
{
    struct streamer_step *sp = &s->steps[layer % 2];
    decide(s, layer, n_needed, sp);
    if (s->ahead && can_go_ahead(s, sp))
        go_ahead(s, sp);
    return sp;
}

/* A step gone ahead, in its turn: the exposed wait for its reads, check's
 * counts (the rows read count as not held, as in the step's own order). */
void streamer_finish_ahead(struct streamer *s, const struct streamer_step *sp, const uint32_t *truth,
                           uint32_t n_truth)
{
    if (sp->in_flight)
        streamer_wait_batch(s, s->reader, &sp->before, &s->acc->bytes_read);
    streamer_verify_landed(s, sp->landed, sp->n_landed);
    forget_appended(s, sp->layer, sp->first_new);
    if (!truth)
        return;
    for (uint32_t j = 0; j < sp->n_needed; j++)
        s->mark[s->needed[j]] |= MARK_NEED;
    for (uint32_t j = 0; j < sp->st.n_rows; j++)
        s->mark[sp->st.rows[j]] |= MARK_READ;
    count_misses(s, sp->layer, truth, n_truth, sp->n_needed);
    streamer_clear_marks(s, &sp->st, sp->n_needed);
}

/* A step gone ahead computed as its own order would: the rows held, then
 * those appended (the same groups, the same bits). */
void streamer_compute_ahead(struct streamer *s, const struct streamer_step *sp, const float *x, float *out,
                            uint32_t d_model)
{
    const struct neuron_cache *c = &s->caches[sp->layer];
    memset(out, 0, d_model * sizeof *out);
    compute_cached(s, sp->layer, 0, sp->first_new, x, out);
    uint32_t used = c->capacity ? c->num_used : 0;
    compute_cached(s, sp->layer, sp->first_new, used - sp->first_new, x, out);
}

void streamer_begin_token(struct streamer *s)
{
    s->token++;
    s->read_failed = false; /* a failed token's rows left the caches: the next one reads afresh */
    s->steps[0].layer = s->steps[1].layer = -1;
}

/* On a device, after the pass's sync: what the ring and the mirrors did
 * this token, and the uploads' device time. */
void streamer_take_device(struct streamer *s)
{
    struct flash_ring *r = &s->ring;
    fring_synced(r);
    for (uint32_t l = 0; l < s->unit.n_layers; l++) {
        ncd_synced(&s->mirrors[l]);
        s->acc->step_waits += s->mirrors[l].waits;
        s->mirrors[l].waits = 0;
    }
    s->acc->h2d_bytes += r->bytes_up;
    s->acc->upload_runs += r->runs_sent;
    s->acc->ring_waits += r->waits;
    r->bytes_up = r->runs_sent = r->waits = r->sends = 0;
    if (fring_take_ms(r, &s->acc->h2d_ms) != 0)
        streamer_dev_check(s, -1);
}
