/* The flash FFN's pinned staging ring (flash_ring.h). */
#include "engine/ffn/flash_ring.h"

#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

/* Pins the slot in place; false (and no registration) when the backend
 * cannot: cuda then copies registered memory to the device, which a ring
 * rewritten every token must not be. */
static bool pin_slot(struct flash_ring *r, struct flash_ring_slot *s, size_t bytes)
{
    if (r->ops->register_host(r->be, s->mem.base, bytes, &s->reg) != 0) {
        s->reg = NULL;
        return false;
    }
    if (r->ops->host_ptr(r->be, s->reg) == s->mem.base)
        return true;
    r->ops->buf_free(r->be, s->reg);
    s->reg = NULL;
    return false;
}

int fring_init(struct flash_ring *r, const struct backend_ops *ops, struct backend *be, uint32_t slot_rows,
               uint64_t stride, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->ops = ops;
    r->be = be;
    r->slot_rows = slot_rows ? slot_rows : 1;
    r->stride = stride;
    r->pinned = true;
    size_t bytes = (size_t)r->slot_rows * stride;
    r->runs = malloc(r->slot_rows * sizeof *r->runs);
    if (!r->runs)
        return err_set(err, errlen, "the staging ring: out of memory");
    for (int k = 0; k < FLASH_RING_SLOTS; k++) {
        struct flash_ring_slot *s = &r->slot[k];
        if (io_buffer_alloc(&s->mem, bytes, true) != 0 || !(s->bias = calloc(r->slot_rows, sizeof *s->bias)))
            return err_set(err, errlen, "the staging ring: %u rows of %llu bytes: out of memory", r->slot_rows,
                           (unsigned long long)stride);
        r->pinned = pin_slot(r, s, bytes) && r->pinned;
    }
    return 0;
}

void fring_free(struct flash_ring *r)
{
    for (int k = 0; k < FLASH_RING_SLOTS; k++) {
        struct flash_ring_slot *s = &r->slot[k];
        if (s->reg)
            r->ops->buf_free(r->be, s->reg);
        if (s->mem.base)
            io_buffer_free(&s->mem);
        free(s->bias);
    }
    free(r->runs);
    memset(r, 0, sizeof *r);
}

uint32_t fring_room(const struct flash_ring *r)
{
    return r->slot_rows - r->used;
}

/* Whether a row going to rows/bias continues the last run. */
static bool continues(const struct flash_ring_run *u, struct dev_ref rows, struct dev_ref bias, uint64_t stride)
{
    if (u->rows.buf != rows.buf || u->rows.off + (size_t)u->n * stride != rows.off || u->bias.buf != bias.buf)
        return false;
    return !bias.buf || u->bias.off + (size_t)u->n * sizeof(float) == bias.off;
}

uint8_t *fring_place(struct flash_ring *r, struct dev_ref rows, struct dev_ref bias, float bias_value)
{
    struct flash_ring_slot *s = &r->slot[r->cur];
    uint32_t at = r->used++;
    s->bias[at] = bias_value;
    struct flash_ring_run *u = r->n_runs ? &r->runs[r->n_runs - 1] : NULL;
    if (u && continues(u, rows, bias, r->stride))
        u->n++;
    else
        r->runs[r->n_runs++] = (struct flash_ring_run){at, 1, rows, bias};
    return (uint8_t *)s->mem.base + (size_t)at * r->stride;
}

/* The slot's runs into the queue: rows, then biases. */
static int enqueue_runs(struct flash_ring *r, const struct flash_ring_slot *s)
{
    for (uint32_t k = 0; k < r->n_runs; k++) {
        const struct flash_ring_run *u = &r->runs[k];
        size_t bytes = (size_t)u->n * r->stride;
        if (r->ops->upload(r->be, u->rows, (const uint8_t *)s->mem.base + (size_t)u->at * r->stride, bytes))
            return -1;
        r->bytes_up += bytes;
        if (!u->bias.buf)
            continue;
        if (r->ops->upload(r->be, u->bias, s->bias + u->at, (size_t)u->n * sizeof(float)))
            return -1;
        r->bytes_up += (uint64_t)u->n * sizeof(float);
    }
    r->runs_sent += r->n_runs;
    return 0;
}

/* Adds slot s's send time to *ms (its events complete). */
static int take_slot_ms(struct flash_ring *r, struct flash_ring_slot *s, double *ms)
{
    if (!s->timed)
        return 0;
    double t = 0;
    if (r->ops->event_elapsed(r->be, s->start, s->done, &t) != 0)
        return -1;
    s->timed = false;
    *ms += t;
    return 0;
}

int fring_send(struct flash_ring *r)
{
    if (r->used == 0)
        return 0;
    struct flash_ring_slot *s = &r->slot[r->cur];
    if (r->ops->event_record(r->be, &s->start) || enqueue_runs(r, s) || r->ops->event_record(r->be, &s->done))
        return -1;
    s->pending = s->timed = true;
    r->sends++;
    r->cur = (r->cur + 1) % FLASH_RING_SLOTS;
    r->used = 0;
    r->n_runs = 0;
    return 0;
}

int fring_ready(struct flash_ring *r)
{
    struct flash_ring_slot *s = &r->slot[r->cur];
    if (!s->pending)
        return 0;
    s->pending = false;
    if (s->done <= r->covered)
        return 0;
    r->waits++;
    r->covered = s->done;
    return r->ops->event_wait(r->be, s->done);
}

void fring_covered(struct flash_ring *r, uint64_t ev)
{
    if (ev > r->covered)
        r->covered = ev;
}

void fring_synced(struct flash_ring *r)
{
    for (int k = 0; k < FLASH_RING_SLOTS; k++)
        r->slot[k].pending = false;
}

int fring_take_ms(struct flash_ring *r, double *ms)
{
    *ms = 0;
    for (int k = 0; k < FLASH_RING_SLOTS; k++)
        if (take_slot_ms(r, &r->slot[k], ms) != 0)
            return -1;
    return 0;
}
