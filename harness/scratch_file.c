#include "harness/scratch_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "common/rng.h"
#include "io/direct_io.h"

/* Room kept free beyond the file itself, so a sweep never fills a disk. */
#define FREE_SPACE_MARGIN (64ull << 20)

/* 1 when the open file starts with the marker, 0 when not, -1 on a read
 * error (errno set). */
static int fd_has_marker(int fd)
{
    char head[sizeof SCRATCH_MARKER - 1];
    size_t got = 0;
    while (got < sizeof head) {
        ssize_t n = pread(fd, head + got, sizeof head - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0; /* shorter than the marker */
        got += (size_t)n;
    }
    return memcmp(head, SCRATCH_MARKER, sizeof head) == 0;
}

/* The refusal for a file flashbed did not make: named, and what to do. */
static int not_ours(const char *path, uint64_t size, char *err, size_t errlen)
{
    err_set(err, errlen,
             "%s is smaller than the %llu bytes to read and is not a flashbed scratch file (it does not "
             "start with flashbed's marker): flashbed writes only into files it created; give a new path, "
             "or a file of at least that size to read as it is",
             path, (unsigned long long)size);
    return -1;
}

int scratch_file_check(const char *path, uint64_t size, enum scratch_action *action, char *err,
                       size_t errlen)
{
    struct stat st;
    uint64_t have = 0;
    char dir[4096];
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            err_set(err, errlen, "%s is not a regular file", path);
            return -1;
        }
        if (access(path, R_OK) != 0) {
            err_set(err, errlen, "%s is not readable: %s", path, strerror(errno));
            return -1;
        }
        have = (uint64_t)st.st_size;
        if (have >= size) {
            *action = SCRATCH_READY;
            return 0;
        }
        int fd = open(path, O_RDONLY);
        int mine = fd < 0 ? -1 : fd_has_marker(fd);
        if (fd >= 0)
            close(fd);
        if (mine < 0) {
            err_set(err, errlen, "%s is not readable: %s", path, strerror(errno));
            return -1;
        }
        if (!mine)
            return not_ours(path, size, err, errlen);
        if (access(path, W_OK) != 0) {
            err_set(err, errlen, "%s is smaller than the size to read (%llu bytes) and not writable", path,
                     (unsigned long long)size);
            return -1;
        }
        *action = SCRATCH_EXTEND;
        dir_of(path, dir, sizeof dir);
    } else {
        if (errno != ENOENT) {
            err_set(err, errlen, "cannot use %s: %s", path, strerror(errno));
            return -1;
        }
        dir_of(path, dir, sizeof dir);
        struct stat ds;
        if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode)) {
            err_set(err, errlen, "cannot create %s: directory %s does not exist", path, dir);
            return -1;
        }
        if (access(dir, W_OK) != 0) {
            err_set(err, errlen, "cannot create %s: directory %s is not writable", path, dir);
            return -1;
        }
        *action = SCRATCH_CREATE;
    }
    uint64_t avail;
    if (free_bytes(dir, &avail) != 0) {
        err_set(err, errlen, "cannot tell free space under %s: %s", dir, strerror(errno));
        return -1;
    }
    uint64_t need = size - have;
    if (need + FREE_SPACE_MARGIN > avail) {
        err_set(err, errlen,
                 "not enough free space for %s: %llu bytes to write (+%llu MiB margin), %llu free "
                 "under %s",
                 path, (unsigned long long)need, (unsigned long long)(FREE_SPACE_MARGIN >> 20),
                 (unsigned long long)avail, dir);
        return -1;
    }
    return 0;
}

static void fill_random(struct rng *r, uint64_t *buf, size_t words)
{
    for (size_t i = 0; i < words; i++)
        buf[i] = rng_next(r);
}

int scratch_file_prepare(const char *path, uint64_t size, enum scratch_action action,
                         const struct progress_report *progress, char *err, size_t errlen)
{
    if (action == SCRATCH_READY)
        return 0;
    enum { BLOCK = 4 << 20 };
    char tmp[4200];
    int fd, tmp_handle = -1;
    uint64_t start = 0;
    if (action == SCRATCH_CREATE) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
        tmp_handle = cleanup_add_file(tmp); /* before it exists: a signal leaves nothing */
        /* O_EXCL: never truncate a file that happens to have the name */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    } else {
        fd = open(path, O_RDWR);
        int mine = fd < 0 ? 1 : fd_has_marker(fd);
        if (mine <= 0) { /* checked again: the file may have changed since */
            int e = errno;
            close(fd);
            if (mine < 0) {
                err_set(err, errlen, "cannot read %s: %s", path, strerror(e));
                return -1;
            }
            return not_ours(path, size, err, errlen);
        }
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0)
            start = (uint64_t)st.st_size & ~(uint64_t)(BLOCK - 1);
    }
    if (fd < 0) {
        err_set(err, errlen, "cannot write %s: %s", path, strerror(errno));
        cleanup_forget(tmp_handle);
        return -1;
    }
    uint64_t *buf = malloc(BLOCK);
    if (!buf) {
        close(fd);
        if (action == SCRATCH_CREATE)
            unlink(tmp); /* not left behind half-made */
        cleanup_forget(tmp_handle);
        err_set(err, errlen, "out of memory");
        return -1;
    }
    struct rng r;
    rng_seed(&r, 0x5eedf1a5ull);
    uint64_t blocks = (size - start + BLOCK - 1) / BLOCK;
    progress_report(progress, "writing scratch file", 0, blocks, NULL);
    int rc = 0;
    for (uint64_t off = start; off < size && rc == 0; off += BLOCK) {
        if (interrupted()) {
            err_set(err, errlen, "interrupted while writing %s", path);
            rc = -1;
            break;
        }
        size_t len = size - off < BLOCK ? (size_t)(size - off) : BLOCK;
        fill_random(&r, buf, (len + 7) / 8);
        if (off == 0) /* the marker that lets a later sweep extend it */
            memcpy(buf, SCRATCH_MARKER, len < sizeof SCRATCH_MARKER - 1 ? len : sizeof SCRATCH_MARKER - 1);
        size_t done = 0;
        while (done < len) {
            ssize_t n = pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                err_set(err, errlen, "writing %s failed: %s", path,
                         n < 0 ? strerror(errno) : "no progress");
                rc = -1;
                break;
            }
            done += (size_t)n;
        }
        progress_report(progress, "writing scratch file", (off - start) / BLOCK + 1, blocks, NULL);
    }
    free(buf);
    if (rc == 0 && fsync(fd) != 0) {
        err_set(err, errlen, "syncing %s failed: %s", path, strerror(errno));
        rc = -1;
    }
    close(fd);
    if (rc != 0) {
        if (action == SCRATCH_CREATE)
            unlink(tmp);
        cleanup_forget(tmp_handle);
        return -1;
    }
    if (action == SCRATCH_CREATE && rename(tmp, path) != 0) {
        err_set(err, errlen, "cannot create %s (renaming its temporary into place): %s", path, strerror(errno));
        unlink(tmp);
        cleanup_forget(tmp_handle);
        return -1;
    }
    cleanup_forget(tmp_handle);
    /* What was just written sits in the page cache; measurements start cold. */
    evict_file_cache(path);
    return 0;
}
