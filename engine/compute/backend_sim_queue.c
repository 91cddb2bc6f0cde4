/* The sim backend's queue (backend_sim.h): a ring of commands allocated
 * once, and a thread that runs them in order, only when the host asks
 * and waits: the host says how far (want_ran, want_event), the thread
 * runs up to there and wakes it. Nothing is allocated per command. The
 * thread times what it runs (busy_ns) and stamps each event's mark with
 * it: the device's clock of event_elapsed, which stands still while the
 * thread waits for the host, as a device that ran the queue at once would
 * not have waited. */
#include <stdlib.h>

#include "common/clock.h"
#include "common/cpu_pin.h"
#include "common/errbuf.h"
#include "engine/compute/backend_sim_impl.h"

/* Under mu: whether the host still waits for a command on the ring. */
static bool wanted(const struct sim_queue *q)
{
    return q->count > 0 && (q->ran < q->want_ran || q->passed < q->want_event);
}

static void *queue_main(void *arg)
{
    struct backend *b = arg;
    struct sim_queue *q = &b->q;
    cpu_pin_release_self(); /* started by a pinned thread: not on its CPU */
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->quit && !wanted(q))
            pthread_cond_wait(&q->go, &q->mu);
        if (q->quit)
            break;
        const struct sim_cmd *c = &q->ring[q->head];
        /* the host is blocked in run_locked until wanted() turns false:
         * nothing else touches the slot or the memory it names */
        pthread_mutex_unlock(&q->mu);
        uint64_t t0 = now_ns();
        sim_exec(b, c);
        uint64_t spent = now_ns() - t0;
        pthread_mutex_lock(&q->mu);
        if (c->kind == SIM_EVENT) {
            q->stamp[c->seq % BACKEND_EVENTS_KEPT] = q->busy_ns;
            q->passed = c->seq;
        } else {
            q->busy_ns += spent;
        }
        q->head = (q->head + 1) % SIM_QUEUE_COMMANDS;
        q->count--;
        q->ran++;
        if (!wanted(q))
            pthread_cond_signal(&q->done);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Under mu: runs the ring until ran reaches ran and the mark of event
 * has passed (or the ring is empty). */
static void run_locked(struct sim_queue *q, uint64_t ran, uint64_t event)
{
    q->want_ran = ran;
    q->want_event = event;
    if (!wanted(q))
        return;
    pthread_cond_signal(&q->go);
    while (wanted(q))
        pthread_cond_wait(&q->done, &q->mu);
}

/* The lock and the two condition variables; 0, or -1 with none left made. */
static int sync_init(struct sim_queue *q)
{
    if (pthread_mutex_init(&q->mu, NULL) != 0)
        return -1;
    if (pthread_cond_init(&q->go, NULL) != 0) {
        pthread_mutex_destroy(&q->mu);
        return -1;
    }
    if (pthread_cond_init(&q->done, NULL) != 0) {
        pthread_cond_destroy(&q->go);
        pthread_mutex_destroy(&q->mu);
        return -1;
    }
    return 0;
}

static void sync_destroy(struct sim_queue *q)
{
    pthread_cond_destroy(&q->go);
    pthread_cond_destroy(&q->done);
    pthread_mutex_destroy(&q->mu);
}

int sim_queue_start(struct backend *b, char *err, size_t errlen)
{
    struct sim_queue *q = &b->q;
    q->ring = calloc(SIM_QUEUE_COMMANDS, sizeof *q->ring);
    if (!q->ring)
        return err_set(err, errlen, "sim backend: out of memory for its queue");
    if (sync_init(q) != 0)
        return err_set(err, errlen, "sim backend: cannot create its queue's lock");
    if (pthread_create(&q->thread, NULL, queue_main, b) != 0) {
        sync_destroy(q);
        return err_set(err, errlen, "sim backend: cannot start its queue thread");
    }
    b->queue_started = true;
    return 0;
}

void sim_queue_stop(struct backend *b)
{
    struct sim_queue *q = &b->q;
    if (b->queue_started) {
        pthread_mutex_lock(&q->mu);
        q->quit = true;
        pthread_cond_signal(&q->go);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->thread, NULL);
        sync_destroy(q);
        b->queue_started = false;
    }
    free(q->ring);
    q->ring = NULL;
}

void sim_queue_push(struct backend *b, const struct sim_cmd *c)
{
    struct sim_queue *q = &b->q;
    pthread_mutex_lock(&q->mu);
    if (q->count == SIM_QUEUE_COMMANDS)
        run_locked(q, q->ran + SIM_QUEUE_COMMANDS / 2, 0);
    q->ring[(q->head + q->count) % SIM_QUEUE_COMMANDS] = *c;
    q->count++;
    q->enqueued++;
    pthread_mutex_unlock(&q->mu);
}

void sim_queue_drain(struct backend *b)
{
    struct sim_queue *q = &b->q;
    pthread_mutex_lock(&q->mu);
    run_locked(q, q->enqueued, 0);
    pthread_mutex_unlock(&q->mu);
}

void sim_queue_until_event(struct backend *b, uint64_t event)
{
    struct sim_queue *q = &b->q;
    pthread_mutex_lock(&q->mu);
    run_locked(q, 0, event);
    pthread_mutex_unlock(&q->mu);
}

uint64_t sim_queue_stamp(struct backend *b, uint64_t event)
{
    struct sim_queue *q = &b->q;
    pthread_mutex_lock(&q->mu);
    uint64_t t = q->stamp[event % BACKEND_EVENTS_KEPT];
    pthread_mutex_unlock(&q->mu);
    return t;
}
