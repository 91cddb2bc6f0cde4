/* common/out_manifest.h: the one rule of a result folder.
 *   - a first run lists exactly what it wrote (atomic files and sets);
 *   - a second run that writes fewer files removes the others, leaves the
 *     user's file alone and lists exactly its own;
 *   - a user's file at a path the command writes is refused, naming it, the
 *     file unchanged; out_manifest_check refuses it the same way before
 *     anything is written; force replaces it (and lists it);
 *   - keep_old keeps the files of an earlier run (a study resuming);
 *   - a command that wrote nothing changes nothing: no list left behind in a
 *     folder that had none, stale files kept;
 *   - paths outside the open folder, and the list itself, are never claimed;
 *   - a writer given no folder (NULL) claims nothing;
 *   - two folders open at once are independent: each lists its own files. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/atomic_file.h"
#include "common/out_manifest.h"

static char dir[] = "/tmp/flashbed-test-out-manifest-XXXXXX";
static struct out_manifest *folder; /* dir, while open (the command's, passed to its writers) */

static void path_of(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static int exists(const char *name)
{
    char p[256];
    path_of(name, p, sizeof p);
    return access(p, F_OK) == 0;
}

static int write_one(const char *name, const char *text)
{
    char p[256], err[512];
    path_of(name, p, sizeof p);
    return atomic_write_text(folder, p, text, err, sizeof err);
}

/* The names the list holds, comma-joined in its order. */
static const char *listed(void)
{
    static char out[1024];
    char p[256], line[256];
    path_of(OUT_MANIFEST_NAME, p, sizeof p);
    out[0] = '\0';
    FILE *f = fopen(p, "r");
    if (!f)
        return "(none)";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] != '#')
            snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? "," : "", line);
    }
    fclose(f);
    return out;
}

static int open_dir(bool force, bool keep_old)
{
    char err[512];
    folder = out_manifest_open(dir, (struct out_manifest_mode){force, keep_old}, err, sizeof err);
    return folder ? 0 : -1;
}

static int close_dir(void)
{
    char err[512];
    int rc = out_manifest_close(folder, err, sizeof err);
    folder = NULL;
    return rc;
}

static void user_file_refused(void)
{
    char p[256], err[512];
    CHECK(write_one("mine.md", "the user's") == 0); /* no folder open: not claimed */
    CHECK(open_dir(false, false) == 0);
    path_of("mine.md", p, sizeof p);
    CHECK(out_manifest_check(folder, p, err, sizeof err) == -1);
    CHECK(strstr(err, p) != NULL && strstr(err, "--force") != NULL);
    CHECK(atomic_write_text(folder, p, "flashbed's", err, sizeof err) == -1);
    CHECK(strstr(err, "mine.md: exists and flashbed did not write it") != NULL);
    CHECK(close_dir() == 0);
    FILE *f = fopen(p, "r");
    char buf[64] = "";
    CHECK(f && fgets(buf, sizeof buf, f));
    if (f)
        fclose(f);
    CHECK_STR(buf, "the user's");
    CHECK_STR(listed(), "a.json,b.csv,plot.svg"); /* the refusal wrote nothing */

    CHECK(open_dir(true, false) == 0); /* --force */
    CHECK(write_one("mine.md", "flashbed's") == 0);
    CHECK(write_one("a.json", "3") == 0);
    CHECK(close_dir() == 0);
    CHECK_STR(listed(), "a.json,mine.md");
    CHECK(!exists("b.csv") && !exists("plot.svg"));
}

/* Two folders open at once (no state outside the objects): each claims
 * and lists only its own files; a writer given no folder claims nothing. */
