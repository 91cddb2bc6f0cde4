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

/* A file already at path: ready when it holds size bytes; else it may be
 * extended only when flashbed made it (its marker) and it is writable.
 * Sets *action to SCRATCH_READY or SCRATCH_EXTEND. */
static int check_existing(const char *path, const struct stat *st, uint64_t size, enum scratch_action *action,
                          char *err, size_t errlen)
{
    if (!S_ISREG(st->st_mode))
        return err_set(err, errlen, "%s is not a regular file", path);
    if (access(path, R_OK) != 0)
        return err_set(err, errlen, "%s is not readable: %s", path, strerror(errno));
    if ((uint64_t)st->st_size >= size) {
        *action = SCRATCH_READY;
        return 0;
    }
    int fd = open(path, O_RDONLY);
    int mine = fd < 0 ? -1 : fd_has_marker(fd);
    if (fd >= 0)
        close(fd);
    if (mine < 0)
        return err_set(err, errlen, "%s is not readable: %s", path, strerror(errno));
    if (!mine)
        return not_ours(path, size, err, errlen);
    if (access(path, W_OK) != 0)
        return err_set(err, errlen, "%s is smaller than the size to read (%llu bytes) and not writable", path,
                       (unsigned long long)size);
    *action = SCRATCH_EXTEND;
    return 0;
}

/* No file at path yet: its folder (into dir) must exist and be writable. */
static int check_new(const char *path, char *dir, size_t dirlen, char *err, size_t errlen)
{
    dir_of(path, dir, dirlen);
    struct stat ds;
    if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode))
        return err_set(err, errlen, "cannot create %s: directory %s does not exist", path, dir);
    if (access(dir, W_OK) != 0)
        return err_set(err, errlen, "cannot create %s: directory %s is not writable", path, dir);
    return 0;
}

/* need bytes to write under dir, with FREE_SPACE_MARGIN left over. */
static int check_free_space(const char *path, const char *dir, uint64_t need, char *err, size_t errlen)
{
    uint64_t avail;
    if (free_bytes(dir, &avail) != 0)
        return err_set(err, errlen, "cannot tell free space under %s: %s", dir, strerror(errno));
    if (need + FREE_SPACE_MARGIN > avail)
        return err_set(err, errlen,
                       "not enough free space for %s: %llu bytes to write (+%llu MiB margin), %llu free "
                       "under %s",
                       path, (unsigned long long)need, (unsigned long long)(FREE_SPACE_MARGIN >> 20),
                       (unsigned long long)avail, dir);
    return 0;
}

int scratch_file_check(const char *path, uint64_t size, enum scratch_action *action, char *err,
                       size_t errlen)
{
    struct stat st;
    uint64_t have = 0;
    char dir[4096];
    if (stat(path, &st) == 0) {
        if (check_existing(path, &st, size, action, err, errlen) != 0)
            return -1;
        if (*action == SCRATCH_READY)
            return 0;
        have = (uint64_t)st.st_size;
        dir_of(path, dir, sizeof dir);
    } else {
        if (errno != ENOENT)
            return err_set(err, errlen, "cannot use %s: %s", path, strerror(errno));
        if (check_new(path, dir, sizeof dir, err, errlen) != 0)
            return -1;
        *action = SCRATCH_CREATE;
    }
    return check_free_space(path, dir, size - have, err, errlen);
}

static void fill_random(struct rng *r, uint64_t *buf, size_t words)
{
    for (size_t i = 0; i < words; i++)
        buf[i] = rng_next(r);
}

enum { BLOCK = 4 << 20 };

/* The file to write into: a new temporary beside path (SCRATCH_CREATE,
 * registered for removal on a signal through *tmp_handle), or path itself
 * (SCRATCH_EXTEND, from *start: its last whole block). Returns the open
 * descriptor, or -1 with err set and nothing left registered. */
