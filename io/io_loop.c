/* The submit/complete loop: see io_loop.h for the contract. */
#include "io/io_loop.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errbuf.h"

int io_loop_init(struct io_loop *l, const struct ioengine_ops *ops, struct io_thread *td)
{
    memset(l, 0, sizeof *l);
    l->ops = ops;
    l->td = td;
    l->depth = td->job->iodepth ? td->job->iodepth : 1;
    l->units = calloc(l->depth, sizeof *l->units);
    l->free_units = calloc(l->depth, sizeof *l->free_units);
    l->retry_units = calloc(l->depth, sizeof *l->retry_units);
    if (l->units && l->free_units && l->retry_units)
        return 0;
    io_loop_free(l);
    return -ENOMEM;
}

void io_loop_free(struct io_loop *l)
{
    free(l->units);
    free(l->free_units);
    free(l->retry_units);
    l->units = NULL;
    l->free_units = NULL;
    l->retry_units = NULL;
}

/* One run's moving parts. */
struct run {
    struct io_loop *l;
    const struct io_loop_hooks *h;
    void *ctx;
    unsigned nfree, inflight, nretry;
    bool more;  /* next() has not said no yet, and nothing failed */
    int status; /* enum io_loop_status */
    char *err;
    size_t errlen;
};

/* Stops asking for reads and records the error. The first message is kept,
 * except that a lost read outranks a failed one: it decides what the
 * caller may do next. */
static void run_fail(struct run *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void run_fail(struct run *r, int status, const char *fmt, ...)
{
    r->more = false;
    if (r->status != IO_LOOP_DONE && status != IO_LOOP_LOST)
        return;
    r->status = status;
    va_list ap;
    va_start(ap, fmt);
    err_vset(r->err, r->errlen, fmt, ap);
    va_end(ap);
}

/* A read that came back failed or short. Past the end of the file is the
 * likely cause of a short one (the file shrank under us): say so. */
static void read_failed(struct run *r, const struct io_unit *u)
{
    const struct io_thread *td = r->l->td;
    int e = u->result < 0 ? (int)-u->result : EIO;
    char why[96] = "";
    struct stat st;
    if (td->fd >= 0 && fstat(td->fd, &st) == 0 && S_ISREG(st.st_mode) &&
        u->offset + u->len > (uint64_t)st.st_size)
        snprintf(why, sizeof why, " (short read: the file now ends at %llu)",
                 (unsigned long long)st.st_size);
    const char *what = strerror(e);
    if (u->result >= 0 && !why[0]) {
        what = "short read";
        snprintf(why, sizeof why, " (%lld bytes)", (long long)u->result);
    }
    char tries[48] = "";
    if (u->attempt)
        snprintf(tries, sizeof tries, " (tried %u times)", u->attempt + 1);
    if (r->status == IO_LOOP_DONE) {
        r->l->failed = true;
        r->l->fail_offset = u->offset;
    }
    run_fail(r, IO_LOOP_FAILED, "%s read of %llu bytes at offset %llu of %s failed: %s%s%s",
             r->l->ops->name, (unsigned long long)u->len, (unsigned long long)u->offset,
             td->job->path, what, why, tries);
}

/* A unit is back: hand it on; or, failed, read it again while it has
 * tries left and nothing else failed; or report it. */
static void finish(struct run *r, struct io_unit *u)
{
    if (u->result >= 0 && (uint64_t)u->result == u->len) {
        r->l->free_units[r->nfree++] = u;
        r->h->done(r->ctx, u);
        return;
    }
    if (u->attempt < r->l->max_retries && r->status == IO_LOOP_DONE) {
        u->attempt++;
        r->l->retries++;
        r->l->retry_units[r->nretry++] = u;
        return;
    }
    r->l->free_units[r->nfree++] = u;
    read_failed(r, u);
}

/* The next unit to start: a retry first, else next()'s; NULL when none.
 * Retries still waiting when something failed are dropped. */
static struct io_unit *next_unit(struct run *r)
{
    if (r->status != IO_LOOP_DONE)
        while (r->nretry)
            r->l->free_units[r->nfree++] = r->l->retry_units[--r->nretry];
    if (r->nretry)
        return r->l->retry_units[--r->nretry];
    if (!r->more || !r->nfree)
        return NULL;
    struct io_unit *u = r->l->free_units[r->nfree - 1];
    if (!r->h->next(r->ctx, u)) {
        r->more = false;
        return NULL;
    }
    r->nfree--;
    u->attempt = 0;
    return u;
}

/* Starts reads until depth are in flight or next() has none; returns how
 * many went to the engine's queue (to commit). Synchronous engines finish
 * each read in queue(), so next() runs again right after it: a caller's
 * clock is checked between any two reads. */
static unsigned fill(struct run *r)
{
    const struct ioengine_ops *ops = r->l->ops;
    unsigned queued = 0;
    struct io_unit *u;
    while ((u = next_unit(r)) != NULL) {
        u->result = 0;
        int rc = ops->queue(r->l->td, u);
        if (rc == IO_Q_QUEUED) {
            r->inflight++;
            queued++;
        } else if (rc == IO_Q_COMPLETED) {
            finish(r, u);
        } else {
            r->l->free_units[r->nfree++] = u;
            run_fail(r, IO_LOOP_FAILED, "%s read of %llu bytes at offset %llu of %s could not start: %s",
                     ops->name, (unsigned long long)u->len, (unsigned long long)u->offset,
                     r->l->td->job->path, strerror(-rc));
        }
    }
    return queued;
}

/* Collects at least min completions (0: whatever is there, and nothing
 * there is no error). false when getevents failed: reads it cannot account
 * for may still land in the units' buffers. */
static bool reap(struct run *r, unsigned min)
{
    const struct ioengine_ops *ops = r->l->ops;
    int n = ops->getevents(r->l->td, min, r->inflight);
    if (n < 0 && min == 0)
        return true;
    if (n < 0) {
        run_fail(r, IO_LOOP_LOST, "%s waiting for reads from %s failed: %s", ops->name,
                 r->l->td->job->path, strerror(-n));
        return false;
    }
    for (int i = 0; i < n; i++) {
        r->inflight--;
        finish(r, ops->event(r->l->td, (unsigned)i));
    }
    return true;
}

/* Hands the queued reads to the kernel. A transient refusal (interrupted,
 * or the completion queue full) is retried after collecting what has
 * completed. false when the submit failed: the reads stay queued, where a
 * later submit would pick them up into buffers since reused. */
static bool commit(struct run *r)
{
    const struct ioengine_ops *ops = r->l->ops;
    int rc;
    while ((rc = ops->commit(r->l->td)) == -EINTR || rc == -EAGAIN || rc == -EBUSY)
        reap(r, 0);
    if (rc >= 0)
        return true;
    run_fail(r, IO_LOOP_LOST, "%s submit of reads from %s failed: %s", ops->name,
             r->l->td->job->path, strerror(-rc));
    return false;
}

int io_loop_run(struct io_loop *l, const struct io_loop_hooks *h, void *ctx, char *err,
                size_t errlen)
{
    struct run r = {.l = l, .h = h, .ctx = ctx, .nfree = l->depth, .more = true, .err = err,
                    .errlen = errlen};
    for (unsigned i = 0; i < l->depth; i++)
        l->free_units[i] = &l->units[i];
    l->retries = 0;
    l->failed = false;
    l->fail_offset = 0;
    while (r.more || r.inflight || r.nretry) {
        if (fill(&r) && l->ops->commit && !commit(&r))
            break;
        if (r.inflight && !reap(&r, 1))
            break;
    }
    return r.status;
}
