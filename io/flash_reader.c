/* The flash reader pool: see flash_reader.h for the contract.
 *
 * Threads. Each reader thread runs the engine's setup and open_file itself
 * (an io_uring ring set up with SINGLE_ISSUER/DEFER_TASKRUN belongs to the
 * thread that created it) and reports at a start gate (io/start_gate.h):
 * flash_reader_open lets them all serve, or, when any set-up failed, calls
 * them off and joins them. A serving thread parks on its own condition
 * variable. A batch wakes only the threads it can use (at most one per read
 * unit), so a one-read batch costs one wakeup, not 32. All hand-offs go
 * through one mutex: the caller publishes the batch and bumps a generation
 * counter under it; a worker runs when the generation differs from the last
 * one it ran and it is among the batch's active workers; the last worker to
 * finish signals the caller. Nothing spins: the reads themselves take tens
 * of microseconds at least, and spinning threads would steal the CPU from
 * the ones doing work on small machines.
 *
 * Units. A request longer than the piece size (max_read, and never more than
 * MAX_PIECE) is read as several units of at most that size. The caller
 * walks the requests once, validating them and counting units; threads
 * claim unit numbers from one shared atomic counter, inside the shared
 * submit/complete loop (io/io_loop.h) that keeps each thread's iodepth
 * reads in flight. When every request is exactly one unit (the common
 * case: bundles of one neuron) unit u is request u. Otherwise a thread maps
 * a unit number to (request, piece) with a cursor of its own that only
 * moves forward, since the numbers one thread claims increase: each thread
 * walks the request list at most once per batch. Nothing is allocated per
 * batch. */
#include "io/flash_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/cpu_pin.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/limits.h"
#include "io/direct_io.h"
#include "io/io_loop.h"
#include "io/start_gate.h"

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
    struct io_loop loop;
    size_t cur_req;             /* the unit cursor (see Units above) */
    uint64_t cur_base;
    /* Written by the worker while it runs a batch, read by the caller after
     * the batch (both under r->mu at the hand-off). */
    unsigned long seen;         /* the last generation this worker ran */
    uint64_t reads, bytes, retries;
    /* Written before the start gate, read by flash_reader_open after it. */
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
    struct start_gate gate;

    pthread_mutex_t mu;
    pthread_cond_t done;        /* the caller waits here for running == 0 */
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
    bool in_flight;             /* submitted, not yet waited for (the caller's thread only) */
    bool read_failed;           /* the batch's first error was a read's, at: (under mu) */
    uint64_t read_failed_offset;
    uint64_t start_ns, done_ns; /* the batch handed to the threads; its last read done (under mu) */

    struct flash_reader_stats stats;
};

/* Records the batch's first error (the others are dropped) and tells the
 * workers to stop claiming. With broken, every later batch fails too. */
