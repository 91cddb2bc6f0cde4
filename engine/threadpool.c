#include "engine/threadpool.h"

#include <pthread.h>
#include <stdlib.h>

struct threadpool {
    int n;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t start, done;
    unsigned long generation; /* bumped per job, under lock */
    int pending;              /* workers still running the job */
    int stop;
    void (*fn)(void *, int, int);
    void *arg;
};

struct worker_arg {
    struct threadpool *p;
    int id;
};

static void *worker_main(void *v)
{
    struct worker_arg *wa = v;
    struct threadpool *p = wa->p;
    int id = wa->id;
    free(wa);
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->generation == seen && !p->stop)
            pthread_cond_wait(&p->start, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        void (*fn)(void *, int, int) = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->lock);
        fn(arg, id, p->n);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

struct threadpool *threadpool_create(int n)
{
    if (n < 1)
        n = 1;
    struct threadpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n;
    p->threads = calloc((size_t)n, sizeof *p->threads);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 1; i < n; i++) {
        struct worker_arg *wa = malloc(sizeof *wa);
        wa->p = p;
        wa->id = i;
        if (pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            p->n = i;
            threadpool_destroy(p);
            return NULL;
        }
    }
    return p;
}

void threadpool_run(struct threadpool *p, void (*fn)(void *arg, int worker, int n), void *arg)
{
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->pending = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->lock);
    fn(arg, 0, p->n);
    pthread_mutex_lock(&p->lock);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
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
    p->stop = 1;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->lock);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p);
}
