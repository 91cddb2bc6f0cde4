#include "common/provenance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/machine.h"
#include "common/subprocess.h"

#ifndef FLASHBED_SOURCE_DIR
#define FLASHBED_SOURCE_DIR "."
#endif
#ifndef FLASHBED_GIT_AT_CONFIGURE
#define FLASHBED_GIT_AT_CONFIGURE "unknown"
#endif

static int saved_argc;
static char **saved_argv;

static cJSON *saved_settings;

void provenance_set_argv(int argc, char **argv)
{
    saved_argc = argc;
    saved_argv = argv;
}

void provenance_set_settings(cJSON *settings)
{
    cJSON_Delete(saved_settings);
    saved_settings = settings;
}

const char *provenance_git_commit(void)
{
    static char commit[128];
    if (commit[0])
        return commit;
    const char *argv[] = {"git", "-C", FLASHBED_SOURCE_DIR, "describe", "--always", "--dirty",
                          "--abbrev=40", NULL};
    char *out = NULL;
    if (run_capture(argv, &out, 1) == 0 && out && out[0]) {
        out[strcspn(out, "\n")] = '\0';
        snprintf(commit, sizeof commit, "%s", out);
    } else {
        snprintf(commit, sizeof commit, "%s (at build time)", FLASHBED_GIT_AT_CONFIGURE);
    }
    free(out);
    return commit;
}

void provenance_date(char *buf, unsigned len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void provenance_stamp(char *buf, unsigned len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y%m%d-%H%M%S", &tm);
}

static char *joined_command_line(void)
{
    size_t len = 1;
    for (int i = 0; i < saved_argc; i++)
        len += strlen(saved_argv[i]) * 2 + 3;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = '\0';
    char *p = s;
    for (int i = 0; i < saved_argc; i++) {
        const char *a = saved_argv[i];
        int quote = a[0] == '\0' || strpbrk(a, " \t\"'$\\") != NULL;
        if (i)
            *p++ = ' ';
        if (quote)
            *p++ = '\'';
        for (; *a; a++) {
            if (quote && *a == '\'') {
                memcpy(p, "'\\''", 4);
                p += 4;
                continue;
            }
            *p++ = *a;
        }
        if (quote)
            *p++ = '\'';
    }
    *p = '\0';
    return s;
}

cJSON *provenance_new(void)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "tool", "flashbed");
    char *cmd = joined_command_line();
    cJSON_AddStringToObject(p, "command_line", cmd ? cmd : "");
    free(cmd);
    cJSON *argv = cJSON_AddArrayToObject(p, "argv");
    for (int i = 0; i < saved_argc; i++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(saved_argv[i]));
    cJSON_AddStringToObject(p, "git_commit", provenance_git_commit());
    char date[64];
    provenance_date(date, sizeof date);
    cJSON_AddStringToObject(p, "date", date);
    struct machine_info m;
    machine_info_get(&m);
    cJSON *mj = cJSON_AddObjectToObject(p, "machine");
    cJSON_AddStringToObject(mj, "hostname", m.hostname);
    cJSON_AddStringToObject(mj, "os", m.os);
    cJSON_AddStringToObject(mj, "cpu", m.cpu_model);
    cJSON_AddNumberToObject(mj, "logical_cpus", m.logical_cpus);
    cJSON_AddNumberToObject(mj, "memory_bytes", (double)m.mem_bytes);
    if (saved_settings)
        cJSON_AddItemToObject(p, "settings", cJSON_Duplicate(saved_settings, 1));
    return p;
}

void provenance_add_disk(cJSON *prov, const char *path)
{
    struct disk_info d;
    cJSON *dj = cJSON_AddObjectToObject(prov, "disk");
    cJSON_AddStringToObject(dj, "path", path);
    if (disk_info_for_path(path, &d) != 0)
        return;
    cJSON_AddStringToObject(dj, "file_system", d.fs_type);
    cJSON_AddStringToObject(dj, "device", d.device);
    cJSON_AddStringToObject(dj, "disk", d.whole_device);
    cJSON_AddStringToObject(dj, "model", d.model);
    if (d.rotational >= 0)
        cJSON_AddBoolToObject(dj, "rotational", d.rotational);
    cJSON_AddNumberToObject(dj, "logical_block_bytes", d.logical_block);
}
