#include "engine/import/safetensors_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/errbuf.h"
#include "common/json_file.h"

/* The safetensors names st_wtype_parse takes, "F32, F16, BF16", into buf. */
static const char *st_wtype_names(char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int r = 0; r < DTYPE_COUNT && at < len; r++) {
        const struct wtype_traits *w = wtype_traits((enum fb_dtype)r);
        if (!w->quantized)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", w->upper_name);
    }
    return buf;
}

int st_wtype_parse(const char *s, enum fb_dtype *t)
{
    for (int r = 0; r < DTYPE_COUNT; r++) {
        const struct wtype_traits *w = wtype_traits((enum fb_dtype)r);
        if (!w->quantized && !strcmp(s, w->upper_name)) { /* safetensors holds no block formats */
            *t = (enum fb_dtype)r;
            return 0;
        }
    }
    return -1;
}

/* The length of the UTF-8 sequence at p (at most n bytes), or 0 when it is
 * not one: overlong forms, surrogates and code points past U+10FFFF are
 * refused, as Rust's str::from_utf8 refuses them. */
static size_t utf8_sequence(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (!len || p[0] > 0xf4 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) || (p[0] == 0xf0 && p[1] < 0x90) ||
        (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;
    return len;
}

/* n bytes at p: the offset of the first byte that is not valid UTF-8, or n. */
static size_t utf8_invalid_at(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t len = utf8_sequence(p + i, n - i);
        if (!len)
            return i;
        i += len;
    }
    return n;
}

cJSON *st_parse_header(const char *path, const unsigned char *p, size_t n, char *err, size_t errlen)
{
    size_t bad = utf8_invalid_at(p, n);
    if (bad < n) {
        err_set(err, errlen, "%s: safetensors header is not UTF-8 text (byte %zu of the header)", path, bad);
        return NULL;
    }
    const char *end = NULL;
    cJSON *h = cJSON_ParseWithLengthOpts((const char *)p, n, &end, 0);
    if (!cJSON_IsObject(h)) {
        err_set(err, errlen, "%s: safetensors header is not a JSON object", path);
        cJSON_Delete(h);
        return NULL;
    }
    size_t at = (size_t)(end - (const char *)p);
    while (at < n && strchr(" \t\r\n", p[at]) && p[at])
        at++;
    if (at < n) {
        err_set(err, errlen, "%s: safetensors header has bytes after its JSON object (byte %zu of %zu)", path, at, n);
        cJSON_Delete(h);
        return NULL;
    }
    return h;
}

/* The shape's element count into *n; -1 when a dimension is not a whole
 * number or the product overflows. */
static int shape_elements(const char *path, const cJSON *e, uint64_t *n, char *err, size_t errlen)
{
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!cJSON_IsArray(shape))
        return err_set(err, errlen, "%s: tensor '%s' has no shape", path, e->string);
    char what[300];
    snprintf(what, sizeof what, "tensor '%s' shape", e->string);
    const cJSON *d;
    uint64_t dim;
    *n = 1;
    cJSON_ArrayForEach(d, shape)
    {
        if (json_number_u64(d, what, 0, UINT64_MAX, &dim, path, err, errlen))
            return -1;
        if (checked_mul_u64(*n, dim, n))
            return err_set(err, errlen, "%s: tensor '%s' has a shape whose element count overflows", path, e->string);
    }
    return 0;
}

/* data_offsets [begin, end] with begin <= end, into the two. */
static int data_offsets(const char *path, const cJSON *e, uint64_t *begin, uint64_t *end, char *err, size_t errlen)
{
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
        return err_set(err, errlen, "%s: tensor '%s' has malformed data_offsets (not [begin, end])", path, e->string);
    char what[300];
    snprintf(what, sizeof what, "tensor '%s' data_offsets[0]", e->string);
    if (json_number_u64(cJSON_GetArrayItem(off, 0), what, 0, UINT64_MAX, begin, path, err, errlen))
        return -1;
    snprintf(what, sizeof what, "tensor '%s' data_offsets[1]", e->string);
    return json_number_u64(cJSON_GetArrayItem(off, 1), what, *begin, UINT64_MAX, end, path, err, errlen);
}

