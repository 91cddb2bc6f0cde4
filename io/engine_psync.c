/* psync: one pread() at a time per thread. The paper's model: many threads,
 * each at queue depth 1. */
#include <errno.h>
#include <unistd.h>

#include "io/direct_io.h"
#include "io/ioengine.h"

static int psync_setup(struct io_thread *td)
{
    (void)td;
    return 0;
}

/* Loops over short reads; a read past the end of the file is an error. */
static int psync_queue(struct io_thread *td, struct io_unit *u)
{
    uint64_t done = 0;
    while (done < u->len) {
        ssize_t n = pread(td->fd, (char *)u->buf + done, u->len - done, (off_t)(u->offset + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            u->result = -errno;
            return IO_Q_COMPLETED;
        }
        if (n == 0) {
            u->result = -EIO;
            return IO_Q_COMPLETED;
        }
        done += (uint64_t)n;
    }
    u->result = (int64_t)done;
    return IO_Q_COMPLETED;
}

static void psync_close(struct io_thread *td)
{
    if (td->fd >= 0)
        close(td->fd);
    td->fd = -1;
}

static void psync_cleanup(struct io_thread *td)
{
    (void)td;
}

const struct ioengine_ops ioengine_psync = {
    .name = "psync",
    .flags = IOENGINE_SYNC,
    .fio_name = "psync",
    .setup = psync_setup,
    .open_file = ioengine_open_fd,
    .queue = psync_queue,
    .close_file = psync_close,
    .cleanup = psync_cleanup,
};
