/* null: completes every read at once without touching a file. What it
 * measures is the harness's own cost per read (clock, offsets, histogram). */
#include <stddef.h>

#include "io/ioengine.h"

static int null_setup(struct io_thread *td)
{
    (void)td;
    return 0;
}

static int null_open(struct io_thread *td)
{
    td->fd = -1;
    return 0;
}

static int null_queue(struct io_thread *td, struct io_unit *u)
{
    (void)td;
    u->result = (int64_t)u->len;
    return IO_Q_COMPLETED;
}

static void null_close(struct io_thread *td)
{
    (void)td;
}

static void null_cleanup(struct io_thread *td)
{
    (void)td;
}

const struct ioengine_ops ioengine_null = {
    .name = "null",
    .flags = IOENGINE_SYNC | IOENGINE_NO_IO,
    .fio_name = "null",
    .setup = null_setup,
    .open_file = null_open,
    .queue = null_queue,
    .close_file = null_close,
    .cleanup = null_cleanup,
};
