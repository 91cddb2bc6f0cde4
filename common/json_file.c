#include "common/json_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

char *read_text_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    /* read to the end rather than trust the size: pipes and /proc files too */
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        errno = bad ? EIO : ENOMEM;
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

cJSON *read_json_file(const char *path)
{
    char *text = read_text_file(path, NULL);
    if (!text)
        return NULL;
    cJSON *o = cJSON_Parse(text);
    free(text);
    return o;
}
