/* The flash reader pool: see flash_reader.h for the contract.
 *
 * Threads. Each reader thread runs the engine's setup and open_file itself
 * (an io_uring ring set up with SINGLE_ISSUER/DEFER_TASKRUN belongs to the
 * thread that created it), reports to flash_reader_open, then parks on its
 * own condition variable. A batch wakes only the threads it can use (at
 * most one per read unit), so a one-read batch costs one wakeup, not 32.
 * All hand-offs go through one mutex: the caller publishes the batch and
 * bumps a generation counter under it; a worker runs when the generation
 * differs from the last one it ran and it is among the batch's active
 * workers; the last worker to finish signals the caller. Nothing spins: the
 * reads themselves take tens of microseconds at least, and spinning threads
 * would steal the CPU from the ones doing work on small machines.
 *
 * Units. A request longer than the piece size (max_read, and never more than
 * MAX_PIECE) is read as several units of at most that size. The caller
 * walks the requests once, validating them and counting units; threads
 * claim unit numbers from one shared atomic counter. When every request is
 * exactly one unit (the common case: bundles of one neuron) unit u is
 * request u. Otherwise a thread maps a unit number to (request, piece) with
 * a cursor of its own that only moves forward, since the numbers one thread
 * claims increase: each thread walks the request list at most once per
 * batch. Nothing is allocated per batch. */
#include "io/flash_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "common/limits.h"
#include "io/direct_io.h"

#define MAX_THREADS ((unsigned)FB_MAX_THREADS)
#define MAX_IODEPTH ((unsigned)FB_MAX_IODEPTH)
/* The most one unit reads: io_uring takes 32-bit lengths and Linux reads at
 * most 2 GiB - 4 KiB per call; 1 GiB is a multiple of every alignment. */
#define MAX_PIECE (1ull << 30)

struct worker {
    struct flash_reader *r;
    unsigned id;
    pthread_t tid;
    pthread_cond_t wake;
    struct io_thread td;
    struct io_unit *units;      /* iodepth of them */
    struct io_unit **free_units;
    /* Written by the worker while it runs a batch, read by the caller after
     * the batch (both under r->mu at the hand-off). */
    unsigned long seen;         /* the last generation this worker ran */
    uint64_t reads, bytes;
    int setup_err;              /* -errno from setup/open_file, 0 if none */
    const char *setup_what;
};

struct flash_reader {
    char *path;
    const struct ioengine_ops *ops;
    struct io_job job;
    bool direct;
    uint64_t align;
    uint64_t piece;             /* units are at most this long */
    unsigned nthreads;
    struct worker *w;

    pthread_mutex_t mu;
    pthread_cond_t done;        /* the caller waits here for running == 0 */
    unsigned ready;             /* workers through setup (open only) */
    bool stop;
    /* The current batch, set by the caller under mu. */
    unsigned long generation;
    unsigned active;            /* workers 0..active-1 take part */
    unsigned running;           /* active workers not yet finished */
    const struct flash_read *reqs;
    uint64_t total_units;
    bool one_unit_per_req;
    atomic_uint_fast64_t next_unit;
    atomic_int failed;          /* a hint for the workers to stop claiming */
    char err[512];              /* the batch's first error, under mu */
    /* A failure that leaves reads the reader can no longer account for
     * (a failed submit or reap): every later batch fails with it. */
    bool broken;
    char broken_err[512];

