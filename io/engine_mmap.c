/* mmap: copy from a shared mapping of the file, as a page-cache-based
 * engine does. Page faults pull data through the page cache, so this engine
 * never bypasses it (results say direct = false); read-ahead is disabled
 * with MADV_RANDOM, and the loop evicts the file's pages before each point. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/direct_io.h"
#include "io/ioengine.h"

struct mmap_data {
    void *map;
    size_t len;
};

static int mmap_setup(struct io_thread *td)
{
    td->engine_data = calloc(1, sizeof(struct mmap_data));
    return td->engine_data ? 0 : -ENOMEM;
}

static int mmap_open(struct io_thread *td)
{
    struct mmap_data *d = td->engine_data;
    int fd = open_for_read(td->job->path, false);
    if (fd < 0)
        return fd;
    td->fd = fd;
    d->len = (size_t)td->job->file_size;
    d->map = mmap(NULL, d->len, PROT_READ, MAP_SHARED, fd, 0);
    if (d->map == MAP_FAILED) {
        d->map = NULL;
        return -errno;
    }
    madvise(d->map, d->len, MADV_RANDOM);
    return 0;
}

static int mmap_queue(struct io_thread *td, struct io_unit *u)
{
    struct mmap_data *d = td->engine_data;
    memcpy(u->buf, (const char *)d->map + u->offset, u->len);
    u->result = (int64_t)u->len;
    return IO_Q_COMPLETED;
}

static void mmap_close(struct io_thread *td)
{
    struct mmap_data *d = td->engine_data;
    if (d && d->map)
        munmap(d->map, d->len);
    if (d)
        d->map = NULL;
    if (td->fd >= 0)
        close(td->fd);
    td->fd = -1;
}

static void mmap_cleanup(struct io_thread *td)
{
    free(td->engine_data);
    td->engine_data = NULL;
}

const struct ioengine_ops ioengine_mmap = {
    .name = "mmap",
    .flags = IOENGINE_SYNC | IOENGINE_PAGE_CACHE,
    .fio_name = "mmap",
    .setup = mmap_setup,
    .open_file = mmap_open,
    .queue = mmap_queue,
    .close_file = mmap_close,
    .cleanup = mmap_cleanup,
};
