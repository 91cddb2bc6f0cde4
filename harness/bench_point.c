/* Timing follows fio: every thread does its setup, then all start together
 * at a start gate; each runs the ramp (discarded), then keeps its own clock
 * for the measured window; throughput is total bytes over the longest
 * thread's time. Offsets are uniform random, aligned to the chunk, with no
 * random map (fio's norandommap). */
#include "harness/bench_point.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/clock.h"
#include "common/cpu_pin.h"
#include "common/errbuf.h"
#include "common/interrupt.h"
#include "common/rng.h"
#include "io/direct_io.h"
#include "io/io_buffer.h"
#include "io/io_loop.h"
#include "io/start_gate.h"

struct worker {
    pthread_t tid;
    unsigned index;
    const struct point_params *p;
    struct io_job *job;
    struct start_gate *gate;
    struct io_thread td;
    struct io_loop loop;
    struct io_buffer buffers;   /* iodepth chunks, back to back */
    bool huge_granted;
    /* this thread's clock, from the moment the gate opens */
    struct rng rng;
    uint64_t blocks;            /* chunk-aligned offsets to draw from */
    uint64_t ramp_end, deadline;
    uint64_t window_start;      /* 0 while ramping */
    double u0, s0;              /* CPU time when the window opened */
    /* results */
    uint64_t bytes, ios, retries;
    uint64_t measured_ns;
    struct histogram lat;
    double cpu_user_s, cpu_sys_s;
    bool failed;
    char err[512];              /* the first failure, one line */
};