static void two_folders(void)
{
    char sub[2][300], p[400], err[512];
    struct out_manifest *m[2];
    for (int i = 0; i < 2; i++) {
        snprintf(sub[i], sizeof sub[i], "%s/sub%d", dir, i);
        CHECK(mkdir(sub[i], 0755) == 0);
        m[i] = out_manifest_open(sub[i], (struct out_manifest_mode){false, false}, err, sizeof err);
        CHECK(m[i] != NULL);
    }
    snprintf(p, sizeof p, "%s/r.json", sub[0]);
    CHECK(atomic_write_text(m[0], p, "0", err, sizeof err) == 0);
    CHECK(atomic_write_text(m[1], p, "0", err, sizeof err) == 0); /* sub0's file: not sub1's business */
    snprintf(p, sizeof p, "%s/r.json", sub[1]);
    CHECK(atomic_write_text(NULL, p, "1", err, sizeof err) == 0);  /* no folder: claimed nowhere */
    CHECK(out_manifest_claim(NULL, p, err, sizeof err) == 0 && !out_manifest_lists(m[1], p));
    CHECK_U64(out_manifest_written_count(m[0]), 1);
    CHECK_U64(out_manifest_written_count(m[1]), 0);
    CHECK(out_manifest_check(m[1], p, err, sizeof err) == -1); /* now a file of the user's */
    for (int i = 0; i < 2; i++)
        CHECK(out_manifest_close(m[i], err, sizeof err) == 0);
    snprintf(p, sizeof p, "%s/%s", sub[0], OUT_MANIFEST_NAME);
    CHECK(access(p, F_OK) == 0);
    snprintf(p, sizeof p, "%s/%s", sub[1], OUT_MANIFEST_NAME);
    CHECK(access(p, F_OK) != 0); /* wrote nothing: no list left */
    CHECK(out_manifest_close(NULL, err, sizeof err) == 0);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    char p[256], err[512];
    /* nothing written: no list made, even after a claim */
    CHECK(open_dir(false, false) == 0);
    path_of("a.json", p, sizeof p);
    CHECK(out_manifest_claim(folder, p, err, sizeof err) == 0);
    CHECK(exists(OUT_MANIFEST_NAME)); /* listed before it exists */
    CHECK(close_dir() == 0);
    CHECK(!exists(OUT_MANIFEST_NAME));

    CHECK(open_dir(false, false) == 0);
    CHECK(write_one("a.json", "1") == 0);
    struct atomic_set s = {.n = 0, .folder = folder};
    path_of("b.csv", p, sizeof p);
    CHECK(atomic_set_text(&s, p, "x", err, sizeof err) == 0);
    path_of("plot.svg", p, sizeof p);
    CHECK(atomic_set_text(&s, p, "y", err, sizeof err) == 0);
    CHECK(atomic_set_commit(&s, err, sizeof err) == 0);
    char outside[300];
    snprintf(outside, sizeof outside, "%s-outside.txt", dir); /* beside the folder, not in it */
    CHECK(atomic_write_text(folder, outside, "z", err, sizeof err) == 0);
    CHECK_U64(out_manifest_written_count(folder), 3);
    CHECK(close_dir() == 0);
    CHECK_STR(listed(), "a.json,b.csv,plot.svg");

    user_file_refused();

    /* keep_old: a.json, mine.md stay beside the new file */
    CHECK(open_dir(false, true) == 0);
    CHECK(write_one("c.md", "4") == 0);
    CHECK(close_dir() == 0);
    CHECK(exists("a.json") && exists("mine.md") && exists("c.md"));
    CHECK_STR(listed(), "a.json,mine.md,c.md");

    /* a run that writes nothing removes nothing */
    CHECK(open_dir(false, false) == 0);
    CHECK(close_dir() == 0);
    CHECK(exists("a.json") && exists("c.md"));

    /* the list is not a result: never listed in itself */
    CHECK(open_dir(false, false) == 0);
    path_of(OUT_MANIFEST_NAME, p, sizeof p);
    CHECK(out_manifest_claim(folder, p, err, sizeof err) == 0 && !out_manifest_lists(folder, p));
    CHECK(close_dir() == 0);
    CHECK_STR(listed(), "a.json,mine.md,c.md");

    two_folders();

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, outside);
    CHECK(system(cmd) == 0);
    printf("test_out_manifest: %d checks, %d failed\n", check_count, check_failures);
    return check_failures != 0;
}
