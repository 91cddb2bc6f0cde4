/* fault_io_uring: io_uring (io/engine_io_uring.c) with the fault engine's
 * faults (io/engine_fault.c, io/io_fault.h): iodepth reads in flight per
 * thread as io_uring's, an EIO completes in queue() without reaching the
 * ring, a delay waits in queue() before the read is queued (the thread's
 * other reads stay in flight), and a read chosen to come back short is cut
 * to half its bytes when it is reaped. io_uring's own state is kept inside
 * this engine's (td->engine_data is swapped around each call to it). */
#ifdef FLASHBED_HAVE_URING

#include <errno.h>
#include <stdlib.h>

#include "io/direct_io.h"
#include "io/io_fault.h"
#include "io/ioengine.h"

struct fault_uring {
    void *uring;              /* io_uring's engine_data */
    struct io_unit **shorten; /* [iodepth] reads in flight to come back short */
    unsigned n_shorten;
};

/* io_uring's state in place while the call runs. */
#define WITH_URING(td, fu, call)                                                                                       \
    do {                                                                                                               \
        (td)->engine_data = (fu)->uring;                                                                               \
        call;                                                                                                          \
        (fu)->uring = (td)->engine_data;                                                                               \
        (td)->engine_data = (fu);                                                                                      \
    } while (0)

static int fu_setup(struct io_thread *td)
{
    struct fault_uring *fu = calloc(1, sizeof *fu);
    if (!fu)
        return -ENOMEM;
    td->engine_data = fu;
    fu->shorten = calloc(td->job->iodepth ? td->job->iodepth : 1, sizeof *fu->shorten);
    if (!fu->shorten)
        return -ENOMEM;
    int rc;
    WITH_URING(td, fu, rc = ioengine_io_uring.setup(td));
    return rc;
}

static int fu_queue(struct io_thread *td, struct io_unit *u)
{
    struct fault_uring *fu = td->engine_data;
    bool shorten;
    if (io_fault_before_read(td->job->fault, u, &shorten))
        return IO_Q_COMPLETED;
    int rc;
    WITH_URING(td, fu, rc = ioengine_io_uring.queue(td, u));
    if (rc == IO_Q_QUEUED && shorten && fu->n_shorten < td->job->iodepth)
        fu->shorten[fu->n_shorten++] = u;
    return rc;
}

static int fu_commit(struct io_thread *td)
{
    struct fault_uring *fu = td->engine_data;
    int rc;
    WITH_URING(td, fu, rc = ioengine_io_uring.commit(td));
    return rc;
}

static int fu_getevents(struct io_thread *td, unsigned min, unsigned max)
{
    struct fault_uring *fu = td->engine_data;
    int rc;
    WITH_URING(td, fu, rc = ioengine_io_uring.getevents(td, min, max));
    return rc;
}

/* The i-th completion; cut short when it was chosen to be. */
static struct io_unit *fu_event(struct io_thread *td, unsigned i)
{
    struct fault_uring *fu = td->engine_data;
    struct io_unit *u;
    WITH_URING(td, fu, u = ioengine_io_uring.event(td, i));
    for (unsigned k = 0; k < fu->n_shorten; k++)
        if (fu->shorten[k] == u) {
            fu->shorten[k] = fu->shorten[--fu->n_shorten];
            io_fault_shorten(td->job->fault, u);
            break;
        }
    return u;
}

static void fu_close(struct io_thread *td)
{
    struct fault_uring *fu = td->engine_data;
    WITH_URING(td, fu, ioengine_io_uring.close_file(td));
}

static void fu_cleanup(struct io_thread *td)
{
    struct fault_uring *fu = td->engine_data;
    if (!fu)
        return;
    WITH_URING(td, fu, ioengine_io_uring.cleanup(td));
    free(fu->shorten);
    free(fu);
    td->engine_data = NULL;
}

const struct ioengine_ops ioengine_fault_io_uring = {
    .name = "fault_io_uring",
    .flags = 0,
    .fio_name = "io_uring", /* fio reads the same way, without the faults */
    .setup = fu_setup,
    .open_file = ioengine_open_fd,
    .queue = fu_queue,
    .commit = fu_commit,
    .getevents = fu_getevents,
    .event = fu_event,
    .close_file = fu_close,
    .cleanup = fu_cleanup,
};

#else
/* Built without liburing: keep the translation unit non-empty for -Wpedantic. */
typedef int flashbed_no_fault_io_uring;
#endif
