#include "engine/import/safetensors.h"

#include "common/atomic_file.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/import/safetensors_rules.h"
#include "engine/model/dtype.h"

/* Each tensor entry by the format's rules, then its range inside the
 * data (data_start + end could wrap: compared inside the data, and printed
 * as the sum's two terms), then the entries together. */
static int check_header(const struct st_file *f, char *err, size_t errlen)
{
    const cJSON *e;
    int n_metadata = 0;
    cJSON_ArrayForEach(e, f->header)
    {
        if (!strcmp(e->string, "__metadata__")) {
            if (n_metadata++)
                return err_set(err, errlen, "%s: __metadata__ is listed twice in the header", f->path);
            if (st_check_metadata(f->path, e, err, errlen))
                return -1;
            continue;
        }
        if (st_check_entry(f->path, e, err, errlen))
            return -1;
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
        uint64_t begin = (uint64_t)cJSON_GetArrayItem(off, 0)->valuedouble;
        uint64_t end = (uint64_t)cJSON_GetArrayItem(off, 1)->valuedouble;
        if (!range_within(begin, end - begin, f->size - f->data_start))
            return err_set(err, errlen, "%s: tensor '%s' ends at byte %zu + %llu, past the end of the file (%zu bytes)",
                           f->path, e->string, f->data_start, (unsigned long long)end, f->size);
    }
    return st_check_layout(f->path, f->header, f->size - f->data_start, err, errlen);
}

/* The 8-byte header length: inside the file and the format's limit. */
static int check_header_length(const char *path, uint64_t hlen, size_t size, char *err, size_t errlen)
{
    if (hlen > ST_MAX_HEADER_BYTES)
        return err_set(err, errlen, "%s: not a safetensors file (header length %llu is over the format's limit of %u bytes)",
                       path, (unsigned long long)hlen, ST_MAX_HEADER_BYTES);
    if (hlen > size - 8)
        return err_set(err, errlen, "%s: not a safetensors file (header length %llu, file %zu bytes)", path,
                       (unsigned long long)hlen, size);
    return 0;
}

static int open_file(struct st_file *f, const char *path, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    f->size = (size_t)st.st_size;
    uint64_t hlen = 0;
    if (f->size < 8 || pread(fd, &hlen, 8, 0) != 8) {
        err_set(err, errlen, "%s: not a safetensors file (%zu bytes, shorter than the 8-byte header length)", path,
                f->size);
        close(fd);
        return -1;
    }
    hlen = le64toh(hlen);
    if (check_header_length(path, hlen, f->size, err, errlen)) {
        close(fd);
        return -1;
    }
    f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        err_set(err, errlen, "%s: cannot map: %s", path, strerror(errno));
        return -1;
    }
    f->data_start = 8 + (size_t)hlen;
    f->header = st_parse_header(path, f->map + 8, (size_t)hlen, err, errlen);
    return f->header ? check_header(f, err, errlen) : -1;
}

static void close_file(struct st_file *f)
{
    if (f->map)
        munmap((void *)f->map, f->size);
    cJSON_Delete(f->header);
    memset(f, 0, sizeof *f);
}

/* A folder without an index: its one model.safetensors. */
static int open_single(struct st_set *s, const char *dir, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    s->files = calloc(1, sizeof *s->files);
    s->n_files = 1;
    if (access(path, R_OK) != 0) {
        err_set(err, errlen, "%s: neither model.safetensors nor model.safetensors.index.json", dir);
        st_close(s);
        return -1;
    }
    if (open_file(&s->files[0], path, err, errlen)) {
        st_close(s);
        return -1;
    }
    return 0;
}

/* The index's "weight_map", detached from the rest of it (which nothing
 * needs); NULL when the file cannot be read or parsed. Closes idx. */
static cJSON *read_weight_map(FILE *idx)
{
    fseek(idx, 0, SEEK_END);
    long n = ftell(idx);
    fseek(idx, 0, SEEK_SET);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text && fread(text, 1, (size_t)n, idx) == (size_t)n)
        text[n] = '\0';
    else {
        free(text);
        text = NULL;
    }
    fclose(idx);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    cJSON *wm = cJSON_DetachItemFromObjectCaseSensitive(root, "weight_map");
    cJSON_Delete(root);
    return wm;
}

