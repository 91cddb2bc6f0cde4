/* Timing follows fio: every thread does its setup, then all start together
 * at a start gate; each runs the ramp (discarded), then keeps its own clock
 * for the measured window; throughput is total bytes over the longest
 * thread's time. Offsets are uniform random, aligned to the chunk, with no
 * random map (fio's norandommap). */
#include "harness/bench_point.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/clock.h"
#include "common/interrupt.h"
#include "common/rng.h"
#include "io/direct_io.h"
#include "io/io_buffer.h"

/* All threads start together: each reports ready, then waits for the main
 * thread to open the gate (or call the run off when a setup failed). A
 * gate rather than pthread_barrier: macOS has no barriers, and the main
 * thread must cope with threads that could not be created. */
struct start_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned ready;
    int state; /* 0 waiting, 1 go, -1 abort */
};

static int gate_arrive_and_wait(struct start_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->ready++;
    pthread_cond_broadcast(&g->cv);
    while (g->state == 0)
        pthread_cond_wait(&g->cv, &g->mu);
    int state = g->state;
    pthread_mutex_unlock(&g->mu);
    return state;
}

static void gate_open(struct start_gate *g, unsigned expected, int setup_failed)
{
    pthread_mutex_lock(&g->mu);
    while (g->ready < expected)
        pthread_cond_wait(&g->cv, &g->mu);
    g->state = setup_failed ? -1 : 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

struct worker {
    pthread_t tid;
    unsigned index;
    const struct point_params *p;
    struct io_job *job;
    struct start_gate *gate;
    struct io_thread td;
    struct io_unit *units;
    struct io_buffer buffers;   /* iodepth chunks, back to back */
    bool huge_granted;
    /* results */
    uint64_t bytes, ios;
    uint64_t measured_ns;
    struct histogram lat;
    double cpu_user_s, cpu_sys_s;
    int err;                /* -errno of the first failure, 0 if none */
    char err_where[160];
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

static void fail(struct worker *w, int err, const char *where)
{
    if (!w->err) {
        w->err = err;
        snprintf(w->err_where, sizeof w->err_where, "%s", where);
    }
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
    w->units = calloc(w->job->iodepth, sizeof *w->units);
    if (!w->units) {
        fail(w, -ENOMEM, "buffers");
        return -1;
    }
    /* Chunks are multiples of the direct-I/O alignment, and the region is
     * 2 MiB aligned, so every unit's buffer is aligned too. */
    rc = io_buffer_alloc(&w->buffers, (size_t)(w->job->chunk * w->job->iodepth),
                         w->p->huge_pages);
    if (rc) {
        fail(w, rc, "buffers");
        return -1;
    }
    w->huge_granted = w->buffers.huge;
    for (unsigned i = 0; i < w->job->iodepth; i++) {
        w->units[i].buf = (char *)w->buffers.base + (size_t)i * w->job->chunk;
        w->units[i].len = w->job->chunk;
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
    free(w->units);
    w->units = NULL;
}

/* Accounts one finished read; returns -1 when it failed. */
static int complete(struct worker *w, struct io_unit *u, uint64_t window_start)
{
    uint64_t t = now_ns();
    if (u->result < 0 || (uint64_t)u->result != u->len) {
        char where[160];
        snprintf(where, sizeof where, "read of %llu bytes at offset %llu",
                 (unsigned long long)u->len, (unsigned long long)u->offset);
        fail(w, u->result < 0 ? (int)u->result : -EIO, where);
        return -1;
    }
    if (window_start && t >= window_start) {
        w->bytes += u->len;
        w->ios++;
        hist_add(&w->lat, t - u->issue_ns);
    }
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    const struct ioengine_ops *ops = w->p->engine;
    struct rng rng;
    rng_seed(&rng, w->p->seed * 1000003ull + w->index);
    hist_init(&w->lat);

    worker_setup(w);
    if (gate_arrive_and_wait(w->gate) < 0) {
        worker_teardown(w);
        return NULL;
    }

    const uint64_t blocks = w->job->file_size / w->job->chunk;
    const unsigned depth = w->job->iodepth;
    const uint64_t t0 = now_ns();
    const uint64_t ramp_end = t0 + (uint64_t)(w->p->ramp_s * 1e9);
    uint64_t window_start = w->p->ramp_s > 0 ? 0 : t0; /* 0 while ramping */
    uint64_t deadline = ramp_end + (uint64_t)(w->p->runtime_s * 1e9);
    double u0 = 0, s0 = 0;
    if (window_start)
        thread_cpu(&u0, &s0);

    /* Free units form a stack; in-flight ones come back through event(). */
    struct io_unit **free_units = calloc(depth, sizeof *free_units);
    if (!free_units) {
        fail(w, -ENOMEM, "buffers");
        worker_teardown(w);
        return NULL;
    }
    unsigned nfree = depth;
    for (unsigned i = 0; i < depth; i++)
        free_units[i] = &w->units[i];
    unsigned inflight = 0;
    int stopping = 0;

    while (!w->err) {
        uint64_t now = now_ns();
        if (!window_start && now >= ramp_end) {
            window_start = now;
            thread_cpu(&u0, &s0);
        }
        if (now >= deadline || interrupted())
            stopping = 1;
        if (stopping && inflight == 0)
            break;
        unsigned queued = 0;
        while (!stopping && nfree) {
            struct io_unit *u = free_units[--nfree];
            u->offset = rng_below(&rng, blocks) * w->job->chunk;
            u->issue_ns = now_ns();
            int rc = ops->queue(&w->td, u);
            if (rc == IO_Q_COMPLETED) {
                free_units[nfree++] = u;
                if (complete(w, u, window_start) != 0)
                    break;
                if (ops->flags & IOENGINE_SYNC)
                    break; /* re-check the clock after every synchronous read */
            } else if (rc == IO_Q_QUEUED) {
                inflight++;
                queued++;
            } else {
                free_units[nfree++] = u;
                fail(w, rc, "queue");
                break;
            }
        }
        if (w->err)
            break;
        if (queued && ops->commit) {
            int rc = ops->commit(&w->td);
            if (rc) {
                fail(w, rc, "submit");
                break;
            }
        }
        if (inflight) {
            int n = ops->getevents(&w->td, 1, inflight);
            if (n < 0) {
                fail(w, n, "reap");
                break;
            }
            for (int i = 0; i < n; i++) {
                struct io_unit *u = ops->event(&w->td, (unsigned)i);
                inflight--;
                free_units[nfree++] = u;
                complete(w, u, window_start);
            }
        }
    }
    /* On an error, drain what is still in flight before the buffers go. */
    while (inflight && ops->getevents) {
        int n = ops->getevents(&w->td, 1, inflight);
        if (n <= 0)
            break;
        inflight -= (unsigned)n;
    }
    uint64_t end = now_ns();
    if (window_start) {
        w->measured_ns = end - window_start;
        double u1, s1;
        thread_cpu(&u1, &s1);
        w->cpu_user_s = u1 - u0;
        w->cpu_sys_s = s1 - s0;
    }
    free(free_units);
    worker_teardown(w);
    return NULL;
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
    };
    if (p->file_size < p->chunk) {
        snprintf(err, errlen, "chunk %llu is larger than the file range %llu",
                 (unsigned long long)p->chunk, (unsigned long long)p->file_size);
        return -1;
    }
    /* Buffered points start cold: nothing of the file may be cached. */
    if (!job.direct && !(ops->flags & IOENGINE_NO_IO)) {
        int rc = evict_file_cache(p->path);
        if (rc) {
            snprintf(err, errlen, "cannot evict %s from the page cache: %s", p->path,
                     strerror(-rc));
            return -1;
        }
    }
    struct worker *w = calloc(p->threads, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory for %u threads", p->threads);
        return -1;
    }
    struct start_gate gate = {.ready = 0, .state = 0};
    pthread_mutex_init(&gate.mu, NULL);
    pthread_cond_init(&gate.cv, NULL);
    unsigned started = 0;
    int rc = 0;
    for (unsigned i = 0; i < p->threads; i++) {
        w[i].index = i;
        w[i].p = p;
        w[i].job = &job;
        w[i].gate = &gate;
        if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
            w[i].err = -EAGAIN;
            snprintf(w[i].err_where, sizeof w[i].err_where, "thread creation");
            break;
        }
        started++;
    }
    /* Wait for every started thread's setup, then start all or none. */
    pthread_mutex_lock(&gate.mu);
    while (gate.ready < started)
        pthread_cond_wait(&gate.cv, &gate.mu);
    pthread_mutex_unlock(&gate.mu);
    int setup_failed = started < p->threads;
    for (unsigned i = 0; i < started; i++)
        setup_failed |= w[i].err != 0;
    gate_open(&gate, started, setup_failed);
    for (unsigned i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    pthread_mutex_destroy(&gate.mu);
    pthread_cond_destroy(&gate.cv);

    r->iodepth = job.iodepth;
    r->direct = job.direct;
    r->interrupted = interrupted();
    r->huge_pages = started > 0 && w[0].huge_granted;
    uint64_t longest = 0;
    for (unsigned i = 0; i < p->threads; i++) {
        if (w[i].err && rc == 0) {
            snprintf(err, errlen, "%s %s of %s failed: %s", ops->name, w[i].err_where, p->path,
                     strerror(-w[i].err));
            rc = -1;
        }
        r->bytes += w[i].bytes;
        r->ios += w[i].ios;
        r->cpu_user_s += w[i].cpu_user_s;
        r->cpu_sys_s += w[i].cpu_sys_s;
        if (w[i].measured_ns > longest)
            longest = w[i].measured_ns;
        hist_merge(&r->lat, &w[i].lat);
    }
    free(w);
    r->seconds = (double)longest * 1e-9;
    if (rc == 0 && r->seconds > 0) {
        r->bw_bytes = (double)r->bytes / r->seconds;
        r->iops = (double)r->ios / r->seconds;
    }
    return rc;
}
