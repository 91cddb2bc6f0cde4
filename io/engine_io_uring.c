/* io_uring: up to iodepth reads in flight per thread through liburing, so a
 * few threads can keep the device as busy as many psync threads. */
#ifdef FLASHBED_HAVE_URING

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/direct_io.h"
#include "io/ioengine.h"

struct uring_data {
    struct io_uring ring;
    bool ring_ready;
    unsigned ndone;
    struct io_unit **done; /* iodepth slots filled by getevents */
};

static int uring_setup(struct io_thread *td)
{
    struct uring_data *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    td->engine_data = d;
    d->done = calloc(td->job->iodepth, sizeof *d->done);
    if (!d->done)
        return -ENOMEM;
    /* As fio does: one thread submits and reaps (SINGLE_ISSUER), and the
     * kernel runs completion work only when that thread asks for events
     * (DEFER_TASKRUN), instead of interrupting it. Older kernels refuse the
     * flags; they get a plain ring. */
    unsigned flags = 0;
#if defined(IORING_SETUP_SINGLE_ISSUER) && defined(IORING_SETUP_DEFER_TASKRUN)
    flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
#endif
    int rc = io_uring_queue_init(td->job->iodepth, &d->ring, flags);
    if (rc == -EINVAL && flags)
        rc = io_uring_queue_init(td->job->iodepth, &d->ring, 0);
    if (rc < 0)
        return rc;
    d->ring_ready = true;
    return 0;
}

static int uring_queue(struct io_thread *td, struct io_unit *u)
{
    struct uring_data *d = td->engine_data;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&d->ring);
    if (!sqe)
        return -EBUSY; /* cannot happen: the loop never exceeds iodepth */
    io_uring_prep_read(sqe, td->fd, u->buf, (unsigned)u->len, u->offset);
    io_uring_sqe_set_data(sqe, u);
    return IO_Q_QUEUED;
}

static int uring_commit(struct io_thread *td)
{
    struct uring_data *d = td->engine_data;
    int rc = io_uring_submit(&d->ring);
    return rc < 0 ? rc : 0;
}

/* A read that comes back short (never, for aligned reads inside the file)
 * is reported as an error rather than resubmitted. */
static int uring_getevents(struct io_thread *td, unsigned min, unsigned max)
{
    struct uring_data *d = td->engine_data;
    struct io_uring_cqe *cqe;
    int rc = io_uring_wait_cqe_nr(&d->ring, &cqe, min);
    if (rc < 0 && rc != -EINTR)
        return rc;
    unsigned n = 0;
    while (n < max && io_uring_peek_cqe(&d->ring, &cqe) == 0) {
        struct io_unit *u = io_uring_cqe_get_data(cqe);
        u->result = cqe->res;
        if (cqe->res >= 0 && (uint64_t)cqe->res != u->len)
            u->result = -EIO;
        io_uring_cqe_seen(&d->ring, cqe);
        d->done[n++] = u;
    }
    d->ndone = n;
    return (int)n;
}

static struct io_unit *uring_event(struct io_thread *td, unsigned i)
{
    struct uring_data *d = td->engine_data;
    return d->done[i];
}

static void uring_close(struct io_thread *td)
{
    if (td->fd >= 0)
        close(td->fd);
    td->fd = -1;
}

static void uring_cleanup(struct io_thread *td)
{
    struct uring_data *d = td->engine_data;
    if (!d)
        return;
    if (d->ring_ready)
        io_uring_queue_exit(&d->ring);
    free(d->done);
    free(d);
    td->engine_data = NULL;
}

const struct ioengine_ops ioengine_io_uring = {
    .name = "io_uring",
    .flags = 0,
    .fio_name = "io_uring",
    .setup = uring_setup,
    .open_file = ioengine_open_fd,
    .queue = uring_queue,
    .commit = uring_commit,
    .getevents = uring_getevents,
    .event = uring_event,
    .close_file = uring_close,
    .cleanup = uring_cleanup,
};

#else
/* Built without liburing: keep the translation unit non-empty for -Wpedantic. */
typedef int flashbed_no_io_uring;
#endif
