#include "fuzz_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else
        unlink(path);
}

static void remove_dir(void)
{
    remove_tree(dir);
}

const char *fuzz_dir(void)
{
    if (dir[0])
        return dir;
    struct stat st;
    const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/flashbed-fuzz-%d", base ? base : "/tmp", (int)getpid());
    remove_tree(dir);
    if (mkdir(dir, 0700) != 0) {
        perror(dir);
        abort();
    }
    atexit(remove_dir);
    return dir;
}

const char *fuzz_path(const char *name)
{
    /* a few slots, so that a harness can hold several paths at once */
    static char paths[8][512];
    static unsigned next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", fuzz_dir(), name);
    return p;
}

const char *fuzz_write(const char *name, const void *data, size_t size)
{
    const char *path = fuzz_path(name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    const char *p = data;
    while (size) {
        ssize_t n = write(fd, p, size);
        if (n <= 0) {
            perror(path);
            abort();
        }
        p += n;
        size -= (size_t)n;
    }
    close(fd);
    return path;
}

const char *fuzz_mkdir(const char *name)
{
    const char *path = fuzz_path(name);
    remove_tree(path);
    if (mkdir(path, 0700) != 0) {
        perror(path);
        abort();
    }
    return path;
}

void fuzz_remove(const char *name)
{
    remove_tree(fuzz_path(name));
}

const char *fuzz_write_tokenizer_bin(const char *name, int vocab)
{
    const char *path = fuzz_path(name);
    FILE *f = fopen(path, "wb");
    if (!f) /* a name model.json may give but no file can have (""): model_open says so */
        return path;
    int32_t max_len = 6;
    fwrite(&max_len, 4, 1, f);
    for (int i = 0; i < vocab; i++) {
        char piece[32];
        if (i < 3)
            snprintf(piece, sizeof piece, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        else if (i < 3 + 256)
            snprintf(piece, sizeof piece, "<0x%02X>", i - 3);
        else
            snprintf(piece, sizeof piece, "p%d", i);
        float score = -(float)i;
        int32_t len = (int32_t)strlen(piece);
        fwrite(&score, 4, 1, f);
        fwrite(&len, 4, 1, f);
        fwrite(piece, 1, (size_t)len, f);
    }
    if (fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

void fuzz_note(const char *what, int rc, const char *err)
{
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("FLASHBED_FUZZ_VERBOSE") != NULL;
    if (verbose)
        fprintf(stderr, "  %s: %s\n", what, rc == 0 ? "accepted" : err);
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}
