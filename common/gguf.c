/* Opening and closing a GGUF file, its tensors, and the names of its
 * codes (common/gguf.h). The metadata's readers are in
 * gguf_meta.c, the header's parse in gguf_read.c, its checks in
 * gguf_check.c. */
#include "common/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "common/gguf_internal.h"

uint64_t gguf_vtype_size(uint32_t t)
{
    static const uint8_t size[GGUF_TYPE_COUNT] = {
        [GGUF_TYPE_UINT8] = 1,  [GGUF_TYPE_INT8] = 1,  [GGUF_TYPE_UINT16] = 2,  [GGUF_TYPE_INT16] = 2,
        [GGUF_TYPE_UINT32] = 4, [GGUF_TYPE_INT32] = 4, [GGUF_TYPE_FLOAT32] = 4, [GGUF_TYPE_BOOL] = 1,
        [GGUF_TYPE_UINT64] = 8, [GGUF_TYPE_INT64] = 8, [GGUF_TYPE_FLOAT64] = 8,
    };
    return t < GGUF_TYPE_COUNT ? size[t] : 0;
}

const char *gguf_vtype_name(uint32_t t)
{
    static const char *const name[GGUF_TYPE_COUNT] = {
        "uint8", "int8",   "uint16", "int16",  "uint32", "int32",   "float32",
        "bool",  "string", "array",  "uint64", "int64",  "float64",
    };
    return t < GGUF_TYPE_COUNT ? name[t] : "?";
}

const char *gguf_ggml_type_name(uint32_t code)
{
    /* ggml's ggml_type numbers; the gaps were never used or were removed
     * before GGUF (4, 5) and are still reserved */
    static const char *const name[] = {
        "F32",      "F16",      "Q4_0",    "Q4_1",  NULL,         NULL,         "Q5_0",       "Q5_1",
        "Q8_0",     "Q8_1",     "Q2_K",    "Q3_K",  "Q4_K",       "Q5_K",       "Q6_K",       "Q8_K",
        "IQ2_XXS",  "IQ2_XS",   "IQ3_XXS", "IQ1_S", "IQ4_NL",     "IQ3_S",      "IQ2_S",      "IQ4_XS",
        "I8",       "I16",      "I32",     "I64",   "F64",        "IQ1_M",      "BF16",       "Q4_0_4_4",
        "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",   "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
    };
    return code < sizeof name / sizeof name[0] ? name[code] : NULL;
}

/* path mapped read-only into f->map and f->size. */
static int map_file(struct gguf_file *f, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || st.st_size < (off_t)GGUF_HEADER_BYTES) {
        close(fd);
        return err_set(err, errlen, "%s: not a GGUF file (%s)", path,
                       S_ISREG(st.st_mode) ? "shorter than the 24-byte header" : "not a regular file");
    }
    f->size = (size_t)st.st_size;
    f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        return err_set(err, errlen, "%s: cannot map: %s", path, strerror(errno));
    }
    return 0;
}

int gguf_open(struct gguf_file *f, const char *path, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    uint64_t infos_end;
    if (map_file(f, path, err, errlen) || gguf_read_header(f, &infos_end, err, errlen) ||
        gguf_check(f, infos_end, err, errlen)) {
        gguf_close(f);
        return -1;
    }
    return 0;
}

void gguf_close(struct gguf_file *f)
{
    if (f->map)
        munmap((void *)f->map, f->size);
    free(f->kv);
    free(f->keys);
    free(f->tensors);
    memset(f, 0, sizeof *f);
}

const struct gguf_tensor *gguf_tensor_find(const struct gguf_file *f, const char *name)
{
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (!strcmp(f->tensors[i].name, name))
            return &f->tensors[i];
    return NULL;
}

const void *gguf_tensor_data(const struct gguf_file *f, const struct gguf_tensor *t)
{
    return f->map + f->data_start + t->offset;
}

int gguf_tensor_get(const struct gguf_file *f, const char *name, const struct gguf_tensor **t, const void **data,
                    char *err, size_t errlen)
{
    *t = gguf_tensor_find(f, name);
    if (!*t)
        return err_set(err, errlen, "%s: no tensor '%s'", f->path, name);
    if (!(*t)->known) {
        const char *type = gguf_ggml_type_name((*t)->type_code);
        return err_set(err, errlen, "%s: tensor %s has type %s (code %u), which flashbed does not read", f->path, name,
                       type ? type : "unknown to ggml", (*t)->type_code);
    }
    if (data)
        *data = gguf_tensor_data(f, *t);
    return 0;
}
