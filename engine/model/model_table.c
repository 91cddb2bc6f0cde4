#include "engine/model/model_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/model/model_format.h"

struct dram_range {
    uint64_t offset, bytes;
    const char *name;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct dram_range *)a)->name, ((const struct dram_range *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const struct dram_range *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* One entry: a named object whose offset and bytes lie inside f. */
static int read_entry(const cJSON *e, const struct tensor_file *f, struct dram_range *r, const char *path, char *err,
                      size_t errlen)
{
    uint64_t dram_bytes = f->bytes;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    if (!cJSON_IsObject(e) || !cJSON_IsString(name))
        return err_set(err, errlen, "%s: a \"%s\" \"tensors\" entry is not an object with a \"name\"", path,
                       f->section);
    char what[160];
    snprintf(what, sizeof what, "tensor '%.100s' \"offset\"", name->valuestring);
    if (json_number_u64(cJSON_GetObjectItemCaseSensitive(e, "offset"), what, 0, dram_bytes, &r->offset, path, err,
                        errlen))
        return -1;
    snprintf(what, sizeof what, "tensor '%.100s' \"bytes\"", name->valuestring);
    if (json_number_u64(cJSON_GetObjectItemCaseSensitive(e, "bytes"), what, 0, dram_bytes, &r->bytes, path, err,
                        errlen))
        return -1;
    if (!range_within(r->offset, r->bytes, dram_bytes))
        return err_set(err, errlen, "%s: tensor '%.100s' has a bad offset: %llu bytes at %llu pass the end of %s (%llu bytes)",
                       path, name->valuestring, (unsigned long long)r->bytes, (unsigned long long)r->offset,
                       f->file, (unsigned long long)dram_bytes);
    if (r->offset % DRAM_ALIGN)
        return err_set(err, errlen, "%s: tensor '%.100s' \"offset\" %llu is not a multiple of %u", path,
                       name->valuestring, (unsigned long long)r->offset, DRAM_ALIGN);
    r->name = name->valuestring;
    return 0;
}

/* Sorted by name, then by offset: no name twice, no bytes shared. */
static int check_ranges(struct dram_range *r, size_t n, const struct tensor_file *f, const char *path, char *err,
                        size_t errlen)
{
    qsort(r, n, sizeof *r, by_name);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(r[i - 1].name, r[i].name))
            return err_set(err, errlen, "%s: tensor '%.100s' is listed twice in \"%s\"", path, r[i].name, f->section);
    qsort(r, n, sizeof *r, by_offset);
    for (size_t i = 1; i < n; i++)
        if (r[i].offset < r[i - 1].offset + r[i - 1].bytes)
            return err_set(err, errlen, "%s: tensor '%.100s' (bytes %llu..%llu of %s) overlaps tensor '%.100s' (%llu..%llu)",
                           path, r[i].name, (unsigned long long)r[i].offset,
                           (unsigned long long)(r[i].offset + r[i].bytes), f->file, r[i - 1].name,
                           (unsigned long long)r[i - 1].offset, (unsigned long long)(r[i - 1].offset + r[i - 1].bytes));
    return 0;
}

int model_table_check(const cJSON *tensors, const struct tensor_file *f, const char *path, char *err, size_t errlen)
{
    if (!cJSON_IsArray(tensors))
        return err_set(err, errlen, "%s: \"%s\" has no \"tensors\" list", path, f->section);
    size_t n = 0;
    struct dram_range *r = malloc(((size_t)cJSON_GetArraySize(tensors) + 1) * sizeof *r);
    if (!r)
        return err_set(err, errlen, "%s: out of memory", path);
    const cJSON *e;
    int rc = 0;
    cJSON_ArrayForEach(e, tensors)
    {
        if ((rc = read_entry(e, f, &r[n++], path, err, errlen)) != 0)
            break;
    }
    if (rc == 0)
        rc = check_ranges(r, n, f, path, err, errlen);
    free(r);
    return rc;
}
