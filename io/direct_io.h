/* Opening files so that reads bypass the OS cache, and evicting a file's
 * cached pages so buffered measurements start cold. Linux: O_DIRECT and
 * posix_fadvise(DONTNEED). macOS: F_NOCACHE, read-ahead off, and
 * msync(MS_INVALIDATE) of a mapping to drop cached pages. */
#ifndef FLASHBED_IO_DIRECT_IO_H
#define FLASHBED_IO_DIRECT_IO_H

#include <stdbool.h>
#include <stddef.h>

/* Returns an fd or -errno. */
int open_for_read(const char *path, bool direct);

struct io_thread;
/* The open_file hook of engines that read through a file descriptor:
 * opens td->job->path honouring td->job->direct. 0 or -errno. */
int ioengine_open_fd(struct io_thread *td);

/* Whether direct reads of path (an existing file or folder) would reach
 * a disk: not on a memory-backed file system (tmpfs and ramfs accept
 * O_DIRECT on recent kernels, yet every read is a memory copy), and one
 * that gives a direct-I/O alignment. 0, or -1 with the reason in err (a
 * result must then not claim the page cache was bypassed). */
int direct_io_check(const char *path, char *err, size_t errlen);

/* Drops the file's pages from the page cache. 0 or -errno. */
int evict_file_cache(const char *path);

#endif