static void batch_fail(struct flash_reader *r, bool broken, const struct io_loop *l, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void batch_fail(struct flash_reader *r, bool broken, const struct io_loop *l, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&r->mu);
    if (!atomic_load_explicit(&r->failed, memory_order_relaxed)) {
        snprintf(r->err, sizeof r->err, "%s", msg);
        r->read_failed = l->failed;
        r->read_failed_offset = l->fail_offset;
    }
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

/* io_loop's next(): claims the batch's next unit, unless it has none left
 * or another thread's read failed. */
static bool claim_unit(void *ctx, struct io_unit *u)
{
    struct worker *w = ctx;
    struct flash_reader *r = w->r;
    if (atomic_load_explicit(&r->failed, memory_order_relaxed))
        return false;
    uint64_t n = atomic_fetch_add_explicit(&r->next_unit, 1, memory_order_relaxed);
    if (n >= r->total_units)
        return false;
    map_unit(r, n, &w->cur_req, &w->cur_base, u);
    u->issue_ns = 0;
    return true;
}

/* io_loop's done(): a unit read in full. */
static void count_unit(void *ctx, const struct io_unit *u)
{
    struct worker *w = ctx;
    w->reads++;
    w->bytes += u->len;
}

static const struct io_loop_hooks reader_hooks = {.next = claim_unit, .done = count_unit};

/* Reads units until the batch has none left (or failed) and this thread's
 * reads are all back; a failure becomes the batch's. */
static void run_batch(struct worker *w)
{
    char msg[512];
    w->cur_req = 0;
    w->cur_base = 0;
    int rc = io_loop_run(&w->loop, &reader_hooks, w, msg, sizeof msg);
    w->retries = w->loop.retries;
    if (rc != IO_LOOP_DONE)
        batch_fail(w->r, rc == IO_LOOP_LOST, &w->loop, "%s", msg);
}

/* Parks between batches and runs those it takes part in, until stop. */
static void serve_batches(struct worker *w)
{
    struct flash_reader *r = w->r;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && (r->generation == w->seen || w->id >= r->active))
            pthread_cond_wait(&w->wake, &r->mu);
        if (r->stop)
            break;
        w->seen = r->generation;
        w->reads = w->bytes = w->retries = 0;
        pthread_mutex_unlock(&r->mu);

        run_batch(w);

        pthread_mutex_lock(&r->mu);
        if (--r->running == 0) {
            r->done_ns = now_ns();
            pthread_cond_signal(&r->done);
        }
    }
    pthread_mutex_unlock(&r->mu);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct flash_reader *r = w->r;
    const struct ioengine_ops *ops = r->ops;

    cpu_pin_release_self(); /* started by a pinned compute thread: not on its CPU */
    int rc = ops->setup(&w->td);
    if (rc)
        w->setup_what = "engine setup";
    else if ((rc = ops->open_file(&w->td)) != 0)
        w->setup_what = "open";
    w->setup_err = rc;
    if (start_gate_arrive(&r->gate))
        serve_batches(w);
    if (w->td.fd >= 0)
        ops->close_file(&w->td);
    ops->cleanup(&w->td);
    return NULL;
}

/* Stops and joins the first `started` workers (the gate must be open) and
 * frees everything. */
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
        io_loop_free(&r->w[i].loop);
    }
    start_gate_destroy(&r->gate);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->done);
    free(r->w);
    free(r->path);
    free(r);
}

/* The configuration alone; 0, or -1 with err. */
static int check_config(const struct flash_reader_config *cfg, char *err, size_t errlen)
{
    const char *path = cfg && cfg->path ? cfg->path : "(no path)";
    if (!cfg || !cfg->path || !cfg->path[0]) {
        err_set(err, errlen, "flash reader: no file given");
        return -1;
    }
    const struct ioengine_ops *ops = cfg->engine;
    if (!ops) {
        err_set(err, errlen, "flash reader for %s: no I/O engine given", path);
        return -1;
    }
    if (ops->flags & (IOENGINE_PAGE_CACHE | IOENGINE_NO_IO) ||
        (!(ops->flags & IOENGINE_SYNC) && (!ops->commit || !ops->getevents || !ops->event))) {
        err_set(err, errlen, "flash reader for %s: engine %s cannot be used (psync or io_uring)",
                path, ops->name);
        return -1;
    }
    if (cfg->threads < 1 || cfg->threads > MAX_THREADS) {
        err_set(err, errlen, "flash reader for %s: threads must be 1..%u, not %u", path,
                MAX_THREADS, cfg->threads);
        return -1;
    }
    if (cfg->iodepth < 1 || cfg->iodepth > MAX_IODEPTH) {
        err_set(err, errlen, "flash reader for %s: iodepth must be 1..%u, not %u", path,
                MAX_IODEPTH, cfg->iodepth);
        return -1;
    }
    return 0;
}

/* The file's size, its direct-I/O alignment and the piece size: a clear
 * error for a missing file before any thread starts. 0, or -1 with err. */
