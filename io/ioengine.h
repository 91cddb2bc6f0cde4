/* I/O engines behind one small ops table, in the manner of fio's
 * ioengine_ops. The submit/complete loop (io/io_loop.c) drives them; its
 * callers (the benchmark, harness/bench_point.c, and the reader pool,
 * io/flash_reader.c) own offsets, timing and statistics; an engine only
 * knows how to get bytes from the file into a buffer. Each engine is one
 * file: engine_<name>.c.
 *
 * Per thread:
 *   setup, open_file
 *   io_loop_run: queue() units until iodepth are in flight, commit(),
 *                getevents(min 1) and event(i) to collect completions
 *   close_file, cleanup
 */
#ifndef FLASHBED_IO_IOENGINE_H
#define FLASHBED_IO_IOENGINE_H

#include <stdbool.h>
#include <stdint.h>

/* One read, from queue() until it is reaped. */
struct io_unit {
    void *buf;          /* aligned for direct I/O, len bytes */
    uint64_t offset;    /* in the file, aligned to len */
    uint64_t len;
    uint64_t issue_ns;  /* set by the loop before queue(); latency counts from here */
    int64_t result;     /* set by the engine: bytes read, or -errno */
    unsigned attempt;   /* set by the loop: 0, then 1.. for its retries of the same read */
};

struct io_fault;

/* What all threads of one measurement share; read-only while they run. */
struct io_job {
    const char *path;
    uint64_t file_size;  /* offsets are drawn from [0, file_size) */
    uint64_t chunk;      /* bytes per read */
    unsigned iodepth;    /* reads in flight per thread (async engines) */
    bool direct;         /* bypass the page cache */
    struct io_fault *fault; /* the fault engine's rules and counts (io/io_fault.h); NULL: none */
};

struct io_thread {
    const struct io_job *job;
    int fd;
    void *engine_data;   /* the engine's private state */
};

enum io_queue_status {
    IO_Q_COMPLETED = 0,  /* finished inside queue(); result is set */
    IO_Q_QUEUED = 1,     /* will come back through getevents()/event() */
};

/* Engine properties the loop and the report need. */
enum ioengine_flags {
    IOENGINE_SYNC = 1 << 0,       /* completes in queue(); iodepth is 1 whatever is asked */
    IOENGINE_PAGE_CACHE = 1 << 1, /* always reads through the page cache */
    IOENGINE_NO_IO = 1 << 2,      /* touches no file: measures the harness itself */
};

struct ioengine_ops {
    const char *name;
    unsigned flags;
    const char *fio_name;  /* the same engine in fio, for --compare-fio */
    /* Per thread, before the clock starts: allocate private state. 0 or -errno. */
    int (*setup)(struct io_thread *td);
    /* Opens job->path into td->fd for reading, honouring job->direct unless
     * the engine is IOENGINE_PAGE_CACHE. 0 or -errno. */
    int (*open_file)(struct io_thread *td);
    /* Starts the read u describes. Returns IO_Q_COMPLETED (u->result set),
     * IO_Q_QUEUED, or -errno when the read could not be started. */
    int (*queue)(struct io_thread *td, struct io_unit *u);
    /* Hands reads queued since the last commit to the kernel. NULL for
     * engines that complete in queue(). 0 or -errno. */
    int (*commit)(struct io_thread *td);
    /* Waits until at least min queued reads have completed; returns how
     * many (<= max) can be fetched with event(), or -errno. */
    int (*getevents)(struct io_thread *td, unsigned min, unsigned max);
    /* The i-th unit completed by the last getevents(), result set. */
    struct io_unit *(*event)(struct io_thread *td, unsigned i);
    void (*close_file)(struct io_thread *td);
    /* Frees what setup() allocated; safe after a failed setup. */
    void (*cleanup)(struct io_thread *td);
};

extern const struct ioengine_ops ioengine_psync;
extern const struct ioengine_ops ioengine_io_uring;
extern const struct ioengine_ops ioengine_mmap;
extern const struct ioengine_ops ioengine_null;
extern const struct ioengine_ops ioengine_fault; /* psync with injected faults (io/io_fault.h) */
extern const struct ioengine_ops ioengine_fault_io_uring; /* io_uring with them (built with liburing) */

/* By name; NULL when unknown. */
const struct ioengine_ops *ioengine_find(const char *name);
/* The engine name an engine option and a fault engine's base give:
 * "fault" over "io_uring" is "fault_io_uring"; anything else is engine. */
const char *ioengine_with_faults(const char *engine, const char *base);
/* "psync, io_uring, mmap, null, fault, fault_io_uring" (the engines compiled in). */
const char *ioengine_names(void);

#endif