/* The file of s holding path, or NULL. */
static const struct st_file *shard_named(const struct st_set *s, const char *path)
{
    for (int i = 0; i < s->n_files; i++)
        if (!strcmp(s->files[i].path, path))
            return &s->files[i];
    return NULL;
}

/* The index and its shards agree: each tensor the weight_map names lies in
 * the shard it names, and no shard holds a tensor the weight_map places in
 * another (one held by two shards would leave which copy is meant to the
 * search order). A tensor the index does not list is read where it lies,
 * as transformers loads a shard's every tensor. */
static int check_index(const struct st_set *s, const char *dir, const char *index, char *err, size_t errlen)
{
    char shard[4200];
    const cJSON *e;
    cJSON_ArrayForEach(e, s->weight_map)
    {
        snprintf(shard, sizeof shard, "%s/%s", dir, e->valuestring);
        if (!cJSON_GetObjectItemCaseSensitive(shard_named(s, shard)->header, e->string))
            return err_set(err, errlen, "%s: weight_map places tensor '%s' in %s, which does not hold it", index,
                           e->string, e->valuestring);
    }
    for (int i = 0; i < s->n_files; i++)
        cJSON_ArrayForEach(e, s->files[i].header)
        {
            const cJSON *wm = cJSON_GetObjectItemCaseSensitive(s->weight_map, e->string);
            if (!strcmp(e->string, "__metadata__"))
                continue;
            if (!wm)
                continue;
            snprintf(shard, sizeof shard, "%s/%s", dir, wm->valuestring);
            if (strcmp(shard, s->files[i].path))
                return err_set(err, errlen, "%s holds tensor '%s', which %s places in %s", s->files[i].path, e->string,
                               index, wm->valuestring);
        }
    return 0;
}

/* One st_file per distinct shard the weight map names (many tensors share
 * a shard); index is the index file's path, for the messages. */
static int open_shards(struct st_set *s, const char *dir, const char *index, char *err, size_t errlen)
{
    int cap = cJSON_GetArraySize(s->weight_map);
    s->files = calloc((size_t)cap + 1, sizeof *s->files);
    const cJSON *e;
    cJSON_ArrayForEach(e, s->weight_map)
    {
        /* a shard is a file beside the index, never a path elsewhere */
        if (!cJSON_IsString(e) || strchr(e->valuestring, '/')) {
            err_set(err, errlen, "%s: weight_map entry '%s' is not a file name", index, e->string);
            st_close(s);
            return -1;
        }
        char shard[4200];
        snprintf(shard, sizeof shard, "%s/%s", dir, e->valuestring);
        int seen = 0;
        for (int i = 0; i < s->n_files; i++)
            seen |= !strcmp(s->files[i].path, shard);
        if (seen)
            continue;
        if (open_file(&s->files[s->n_files++], shard, err, errlen)) {
            st_close(s);
            return -1;
        }
    }
    if (check_index(s, dir, index, err, errlen)) {
        st_close(s);
        return -1;
    }
    return 0;
}

int st_open(struct st_set *s, const char *dir, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    FILE *idx = fopen(path, "rb");
    if (!idx)
        return open_single(s, dir, err, errlen);
    cJSON *wm = read_weight_map(idx);
    if (!cJSON_IsObject(wm)) {
        err_set(err, errlen, "%s: no \"weight_map\" object", path);
        cJSON_Delete(wm);
        return -1;
    }
    s->weight_map = wm;
    return open_shards(s, dir, path, err, errlen);
}

void st_close(struct st_set *s)
{
    for (int i = 0; s->files && i < s->n_files; i++)
        close_file(&s->files[i]);
    free(s->files);
    cJSON_Delete(s->weight_map);
    memset(s, 0, sizeof *s);
}

static const struct st_file *find(const struct st_set *s, const char *name, const cJSON **entry)
{
    for (int i = 0; i < s->n_files; i++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(s->files[i].header, name);
        if (e) {
            *entry = e;
            return &s->files[i];
        }
    }
    return NULL;
}