static int open_target(const char *path, uint64_t size, enum scratch_action action, char *tmp, size_t tmplen,
                       int *tmp_handle, uint64_t *start, char *err, size_t errlen)
{
    int fd;
    *tmp_handle = -1;
    *start = 0;
    if (action == SCRATCH_CREATE) {
        snprintf(tmp, tmplen, "%s.tmp.%ld", path, (long)getpid());
        *tmp_handle = cleanup_add_file(tmp); /* before it exists: a signal leaves nothing */
        /* O_EXCL: never truncate a file that happens to have the name */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    } else {
        fd = open(path, O_RDWR);
        int mine = fd < 0 ? 1 : fd_has_marker(fd);
        if (mine <= 0) { /* checked again: the file may have changed since */
            int e = errno;
            close(fd);
            if (mine < 0)
                return err_set(err, errlen, "cannot read %s: %s", path, strerror(e));
            return not_ours(path, size, err, errlen);
        }
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0)
            *start = (uint64_t)st.st_size & ~(uint64_t)(BLOCK - 1);
    }
    if (fd < 0) {
        err_set(err, errlen, "cannot write %s: %s", path, strerror(errno));
        cleanup_forget(*tmp_handle);
        return -1;
    }
    return fd;
}

/* len bytes of buf at off, through short writes and signals. */
static int write_block(int fd, const void *buf, size_t len, uint64_t off, const char *path, char *err,
                       size_t errlen)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return err_set(err, errlen, "writing %s failed: %s", path, n < 0 ? strerror(errno) : "no progress");
        done += (size_t)n;
    }
    return 0;
}

/* Random bytes from start to size, block by block, the marker at offset
 * 0. The generator starts from the same seed whatever start is, as it
 * always has: a file extended holds other bytes than one made whole, which
 * a random-read benchmark does not see. */
static int fill_file(int fd, const char *path, uint64_t start, uint64_t size,
                     const struct progress_report *progress, char *err, size_t errlen)
{
    uint64_t *buf = malloc(BLOCK);
    if (!buf)
        return err_set(err, errlen, "out of memory");
    struct rng r;
    rng_seed(&r, 0x5eedf1a5ull);
    uint64_t blocks = (size - start + BLOCK - 1) / BLOCK;
    progress_report(progress, "writing scratch file", 0, blocks, NULL);
    int rc = 0;
    for (uint64_t off = start; off < size && rc == 0; off += BLOCK) {
        if (interrupted()) {
            rc = err_set(err, errlen, "interrupted while writing %s", path);
            break;
        }
        size_t len = size - off < BLOCK ? (size_t)(size - off) : BLOCK;
        fill_random(&r, buf, (len + 7) / 8);
        if (off == 0) /* the marker that lets a later sweep extend it */
            memcpy(buf, SCRATCH_MARKER, len < sizeof SCRATCH_MARKER - 1 ? len : sizeof SCRATCH_MARKER - 1);
        rc = write_block(fd, buf, len, off, path, err, errlen);
        progress_report(progress, "writing scratch file", (off - start) / BLOCK + 1, blocks, NULL);
    }
    free(buf);
    return rc;
}

int scratch_file_prepare(const char *path, uint64_t size, enum scratch_action action,
                         const struct progress_report *progress, char *err, size_t errlen)
{
    if (action == SCRATCH_READY)
        return 0;
    char tmp[4200];
    int tmp_handle;
    uint64_t start;
    int fd = open_target(path, size, action, tmp, sizeof tmp, &tmp_handle, &start, err, errlen);
    if (fd < 0)
        return -1;
    int rc = fill_file(fd, path, start, size, progress, err, errlen);
    if (rc == 0 && fsync(fd) != 0)
        rc = err_set(err, errlen, "syncing %s failed: %s", path, strerror(errno));
    close(fd);
    if (rc != 0) {
        if (action == SCRATCH_CREATE)
            unlink(tmp); /* not left behind half-made */
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
