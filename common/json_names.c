/* The .json files of a folder, listed for messages (json_names.h). */
#include "common/json_names.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t json_names_list(const char *dir, const char *prefix, bool with_dir, char *buf, size_t len)
{
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char *names[64];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 64;) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".json") && !strncmp(e->d_name, prefix, strlen(prefix)) &&
            (names[n] = strdup(e->d_name)))
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        int l = (int)strlen(names[i]);
        if (used < len)
            used += (size_t)(with_dir ? snprintf(buf + used, len - used, "%s%s/%s", i ? ", " : "", dir, names[i])
                                      : snprintf(buf + used, len - used, "%s%.*s", i ? ", " : "", l - 5, names[i]));
        free(names[i]);
    }
    return n;
}