int st_has(const struct st_set *s, const char *name)
{
    const cJSON *e;
    return find(s, name, &e) != NULL;
}

struct st_dtypes st_dtype_census(const struct st_set *s)
{
    struct st_dtypes d = {0, 0};
    for (int i = 0; i < s->n_files; i++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, s->files[i].header)
        {
            enum fb_dtype t;
            const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
            if (!cJSON_IsString(dt) || st_wtype_parse(dt->valuestring, &t)) /* __metadata__ */
                continue;
            if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "shape")) >= 2)
                d.matrices |= 1u << t;
            else
                d.vectors |= 1u << t;
        }
    }
    return d;
}

enum fb_dtype st_matrix_dtype(struct st_dtypes d)
{
    for (int t = 0; t < DTYPE_COUNT; t++)
        if (d.matrices == 1u << t)
            return (enum fb_dtype)t;
    return DTYPE_F32;
}

const char *st_dtype_mask_name(unsigned mask, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int t = 0; t < DTYPE_COUNT; t++)
        if (mask & (1u << t) && at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "+" : "", wtype_name((enum fb_dtype)t));
    if (!at)
        snprintf(buf, len, "none");
    return buf;
}

/* A NaN or infinite weight poisons every logit it reaches: one pass over
 * what was just copied costs little beside reading it. n when all are finite. */
static uint64_t first_non_finite(const float *v, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return i;
    return n;
}

/* The i-th 16-bit value at p, which may sit at any byte offset. */
static uint16_t u16_at(const unsigned char *p, uint64_t i)
{
    uint16_t v;
    memcpy(&v, p + 2 * i, sizeof v);
    return v;
}

/* n values of dtype t at src (any byte offset) as floats into out. */
static void widen(float *out, const unsigned char *src, enum fb_dtype t, uint64_t n)
{
    switch (t) {
    case DTYPE_F32:
        memcpy(out, src, n * sizeof *out);
        break;
    case DTYPE_F16:
        for (uint64_t i = 0; i < n; i++)
            out[i] = f16_to_f32(u16_at(src, i));
        break;
    case DTYPE_BF16:
        for (uint64_t i = 0; i < n; i++)
            out[i] = bf16_to_f32(u16_at(src, i));
        break;
    case DTYPE_Q4_0: /* safetensors holds no block formats (st_wtype_parse */
    case DTYPE_Q4_1: /* refuses them by name); were one here, its decode */
    case DTYPE_Q5_0: /* reads any byte offset */
    case DTYPE_Q5_1:
    case DTYPE_Q8_0:
    case DTYPE_Q2_K:
    case DTYPE_Q3_K:
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
    case DTYPE_Q6_K:
        dtype_to_f32(out, src, t, (size_t)n);
        break;
    }
}

float *st_read_f32(const struct st_set *s, const char *name, int ndim, const uint64_t *dims, char *err,
                   size_t errlen)
{
    const cJSON *e;
    const struct st_file *f = find(s, name, &e);
    if (!f) {
        err_set(err, errlen, "%s: tensor '%s' is missing", s->n_files ? s->files[0].path : "safetensors", name);
        return NULL;
    }
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    uint64_t n = 1;
    int ok = cJSON_GetArraySize(shape) == ndim;
    for (int i = 0; ok && i < ndim; i++) {
        ok = (uint64_t)cJSON_GetArrayItem(shape, i)->valuedouble == dims[i];
        n *= dims[i];
    }
    if (!ok) {
        char want[128] = "", *p = want;
        for (int i = 0; i < ndim; i++)
            p += snprintf(p, (size_t)(want + sizeof want - p), i ? ", %llu" : "%llu", (unsigned long long)dims[i]);
        err_set(err, errlen, "%s: tensor '%s' does not have the shape [%s] that config.json implies", f->path,
                name, want);
        return NULL;
    }
    enum fb_dtype t = DTYPE_F32; /* the dtype was checked when the header was read */
    st_wtype_parse(cJSON_GetObjectItemCaseSensitive(e, "dtype")->valuestring, &t);
    uint64_t begin = (uint64_t)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e, "data_offsets"), 0)->valuedouble;
    float *out = malloc((n ? n : 1) * sizeof *out);
    if (!out) {
        err_set(err, errlen, "%s: out of memory reading tensor '%s'", f->path, name);
        return NULL;
    }
    /* the data may sit at any byte offset: copy out rather than cast */
    const unsigned char *src = f->map + f->data_start + begin;
    widen(out, src, t, n);
    uint64_t bad = first_non_finite(out, n);
    if (bad < n) {
        err_set(err, errlen, "%s: tensor '%s' holds a non-finite value (%g) at element %llu", f->path, name,
                (double)out[bad], (unsigned long long)bad);
        free(out);
        return NULL;
    }
    return out;
}

