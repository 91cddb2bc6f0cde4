#include "common/json_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/errbuf.h"

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
    int bad = ferror(f), why = errno; /* what the read said: EISDIR for a folder */
    fclose(f);
    if (!buf || bad) {
        free(buf);
        errno = bad ? (why ? why : EIO) : ENOMEM;
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

/* How a bad value reads in a message: the number, or what stood there. */
static void describe_value(const cJSON *v, char *buf, size_t len)
{
    if (!v)
        snprintf(buf, len, "missing");
    else if (cJSON_IsNumber(v)) {
        /* the shortest form that reads back as the same double: 1e+300,
         * not 1.0000000000000001e+300 */
        for (int digits = 15; digits <= 17; digits++) {
            snprintf(buf, len, "%.*g", digits, v->valuedouble);
            if (strtod(buf, NULL) == v->valuedouble)
                break;
        }
    }
    else if (cJSON_IsString(v))
        snprintf(buf, len, "the string \"%.40s\"", v->valuestring);
    else
        snprintf(buf, len, "not a number");
}

/* 2^64 as a double: every double below it converts to uint64_t. */
#define TWO_TO_64 18446744073709551616.0

int json_number_u64(const cJSON *v, const char *what, uint64_t min, uint64_t max, uint64_t *out,
                    const char *path, char *err, size_t errlen)
{
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    /* the range test on the double comes first: converting one that does
     * not fit is undefined behaviour */
    if (isfinite(x) && x >= 0 && x < TWO_TO_64 && x == floor(x)) {
        uint64_t u = (uint64_t)x;
        if (u >= min && u <= max) {
            *out = u;
            return 0;
        }
    }
    char got[96];
    describe_value(v, got, sizeof got);
    return err_set(err, errlen, "%s: %s must be a whole number from %llu to %llu, not %s", path, what,
                   (unsigned long long)min, (unsigned long long)max, got);
}

int json_number_finite(const cJSON *v, const char *what, double min, double max, double *out,
                       const char *path, char *err, size_t errlen)
{
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (isfinite(x) && x >= min && x <= max) {
        *out = x;
        return 0;
    }
    char got[96];
    describe_value(v, got, sizeof got);
    return err_set(err, errlen, "%s: %s must be a finite number from %g to %g, not %s", path, what, min,
                   max, got);
}

/* obj's member key (NULL when obj is no object or lacks it), and its name
 * quoted as messages give it. */
static const cJSON *member(const cJSON *obj, const char *key, char *what, size_t whatlen)
{
    snprintf(what, whatlen, "\"%s\"", key);
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

int json_get_u64(const cJSON *obj, const char *key, uint64_t min, uint64_t max, uint64_t *out,
                 const char *path, char *err, size_t errlen)
{
    char what[128];
    const cJSON *v = member(obj, key, what, sizeof what);
    return json_number_u64(v, what, min, max, out, path, err, errlen);
}

int json_get_finite(const cJSON *obj, const char *key, double min, double max, double *out,
                    const char *path, char *err, size_t errlen)
{
    char what[128];
    const cJSON *v = member(obj, key, what, sizeof what);
    return json_number_finite(v, what, min, max, out, path, err, errlen);
}

/* v in the fewest digits (15 to 17) that read back as v exactly. */
static void exact_number(char *buf, size_t len, double v)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

int json_add_exact_doubles(cJSON *obj, const char *key, const double *v, size_t n)
{
    size_t cap = n * 26 + 3, at = 0; /* ", " and up to 24 characters a number, the brackets */
    char *text = malloc(cap), num[32];
    if (!text)
        return -1;
    text[at++] = '[';
    for (size_t i = 0; i < n; i++) {
        exact_number(num, sizeof num, v[i]);
        at += (size_t)snprintf(text + at, cap - at, "%s%s", i ? ", " : "", num);
    }
    snprintf(text + at, cap - at, "]");
    int rc = cJSON_AddRawToObject(obj, key, text) ? 0 : -1;
    free(text);
    return rc;
}