    struct flash_reader_stats stats;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Records the batch's first error (the others are dropped) and tells the
 * workers to stop claiming. With broken, every later batch fails too. */
static void batch_fail(struct flash_reader *r, bool broken, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void batch_fail(struct flash_reader *r, bool broken, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&r->mu);
    if (!atomic_load_explicit(&r->failed, memory_order_relaxed))
        snprintf(r->err, sizeof r->err, "%s", msg);
    atomic_store_explicit(&r->failed, 1, memory_order_relaxed);
    if (broken && !r->broken) {
        r->broken = true;
        snprintf(r->broken_err, sizeof r->broken_err, "%.440s (the reader is unusable after this)",
                 msg);
    }
    pthread_mutex_unlock(&r->mu);
}

static uint64_t units_of(uint64_t len, uint64_t piece)
{
    return len / piece + (len % piece != 0);
}

/* Fills u for unit number n of the batch. cur_req/cur_base is the worker's
 * cursor: the request it last mapped to and the number of its first unit. */
static void map_unit(const struct flash_reader *r, uint64_t n, size_t *cur_req, uint64_t *cur_base,
                     struct io_unit *u)
{
    const struct flash_read *q;
    uint64_t piece_no;
    if (r->one_unit_per_req) {
        q = &r->reqs[n];
        piece_no = 0;
    } else {
        for (;;) {
            uint64_t k = units_of(r->reqs[*cur_req].len, r->piece);
            if (n < *cur_base + k)
                break;
            *cur_base += k;
            ++*cur_req;
        }
        q = &r->reqs[*cur_req];
        piece_no = n - *cur_base;
    }
    uint64_t off = piece_no * r->piece;
    uint64_t left = q->len - off;
    u->offset = q->offset + off;
    u->len = left < r->piece ? left : r->piece;
    u->buf = (char *)q->dst + off;
}

/* Accounts one finished unit; false when it failed. */
static bool unit_done(struct worker *w, const struct io_unit *u)
{
    struct flash_reader *r = w->r;
    if (u->result >= 0 && (uint64_t)u->result == u->len) {
        w->reads++;
        w->bytes += u->len;
        return true;
    }
    int e = u->result < 0 ? (int)-u->result : EIO;
    char why[160] = "";
    struct stat st;
    if (fstat(w->td.fd, &st) == 0 && S_ISREG(st.st_mode) &&
        u->offset + u->len > (uint64_t)st.st_size)
        snprintf(why, sizeof why, " (short read: the file now ends at %llu)",
                 (unsigned long long)st.st_size);
    batch_fail(r, false, "%s read of %llu bytes at offset %llu of %s failed: %s%s", r->ops->name,
               (unsigned long long)u->len, (unsigned long long)u->offset, r->path, strerror(e), why);
    return false;
}

/* Claims and reads units until the batch has none left (or failed), then
 * waits for this thread's reads still in flight. */
static void run_batch(struct worker *w)
{
    struct flash_reader *r = w->r;
    const struct ioengine_ops *ops = r->ops;
    const unsigned depth = r->job.iodepth;
    size_t cur_req = 0;
    uint64_t cur_base = 0;
    unsigned nfree = depth, inflight = 0;
    bool exhausted = false;
    for (unsigned i = 0; i < depth; i++)
        w->free_units[i] = &w->units[i];

    for (;;) {
        unsigned queued = 0;
        while (nfree && !exhausted && !atomic_load_explicit(&r->failed, memory_order_relaxed)) {
            uint64_t n = atomic_fetch_add_explicit(&r->next_unit, 1, memory_order_relaxed);
            if (n >= r->total_units) {
                exhausted = true;
                break;
            }
            struct io_unit *u = w->free_units[--nfree];
            map_unit(r, n, &cur_req, &cur_base, u);
            u->issue_ns = 0;
            u->result = 0;
            int rc = ops->queue(&w->td, u);
            if (rc == IO_Q_COMPLETED) {
                w->free_units[nfree++] = u;
                unit_done(w, u);
            } else if (rc == IO_Q_QUEUED) {
                inflight++;
                queued++;
            } else {
                w->free_units[nfree++] = u;
                batch_fail(r, false, "%s read of %llu bytes at offset %llu of %s could not start: %s",
                           ops->name, (unsigned long long)u->len, (unsigned long long)u->offset,
                           r->path, strerror(-rc));
                break;
            }
        }
        if (queued && ops->commit) {
            int rc;
            /* Transient refusals: collect what has completed and try again. */
            while ((rc = ops->commit(&w->td)) == -EINTR || rc == -EAGAIN || rc == -EBUSY) {
                if (!inflight)
                    break;
                int n = ops->getevents(&w->td, 0, inflight);
                for (int i = 0; i < n; i++) {
                    struct io_unit *u = ops->event(&w->td, (unsigned)i);
                    inflight--;
                    w->free_units[nfree++] = u;
                    unit_done(w, u);
                }
            }
            if (rc < 0) {
                /* The kernel took none of them: they stay in the ring's
                 * submission queue, where the next submit would pick them up
                 * and read into buffers the caller has since reused. */
                batch_fail(r, true, "%s submit of reads from %s failed: %s", ops->name, r->path,
                           strerror(-rc));
                return;
            }
        }
        if (!inflight) {
            if (exhausted || atomic_load_explicit(&r->failed, memory_order_relaxed))
                return;
            continue;
        }
        int n = ops->getevents(&w->td, 1, inflight);
        if (n < 0) {
            /* Reads still in flight may land after the caller returns. */
            batch_fail(r, true, "%s waiting for reads from %s failed: %s", ops->name, r->path,
                       strerror(-n));
            return;
        }
        for (int i = 0; i < n; i++) {
            struct io_unit *u = ops->event(&w->td, (unsigned)i);
            inflight--;
            w->free_units[nfree++] = u;
            unit_done(w, u);
        }
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct flash_reader *r = w->r;
    const struct ioengine_ops *ops = r->ops;

    int rc = ops->setup(&w->td);
    if (rc)
        w->setup_what = "engine setup";
    else if ((rc = ops->open_file(&w->td)) != 0)
        w->setup_what = "open";
    pthread_mutex_lock(&r->mu);
    w->setup_err = rc;
    r->ready++;
    pthread_cond_signal(&r->done);
    for (;;) {
        while (!r->stop && (r->generation == w->seen || w->id >= r->active))
            pthread_cond_wait(&w->wake, &r->mu);
        if (r->stop)
            break;
        w->seen = r->generation;
        w->reads = w->bytes = 0;
        pthread_mutex_unlock(&r->mu);

        run_batch(w);

        pthread_mutex_lock(&r->mu);
        if (--r->running == 0)
            pthread_cond_signal(&r->done);
    }
    pthread_mutex_unlock(&r->mu);
    if (w->td.fd >= 0)
        ops->close_file(&w->td);
    ops->cleanup(&w->td);
    return NULL;
}

/* Stops and joins the first `started` workers and frees everything. */
static void reader_destroy(struct flash_reader *r, unsigned started)
{
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    for (unsigned i = 0; i < started; i++)
        pthread_cond_signal(&r->w[i].wake);
    pthread_mutex_unlock(&r->mu);
    for (unsigned i = 0; i < started; i++)
        pthread_join(r->w[i].tid, NULL);
    for (unsigned i = 0; i < r->nthreads; i++) {
        pthread_cond_destroy(&r->w[i].wake);
        free(r->w[i].units);
        free(r->w[i].free_units);
    }
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->done);
    free(r->w);
    free(r->path);
    free(r);
}

struct flash_reader *flash_reader_open(const struct flash_reader_config *cfg, char *err, size_t errlen)
{
    const char *path = cfg && cfg->path ? cfg->path : "(no path)";
    if (!cfg || !cfg->path || !cfg->path[0]) {
        set_err(err, errlen, "flash reader: no file given");
        return NULL;
    }
    const struct ioengine_ops *ops = cfg->engine;
    if (!ops) {
        set_err(err, errlen, "flash reader for %s: no I/O engine given", path);
        return NULL;
    }
    if (ops->flags & (IOENGINE_PAGE_CACHE | IOENGINE_NO_IO) ||
        (!(ops->flags & IOENGINE_SYNC) && (!ops->commit || !ops->getevents || !ops->event))) {
        set_err(err, errlen, "flash reader for %s: engine %s cannot be used (psync or io_uring)",
                path, ops->name);
        return NULL;
    }
    if (cfg->threads < 1 || cfg->threads > MAX_THREADS) {
        set_err(err, errlen, "flash reader for %s: threads must be 1..%u, not %u", path,
                MAX_THREADS, cfg->threads);
        return NULL;
    }
    if (cfg->iodepth < 1 || cfg->iodepth > MAX_IODEPTH) {
        set_err(err, errlen, "flash reader for %s: iodepth must be 1..%u, not %u", path,
                MAX_IODEPTH, cfg->iodepth);
        return NULL;
    }

