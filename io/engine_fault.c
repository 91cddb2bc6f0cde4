/* fault: psync, or io_uring (fault_io_uring, io/engine_fault_uring.c), with
 * faults injected by the rules in the job (io/io_fault.h): a read fails
 * with EIO without touching the file, comes back with half its bytes after
 * a real read, or waits before it. Each attempt and each fault is counted
 * in the job's struct io_fault. Without rules (job->fault NULL, or no
 * rules) it reads as its base engine does. */
#include <errno.h>
#include <time.h>

#include "io/direct_io.h"
#include "io/io_fault.h"
#include "io/ioengine.h"

static void wait_ns(uint64_t ns)
{
    struct timespec t = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

bool io_fault_before_read(struct io_fault *f, struct io_unit *u, bool *shorten)
{
    struct io_fault_choice c = {0};
    if (f) {
        atomic_fetch_add(&f->attempts, 1);
        io_fault_decide(f, u->offset, u->len, u->attempt, &c);
    }
    *shorten = c.short_read;
    if (c.delay_ns) {
        atomic_fetch_add(&f->injected[IO_FAULT_DELAY], 1);
        wait_ns(c.delay_ns);
    }
    if (!c.eio)
        return false;
    atomic_fetch_add(&f->injected[IO_FAULT_EIO], 1);
    u->result = -EIO;
    return true;
}

void io_fault_shorten(struct io_fault *f, struct io_unit *u)
{
    if (u->result != (int64_t)u->len)
        return; /* failed already: nothing to cut */
    atomic_fetch_add(&f->injected[IO_FAULT_SHORT], 1);
    u->result = (int64_t)(u->len / 2);
}

static int fault_queue(struct io_thread *td, struct io_unit *u)
{
    bool shorten;
    if (io_fault_before_read(td->job->fault, u, &shorten))
        return IO_Q_COMPLETED;
    int rc = ioengine_psync.queue(td, u);
    if (shorten)
        io_fault_shorten(td->job->fault, u);
    return rc;
}

/* The rest is psync's. */
static int fault_setup(struct io_thread *td)
{
    return ioengine_psync.setup(td);
}

static void fault_close(struct io_thread *td)
{
    ioengine_psync.close_file(td);
}

static void fault_cleanup(struct io_thread *td)
{
    ioengine_psync.cleanup(td);
}

const struct ioengine_ops ioengine_fault = {
    .name = "fault",
    .flags = IOENGINE_SYNC,
    .fio_name = "psync", /* fio reads the same way, without the faults */
    .setup = fault_setup,
    .open_file = ioengine_open_fd,
    .queue = fault_queue,
    .close_file = fault_close,
    .cleanup = fault_cleanup,
};
