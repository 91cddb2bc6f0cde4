#include "io/start_gate.h"

void start_gate_init(struct start_gate *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->arrived = 0;
    g->verdict = 0;
}

void start_gate_destroy(struct start_gate *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

/* One condition variable serves both directions: the opener waits for
 * arrivals, the threads for the verdict; each re-checks its own predicate. */
bool start_gate_arrive(struct start_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->arrived++;
    pthread_cond_broadcast(&g->cv);
    while (g->verdict == 0)
        pthread_cond_wait(&g->cv, &g->mu);
    bool go = g->verdict > 0;
    pthread_mutex_unlock(&g->mu);
    return go;
}

void start_gate_wait(struct start_gate *g, unsigned n)
{
    pthread_mutex_lock(&g->mu);
    while (g->arrived < n)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

void start_gate_open(struct start_gate *g, bool go)
{
    pthread_mutex_lock(&g->mu);
    g->verdict = go ? 1 : -1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}
