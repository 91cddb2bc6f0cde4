/* The submit/complete loop: one thread keeps up to iodepth reads in flight
 * through an engine's ops table (io/ioengine.h), for as long as its caller
 * has reads to give. Both users of the engines run it: the benchmark
 * (harness/bench_point.c: random offsets until a deadline) and the flash
 * reader pool (io/flash_reader.c: a shared list of reads).
 *
 * The caller owns what to read and what a finished read means, through two
 * hooks: next() fills the next read, done() takes one that completed in
 * full. The loop owns the units in flight, the queue/commit/getevents/event
 * calls, and the check of every result: a failed or short read (at the end
 * of the file, say) never reaches done(). It is read again, whole, up to
 * max_retries times (each counted in retries; the unit's attempt says which
 * try it is); when the last try fails too the loop stops asking for more,
 * collects what is still in flight, and returns the error, naming the
 * read's offset (also in fail_offset).
 *
 * Return convention: io_loop_run returns one of enum io_loop_status; on an
 * error err holds one line naming the engine, the file and, for a read, its
 * offset and length. The loop never prints.
 *
 * Threading: a loop belongs to the thread that runs it (an engine's
 * per-thread state is not shared); the hooks run on that thread. */
#ifndef FLASHBED_IO_IO_LOOP_H
#define FLASHBED_IO_IO_LOOP_H

#include <stdbool.h>
#include <stddef.h>

#include "io/ioengine.h"

enum io_loop_status {
    IO_LOOP_DONE = 0,    /* next() ran out and every read completed and was reaped */
    IO_LOOP_FAILED = -1, /* a read failed or could not start; every read was reaped */
    IO_LOOP_LOST = -2,   /* a commit or getevents failed: reads may still be in
                            flight and land later; the thread's engine cannot be
                            trusted with another run */
};

struct io_loop_hooks {
    /* Fills u for the next read (offset; buf and len too unless the caller
     * set them once on the units; issue_ns if it measures latency) and
     * returns true, or returns false: no more reads. After false, next() is
     * not called again in this run. */
    bool (*next)(void *ctx, struct io_unit *u);
    /* A read that completed with all u->len bytes. */
    void (*done)(void *ctx, const struct io_unit *u);
};

struct io_loop {
    const struct ioengine_ops *ops;
    struct io_thread *td;           /* set up, file open */
    unsigned depth;                 /* td->job->iodepth: what the engine was set up for */
    struct io_unit *units;          /* depth of them; buf and len may be preset */
    struct io_unit **free_units;    /* the loop's own: units not in flight */
    struct io_unit **retry_units;   /* the loop's own: failed units to read again */
    unsigned max_retries;           /* the caller's: tries after a failed one (0 after init) */
    /* Set by each io_loop_run: */
    uint64_t retries;               /* reads tried again */
    bool failed;                    /* a read failed its last try: */
    uint64_t fail_offset;           /* its offset */
};

/* Allocates td->job->iodepth units (the job says 1 for IOENGINE_SYNC
 * engines). 0 or -ENOMEM; l is safe to io_loop_free either way. */
int io_loop_init(struct io_loop *l, const struct ioengine_ops *ops, struct io_thread *td);
void io_loop_free(struct io_loop *l);

/* Reads until next() returns false (or something fails) and every read
 * started has been reaped; IO_LOOP_LOST returns at once, without reaping. */
int io_loop_run(struct io_loop *l, const struct io_loop_hooks *h, void *ctx, char *err,
                size_t errlen);

#endif
