/* A command's result folder as an object (common/out_manifest.h). */
#include "common/out_manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "common/strbuf.h"

/* A list of names relative to the folder. */
struct names {
    char **v;
    size_t n, cap;
};

struct out_manifest {
    pthread_mutex_t mu;
    bool had_list; /* the folder had a list when opened */
    struct out_manifest_mode mode;
    char dir[4096];
    struct names listed;  /* read from the folder, plus every name claimed since */
    struct names claimed; /* this command's */
    size_t written;
};

static bool names_has(const struct names *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], name))
            return true;
    return false;
}

static int names_add(struct names *s, const char *name)
{
    if (names_has(s, name))
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    if (!(s->v[s->n] = strdup(name)))
        return -1;
    s->n++;
    return 0;
}

static void names_free(struct names *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* path relative to the folder, or NULL when it is not under it. */
static const char *relative(const struct out_manifest *m, const char *path)
{
    size_t n = strlen(m->dir);
    if (strncmp(path, m->dir, n) != 0 || path[n] != '/')
        return NULL;
    path += n;
    while (*path == '/')
        path++;
    return *path && strcmp(path, OUT_MANIFEST_NAME) ? path : NULL;
}

static void list_path(const struct out_manifest *m, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", m->dir, OUT_MANIFEST_NAME);
}

/* The whole list file into *text (NULL when there is none), by read(2)
 * as write_list writes it. 0, or -1 with errno. */
static int slurp(const char *path, char **text)
{
    *text = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    struct strbuf b = {0};
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        strbuf_add(&b, "%.*s", (int)n, buf);
    }
    int e = errno;
    close(fd);
    *text = strbuf_take(&b);
    errno = n < 0 ? e : ENOMEM;
    return n < 0 || !*text ? -1 : 0;
}

/* The list as it was left (none: an empty list). */
static int read_list(struct out_manifest *m, char *err, size_t errlen)
{
    char path[4200], *text;
    list_path(m, path, sizeof path);
    if (slurp(path, &text) != 0) {
        int e = errno;
        free(text);
        return err_set(err, errlen, "%s: %s", path, strerror(e));
    }
    int rc = 0;
    for (char *line = text, *next; rc == 0 && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (line[0] && line[0] != '#' && names_add(&m->listed, line) != 0)
            rc = err_set(err, errlen, "%s: out of memory", path);
    }
    free(text);
    return rc;
}

/* The list's text: the listed names that exist or are being written. */
static char *list_text(const struct out_manifest *m)
{
    struct strbuf b = {0};
    strbuf_add(&b, "# Files flashbed wrote in this folder, one a line. flashbed replaces or removes only these;\n"
                   "# any other file here is yours and is never replaced (a command refuses, naming it).\n");
    for (size_t i = 0; i < m->listed.n; i++) {
        char p[8400];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", m->dir, m->listed.v[i]);
        if (lstat(p, &st) == 0 || names_has(&m->claimed, m->listed.v[i])) /* a claim: being written */
            strbuf_add(&b, "%s\n", m->listed.v[i]);
    }
    return strbuf_take(&b);
}

/* Writes the list (a temporary renamed over it), by plain write(2): it is
 * bookkeeping beside the results, and the fault tests count the results'
 * stdio calls. Called with the mutex held. */
static int write_list(const struct out_manifest *m, char *err, size_t errlen)
{
    char path[4200], tmp[4300];
    list_path(m, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    char *text = list_text(m);
    if (!text)
        return err_set(err, errlen, "cannot write %s: out of memory", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), e = errno;
    size_t n = strlen(text), done = 0;
    while (fd >= 0 && done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w <= 0 && errno != EINTR)
            break;
        done += w > 0 ? (size_t)w : 0;
    }
    e = fd < 0 ? e : errno;
    free(text);
    bool ok = fd >= 0 && done == n;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && rename(tmp, path) == 0)
        return 0;
    e = ok ? errno : e;
    unlink(tmp);
    return err_set(err, errlen, "cannot write %s: %s", path, strerror(e));
}