int st_open_file(struct st_set *s, const char *path, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->files = calloc(1, sizeof *s->files);
    if (!s->files)
        return err_set(err, errlen, "%s: out of memory", path);
    s->n_files = 1;
    if (open_file(&s->files[0], path, err, errlen) != 0) {
        st_close(s);
        return -1;
    }
    return 0;
}

static uint64_t tensor_elems(const struct st_tensor *t)
{
    uint64_t n = 1;
    for (int k = 0; k < t->ndim; k++)
        n *= t->dims[k];
    return n;
}

/* The header: names, dtypes, shapes, byte ranges in order; padded to 8. */
static char *st_header(const struct st_tensor *t, int n, const cJSON *metadata)
{
    cJSON *h = cJSON_CreateObject();
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t bytes = wtype_row_bytes(t[i].dtype, tensor_elems(&t[i]));
        cJSON *e = cJSON_AddObjectToObject(h, t[i].name);
        cJSON_AddStringToObject(e, "dtype", wtype_traits(t[i].dtype)->upper_name); /* "F16": safetensors' */
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        for (int k = 0; k < t[i].ndim; k++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].dims[k]));
        cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + bytes)));
        off += bytes;
    }
    if (metadata)
        cJSON_AddItemToObject(h, "__metadata__", cJSON_Duplicate(metadata, 1));
    char *text = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    return text;
}

/* The tensor's bytes in its dtype, converted a chunk at a time (one
 * fwrite per 4096 elements, not one per element). */
static int write_tensor(FILE *f, const struct st_tensor *t)
{
    uint64_t n = tensor_elems(t);
    float chunk[4096]; /* 4096 weights of a type of at most 4 bytes a weight (f32) */
    for (uint64_t i = 0; i < n; i += 4096) {
        size_t k = n - i < 4096 ? (size_t)(n - i) : 4096, bytes = wtype_row_bytes(t->dtype, k);
        if (bytes > sizeof chunk)
            return -1;
        if (dtype_from_f32(chunk, t->dtype, t->data + i, k) || fwrite(chunk, 1, bytes, f) != bytes)
            return -1;
    }
    return 0;
}

int st_write_header(FILE *f, const struct st_tensor *t, int n, const cJSON *metadata)
{
    char *text = st_header(t, n, metadata);
    if (!text)
        return -1;
    size_t tl = strlen(text), pad = (8 - tl % 8) % 8;
    uint64_t hlen = tl + pad;
    int bad = fwrite(&hlen, 8, 1, f) != 1 || fwrite(text, 1, tl, f) != tl || fwrite("        ", 1, pad, f) != pad;
    free(text);
    return bad ? -1 : 0;
}

int st_write(const char *path, const struct st_tensor *t, int n, const cJSON *metadata, char *err, size_t errlen)
{
    struct atomic_file af;
    if (atomic_open(&af, NULL, path, err, errlen) != 0)
        return -1;
    errno = 0;
    int bad = st_write_header(af.f, t, n, metadata) != 0;
    for (int i = 0; i < n && !bad; i++)
        bad = write_tensor(af.f, &t[i]) != 0;
    if (bad) {
        int e = errno; /* the failed fwrite's */
        atomic_abort(&af);
        return err_set(err, errlen, "%s: write failed: %s", path, e ? strerror(e) : "short write");
    }
    return atomic_commit(&af, err, errlen);
}
