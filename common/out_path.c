#include "common/out_path.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/errbuf.h"
#include "common/fsutil.h"

/* Longest path the writers accept, with room for ".tmp.<pid>" and a file
 * name inside a folder (atomic_file and the model writer use 4096). */
#define OUT_PATH_MAX 3900

static int check_length(const char *path, char *err, size_t errlen)
{
    if (!*path)
        return err_set(err, errlen, "empty output path");
    if (strlen(path) > OUT_PATH_MAX)
        return err_set(err, errlen, "%.64s...: output path longer than %d bytes", path, OUT_PATH_MAX);
    const char *p = path;
    while (*p) {
        size_t n = strcspn(p, "/");
        if (n > 200) /* NAME_MAX is 255; a temporary adds ".tmp.<pid>" */
            return err_set(err, errlen, "%s: a name in the path is longer than 200 bytes", path);
        p += n;
        p += strspn(p, "/");
    }
    return 0;
}

/* A folder that exists: it must be one, and we must be able to create
 * entries in it. what names the user's path when the folder is an
 * ancestor of it. */
static int check_existing_dir(const char *user, const char *dir, const struct stat *st, char *err,
                              size_t errlen)
{
    bool self = strcmp(user, dir) == 0;
    if (!S_ISDIR(st->st_mode))
        return self ? err_set(err, errlen, "%s: exists and is not a folder", user)
                    : err_set(err, errlen, "%s: cannot create: %s is not a folder", user, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return self ? err_set(err, errlen, "%s: cannot write in this folder: %s", user, strerror(errno))
                    : err_set(err, errlen, "%s: cannot create in %s: %s", user, dir, strerror(errno));
    return 0;
}

/* Walks up from path to its nearest existing ancestor and checks it.
 * Stops at the first ancestor that exists; missing ones in between would
 * be created (mkdir -p) only when make_missing, otherwise the parent must
 * be that ancestor. */
static int check_nearest_ancestor(const char *user, const char *path, bool make_missing, char *err,
                                  size_t errlen)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (int depth = 0;; depth++) {
        char parent[4096];
        dir_of(dir, parent, sizeof parent);
        struct stat st;
        if (stat(parent, &st) == 0)
            return check_existing_dir(user, parent, &st, err, errlen);
        if (errno == ENOTDIR) {
            /* some ancestor is a file: find which, for the message */
            snprintf(dir, sizeof dir, "%s", parent);
            continue;
        }
        if (errno != ENOENT)
            return err_set(err, errlen, "%s: cannot create: %s: %s", user, parent, strerror(errno));
        if (!make_missing)
            return err_set(err, errlen, "%s: cannot create: folder %s does not exist", user, parent);
        if (strcmp(parent, dir) == 0 || depth > 4096)
            return err_set(err, errlen, "%s: cannot create: no existing folder above it", user);
        snprintf(dir, sizeof dir, "%s", parent);
    }
}

int out_dir_check(const char *dir, char *err, size_t errlen)
{
    if (check_length(dir, err, errlen) != 0)
        return -1;
    struct stat st;
    if (stat(dir, &st) == 0)
        return check_existing_dir(dir, dir, &st, err, errlen);
    if (errno != ENOENT && errno != ENOTDIR)
        return err_set(err, errlen, "%s: cannot use: %s", dir, strerror(errno));
    return check_nearest_ancestor(dir, dir, true, err, errlen);
}

int out_new_dir_check(const char *dir, char *err, size_t errlen)
{
    if (check_length(dir, err, errlen) != 0)
        return -1;
    struct stat st;
    if (lstat(dir, &st) == 0)
        return err_set(err, errlen, "%s: already exists; remove it or choose another --out", dir);
    if (errno != ENOENT && errno != ENOTDIR)
        return err_set(err, errlen, "%s: cannot use: %s", dir, strerror(errno));
    return check_nearest_ancestor(dir, dir, true, err, errlen);
}

