#include "common/atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

void atomic_tmp_name(const char *path, char *buf, unsigned len)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (dot && (!slash || dot > slash))
        snprintf(buf, len, "%.*s.tmp.%ld%s", (int)(dot - path), path, (long)getpid(), dot);
    else
        snprintf(buf, len, "%s.tmp.%ld", path, (long)getpid());
}

int atomic_open(struct atomic_file *af, const char *path)
{
    snprintf(af->path, sizeof af->path, "%s", path);
    atomic_tmp_name(path, af->tmp, sizeof af->tmp);
    af->f = fopen(af->tmp, "w");
    if (!af->f) {
        fb_error("cannot write %s: %s", af->tmp, strerror(errno));
        return -1;
    }
    return 0;
}

int atomic_commit(struct atomic_file *af)
{
    int bad = ferror(af->f);
    if (fflush(af->f) != 0)
        bad = 1;
    if (!bad && fsync(fileno(af->f)) != 0 && errno != EINVAL)
        bad = 1;
    if (fclose(af->f) != 0)
        bad = 1;
    af->f = NULL;
    if (bad) {
        fb_error("writing %s failed: %s", af->path, strerror(errno));
        unlink(af->tmp);
        return -1;
    }
    if (rename(af->tmp, af->path) != 0) {
        fb_error("cannot rename %s to %s: %s", af->tmp, af->path, strerror(errno));
        unlink(af->tmp);
        return -1;
    }
    return 0;
}

void atomic_abort(struct atomic_file *af)
{
    if (af->f)
        fclose(af->f);
    af->f = NULL;
    unlink(af->tmp);
}

int write_text_file(const char *path, const char *text)
{
    struct atomic_file af;
    if (atomic_open(&af, path) != 0)
        return -1;
    fputs(text, af.f);
    return atomic_commit(&af);
}

int write_json_file(const char *path, const cJSON *json)
{
    char *text = cJSON_Print(json);
    if (!text) {
        fb_error("cannot serialise JSON for %s", path);
        return -1;
    }
    struct atomic_file af;
    int rc = atomic_open(&af, path);
    if (rc == 0) {
        fputs(text, af.f);
        fputc('\n', af.f);
        rc = atomic_commit(&af);
    }
    free(text);
    return rc;
}
