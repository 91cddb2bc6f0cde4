/* Runs a plan's steps in order, each once (harness/reproduce.h): markers
 * in steps/, logs in logs/, flashbed re-executed for every step. */
#include "harness/reproduce.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/json_file.h"
#include "common/provenance.h"

void repro_step_command(const struct repro_step *s, const char *program, char *buf, size_t len)
{
    size_t n = 0;
    bool remove = !strcmp(s->args[0], REPRO_REMOVE);
    n += (size_t)snprintf(buf, len, "%s", remove ? "rm -r" : program);
    for (char **a = s->args + remove; *a && n < len; a++) {
        bool plain = **a && strspn(*a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/%=+@") ==
                               strlen(*a);
        if (plain) {
            n += (size_t)snprintf(buf + n, len - n, " %s", *a);
            continue;
        }
        n += (size_t)snprintf(buf + n, len - n, " '");
        for (const char *c = *a; *c && n < len; c++)
            n += (size_t)snprintf(buf + n, len - n, *c == '\'' ? "'\\''" : "%c", *c);
        if (n < len)
            n += (size_t)snprintf(buf + n, len - n, "'");
    }
}

static void marker_path(const struct repro_plan *p, const struct repro_step *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s/steps/%s.json", p->config.out, s->id);
}

static cJSON *args_json(const struct repro_step *s)
{
    cJSON *a = cJSON_CreateArray();
    for (char **x = s->args; a && *x; x++)
        cJSON_AddItemToArray(a, cJSON_CreateString(*x));
    return a;
}

/* 1: the step finished before with these arguments; 0: not finished;
 * -1: finished with other arguments (err says so). */
static int step_done(const struct repro_plan *p, const struct repro_step *s, char *err, size_t errlen)
{
    char path[4400];
    marker_path(p, s, path, sizeof path);
    if (!path_exists(path))
        return 0;
    cJSON *m = read_json_file(path);
    cJSON *want = args_json(s);
    int same = m && want && cJSON_Compare(cJSON_GetObjectItemCaseSensitive(m, "args"), want, true);
    cJSON_Delete(m);
    cJSON_Delete(want);
    if (same)
        return 1;
    return err_set(err, errlen, "%s: step %s was done with other settings (%s): use another --out, or remove it",
                   p->config.out, s->id, path);
}

static int write_marker(const struct repro_plan *p, const struct repro_step *s, double seconds, char *err,
                        size_t errlen)
{
    char path[4400], date[64];
    marker_path(p, s, path, sizeof path);
    provenance_date(date, sizeof date);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", s->id);
    cJSON_AddStringToObject(m, "what", s->what);
    cJSON_AddItemToObject(m, "args", args_json(s));
    cJSON_AddNumberToObject(m, "exit_status", 0);
    cJSON_AddNumberToObject(m, "seconds", seconds);
    cJSON_AddStringToObject(m, "finished", date);
    int rc = atomic_write_json(p->folder, path, m, err, errlen);
    cJSON_Delete(m);
    return rc;
}

/* Runs program with globals and the step's arguments, output into log.
 * Returns the exit status, 128 + the signal that ended it, or -1. */
static int run_child(const char *program, const char *const *globals, const struct repro_step *s, const char *log)
{
    size_t ng = 0, na = 0;
    while (globals && globals[ng])
        ng++;
    while (s->args[na])
        na++;
    const char **argv = calloc(ng + na + 2, sizeof *argv);
    if (!argv)
        return -1;
    argv[0] = program;
    for (size_t i = 0; i < ng; i++)
        argv[1 + i] = globals[i];
    for (size_t i = 0; i < na; i++)
        argv[1 + ng + i] = s->args[i];
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_t pid = fd < 0 ? -1 : fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        dup2(null, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        execv(program, (char *const *)argv);
        _exit(127);
    }
    free(argv);
    if (fd >= 0)
        close(fd);
    if (pid < 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The last line of a log: what the failing command said. */
static void last_line(const char *log, char *buf, size_t len)
{
    buf[0] = '\0';
    char *text = read_text_file(log, NULL);
    if (!text)
        return;
    char *end = text + strlen(text);
    while (end > text && end[-1] == '\n')
        *--end = '\0';
    char *start = strrchr(text, '\n');
    snprintf(buf, len, "%s", start ? start + 1 : text);
    free(text);
}

/* One step not done before: what an earlier try left is removed (it lies
 * under the plan's folder), the step runs, its marker is written. */
static int run_step(const struct repro_plan *p, const struct repro_step *s, const char *program,
                    const char *const *globals, double *seconds, char *err, size_t errlen)
{
    char dir[4096], log[4400] = "";
    if (fs_remove_tree(s->out) != 0)
        return err_set(err, errlen, "%s: cannot remove what an unfinished try left: %s", s->out, strerror(errno));
    dir_of(s->out, dir, sizeof dir);
    if (mkdir_p(dir, 0755) != 0)
        return err_set(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
    uint64_t t0 = now_ns();
    int status = 0;
    if (!strcmp(s->args[0], REPRO_REMOVE)) {
        if (fs_remove_tree(s->args[1]) != 0)
            return err_set(err, errlen, "%s: cannot remove: %s", s->args[1], strerror(errno));
    } else {
        snprintf(log, sizeof log, "%s/logs/%s.log", p->config.out, s->id);
        status = run_child(program, globals, s, log);
    }
    *seconds = (double)(now_ns() - t0) / 1e9;
    if (status != 0 && !interrupted()) {
        char cmd[2048], said[512];
        repro_step_command(s, program, cmd, sizeof cmd);
        if (strlen(cmd) > 400) /* a measured run's prompt: the log has it whole */
            strcpy(cmd + 396, " ...");
        last_line(log, said, sizeof said);
        return err_set(err, errlen, "step %s failed (%s %d): %s\n  command: %s\n  log: %s", s->id,
                       status > 128 ? "signal" : "exit status", status > 128 ? status - 128 : status, said, cmd,
                       log);
    }
    return status != 0 ? 1 : write_marker(p, s, *seconds, err, errlen);
}

/* The study's folder: new, empty, or one a study made (reproduce.json at
 * its root): steps remove what unfinished tries left under it, which must
 * never be the user's own files. */
static int claim_folder(const struct repro_plan *p, char *err, size_t errlen)
{
    char mark[4400];
    snprintf(mark, sizeof mark, "%s/reproduce.json", p->config.out);
    if (path_exists(mark))
        return 0;
    DIR *d = opendir(p->config.out);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                closedir(d);
                return err_set(err, errlen, "%s: exists, is not empty and is not a study's folder (no "
                               "reproduce.json): choose another --out", p->config.out);
            }
        closedir(d);
    } else if (mkdir_p(p->config.out, 0755) != 0) {
        return err_set(err, errlen, "%s: cannot create: %s", p->config.out, strerror(errno));
    }
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "tool", "flashbed reproduce");
    cJSON_AddStringToObject(m, "tier", repro_tier_name(p->config.tier));
    int rc = atomic_write_json(p->folder, mark, m, err, errlen);
    cJSON_Delete(m);
    return rc;
}

int repro_run(const struct repro_plan *p, const char *program, const char *const *globals,
              repro_progress_fn progress, void *ctx, bool *stopped, char *err, size_t errlen)
{
    *stopped = false;
    if (claim_folder(p, err, errlen) != 0)
        return -1;
    char dir[4400];
    const char *subs[] = {"steps", "logs"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(dir, sizeof dir, "%s/%s", p->config.out, subs[i]);
        if (mkdir_p(dir, 0755) != 0)
            return err_set(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
    }
    for (size_t i = 0; i < p->n; i++) {
        const struct repro_step *s = &p->steps[i];
        int done = step_done(p, s, err, errlen);
        if (done < 0)
            return -1;
        if (done) {
            progress(ctx, p, i, REPRO_SKIPPED, 0);
            continue;
        }
        if (interrupted()) {
            *stopped = true;
            return 0;
        }
        progress(ctx, p, i, REPRO_STARTED, 0);
        double seconds = 0;
        int rc = run_step(p, s, program, globals, &seconds, err, errlen);
        if (rc != 0)
            progress(ctx, p, i, rc < 0 ? REPRO_FAILED : REPRO_INTERRUPTED, seconds);
        if (rc < 0)
            return -1;
        if (rc > 0) { /* interrupted: the step's own cleanup ran */
            fs_remove_tree(s->out);
            *stopped = true;
            return 0;
        }
        progress(ctx, p, i, REPRO_FINISHED, seconds);
    }
    return 0;
}
