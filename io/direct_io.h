/* Opening files so that reads bypass the OS cache, and evicting a file's
 * cached pages so buffered measurements start cold. Linux: O_DIRECT and
 * posix_fadvise(DONTNEED). macOS: F_NOCACHE, read-ahead off, and
 * msync(MS_INVALIDATE) of a mapping to drop cached pages. */
#ifndef FLASHBED_IO_DIRECT_IO_H
#define FLASHBED_IO_DIRECT_IO_H

#include <stdbool.h>

/* Returns an fd or -errno. */
int open_for_read(const char *path, bool direct);

struct io_thread;
/* The open_file hook of engines that read through a file descriptor:
 * opens td->job->path honouring td->job->direct. 0 or -errno. */
int ioengine_open_fd(struct io_thread *td);

/* Drops the file's pages from the page cache. 0 or -errno. */
int evict_file_cache(const char *path);

#endif
