/* A fixed team of compute threads: the caller is worker 0 and the others
 * wait between jobs, so no thread is created per token. */
#ifndef FLASHBED_ENGINE_THREADPOOL_H
#define FLASHBED_ENGINE_THREADPOOL_H

#include <stddef.h>

struct threadpool;

/* n workers in all (n - 1 threads are started); NULL on failure. */
struct threadpool *threadpool_create(int n);
/* Runs fn(arg, worker, n) on every worker and returns when all are done. */
void threadpool_run(struct threadpool *p, void (*fn)(void *arg, int worker, int n), void *arg);
int threadpool_size(const struct threadpool *p);
/* Splits [0, n) into one contiguous range per worker (in worker order) and
 * runs body(ctx, lo, hi) on each non-empty one; p NULL runs it all here.
 * A body that computes each output from its own inputs in a fixed order
 * gives the same bits whatever the worker count. */
void threadpool_for(struct threadpool *p, size_t n, void (*body)(void *ctx, size_t lo, size_t hi), void *ctx);
void threadpool_destroy(struct threadpool *p);

#endif