int st_check_entry(const char *path, const cJSON *e, char *err, size_t errlen)
{
    if (!cJSON_IsObject(e))
        return err_set(err, errlen, "%s: tensor '%s' is not an object of dtype, shape and data_offsets", path,
                       e->string);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    enum fb_dtype t;
    char names[128];
    if (!cJSON_IsString(dt) || st_wtype_parse(dt->valuestring, &t))
        return err_set(err, errlen, "%s: tensor '%s' has unsupported dtype %s (%s)", path, e->string,
                       cJSON_IsString(dt) ? dt->valuestring : "(none)", st_wtype_names(names, sizeof names));
    uint64_t n = 0, begin = 0, end = 0, len;
    if (shape_elements(path, e, &n, err, errlen) || data_offsets(path, e, &begin, &end, err, errlen))
        return -1;
    if (!wtype_row_fits(t, n))
        return err_set(err, errlen, "%s: tensor '%s' is not a whole number of %s blocks", path, e->string,
                       wtype_name(t));
    if (checked_mul_u64(n / wtype_block_elems(t), wtype_block_bytes(t), &len))
        return err_set(err, errlen, "%s: tensor '%s' has a shape whose byte count overflows", path, e->string);
    if (end - begin != len)
        return err_set(err, errlen, "%s: tensor '%s' spans %llu bytes but its shape and dtype need %llu", path,
                       e->string, (unsigned long long)(end - begin), (unsigned long long)len);
    return 0;
}

int st_check_metadata(const char *path, const cJSON *e, char *err, size_t errlen)
{
    if (!e)
        return 0;
    if (!cJSON_IsObject(e))
        return err_set(err, errlen, "%s: __metadata__ is not an object of strings", path);
    const cJSON *v;
    cJSON_ArrayForEach(v, e)
    {
        if (!cJSON_IsString(v))
            return err_set(err, errlen, "%s: __metadata__ key '%s' is not a string (the format allows only strings)",
                           path, v->string);
    }
    return 0;
}

struct st_range {
    uint64_t begin, end;
    const char *name;
};

static int by_offsets(const void *a, const void *b)
{
    const struct st_range *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct st_range *)a)->name, ((const struct st_range *)b)->name);
}

/* The tensors' ranges (entries already checked, __metadata__ left out);
 * NULL when out of memory. */
static struct st_range *collect_ranges(const cJSON *header, size_t *n)
{
    struct st_range *r = malloc(((size_t)cJSON_GetArraySize(header) + 1) * sizeof *r);
    const cJSON *e;
    *n = 0;
    cJSON_ArrayForEach(e, header)
    {
        if (!r || !strcmp(e->string, "__metadata__"))
            continue;
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
        r[*n] = (struct st_range){(uint64_t)cJSON_GetArrayItem(off, 0)->valuedouble,
                                  (uint64_t)cJSON_GetArrayItem(off, 1)->valuedouble, e->string};
        (*n)++;
    }
    return r;
}

static int check_unique(const char *path, struct st_range *r, size_t n, char *err, size_t errlen)
{
    qsort(r, n, sizeof *r, by_name);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(r[i - 1].name, r[i].name))
            return err_set(err, errlen, "%s: tensor '%s' is listed twice in the header", path, r[i].name);
    return 0;
}

/* Sorted by offsets, each range begins where the previous ended. */
static int check_tiling(const char *path, struct st_range *r, size_t n, uint64_t data_bytes, char *err, size_t errlen)
{
    qsort(r, n, sizeof *r, by_offsets);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].begin < at)
            return err_set(err, errlen, "%s: tensor '%s' (data bytes %llu..%llu) overlaps tensor '%s' (ending at %llu)",
                           path, r[i].name, (unsigned long long)r[i].begin, (unsigned long long)r[i].end,
                           r[i - 1].name, (unsigned long long)at);
        if (r[i].begin > at)
            return err_set(err, errlen,
                           "%s: data bytes %llu..%llu lie in no tensor (a gap before tensor '%s'): the tensors "
                           "must tile the data buffer",
                           path, (unsigned long long)at, (unsigned long long)r[i].begin, r[i].name);
        at = r[i].end;
    }
    if (at != data_bytes)
        return err_set(err, errlen,
                       "%s: the tensors cover %llu bytes of data but the file holds %llu after its header (%s)", path,
                       (unsigned long long)at, (unsigned long long)data_bytes,
                       at > data_bytes ? "truncated, or offsets past the end" : "bytes in no tensor at the end");
    return 0;
}

int st_check_layout(const char *path, const cJSON *header, uint64_t data_bytes, char *err, size_t errlen)
{
    size_t n;
    struct st_range *r = collect_ranges(header, &n);
    if (!r)
        return err_set(err, errlen, "%s: out of memory", path);
    int rc = check_unique(path, r, n, err, errlen) || check_tiling(path, r, n, data_bytes, err, errlen) ? -1 : 0;
    free(r);
    return rc;
}
