/* common/atomic_file.h's set: files that appear together or not at all.
 *   - written whole: every file in place with its text, no temporary left;
 *   - the second file cannot be written (its folder is missing): the
 *     first path keeps what it held, no temporary is left, the error
 *     names the second path;
 *   - aborted after writing: nothing changes;
 *   - JSON as atomic_write_json writes it (the same bytes). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/atomic_file.h"

static char dir[] = "/tmp/flashbed-test-atomic-set-XXXXXX";

static char *slurp(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    char a[256], b[256], bad[256], err[512];
    snprintf(a, sizeof a, "%s/a.json", dir);
    snprintf(b, sizeof b, "%s/b.md", dir);
    snprintf(bad, sizeof bad, "%s/missing/c.csv", dir);
    struct atomic_set s = {.n = 0};
    CHECK(atomic_set_text(&s, a, "old a", err, sizeof err) == 0);
    CHECK(atomic_set_text(&s, b, "old b", err, sizeof err) == 0);
    CHECK(slurp("a.json") == NULL && entries() == 2); /* written, not yet in place */
    CHECK(atomic_set_commit(&s, err, sizeof err) == 0);
    CHECK_STR(slurp("a.json"), "old a");
    CHECK_STR(slurp("b.md"), "old b");
    CHECK(entries() == 2);

    CHECK(atomic_set_text(&s, a, "new a", err, sizeof err) == 0);
    CHECK(atomic_set_text(&s, bad, "new c", err, sizeof err) == -1);
    CHECK(strstr(err, bad) != NULL);
    atomic_set_abort(&s);
    CHECK_STR(slurp("a.json"), "old a");
    CHECK(entries() == 2);

    CHECK(atomic_set_text(&s, b, "new b", err, sizeof err) == 0);
    atomic_set_abort(&s);
    CHECK_STR(slurp("b.md"), "old b");
    CHECK(entries() == 2 && s.n == 0);

    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "x", 1);
    CHECK(atomic_write_json(NULL, a, j, err, sizeof err) == 0);
    char want[4096];
    snprintf(want, sizeof want, "%s", slurp("a.json"));
    CHECK(atomic_set_json(&s, b, j, err, sizeof err) == 0 && atomic_set_commit(&s, err, sizeof err) == 0);
    CHECK_STR(slurp("b.md"), want);
    cJSON_Delete(j);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_report("test_atomic_set");
}