static int probe_file(const struct flash_reader_config *cfg, uint64_t *size, uint64_t *align,
                      uint64_t *piece, char *err, size_t errlen)
{
    const char *path = cfg->path;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        err_set(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    off_t end = lseek(fd, 0, SEEK_END); /* also right for block devices */
    int lseek_errno = errno;
    close(fd);
    if (end < 0) {
        err_set(err, errlen, "cannot find the size of %s: %s", path, strerror(lseek_errno));
        return -1;
    }
    *size = (uint64_t)end;
    *align = 1;
    if (cfg->direct) {
        /* a memory file system would take O_DIRECT and still serve reads
         * from memory: refused, so no result claims a bypass it did not get */
        if (direct_io_check(path, err, errlen) != 0)
            return -1;
        uint32_t oa, ma;
        *align = 4096; /* when the file system does not say */
        if (dio_alignment(path, &oa, &ma) == 0)
            *align = oa > ma ? oa : ma;
    }
    *piece = cfg->max_read && cfg->max_read < MAX_PIECE ? cfg->max_read : MAX_PIECE;
    if (*piece % *align) {
        err_set(err, errlen,
                "flash reader for %s: max_read %llu is not a multiple of the direct-I/O "
                "alignment %llu",
                path, (unsigned long long)cfg->max_read, (unsigned long long)*align);
        return -1;
    }
    return 0;
}

/* Everything but the threads; NULL when out of memory. */
static struct flash_reader *reader_new(const struct flash_reader_config *cfg, uint64_t size,
                                       uint64_t align, uint64_t piece)
{
    struct flash_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->path = strdup(cfg->path);
    r->ops = cfg->engine;
    r->direct = cfg->direct;
    r->align = align;
    r->piece = piece;
    r->job = (struct io_job){
        .path = r->path,
        .file_size = size,
        .chunk = piece,
        .iodepth = (r->ops->flags & IOENGINE_SYNC) ? 1 : cfg->iodepth,
        .direct = cfg->direct,
        .fault = cfg->fault,
    };
    atomic_init(&r->next_unit, 0);
    atomic_init(&r->failed, 0);
    start_gate_init(&r->gate);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->done, NULL);
    r->w = calloc(cfg->threads, sizeof *r->w);
    r->nthreads = r->w ? cfg->threads : 0;
    bool oom = !r->path || !r->w;
    for (unsigned i = 0; i < r->nthreads; i++) {
        struct worker *w = &r->w[i];
        w->r = r;
        w->id = i;
        w->td.job = &r->job;
        w->td.fd = -1;
        pthread_cond_init(&w->wake, NULL);
        oom |= io_loop_init(&w->loop, r->ops, &w->td) != 0;
        w->loop.max_retries = FLASH_READER_RETRIES;
    }
    if (!oom)
        return r;
    reader_destroy(r, 0);
    return NULL;
}

/* After the gate: the first set-up failure as err; true when none. */
static bool setups_ok(const struct flash_reader *r, unsigned started, char *err, size_t errlen)
{
    for (unsigned i = 0; i < started; i++) {
        const struct worker *w = &r->w[i];
        if (!w->setup_err)
            continue;
        const char *hint = "";
        if (w->setup_err == -EINVAL && r->direct && strcmp(w->setup_what, "open") == 0)
            hint = " (does the file system support direct I/O?)";
        err_set(err, errlen, "%s %s of %s failed: %s%s", r->ops->name, w->setup_what, r->path,
                strerror(-w->setup_err), hint);
        return false;
    }
    return true;
}

/* Starts every reader thread and waits for their set-ups; on any failure
 * the started threads are called off and joined, r is freed, and -1
 * returns with err. */
static int start_workers(struct flash_reader *r, char *err, size_t errlen)
{
    unsigned started = 0;
    int create_rc = 0;
    for (; started < r->nthreads; started++) {
        create_rc = pthread_create(&r->w[started].tid, NULL, worker_main, &r->w[started]);
        if (create_rc)
            break;
    }
    start_gate_wait(&r->gate, started);
    bool ok = create_rc == 0;
    if (!ok)
        err_set(err, errlen, "flash reader for %s: cannot start reader thread %u of %u: %s",
                r->path, started + 1, r->nthreads, strerror(create_rc));
    ok = ok && setups_ok(r, started, err, errlen);
    start_gate_open(&r->gate, ok);
    if (ok)
        return 0;
    reader_destroy(r, started);
    return -1;
}

