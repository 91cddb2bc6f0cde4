#include "common/json_file.h"

#include <stdio.h>
#include <stdlib.h>

char *read_text_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else {
                buf[n] = '\0';
                if (len)
                    *len = (size_t)n;
            }
        }
    }
    fclose(f);
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
