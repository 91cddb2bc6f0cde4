/* What keeps outputs whole and user files safe: the cleanup registry
 * (common/cleanup.h) removes registered temporaries, files and flat
 * folders, and nothing it was told to forget; slots run out cleanly; a
 * SIGINT in the default mode (common/interrupt.h) removes them and exits
 * 130 while polling mode only sets the flag; err_replace names the user's
 * path; the --out checks (common/out_path.h) refuse what cannot be
 * created, naming the path and the ancestor in the way; folders made above
 * a new output are kept with it or removed, only while empty; and a sweep's
 * scratch file (harness/scratch_file.h) is extended only when it carries
 * flashbed's marker. */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/errbuf.h"
#include "common/interrupt.h"
#include "common/out_path.h"
#include "harness/scratch_file.h"

static char root[] = "/tmp/flashbed-outputs-XXXXXX";

static void touch(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", root, name);
}

static void registry(void)
{
    char file[256], dir[256], inner[300], kept[256];
    path_in(file, sizeof file, "a.tmp.1");
    path_in(dir, sizeof dir, "m.tmp.1");
    path_in(kept, sizeof kept, "kept.tmp.1");
    snprintf(inner, sizeof inner, "%s/ffn.bin", dir);
    CHECK(cleanup_count() == 0);
    int hf = cleanup_add_file(file), hd = cleanup_add_dir(dir), hk = cleanup_add_file(kept);
    CHECK(hf >= 0 && hd >= 0 && hk >= 0 && hf != hd && hd != hk);
    CHECK(cleanup_count() == 3);
    touch(file, "x");
    mkdir(dir, 0755);
    touch(inner, "weights");
    touch(kept, "renamed into place meanwhile");
    cleanup_forget(hk);
    CHECK(cleanup_count() == 2);
    cleanup_remove_all();
    CHECK(!exists(file));
    CHECK(!exists(inner));
    CHECK(!exists(dir));
    CHECK(exists(kept)); /* forgotten: not touched */
    cleanup_forget(hf);
    cleanup_forget(hd);
    cleanup_forget(-1); /* ignored */
    CHECK(cleanup_count() == 0);
    /* removing what was never created is harmless */
    int ghost = cleanup_add_dir(dir);
    cleanup_remove_all();
    cleanup_forget(ghost);

    /* every slot taken: -1, and a freed slot is reused */
    int h[CLEANUP_SLOTS];
    for (int i = 0; i < CLEANUP_SLOTS; i++)
        h[i] = cleanup_add_file(file);
    CHECK(h[CLEANUP_SLOTS - 1] >= 0);
    CHECK(cleanup_add_file(file) == -1);
    cleanup_forget(h[7]);
    CHECK(cleanup_add_file(file) == h[7]);
    for (int i = 0; i < CLEANUP_SLOTS; i++)
        cleanup_forget(h[i]);
    CHECK(cleanup_count() == 0);

    static char long_path[5000];
    memset(long_path, 'a', sizeof long_path - 1);
    CHECK(cleanup_add_file(long_path) == -1);
}

/* A child registers a folder with a file, then is signalled: the exit
 * status and what is left. */
static int signalled_child_n(int polling, int sig, int times, const char *dir, int *left)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (polling)
            interrupt_install();
        else
            interrupt_exit_on_signal();
        cleanup_add_dir(dir);
        mkdir(dir, 0755);
        char inner[300];
        snprintf(inner, sizeof inner, "%s/model.json", dir);
        touch(inner, "{}");
        for (int i = 0; i < times; i++)
            raise(sig);
        /* polling: the first signal only sets the flag */
        _exit(interrupted() ? 42 : 43);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    *left = exists(dir);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int signalled_child(int polling, int sig, const char *dir, int *left)
{
    return signalled_child_n(polling, sig, 1, dir, left);
}