struct flash_reader *flash_reader_open(const struct flash_reader_config *cfg, char *err, size_t errlen)
{
    uint64_t size, align, piece;
    if (check_config(cfg, err, errlen) != 0 ||
        probe_file(cfg, &size, &align, &piece, err, errlen) != 0)
        return NULL;
    struct flash_reader *r = reader_new(cfg, size, align, piece);
    if (!r) {
        err_set(err, errlen, "flash reader for %s: out of memory", cfg->path);
        return NULL;
    }
    return start_workers(r, err, errlen) == 0 ? r : NULL;
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
            err_set(err, errlen,
                    "read %zu of %llu bytes at offset %llu of %s goes past the end of the file "
                    "(%llu bytes)",
                    i, (unsigned long long)q->len, (unsigned long long)q->offset, r->path,
                    (unsigned long long)size);
            return -1;
        }
        if (q->len && !q->dst) {
            err_set(err, errlen, "read %zu at offset %llu of %s has no destination", i,
                    (unsigned long long)q->offset, r->path);
            return -1;
        }
        if (r->direct && (q->offset % a || q->len % a || (uintptr_t)q->dst % a)) {
            err_set(err, errlen,
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

/* Hands the planned batch to the first active workers (under mu). */
static void start_batch(struct flash_reader *r, const struct flash_read *reqs, uint64_t units, bool one_each)
{
    unsigned active = units < r->nthreads ? (unsigned)units : r->nthreads;
    pthread_mutex_lock(&r->mu);
    r->reqs = reqs;
    r->total_units = units;
    r->one_unit_per_req = one_each;
    atomic_store_explicit(&r->next_unit, 0, memory_order_relaxed);
    atomic_store_explicit(&r->failed, 0, memory_order_relaxed);
    r->err[0] = '\0';
    r->read_failed = false;
    r->active = active;
    r->running = active;
    r->start_ns = r->done_ns = now_ns();
    r->generation++;
    for (unsigned i = 0; i < active; i++)
        pthread_cond_signal(&r->w[i].wake);
    pthread_mutex_unlock(&r->mu);
    r->in_flight = true;
}

int flash_reader_submit(struct flash_reader *r, const struct flash_read *reqs, size_t n, char *err,
                        size_t errlen)
{
    uint64_t t0 = now_ns();
    int rc = 0;
    uint64_t units = 0;
    bool one_each = true;
    if (r->in_flight) {
        err_set(err, errlen, "flash reader for %s: a batch is already in flight", r->path);
        return -1;
    }
    r->stats.batches++;
    r->stats.last_batch_ms = 0; /* a batch of nothing took nothing */
    r->stats.failed = false;
    if (r->broken) {
        err_set(err, errlen, "%s", r->broken_err);
        rc = -1;
    } else if (n && !reqs) {
        err_set(err, errlen, "flash reader for %s: %zu reads but no request array", r->path, n);
        rc = -1;
    } else if (n) {
        rc = plan_batch(r, reqs, n, &units, &one_each, err, errlen);
    }
    if (rc == 0 && units)
        start_batch(r, reqs, units, one_each);
    r->stats.wait_ms += (double)(now_ns() - t0) * 1e-6;
    return rc;
}

int flash_reader_wait(struct flash_reader *r, char *err, size_t errlen)
{
    if (!r->in_flight)
        return 0;
    uint64_t t0 = now_ns();
    int rc = 0;
    pthread_mutex_lock(&r->mu);
    while (r->running)
        pthread_cond_wait(&r->done, &r->mu);
    for (unsigned i = 0; i < r->active; i++) {
        r->stats.reads += r->w[i].reads;
        r->stats.bytes += r->w[i].bytes;
        r->stats.retries += r->w[i].retries;
    }
    r->stats.failed = r->read_failed;
    r->stats.failed_offset = r->read_failed_offset;
    if (atomic_load_explicit(&r->failed, memory_order_relaxed)) {
        err_set(err, errlen, "%s", r->err);
        rc = -1;
    }
    r->reqs = NULL;
    r->stats.last_batch_ms = (double)(r->done_ns - r->start_ns) * 1e-6;
    pthread_mutex_unlock(&r->mu);
    r->in_flight = false;
    r->stats.wait_ms += (double)(now_ns() - t0) * 1e-6;
    return rc;
}

int flash_reader_read(struct flash_reader *r, const struct flash_read *reqs, size_t n, char *err,
                      size_t errlen)
{
    if (flash_reader_submit(r, reqs, n, err, errlen) != 0)
        return -1;
    return flash_reader_wait(r, err, errlen);
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
    if (!r)
        return;
    char err[8];
    flash_reader_wait(r, err, sizeof err); /* reads in flight still write their destinations */
    reader_destroy(r, r->nthreads);
}