    /* The size, and a clear error for a missing file before any thread starts. */
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        set_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    off_t end = lseek(fd, 0, SEEK_END); /* also right for block devices */
    int lseek_errno = errno;
    close(fd);
    if (end < 0) {
        set_err(err, errlen, "cannot find the size of %s: %s", path, strerror(lseek_errno));
        return NULL;
    }

    uint64_t align = 1;
    if (cfg->direct) {
        uint32_t oa, ma;
        align = 4096; /* when the file system does not say */
        if (dio_alignment(path, &oa, &ma) == 0)
            align = oa > ma ? oa : ma;
    }
    uint64_t piece = cfg->max_read && cfg->max_read < MAX_PIECE ? cfg->max_read : MAX_PIECE;
    if (piece % align) {
        set_err(err, errlen,
                "flash reader for %s: max_read %llu is not a multiple of the direct-I/O "
                "alignment %llu",
                path, (unsigned long long)cfg->max_read, (unsigned long long)align);
        return NULL;
    }

    struct flash_reader *r = calloc(1, sizeof *r);
    if (!r) {
        set_err(err, errlen, "flash reader for %s: out of memory", path);
        return NULL;
    }
    r->path = strdup(path);
    r->ops = ops;
    r->direct = cfg->direct;
    r->align = align;
    r->piece = piece;
    r->nthreads = cfg->threads;
    r->job = (struct io_job){
        .path = NULL,
        .file_size = (uint64_t)end,
        .chunk = piece,
        .iodepth = (ops->flags & IOENGINE_SYNC) ? 1 : cfg->iodepth,
        .direct = cfg->direct,
    };
    r->job.path = r->path;
    atomic_init(&r->next_unit, 0);
    atomic_init(&r->failed, 0);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->done, NULL);
    r->w = calloc(cfg->threads, sizeof *r->w);
    bool oom = !r->path || !r->w;
    for (unsigned i = 0; r->w && i < cfg->threads; i++) {
        struct worker *w = &r->w[i];
        w->r = r;
        w->id = i;
        w->td.job = &r->job;
        w->td.fd = -1;
        pthread_cond_init(&w->wake, NULL);
        w->units = calloc(r->job.iodepth, sizeof *w->units);
        w->free_units = calloc(r->job.iodepth, sizeof *w->free_units);
        oom |= !w->units || !w->free_units;
    }
    if (oom) {
        set_err(err, errlen, "flash reader for %s: out of memory", path);
        if (!r->w)
            r->nthreads = 0;
        reader_destroy(r, 0);
        return NULL;
    }