static void signals(void)
{
    char dir[256];
    int left;
    path_in(dir, sizeof dir, "sig.tmp.1");
    CHECK_U64(signalled_child(0, SIGINT, dir, &left), 130);
    CHECK(!left);
    CHECK_U64(signalled_child(0, SIGTERM, dir, &left), 143);
    CHECK(!left);
    CHECK_U64(signalled_child(1, SIGINT, dir, &left), 42);
    CHECK(left); /* a polling run keeps going and cleans up itself */
    CHECK_U64(signalled_child_n(1, SIGINT, 2, dir, &left), 130); /* the second one exits */
    CHECK(!left);
    char inner[300];
    snprintf(inner, sizeof inner, "%s/model.json", dir);
    unlink(inner);
    rmdir(dir);
}

static void replace(void)
{
    char err[256];
    snprintf(err, sizeof err, "m.tmp.77/dram.bin: write failed; m.tmp.77 removed");
    err_replace(err, sizeof err, "m.tmp.77", "models/m");
    CHECK_STR(err, "models/m/dram.bin: write failed; models/m removed");
    err_replace(err, 10, "models/m", "x");
    CHECK_STR(err, "x/dram.bi"); /* 9 bytes and the terminator */
}

static int refused(int rc, const char *err, const char *want)
{
    if (rc == 0)
        return 0;
    if (!strstr(err, want)) {
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, want);
        return 0;
    }
    return 1;
}

static void out_paths(void)
{
    char err[8192], file[256], under_file[300], deep[300], dir[256], fresh[256];
    path_in(file, sizeof file, "plain");
    touch(file, "a user's file\n");
    snprintf(under_file, sizeof under_file, "%s/x", file);
    snprintf(deep, sizeof deep, "%s/a/b/c", file);
    path_in(dir, sizeof dir, "folder");
    mkdir(dir, 0755);
    path_in(fresh, sizeof fresh, "new/deeper/out");

    CHECK(out_dir_check(dir, err, sizeof err) == 0);
    CHECK(out_dir_check(fresh, err, sizeof err) == 0); /* made with its parents */
    CHECK(!exists(fresh));                              /* a check writes nothing */
    CHECK(refused(out_dir_check(file, err, sizeof err), err, "is not a folder"));
    CHECK(refused(out_dir_check(under_file, err, sizeof err), err, file));
    CHECK(refused(out_dir_check(deep, err, sizeof err), err, "is not a folder"));
    CHECK(refused(out_dir_check("", err, sizeof err), err, "empty"));

    CHECK(out_new_dir_check(fresh, err, sizeof err) == 0); /* its missing parents are made for it */
    CHECK(!exists(fresh));
    char child[300];
    snprintf(child, sizeof child, "%s/model", dir);
    CHECK(out_new_dir_check(child, err, sizeof err) == 0);
    CHECK(refused(out_new_dir_check(dir, err, sizeof err), err, "already exists"));
    CHECK(refused(out_new_dir_check(under_file, err, sizeof err), err, "is not a folder"));

    CHECK(out_file_check(file, 0, err, sizeof err) == 0); /* a regular file is replaced whole */
    CHECK(refused(out_file_check(dir, 0, err, sizeof err), err, "is a folder"));
    CHECK(refused(out_file_check("/dev/null", 0, err, sizeof err), err, "not a regular file"));
    CHECK(refused(out_file_check(under_file, 1, err, sizeof err), err, "is not a folder"));
    CHECK(refused(out_file_check(fresh, 0, err, sizeof err), err, "does not exist"));
    CHECK(out_file_check(fresh, 1, err, sizeof err) == 0);
    char slash[300];
    snprintf(slash, sizeof slash, "%s/", fresh);
    CHECK(refused(out_file_check(slash, 1, err, sizeof err), err, "give a file name"));
    static char long_path[5000];
    memset(long_path, 'a', sizeof long_path - 1);
    CHECK(refused(out_dir_check(long_path, err, sizeof err), err, "longer than"));
    unlink(file);
    rmdir(dir);
}

/* Folders made above a new output: kept with it, removed (while empty)
 * after a failure or by a signal's cleanup, someone else's never. */