static void thread_cpu(double *user, double *sys)
{
    struct rusage ru;
#ifdef RUSAGE_THREAD
    getrusage(RUSAGE_THREAD, &ru);
#else
    getrusage(RUSAGE_SELF, &ru);
#endif
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Set-up failures: "psync open of FILE failed: ...". */
static void fail(struct worker *w, int err, const char *where)
{
    if (w->failed)
        return;
    w->failed = true;
    snprintf(w->err, sizeof w->err, "%s %s of %s failed: %s", w->p->engine->name, where,
             w->p->path, strerror(-err));
}

static int worker_setup(struct worker *w)
{
    const struct ioengine_ops *ops = w->p->engine;
    w->td.job = w->job;
    w->td.fd = -1;
    int rc = ops->setup(&w->td);
    if (rc) {
        fail(w, rc, "engine setup");
        return -1;
    }
    rc = ops->open_file(&w->td);
    if (rc) {
        fail(w, rc, "open");
        return -1;
    }
    rc = io_loop_init(&w->loop, ops, &w->td);
    w->loop.max_retries = BENCH_RETRIES;
    /* Chunks are multiples of the direct-I/O alignment, and the region is
     * 2 MiB aligned, so every unit's buffer is aligned too. */
    if (rc == 0)
        rc = io_buffer_alloc(&w->buffers, (size_t)(w->job->chunk * w->job->iodepth),
                             w->p->huge_pages);
    if (rc) {
        fail(w, rc, "buffers");
        return -1;
    }
    w->huge_granted = w->buffers.huge;
    for (unsigned i = 0; i < w->loop.depth; i++) {
        w->loop.units[i].buf = (char *)w->buffers.base + (size_t)i * w->job->chunk;
        w->loop.units[i].len = w->job->chunk;
    }
    return 0;
}

static void worker_teardown(struct worker *w)
{
    const struct ioengine_ops *ops = w->p->engine;
    if (w->td.fd >= 0 || ops->flags & IOENGINE_NO_IO)
        ops->close_file(&w->td);
    ops->cleanup(&w->td);
    io_buffer_free(&w->buffers);
    io_loop_free(&w->loop);
}

/* The measured window opens: reads completing from now on count. */
static void open_window(struct worker *w, uint64_t now)
{
    w->window_start = now;
    thread_cpu(&w->u0, &w->s0);
}

/* io_loop's next(): one clock reading per read serves the ramp, the
 * deadline and the read's issue time. Past the deadline a thread that has
 * measured no read yet goes on until it has one: on a loaded machine a
 * thread first scheduled after its deadline measured none, and its point
 * claimed 0 reads and 0 B/s (issue 47: sweep_engines failed so). */
static bool next_read(void *ctx, struct io_unit *u)
{
    struct worker *w = ctx;
    uint64_t now = now_ns();
    if (!w->window_start && now >= w->ramp_end)
        open_window(w, now);
    if ((now >= w->deadline && w->ios > 0) || interrupted())
        return false;
    u->offset = rng_below(&w->rng, w->blocks) * w->job->chunk;
    u->issue_ns = now;
    return true;
}

/* io_loop's done(): reads that complete inside the window count, including
 * those issued during the ramp (fio does the same). */
static void read_done(void *ctx, const struct io_unit *u)
{
    struct worker *w = ctx;
    uint64_t t = now_ns();
    if (w->window_start && t >= w->window_start) {
        w->bytes += u->len;
        w->ios++;
        hist_add(&w->lat, t - u->issue_ns);
    }
}

static const struct io_loop_hooks bench_hooks = {.next = next_read, .done = read_done};

/* The ramp, then the window; the thread's time ends once its last read is
 * reaped. */
static void measure(struct worker *w)
{
    const uint64_t t0 = now_ns();
    w->blocks = w->job->file_size / w->job->chunk;
    w->ramp_end = t0 + (uint64_t)(w->p->ramp_s * 1e9);
    w->deadline = w->ramp_end + (uint64_t)(w->p->runtime_s * 1e9);
    if (w->p->ramp_s <= 0)
        open_window(w, t0);
    if (io_loop_run(&w->loop, &bench_hooks, w, w->err, sizeof w->err) != IO_LOOP_DONE)
        w->failed = true;
    w->retries = w->loop.retries;
    if (w->window_start) {
        w->measured_ns = now_ns() - w->window_start;
        double u1, s1;
        thread_cpu(&u1, &s1);
        w->cpu_user_s = u1 - w->u0;
        w->cpu_sys_s = s1 - w->s0;
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    cpu_pin_release_self(); /* started by a pinned thread: not on its CPU */
    rng_seed(&w->rng, w->p->seed * 1000003ull + w->index);
    hist_init(&w->lat);
    worker_setup(w);
    if (start_gate_arrive(w->gate))
        measure(w);
    worker_teardown(w);
    return NULL;
}

/* Starts the threads, waits for all their set-ups, then lets all of them
 * go or none; returns when every started thread has been joined. */
static void run_workers(const struct point_params *p, struct io_job *job, struct worker *w)
{
    struct start_gate gate;
    start_gate_init(&gate);
    unsigned started = 0;
    for (; started < p->threads; started++) {
        w[started].index = started;
        w[started].p = p;
        w[started].job = job;
        w[started].gate = &gate;
        int rc = pthread_create(&w[started].tid, NULL, worker_main, &w[started]);
        if (rc) {
            fail(&w[started], -rc, "thread creation");
            break;
        }
    }
    start_gate_wait(&gate, started);
    bool go = started == p->threads;
    for (unsigned i = 0; i < started; i++)
        go &= !w[i].failed;
    start_gate_open(&gate, go);
    for (unsigned i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    start_gate_destroy(&gate);
}

/* Sums the threads into r; -1 with the first thread's error. */
static int collect(const struct point_params *p, const struct worker *w, struct point_result *r,
                   char *err, size_t errlen)
{
    int rc = 0;
    uint64_t longest = 0;
    for (unsigned i = 0; i < p->threads; i++) {
        if (w[i].failed && rc == 0) {
            err_set(err, errlen, "%s", w[i].err);
            r->read_failed = w[i].loop.failed;
            r->failed_offset = w[i].loop.fail_offset;
            rc = -1;
        }
        r->retries += w[i].retries;
        r->bytes += w[i].bytes;
        r->ios += w[i].ios;
        r->cpu_user_s += w[i].cpu_user_s;
        r->cpu_sys_s += w[i].cpu_sys_s;
        if (w[i].measured_ns > longest)
            longest = w[i].measured_ns;
        hist_merge(&r->lat, &w[i].lat);
    }
    r->seconds = (double)longest * 1e-9;
    if ((rc == 0 || r->read_failed) && r->seconds > 0) {
        r->bw_bytes = (double)r->bytes / r->seconds;
        r->iops = (double)r->ios / r->seconds;
    }
    return rc;
}

int bench_point_run(const struct point_params *p, struct point_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    hist_init(&r->lat);
    const struct ioengine_ops *ops = p->engine;
    struct io_job job = {
        .path = p->path,
        .file_size = p->file_size,
        .chunk = p->chunk,
        .iodepth = (ops->flags & IOENGINE_SYNC) ? 1 : (p->iodepth ? p->iodepth : 1),
        .direct = p->direct && !(ops->flags & (IOENGINE_PAGE_CACHE | IOENGINE_NO_IO)),
        .fault = p->fault,
    };
    if (p->file_size < p->chunk) {
        err_set(err, errlen, "chunk %llu is larger than the file range %llu",
                 (unsigned long long)p->chunk, (unsigned long long)p->file_size);
        return -1;
    }
    /* Buffered points start cold: nothing of the file may be cached. */
    if (!job.direct && !(ops->flags & IOENGINE_NO_IO)) {
        int rc = evict_file_cache(p->path);
        if (rc) {
            err_set(err, errlen, "cannot evict %s from the page cache: %s", p->path,
                     strerror(-rc));
            return -1;
        }
    }
    struct worker *w = calloc(p->threads, sizeof *w);
    if (!w) {
        err_set(err, errlen, "out of memory for %u threads", p->threads);
        return -1;
    }
    run_workers(p, &job, w);
    r->iodepth = job.iodepth;
    r->direct = job.direct;
    r->interrupted = interrupted();
    r->huge_pages = p->threads > 0 && w[0].huge_granted;
    int rc = collect(p, w, r, err, errlen);
    free(w);
    return rc;
}
