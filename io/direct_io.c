#include "io/direct_io.h"
#include "io/ioengine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "common/fsutil.h"

int open_for_read(const char *path, bool direct)
{
    int flags = O_RDONLY;
#ifdef O_DIRECT
    if (direct)
        flags |= O_DIRECT;
#endif
    int fd = open(path, flags);
    if (fd < 0)
        return -errno;
#ifdef __APPLE__
    if (direct) {
        /* No O_DIRECT on macOS: uncached reads, and no read-ahead to hide latency. */
        if (fcntl(fd, F_NOCACHE, 1) != 0 || fcntl(fd, F_RDAHEAD, 0) != 0) {
            int e = errno;
            close(fd);
            return -e;
        }
    }
#endif
    return fd;
}

int ioengine_open_fd(struct io_thread *td)
{
    int fd = open_for_read(td->job->path, td->job->direct);
    if (fd < 0)
        return fd;
    td->fd = fd;
    return 0;
}

int evict_file_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    int rc = 0;
#if defined(__linux__)
    if (fdatasync(fd) != 0 && errno != EINVAL)
        rc = -errno;
    int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (e)
        rc = -e;
#elif defined(__APPLE__)
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
            rc = -errno;
        else {
            if (msync(m, (size_t)st.st_size, MS_INVALIDATE) != 0)
                rc = -errno;
            munmap(m, (size_t)st.st_size);
        }
    }
#endif
    close(fd);
    return rc;
}

int direct_io_check(const char *path, char *err, size_t errlen)
{
    struct disk_info di;
    if (disk_info_for_path(path, &di) != 0)
        return err_set(err, errlen, "%s: cannot tell its file system: %s", path, strerror(errno));
    uint32_t off_align, mem_align;
    if (di.memory_backed || dio_alignment(path, &off_align, &mem_align) != 0)
        return err_set(err, errlen,
                       "%s is on %s, which does not support direct I/O (O_DIRECT): reads there would not "
                       "reach a disk",
                       path, di.fs_type[0] ? di.fs_type : "a file system");
    return 0;
}
