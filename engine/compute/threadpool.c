#include "engine/compute/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/cpu_pin.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* A decode step hands the team a job about 150 times per token, some of
 * them microseconds long: waiting threads first spin this many times
 * (tens of microseconds) before sleeping, so a handoff rarely costs a
 * futex wake. */
#define SPIN_ROUNDS 20000

struct threadpool {
    int n;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t start, done;
    atomic_ulong generation; /* bumped per job */
    atomic_int pending;      /* workers still running the job */
    atomic_int stop;
    void (*fn)(void *, int, int);
    void *arg;
    bool pinned; /* one CPU per worker; the creating thread released on destroy */
};

struct worker_arg {
    struct threadpool *p;
    int id;
    int cpu; /* pinned there; -1: not pinned */
};

static void *worker_main(void *v)
{
    struct worker_arg *wa = v;
    struct threadpool *p = wa->p;
    int id = wa->id;
    if (wa->cpu >= 0)
        cpu_pin_self(wa->cpu); /* a failure leaves it where the scheduler puts it: slower, not wrong */
    free(wa);
    unsigned long seen = 0;
    for (;;) {
        unsigned long g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
               !atomic_load(&p->stop) && spins < SPIN_ROUNDS) {
            cpu_relax();
            spins++;
        }
        if (g == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->lock);
            while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->start, &p->lock);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load(&p->stop))
            break;
        seen = g;
        p->fn(p->arg, id, p->n);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

/* cpus[0..n) for the team, one each, from the allowed set; false when it
 * has fewer CPUs than the team (pinning two threads to one CPU would make
 * them take turns) or the caller cannot be pinned. */
static bool plan_pins(int n, int *cpus)
{
    int allowed = cpu_pin_allowed(cpus, n);
    return n > 1 && allowed >= n && cpu_pin_self(cpus[0]) == 0;
}

static struct threadpool *create(int n, bool pin)
{
    if (n < 1)
        n = 1;
    struct threadpool *p = calloc(1, sizeof *p);
    int *cpus = calloc((size_t)n, sizeof *cpus);
    if (!p || !cpus) {
        free(p);
        free(cpus);
        return NULL;
    }
    p->n = n;
    p->threads = calloc((size_t)n, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        free(cpus);
        return NULL;
    }
    p->pinned = pin && plan_pins(n, cpus);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 1; i < n; i++) {
        struct worker_arg *wa = malloc(sizeof *wa);
        if (wa)
            *wa = (struct worker_arg){p, i, p->pinned ? cpus[i] : -1};
        if (!wa || pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            p->n = i;
            threadpool_destroy(p);
            p = NULL;
            break;
        }
    }
    free(cpus);
    return p;
}

struct threadpool *threadpool_create(int n)
{
    return create(n, false);
}

struct threadpool *threadpool_create_pinned(int n)
{
    return create(n, true);
}

bool threadpool_pinned(const struct threadpool *p)
{
    return p->pinned;
}

void threadpool_run(struct threadpool *p, void (*fn)(void *arg, int worker, int n), void *arg)
{
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
    /* the release publishes fn and arg to the spinning workers */
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->lock);
    fn(arg, 0, p->n);
    for (int spins = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0 && spins < SPIN_ROUNDS; spins++)
        cpu_relax();
    if (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
        pthread_mutex_lock(&p->lock);
        while (atomic_load(&p->pending) > 0)
            pthread_cond_wait(&p->done, &p->lock);
        pthread_mutex_unlock(&p->lock);
    }
}

struct range_job {
    size_t n;
    void (*body)(void *ctx, size_t lo, size_t hi);
    void *ctx;
};

static void range_part(void *arg, int worker, int n_workers)
{
    const struct range_job *j = arg;
    size_t lo = j->n * (size_t)worker / (size_t)n_workers, hi = j->n * (size_t)(worker + 1) / (size_t)n_workers;
    if (lo < hi)
        j->body(j->ctx, lo, hi);
}

void threadpool_for(struct threadpool *p, size_t n, void (*body)(void *ctx, size_t lo, size_t hi), void *ctx)
{
    if (!p || p->n == 1) {
        if (n)
            body(ctx, 0, n);
        return;
    }
    struct range_job j = {n, body, ctx};
    threadpool_run(p, range_part, &j);
}

int threadpool_size(const struct threadpool *p)
{
    return p->n;
}

void threadpool_destroy(struct threadpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->lock);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    if (p->pinned)
        cpu_pin_release_self();
    free(p->threads);
    free(p);
}
