#include "harness/scratch_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "common/rng.h"
#include "io/direct_io.h"

/* Room kept free beyond the file itself, so a sweep never fills a disk. */
#define FREE_SPACE_MARGIN (64ull << 20)

int scratch_file_check(const char *path, uint64_t size, enum scratch_action *action, char *err,
                       size_t errlen)
{
    struct stat st;
    uint64_t have = 0;
    char dir[4096];
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            snprintf(err, errlen, "%s is not a regular file", path);
            return -1;
        }
        if (access(path, R_OK) != 0) {
            snprintf(err, errlen, "%s is not readable: %s", path, strerror(errno));
            return -1;
        }
        have = (uint64_t)st.st_size;
        if (have >= size) {
            *action = SCRATCH_READY;
            return 0;
        }
        if (access(path, W_OK) != 0) {
            snprintf(err, errlen, "%s is smaller than the size to read (%llu bytes) and not writable", path,
                     (unsigned long long)size);
            return -1;
        }
        *action = SCRATCH_EXTEND;
        dir_of(path, dir, sizeof dir);
    } else {
        if (errno != ENOENT) {
            snprintf(err, errlen, "cannot use %s: %s", path, strerror(errno));
            return -1;
        }
        dir_of(path, dir, sizeof dir);
        struct stat ds;
        if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode)) {
            snprintf(err, errlen, "cannot create %s: directory %s does not exist", path, dir);
            return -1;
        }
        if (access(dir, W_OK) != 0) {
            snprintf(err, errlen, "cannot create %s: directory %s is not writable", path, dir);
            return -1;
        }
        *action = SCRATCH_CREATE;
    }
    uint64_t avail;
    if (free_bytes(dir, &avail) != 0) {
        snprintf(err, errlen, "cannot tell free space under %s: %s", dir, strerror(errno));
        return -1;
    }
    uint64_t need = size - have;
    if (need + FREE_SPACE_MARGIN > avail) {
        snprintf(err, errlen,
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

int scratch_file_prepare(const char *path, uint64_t size, enum scratch_action action, char *err,
                         size_t errlen)
{
    if (action == SCRATCH_READY)
        return 0;
    enum { BLOCK = 4 << 20 };
    char tmp[4200];
    const char *target = path;
    int fd;
    uint64_t start = 0;
    if (action == SCRATCH_CREATE) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
        target = tmp;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    } else {
        fd = open(path, O_WRONLY);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0)
            start = (uint64_t)st.st_size & ~(uint64_t)(BLOCK - 1);
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", target, strerror(errno));
        return -1;
    }
    uint64_t *buf = malloc(BLOCK);
    if (!buf) {
        close(fd);
        if (action == SCRATCH_CREATE)
            unlink(tmp); /* not left behind half-made */
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct rng r;
    rng_seed(&r, 0x5eedf1a5ull);
    struct progress prog;
    progress_begin(&prog, "writing scratch file", (size - start + BLOCK - 1) / BLOCK);
    int rc = 0;
    for (uint64_t off = start; off < size && rc == 0; off += BLOCK) {
        if (interrupted()) {
            snprintf(err, errlen, "interrupted while writing %s", target);
            rc = -1;
            break;
        }
        size_t len = size - off < BLOCK ? (size_t)(size - off) : BLOCK;
        fill_random(&r, buf, (len + 7) / 8);
        size_t done = 0;
        while (done < len) {
            ssize_t n = pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                snprintf(err, errlen, "writing %s failed: %s", target,
                         n < 0 ? strerror(errno) : "no progress");
                rc = -1;
                break;
            }
            done += (size_t)n;
        }
        progress_update(&prog, (off - start) / BLOCK + 1, NULL);
    }
    progress_end(&prog);
    free(buf);
    if (rc == 0 && fsync(fd) != 0) {
        snprintf(err, errlen, "syncing %s failed: %s", target, strerror(errno));
        rc = -1;
    }
    close(fd);
    if (rc != 0) {
        if (action == SCRATCH_CREATE)
            unlink(tmp);
        return -1;
    }
    if (action == SCRATCH_CREATE && rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    /* What was just written sits in the page cache; measurements start cold. */
    evict_file_cache(path);
    return 0;
}