static void parents(void)
{
    char out[300], top[300], mid[300], err[8192];
    path_in(top, sizeof top, "p1");
    path_in(mid, sizeof mid, "p1/p2");
    path_in(out, sizeof out, "p1/p2/p3/model");
    struct out_parents p;
    CHECK(out_parents_make(out, &p, err, sizeof err) == 0 && p.n == 3);
    CHECK(exists(mid) && !exists(out));
    CHECK(cleanup_count() == 3);
    out_parents_undo(&p);
    CHECK(!exists(top) && cleanup_count() == 0);

    CHECK(out_parents_make(out, &p, err, sizeof err) == 0);
    out_parents_keep(&p);
    CHECK(exists(mid) && cleanup_count() == 0);
    CHECK(out_parents_make(out, &p, err, sizeof err) == 0 && p.n == 0); /* nothing missing */
    out_parents_keep(&p);
    char deeper[320], theirs[320];
    snprintf(deeper, sizeof deeper, "%s/p3/a/b/model", mid);
    snprintf(theirs, sizeof theirs, "%s/p3/theirs.txt", mid);
    CHECK(out_parents_make(deeper, &p, err, sizeof err) == 0 && p.n == 2);
    touch(theirs, "written meanwhile by someone else\n");
    cleanup_remove_all(); /* what a signal does: the empty ones go, nested in any order */
    CHECK(exists(theirs) && cleanup_count() == 2);
    snprintf(deeper, sizeof deeper, "%s/p3/a", mid);
    CHECK(!exists(deeper));
    out_parents_undo(&p); /* a folder holding a file stays */
    CHECK(exists(theirs) && cleanup_count() == 0);

    char under_file[340];
    snprintf(under_file, sizeof under_file, "%s/x/model", theirs);
    CHECK(refused(out_parents_make(under_file, &p, err, sizeof err), err, "cannot create folder"));
    out_parents_undo(&p);
    unlink(theirs);
    snprintf(deeper, sizeof deeper, "%s/p3", mid);
    rmdir(deeper);
    rmdir(mid);
    rmdir(top);
}

static void scratch_marker(void)
{
    char user[256], own[256], err[8192];
    path_in(user, sizeof user, "notes.txt");
    path_in(own, sizeof own, "own.bin");
    touch(user, "a user's notes, not random data\n");
    enum scratch_action a = SCRATCH_READY;
    CHECK(refused(scratch_file_check(user, 1 << 20, &a, err, sizeof err), err, "not a flashbed scratch file"));
    CHECK(strstr(err, user) != NULL);
    CHECK(scratch_file_prepare(user, 1 << 20, SCRATCH_EXTEND, NULL, err, sizeof err) != 0); /* asked anyway: refused */
    struct stat st;
    CHECK(stat(user, &st) == 0 && st.st_size == (off_t)strlen("a user's notes, not random data\n"));
    CHECK(scratch_file_check(user, 8, &a, err, sizeof err) == 0 && a == SCRATCH_READY); /* large enough: read as is */

    CHECK(scratch_file_check(own, 1 << 20, &a, err, sizeof err) == 0 && a == SCRATCH_CREATE);
    CHECK(scratch_file_prepare(own, 1 << 20, a, NULL, err, sizeof err) == 0);
    char head[sizeof SCRATCH_MARKER];
    FILE *f = fopen(own, "rb");
    CHECK(f && fread(head, 1, sizeof head - 1, f) == sizeof head - 1);
    if (f)
        fclose(f);
    head[sizeof head - 1] = '\0';
    CHECK_STR(head, SCRATCH_MARKER);
    CHECK(scratch_file_check(own, 5 << 20, &a, err, sizeof err) == 0 && a == SCRATCH_EXTEND);
    CHECK(scratch_file_prepare(own, 5 << 20, a, NULL, err, sizeof err) == 0);
    CHECK(stat(own, &st) == 0 && st.st_size == 5 << 20);
    CHECK(cleanup_count() == 0); /* the temporary was forgotten once renamed */
    unlink(user);
    unlink(own);
}

int main(void)
{
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    registry();
    signals();
    replace();
    out_paths();
    parents();
    scratch_marker();
    rmdir(root);
    return check_report("test_outputs");
}
