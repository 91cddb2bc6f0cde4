/* The sim backend's memory (backend_sim.h): buffers with guard zones,
 * poisoned when new; registered host memory; the live list the checks at
 * each wait walk. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compute/backend_sim_impl.h"

/* The guard zones' bytes: varied, so that a kernel writing one value
 * over a zone (zeros, the poison) breaks it. */
static unsigned char guard_byte(size_t i)
{
    return (unsigned char)(0xa5u ^ (i * 37u) ^ (i >> 8));
}

static void guard_fill(char *zone, size_t n)
{
    for (size_t i = 0; i < n; i++)
        zone[i] = (char)guard_byte(i);
}

/* The index of the first broken byte of a zone of n, or n when whole. */
static size_t guard_broken(const char *zone, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)zone[i] != guard_byte(i))
            return i;
    return n;
}

static void link_live(struct backend *b, struct sim_mem *m)
{
    m->next = b->live;
    if (b->live)
        b->live->prev = m;
    b->live = m;
}

static void unlink_live(struct backend *b, struct sim_mem *m)
{
    if (m->prev)
        m->prev->next = m->next;
    else
        b->live = m->next;
    if (m->next)
        m->next->prev = m->prev;
}

/* The record of a new buffer and its sim_mem; NULL with the error set. */
static struct dev_buf *buf_record(struct backend *b, size_t bytes, enum buf_kind kind)
{
    struct dev_buf *d = bk_buf_new(&b->base, bytes, kind);
    struct sim_mem *m = d ? calloc(1, sizeof *m) : NULL;
    if (d && !m) {
        free(d);
        bk_fail(&b->base, "out of host memory for a buffer record");
        return NULL;
    }
    if (m) {
        m->buf = d;
        d->handle = m;
    }
    return d;
}

int sim_alloc(struct backend *b, size_t bytes, enum buf_kind kind, struct dev_buf **out)
{
    if (b->base.failed)
        return -1;
    if (bytes > SIZE_MAX / 2)
        return bk_fail(&b->base, "a buffer of %zu bytes is more than the device holds", bytes);
    struct dev_buf *d = buf_record(b, bytes, kind);
    if (!d)
        return -1;
    struct sim_mem *m = d->handle;
    size_t total = SIM_GUARD_BYTES + (bytes + SIM_GUARD_BYTES + 63) / 64 * 64;
    m->raw = aligned_alloc(64, total);
    if (!m->raw) {
        free(m);
        free(d);
        return bk_fail(&b->base, "cannot allocate %zu bytes of device memory", bytes);
    }
    m->data = m->raw + SIM_GUARD_BYTES;
    m->tail = total - SIM_GUARD_BYTES - bytes;
    guard_fill(m->raw, SIM_GUARD_BYTES);
    memset(m->data, SIM_POISON_BYTE, bytes);
    guard_fill(m->data + bytes, m->tail);
    d->host = kind == BUF_PINNED ? m->data : NULL;
    link_live(b, m);
    *out = d;
    return 0;
}

int sim_register(struct backend *b, void *host, size_t bytes, struct dev_buf **out)
{
    if (b->base.failed)
        return -1;
    if (!host && bytes)
        return bk_fail(&b->base, "register_host: no memory at NULL");
    struct dev_buf *d = buf_record(b, bytes, BUF_PINNED);
    if (!d)
        return -1;
    struct sim_mem *m = d->handle;
    m->data = host;
    d->host = host;
    d->registered = true;
    link_live(b, m);
    *out = d;
    return 0;
}

static void mem_free(struct backend *b, struct sim_mem *m)
{
    unlink_live(b, m);
    free(m->raw);
    free(m->buf);
    free(m);
}

/* Waits for the queue first (nothing in flight may reach freed memory),
 * then checks the buffer's zones: a write past it is reported by the
 * next call, as any fault found on the queue. */
void sim_buf_free(struct backend *b, struct dev_buf *buf)
{
    if (!buf)
        return;
    sim_queue_drain(b);
    if (!b->base.failed)
        sim_guard_check(b, buf, "when freed");
    mem_free(b, buf->handle);
}

void *sim_host_ptr(struct backend *b, struct dev_buf *buf)
{
    (void)b;
    return buf ? buf->host : NULL;
}

void sim_free_all(struct backend *b)
{
    while (b->live)
        mem_free(b, b->live);
}

int sim_guard_check(struct backend *b, const struct dev_buf *buf, const char *when)
{
    const struct sim_mem *m = buf->handle;
    if (!m->raw)
        return 0; /* registered: the caller's memory has no zones */
    size_t before = guard_broken(m->raw, SIM_GUARD_BYTES), after = guard_broken(m->data + buf->bytes, m->tail);
    if (before == SIM_GUARD_BYTES && after == m->tail)
        return 0;
    long long at = after < m->tail ? (long long)(buf->bytes + after) : (long long)before - SIM_GUARD_BYTES;
    b->base.failed = true;
    return bk_fail(&b->base,
                   "%s: the guard zone %s a %s buffer of %zu bytes is broken at offset %lld: a kernel%s wrote "
                   "past its buffer",
                   when, after < m->tail ? "after" : "before", buf->kind == BUF_PINNED ? "pinned" : "device",
                   buf->bytes, at, buf->kind == BUF_PINNED ? ", or the host through host_ptr," : "");
}

int sim_guard_check_all(struct backend *b, const char *when)
{
    for (const struct sim_mem *m = b->live; m; m = m->next)
        if (sim_guard_check(b, m->buf, when))
            return -1;
    return 0;
}
