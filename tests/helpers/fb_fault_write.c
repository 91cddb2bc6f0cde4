/* A preloaded shim (LD_PRELOAD) that makes the file system refuse a write:
 * the FB_FAULT_NTH-th call (default 1) of FB_FAULT_CALL on a file whose
 * path contains FB_FAULT_PATH (ending in '$': ends with it) fails with
 * FB_FAULT_ERRNO (ENOSPC or EIO):
 *   fsync   the data is not known to be on disk
 *   fclose  the stream is closed (its buffer written), then reported failed,
 *           as a full disk or an NFS server reports at close
 *   rename  the temporary is not moved into place (its source or target
 *           path matches)
 * The writers under test (common/atomic_file.c, the model writer, the
 * trace writer, ...) call these through the PLT, so the real code paths
 * see the failure. Writes that fail in the middle of a file are made by
 * the tests with `ulimit -f` instead (EFBIG from write itself, which stdio
 * calls inside libc, where no shim reaches). Under AddressSanitizer the
 * binary needs ASAN_OPTIONS=verify_asan_link_order=0. Built without
 * sanitizers; prints one line to stderr when it injects. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int matching_calls;

/* Whether this call of `call` on path is the one to fail. */
/* FB_FAULT_PATH is a part of the path; ending in '$', the path's end. */
static int path_matches(const char *path)
{
    const char *part = getenv("FB_FAULT_PATH");
    if (!part)
        return 1;
    size_t n = strlen(part), len = strlen(path);
    if (n && part[n - 1] == '$')
        return len >= n - 1 && strncmp(path + len - (n - 1), part, n - 1) == 0;
    return strstr(path, part) != NULL;
}

static int should_fail(const char *call, const char *path)
{
    const char *want = getenv("FB_FAULT_CALL"), *nth = getenv("FB_FAULT_NTH");
    if (!want || strcmp(want, call) != 0 || !path || !path_matches(path))
        return 0;
    return ++matching_calls == (nth ? atoi(nth) : 1);
}

static int fault_errno(void)
{
    const char *e = getenv("FB_FAULT_ERRNO");
    return e && strcmp(e, "EIO") == 0 ? EIO : ENOSPC;
}

static void fd_path(int fd, char *buf, size_t len)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
}

static int inject(const char *call, const char *path)
{
    int e = fault_errno();
    fprintf(stderr, "fb_fault_write: %s of %s fails with %s\n", call, path, e == EIO ? "EIO" : "ENOSPC");
    errno = e;
    return -1;
}

int fsync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    char path[PATH_MAX];
    fd_path(fd, path, sizeof path);
    if (should_fail("fsync", path))
        return inject("fsync", path);
    return real(fd);
}

int fclose(FILE *f)
{
    static int (*real)(FILE *);
    if (!real)
        real = (int (*)(FILE *))dlsym(RTLD_NEXT, "fclose");
    char path[PATH_MAX] = "";
    /* No NULL test: glibc declares f nonnull (GCC 13 rejects the test), and
     * fclose(NULL) is undefined anyway. */
    int fd = fileno(f);
    if (fd >= 0)
        fd_path(fd, path, sizeof path);
    int fail = should_fail("fclose", path);
    int rc = real(f);
    return fail ? (inject("fclose", path), EOF) : rc;
}

int rename(const char *from, const char *to)
{
    static int (*real)(const char *, const char *);
    if (!real)
        real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    const char *path = to && path_matches(to) ? to : from;
    if (should_fail("rename", path))
        return inject("rename", path);
    return real(from, to);
}
