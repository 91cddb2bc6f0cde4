/* Inside the sim backend (backend_sim.h), not for callers of backend.h:
 * its instance, the commands on its queue, and the parts in their own
 * files: the calls that check and enqueue (backend_sim.c), its memory and
 * guard zones (backend_sim_mem.c), the ring and its thread
 * (backend_sim_queue.c), what each command does (backend_sim_exec.c).
 * Functions marked "queue thread" run there; the rest on the host thread. */
#ifndef FLASHBED_ENGINE_BACKEND_SIM_IMPL_H
#define FLASHBED_ENGINE_BACKEND_SIM_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/compute/backend.h"
#include "engine/compute/backend_impl.h"
#include "engine/compute/backend_sim.h"

enum sim_kind {
    SIM_UPLOAD, SIM_DOWNLOAD, SIM_MOVE_ROWS, /* copies */
    SIM_EVENT,                               /* an event's mark */
    SIM_MATVEC, SIM_FFN_ROWS, SIM_FFN_IDS, SIM_ATTENTION, SIM_NORM, SIM_ROPE, SIM_ADD, SIM_EMBED, SIM_FFN_ACT, /* launches */
};

/* One command: its arguments by value (a struct arch copied, not pointed
 * to), so the host's variables may change after the call. */
struct sim_cmd {
    enum sim_kind kind;
    uint64_t seq;           /* copies and launches: their number from 1; SIM_EVENT: the event */
    struct dev_buf *writes; /* the buffer whose guard zones it is checked against, or NULL */
    union sim_args {
        struct { struct dev_ref dst; const void *src; size_t bytes; } up;
        struct { void *dst; struct dev_ref src; size_t bytes; } down;
        struct { struct dev_ref base, moves; size_t row_bytes; int n; } move;
        struct { struct dev_ref out, w, x, bias; enum fb_dtype t; int rows, cols; } matvec;
        struct sim_ffn {
            struct dev_ref out, rows, ids, up_bias, x; /* ids: SIM_FFN_IDS only */
            size_t row_stride;
            int n, d; /* rows, or ids */
            enum fb_dtype t;
            struct arch a;
        } ffn;
        struct { struct dev_ref out, q, k, v; int n_pos, n_heads, n_kv_heads, head_dim; } att;
        struct { struct dev_ref out, x, weight, bias; int d; enum norm_kind kind; float eps; } norm;
        struct { struct dev_ref vec, inv_freq; int n_heads, head_dim, rot_dims, pos; float scale; } rope;
        struct { struct dev_ref y, x; int n; } add;
        struct { struct dev_ref out, table; enum fb_dtype t; int r, d; float scale; } embed;
        struct { struct dev_ref h, z, g; int n; struct arch a; } act;
    } u;
};

/* The in-order ring and the thread that runs it. */
struct sim_queue {
    pthread_mutex_t mu;
    pthread_cond_t go, done; /* host -> thread: run; thread -> host: ran what was wanted */
    pthread_t thread;
    bool quit;
    struct sim_cmd *ring;
    size_t head, count;            /* the oldest command, and how many are on the ring */
    uint64_t enqueued, ran;        /* commands put on the ring and taken off it, since create */
    uint64_t want_ran, want_event; /* the host waits until ran and passed reach these */
    uint64_t passed;               /* the last event whose mark ran */
    /* event_elapsed's clock: the time the thread has spent running
     * commands, and its value when event e's mark ran, at
     * stamp[e % BACKEND_EVENTS_KEPT] */
    uint64_t busy_ns;
    uint64_t stamp[BACKEND_EVENTS_KEPT];
};

/* A buffer's memory: dev_buf's handle. */
struct sim_mem {
    struct sim_mem *prev, *next; /* every live buffer, for the checks at each wait */
    struct dev_buf *buf;
    char *raw;    /* the allocation with its guard zones; NULL for registered memory */
    char *data;   /* byte 0 */
    size_t tail;  /* guard bytes after the buffer */
};

struct backend {
    struct backend_base base;
    struct cpu_kernels *k;     /* ours, run on the queue thread */
    uint64_t fail_at, delay_us; /* fb_settings' sim_fail_at, sim_delay_us */
    uint64_t commands;         /* copies and launches enqueued */
    uint64_t events;           /* events recorded */
    uint64_t waited;           /* the last event a wait (event_wait, sync) has passed */
    struct sim_mem *live;
    struct sim_queue q;
    bool queue_started;
};

/* The address of ref, or NULL for an absent one. */
static inline char *sim_at(struct dev_ref r)
{
    return r.buf ? ((struct sim_mem *)r.buf->handle)->data + r.off : NULL;
}

/* ---- memory (backend_sim_mem.c): backend.h's calls ---- */
int sim_alloc(struct backend *b, size_t bytes, enum buf_kind kind, struct dev_buf **out);
int sim_register(struct backend *b, void *host, size_t bytes, struct dev_buf **out);
void sim_buf_free(struct backend *b, struct dev_buf *buf);
void *sim_host_ptr(struct backend *b, struct dev_buf *buf);
/* Frees every buffer still live (destroy). */
void sim_free_all(struct backend *b);
/* 0 when buf's guard zones are whole; else fails the backend naming
 * when ("after command 3 (matvec)"), the buffer and the offset. Any
 * thread, while the other is not running. */
int sim_guard_check(struct backend *b, const struct dev_buf *buf, const char *when);
/* sim_guard_check over every live buffer. */
int sim_guard_check_all(struct backend *b, const char *when);

/* ---- the queue (backend_sim_queue.c) ---- */
/* 0, or -1 with the reason in err (no memory or no thread). */
int sim_queue_start(struct backend *b, char *err, size_t errlen);
/* Joins the thread; commands still on the ring are dropped. */
void sim_queue_stop(struct backend *b);
/* Copies c onto the ring; a full ring first runs its older half. */
void sim_queue_push(struct backend *b, const struct sim_cmd *c);
/* Runs everything on the ring / up to event's mark. */
void sim_queue_drain(struct backend *b);
void sim_queue_until_event(struct backend *b, uint64_t event);
/* The busy clock's value when event's mark ran (ns); the mark must have
 * run and be among the last BACKEND_EVENTS_KEPT recorded. */
uint64_t sim_queue_stamp(struct backend *b, uint64_t event);

/* ---- one command (backend_sim_exec.c), queue thread ---- */
/* Runs c, or drops it when the backend has failed; a failure (injected,
 * a broken guard zone, a bad id) fails the backend. */
void sim_exec(struct backend *b, const struct sim_cmd *c);
const char *sim_kind_name(enum sim_kind k);

#endif