    unsigned started = 0;
    int create_rc = 0;
    for (; started < cfg->threads; started++) {
        create_rc = pthread_create(&r->w[started].tid, NULL, worker_main, &r->w[started]);
        if (create_rc)
            break;
    }
    pthread_mutex_lock(&r->mu);
    while (r->ready < started)
        pthread_cond_wait(&r->done, &r->mu);
    pthread_mutex_unlock(&r->mu);
    if (create_rc) {
        set_err(err, errlen, "flash reader for %s: cannot start reader thread %u of %u: %s", path,
                started + 1, cfg->threads, strerror(create_rc));
        reader_destroy(r, started);
        return NULL;
    }
    for (unsigned i = 0; i < started; i++) {
        struct worker *w = &r->w[i];
        if (!w->setup_err)
            continue;
        const char *hint = "";
        if (w->setup_err == -EINVAL && cfg->direct && strcmp(w->setup_what, "open") == 0)
            hint = " (does the file system support direct I/O?)";
        set_err(err, errlen, "%s %s of %s failed: %s%s", ops->name, w->setup_what, path,
                strerror(-w->setup_err), hint);
        reader_destroy(r, started);
        return NULL;
    }
    return r;
}

/* Checks every request and counts units; 0, or -1 with err. */
static int plan_batch(struct flash_reader *r, const struct flash_read *reqs, size_t n,
                      uint64_t *units, bool *one_each, char *err, size_t errlen)
{
    uint64_t total = 0;
    bool each = true;
    const uint64_t a = r->align, size = r->job.file_size;
    for (size_t i = 0; i < n; i++) {
        const struct flash_read *q = &reqs[i];
        if (q->len > size || q->offset > size - q->len) {
            set_err(err, errlen,
                    "read %zu of %llu bytes at offset %llu of %s goes past the end of the file "
                    "(%llu bytes)",
                    i, (unsigned long long)q->len, (unsigned long long)q->offset, r->path,
                    (unsigned long long)size);
            return -1;
        }
        if (q->len && !q->dst) {
            set_err(err, errlen, "read %zu at offset %llu of %s has no destination", i,
                    (unsigned long long)q->offset, r->path);
            return -1;
        }
        if (r->direct && (q->offset % a || q->len % a || (uintptr_t)q->dst % a)) {
            set_err(err, errlen,
                    "read %zu (offset %llu, %llu bytes, buffer %p) of %s is not aligned to %llu "
                    "bytes, as direct I/O requires",
                    i, (unsigned long long)q->offset, (unsigned long long)q->len, q->dst, r->path,
                    (unsigned long long)a);
            return -1;
        }
        uint64_t k = units_of(q->len, r->piece);
        each &= k == 1;
        total += k;
    }
    *units = total;
    *one_each = each;
    return 0;
}

