#include "common/atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/errbuf.h"
#include "common/out_manifest.h"

void atomic_tmp_name(const char *path, char *buf, unsigned len)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (dot && (!slash || dot > slash))
        snprintf(buf, len, "%.*s.tmp.%ld%s", (int)(dot - path), path, (long)getpid(), dot);
    else
        snprintf(buf, len, "%s.tmp.%ld", path, (long)getpid());
}

int atomic_tmp_watch(const char *path)
{
    char tmp[4200];
    atomic_tmp_name(path, tmp, sizeof tmp);
    return cleanup_add_file(tmp);
}

void atomic_err_name_path(char *err, size_t errlen, const char *path)
{
    char tmp[4200];
    atomic_tmp_name(path, tmp, sizeof tmp);
    err_replace(err, errlen, tmp, path);
}

/* Once, so that a second call cannot free a slot someone else now holds. */
static void forget_tmp(struct atomic_file *af)
{
    cleanup_forget(af->cleanup);
    af->cleanup = -1;
}

int atomic_open(struct atomic_file *af, struct out_manifest *folder, const char *path, char *err, size_t errlen)
{
    snprintf(af->path, sizeof af->path, "%s", path);
    atomic_tmp_name(path, af->tmp, sizeof af->tmp);
    af->f = NULL;
    af->cleanup = -1;
    af->folder = folder;
    if (out_manifest_claim(folder, path, err, errlen) != 0) /* a file of the user's is there */
        return -1;
    /* registered before it exists: a signal in between finds nothing to remove */
    af->cleanup = cleanup_add_file(af->tmp);
    af->f = fopen(af->tmp, "w");
    if (!af->f) {
        int e = errno;
        forget_tmp(af);
        return err_set(err, errlen, "cannot write %s: %s", af->path, strerror(e));
    }
    return 0;
}

/* Flushes, syncs and closes the temporary; on a failure removes it. */
static int close_tmp(struct atomic_file *af, char *err, size_t errlen)
{
    int bad = ferror(af->f);
    if (fflush(af->f) != 0)
        bad = 1;
    if (!bad && fsync(fileno(af->f)) != 0 && errno != EINVAL)
        bad = 1;
    if (fclose(af->f) != 0)
        bad = 1;
    af->f = NULL;
    if (!bad)
        return 0;
    err_set(err, errlen, "writing %s failed: %s", af->path, strerror(errno));
    unlink(af->tmp);
    forget_tmp(af);
    return -1;
}

/* Renames the closed temporary into place; on a failure removes it. */
static int publish_tmp(struct atomic_file *af, char *err, size_t errlen)
{
    if (rename(af->tmp, af->path) != 0) {
        err_set(err, errlen, "cannot write %s (renaming its temporary into place): %s", af->path,
                strerror(errno));
        unlink(af->tmp);
        forget_tmp(af);
        return -1;
    }
    forget_tmp(af);
    out_manifest_written(af->folder, af->path);
    return 0;
}

int atomic_commit(struct atomic_file *af, char *err, size_t errlen)
{
    if (close_tmp(af, err, errlen) != 0)
        return -1;
    return publish_tmp(af, err, errlen);
}

int atomic_set_text(struct atomic_set *s, const char *path, const char *text, char *err, size_t errlen)
{
    if (s->n == ATOMIC_SET_MAX)
        return err_set(err, errlen, "cannot write %s: more than %d files in one set", path, ATOMIC_SET_MAX);
    struct atomic_file *af = &s->files[s->n];
    if (!text)
        return err_set(err, errlen, "out of memory writing %s", path);
    if (atomic_open(af, s->folder, path, err, errlen) != 0)
        return -1;
    fputs(text, af->f);
    if (close_tmp(af, err, errlen) != 0)
        return -1;
    s->n++;
    return 0;
}

int atomic_set_json(struct atomic_set *s, const char *path, const cJSON *json, char *err, size_t errlen)
{
    char *text = json ? cJSON_Print(json) : NULL;
    size_t n = text ? strlen(text) : 0;
    char *line = text ? malloc(n + 2) : NULL; /* as atomic_write_json writes it: with a newline */
    if (line) {
        memcpy(line, text, n);
        memcpy(line + n, "\n", 2);
    }
    int rc = atomic_set_text(s, path, line, err, errlen);
    free(text);
    free(line);
    return rc;
}

int atomic_set_commit(struct atomic_set *s, char *err, size_t errlen)
{
    int rc = 0;
    for (int i = 0; i < s->n; i++) {
        if (rc == 0)
            rc = publish_tmp(&s->files[i], err, errlen);
        else
            atomic_abort(&s->files[i]);
    }
    s->n = 0;
    return rc;
}

void atomic_set_abort(struct atomic_set *s)
{
    for (int i = 0; i < s->n; i++)
        atomic_abort(&s->files[i]);
    s->n = 0;
}

void atomic_abort(struct atomic_file *af)
{
    if (af->f)
        fclose(af->f);
    af->f = NULL;
    unlink(af->tmp);
    forget_tmp(af);
}

int atomic_write_text(struct out_manifest *folder, const char *path, const char *text, char *err, size_t errlen)
{
    struct atomic_file af;
    if (atomic_open(&af, folder, path, err, errlen) != 0)
        return -1;
    fputs(text, af.f);
    return atomic_commit(&af, err, errlen);
}

int atomic_write_json(struct out_manifest *folder, const char *path, const cJSON *json, char *err, size_t errlen)
{
    char *text = cJSON_Print(json);
    if (!text)
        return err_set(err, errlen, "cannot serialise JSON for %s", path);
    struct atomic_file af;
    int rc = atomic_open(&af, folder, path, err, errlen);
    if (rc == 0) {
        fputs(text, af.f);
        fputc('\n', af.f);
        rc = atomic_commit(&af, err, errlen);
    }
    free(text);
    return rc;
}