static void manifest_free(struct out_manifest *m)
{
    names_free(&m->listed);
    names_free(&m->claimed);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

struct out_manifest *out_manifest_open(const char *dir, struct out_manifest_mode mode, char *err, size_t errlen)
{
    struct out_manifest *m = calloc(1, sizeof *m);
    if (!m) {
        err_set(err, errlen, "%s: out of memory", dir);
        return NULL;
    }
    pthread_mutex_init(&m->mu, NULL);
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    size_t n = strlen(m->dir);
    while (n > 1 && m->dir[n - 1] == '/')
        m->dir[--n] = '\0';
    m->mode = mode;
    char path[4200];
    list_path(m, path, sizeof path);
    m->had_list = access(path, F_OK) == 0;
    if (read_list(m, err, errlen) == 0)
        return m;
    manifest_free(m);
    return NULL;
}

/* -1 when a file of the user's is at path (under the folder). */
static int check_locked(const struct out_manifest *m, const char *path, char *err, size_t errlen)
{
    const char *rel = relative(m, path);
    struct stat st;
    if (!rel || m->mode.force || names_has(&m->listed, rel) || lstat(path, &st) != 0)
        return 0;
    return err_set(err, errlen,
                   "%s: exists and flashbed did not write it (it is not in %s/%s); it would be replaced: "
                   "move it away, choose another --out, or give --force to replace it",
                   path, m->dir, OUT_MANIFEST_NAME);
}

int out_manifest_check(struct out_manifest *m, const char *path, char *err, size_t errlen)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    int rc = check_locked(m, path, err, errlen);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int claim_locked(struct out_manifest *m, const char *path, char *err, size_t errlen)
{
    const char *rel = relative(m, path);
    if (!rel || names_has(&m->claimed, rel))
        return 0;
    bool listed = names_has(&m->listed, rel);
    if (check_locked(m, path, err, errlen) != 0)
        return -1;
    if (names_add(&m->claimed, rel) != 0 || names_add(&m->listed, rel) != 0)
        return err_set(err, errlen, "%s: out of memory", path);
    return listed ? 0 : write_list(m, err, errlen); /* listed before it exists */
}

int out_manifest_claim(struct out_manifest *m, const char *path, char *err, size_t errlen)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    int rc = claim_locked(m, path, err, errlen);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int out_manifest_adopt(struct out_manifest *m, const char *path, char *err, size_t errlen)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    const char *rel = relative(m, path);
    int rc = rel && names_add(&m->listed, rel) != 0 ? err_set(err, errlen, "%s: out of memory", path) : 0;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

void out_manifest_written(struct out_manifest *m, const char *path)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (relative(m, path))
        m->written++;
    pthread_mutex_unlock(&m->mu);
}

/* The files of earlier runs not written this time; folders stay (a
 * study's step folder is its own business). */
static int remove_stale(const struct out_manifest *m, char *err, size_t errlen)
{
    int rc = 0;
    for (size_t i = 0; i < m->listed.n; i++) {
        char p[8400];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", m->dir, m->listed.v[i]);
        if (names_has(&m->claimed, m->listed.v[i]) || lstat(p, &st) != 0 || S_ISDIR(st.st_mode))
            continue;
        if (unlink(p) != 0 && rc == 0)
            rc = err_set(err, errlen, "%s: cannot remove this older result: %s", p, strerror(errno));
    }
    return rc;
}

int out_manifest_close(struct out_manifest *m, char *err, size_t errlen)
{
    if (!m)
        return 0;
    int rc = 0;
    if (m->written > 0) {
        if (!m->mode.keep_old)
            rc = remove_stale(m, err, errlen);
        char why[512];
        if (write_list(m, why, sizeof why) != 0 && rc == 0)
            rc = err_set(err, errlen, "%s", why);
    } else if (!m->had_list) { /* made for claims, nothing written: the folder as it was */
        char path[4200];
        list_path(m, path, sizeof path);
        unlink(path);
    }
    manifest_free(m);
    return rc;
}

bool out_manifest_lists(struct out_manifest *m, const char *path)
{
    if (!m)
        return false;
    pthread_mutex_lock(&m->mu);
    const char *rel = relative(m, path);
    bool yes = names_has(&m->listed, rel ? rel : path);
    pthread_mutex_unlock(&m->mu);
    return yes;
}

size_t out_manifest_written_count(struct out_manifest *m)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    size_t n = m->written;
    pthread_mutex_unlock(&m->mu);
    return n;
}
