/* A fixed team of compute threads: the caller is worker 0 and the others
 * wait between jobs, so no thread is created per token. */
#ifndef FLASHBED_ENGINE_THREADPOOL_H
#define FLASHBED_ENGINE_THREADPOOL_H

#include <stdbool.h>
#include <stddef.h>

struct threadpool;

/* n workers in all (n - 1 threads are started); NULL on failure. */
struct threadpool *threadpool_create(int n);
/* The same with each worker pinned to its own CPU of the allowed set
 * (common/cpu_pin.h says why), the calling thread as worker 0 on the
 * first: the team then computes at full speed beside threads that sleep
 * and wake (reader threads). Not pinned (threadpool_pinned false) when the
 * set has fewer CPUs than n or the system refuses. The caller must run the
 * team's jobs and destroy it from this same thread, which destroy returns
 * to the allowed set. */
struct threadpool *threadpool_create_pinned(int n);
bool threadpool_pinned(const struct threadpool *p);
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