int flash_reader_read(struct flash_reader *r, const struct flash_read *reqs, size_t n, char *err,
                      size_t errlen)
{
    uint64_t t0 = now_ns();
    int rc = 0;
    uint64_t units = 0;
    bool one_each = true;
    r->stats.batches++;
    if (r->broken) {
        set_err(err, errlen, "%s", r->broken_err);
        rc = -1;
    } else if (n && !reqs) {
        set_err(err, errlen, "flash reader for %s: %zu reads but no request array", r->path, n);
        rc = -1;
    } else if (n) {
        rc = plan_batch(r, reqs, n, &units, &one_each, err, errlen);
    }
    if (rc || units == 0)
        goto out;

    unsigned active = units < r->nthreads ? (unsigned)units : r->nthreads;
    pthread_mutex_lock(&r->mu);
    r->reqs = reqs;
    r->total_units = units;
    r->one_unit_per_req = one_each;
    atomic_store_explicit(&r->next_unit, 0, memory_order_relaxed);
    atomic_store_explicit(&r->failed, 0, memory_order_relaxed);
    r->err[0] = '\0';
    r->active = active;
    r->running = active;
    r->generation++;
    for (unsigned i = 0; i < active; i++)
        pthread_cond_signal(&r->w[i].wake);
    while (r->running)
        pthread_cond_wait(&r->done, &r->mu);
    for (unsigned i = 0; i < active; i++) {
        r->stats.reads += r->w[i].reads;
        r->stats.bytes += r->w[i].bytes;
    }
    if (atomic_load_explicit(&r->failed, memory_order_relaxed)) {
        set_err(err, errlen, "%s", r->err);
        rc = -1;
    }
    r->reqs = NULL;
    pthread_mutex_unlock(&r->mu);

out:
    r->stats.wait_ms += (double)(now_ns() - t0) * 1e-6;
    return rc;
}

uint64_t flash_reader_alignment(const struct flash_reader *r)
{
    return r->align;
}

bool flash_reader_direct(const struct flash_reader *r)
{
    return r->direct;
}

void flash_reader_stats(const struct flash_reader *r, struct flash_reader_stats *s)
{
    *s = r->stats;
}

void flash_reader_close(struct flash_reader *r)
{
    if (r)
        reader_destroy(r, r->nthreads);
}