int out_file_check(const char *path, int make_parent, char *err, size_t errlen)
{
    if (check_length(path, err, errlen) != 0)
        return -1;
    size_t n = strlen(path);
    if (path[n - 1] == '/')
        return err_set(err, errlen, "%s: names a folder; give a file name", path);
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return err_set(err, errlen, "%s: is a folder; give a file name", path);
        if (!S_ISREG(st.st_mode))
            return err_set(err, errlen, "%s: exists and is not a regular file; it would be replaced", path);
    } else if (errno != ENOENT && errno != ENOTDIR) {
        return err_set(err, errlen, "%s: cannot use: %s", path, strerror(errno));
    }
    return check_nearest_ancestor(path, path, make_parent != 0, err, errlen);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int out_file_not_input(const char *path, const char *const *inputs, size_t n_inputs, const char *const *folders,
                       size_t n_folders, char *err, size_t errlen)
{
    struct stat out, in;
    if (stat(path, &out) != 0)
        return 0;
    for (size_t i = 0; i < n_inputs; i++)
        if (inputs[i] && stat(inputs[i], &in) == 0 && same_file(&out, &in))
            return err_set(err, errlen, "%s: is the command's input %s; writing it would destroy it", path,
                           inputs[i]);
    for (size_t i = 0; i < n_folders; i++) {
        /* compare the folders: a path in it may be spelled many ways */
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", path);
        char *slash = strrchr(parent, '/');
        if (slash == parent)
            parent[1] = '\0'; /* "/x": the root */
        else if (slash)
            *slash = '\0';
        struct stat pst;
        if (folders[i] && stat(slash ? parent : ".", &pst) == 0 && stat(folders[i], &in) == 0 &&
            same_file(&pst, &in))
            return err_set(err, errlen, "%s: would replace a file of %s, a folder this command reads; write it elsewhere",
                           path, folders[i]);
    }
    return 0;
}

/* Makes one missing folder, registered first so that no moment exists at
 * which a signal would leave it. 1 when made, 0 when it appeared
 * meanwhile (someone else's: not ours to remove), -1 on failure. */
static int make_one(const char *dir, int *handle)
{
    *handle = cleanup_add_empty_dir(dir);
    if (mkdir(dir, 0755) == 0)
        return 1;
    int e = errno;
    cleanup_forget(*handle);
    errno = e;
    return e == EEXIST ? 0 : -1;
}

int out_parents_make(const char *path, struct out_parents *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    /* the missing ancestors, innermost first */
    char dir[4096], *missing[512];
    size_t n = 0;
    struct stat st;
    int rc = 0;
    dir_of(path, dir, sizeof dir);
    for (;;) {
        if (stat(dir, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                rc = err_set(err, errlen, "%s: cannot create folder %s: not a folder", path, dir);
            break;
        }
        if (errno != ENOENT) {
            rc = err_set(err, errlen, "%s: cannot create folder %s: %s", path, dir, strerror(errno));
            break;
        }
        if (!strcmp(dir, ".") || !strcmp(dir, "/") || n == sizeof missing / sizeof missing[0])
            break;
        if (!(missing[n] = strdup(dir))) {
            rc = err_set(err, errlen, "%s: out of memory", path);
            break;
        }
        dir_of(missing[n++], dir, sizeof dir);
    }
    p->dirs = calloc(n ? n : 1, sizeof *p->dirs);
    p->handles = calloc(n ? n : 1, sizeof *p->handles);
    if (rc == 0 && (!p->dirs || !p->handles))
        rc = err_set(err, errlen, "%s: out of memory", path);
    for (size_t i = n; i-- > 0;) { /* outermost first */
        int handle = -1, made = rc == 0 ? make_one(missing[i], &handle) : 0;
        if (made < 0)
            rc = err_set(err, errlen, "%s: cannot create folder %s: %s", path, missing[i], strerror(errno));
        if (made > 0) {
            p->dirs[p->n] = missing[i];
            p->handles[p->n++] = handle;
        } else {
            free(missing[i]);
        }
    }
    if (rc != 0)
        out_parents_undo(p);
    return rc;
}

static void parents_free(struct out_parents *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->dirs[i]);
    free(p->dirs);
    free(p->handles);
    memset(p, 0, sizeof *p);
}

void out_parents_keep(struct out_parents *p)
{
    for (size_t i = 0; i < p->n; i++)
        cleanup_forget(p->handles[i]);
    parents_free(p);
}

void out_parents_undo(struct out_parents *p)
{
    for (size_t i = p->n; i-- > 0;) {
        rmdir(p->dirs[i]); /* fails, keeping it, while anything is inside */
        cleanup_forget(p->handles[i]);
    }
    parents_free(p);
}

void out_path_trim(char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
}
