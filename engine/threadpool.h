/* A fixed team of compute threads: the caller is worker 0 and the others
 * wait between jobs, so no thread is created per token. */
#ifndef FLASHBED_ENGINE_THREADPOOL_H
#define FLASHBED_ENGINE_THREADPOOL_H

struct threadpool;

/* n workers in all (n - 1 threads are started); NULL on failure. */
struct threadpool *threadpool_create(int n);
/* Runs fn(arg, worker, n) on every worker and returns when all are done. */
void threadpool_run(struct threadpool *p, void (*fn)(void *arg, int worker, int n), void *arg);
int threadpool_size(const struct threadpool *p);
void threadpool_destroy(struct threadpool *p);

#endif
