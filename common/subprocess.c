#include "common/subprocess.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

bool program_available(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char dir[4096];
    while (*path) {
        size_t n = strcspn(path, ":");
        snprintf(dir, sizeof dir, "%.*s/%s", (int)n, n ? path : ".", name);
        if (access(dir, X_OK) == 0)
            return true;
        path += n;
        if (*path == ':')
            path++;
    }
    return false;
}

/* The child: stdout (and stderr when captured) into the pipe's write end,
 * stderr to /dev/null when asked, then the program; 127 (the shell's "not
 * found") when it cannot be started. */
static void exec_child(const char *const argv[], const int fds[2], int quiet_stderr)
{
    dup2(fds[1], STDOUT_FILENO);
    if (quiet_stderr == STDERR_CAPTURE)
        dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    if (quiet_stderr && quiet_stderr != STDERR_CAPTURE) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
    }
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

/* Everything readable from fd until end of file, as a heap string; NULL
 * when memory ran out. The pipe is drained either way (into a sink once
 * out of memory), so the child never blocks on a full pipe. */
static char *read_all(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (buf && len + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            } else {
                buf = nb;
                cap *= 2;
            }
        }
        char sink[4096];
        char *dst = buf ? buf + len : sink;
        size_t room = buf ? cap - len - 1 : sizeof sink;
        ssize_t n = read(fd, dst, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (buf)
            len += (size_t)n;
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

int run_capture(const char *const argv[], char **out, int quiet_stderr)
{
    if (out)
        *out = NULL;
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0)
        exec_child(argv, fds, quiet_stderr);
    close(fds[1]);
    char *buf = read_all(fds[0]);
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            free(buf);
            return -1;
        }
    if (out)
        *out = buf;
    else
        free(buf);
    if (!WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}
