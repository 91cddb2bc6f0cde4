/* The GGUF header's parse (common/gguf_internal.h): every length
 * and count read from the file is compared with the bytes left before it
 * is used, so a short or lying file is refused where it first lies, and
 * no allocation is larger than the file could justify. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/gguf_internal.h"

/* The fewest bytes a key/value pair takes: a key length, one key byte (keys
 * are not empty), a type, a one-byte value. A tensor info: a name length,
 * one name byte, n_dims, one dim, a type, an offset. An array element:
 * its element type's size, a string's length, a nested array's element
 * type and count. */
enum { MIN_KV_BYTES = 8 + 1 + 4 + 1, MIN_TENSOR_INFO_BYTES = 8 + 1 + 4 + 8 + 4 + 8 };

struct rd {
    struct gguf_file *f;
    uint64_t at;
    char where[200]; /* "key 'general.name'", for the messages */
    char *err;
    size_t errlen;
};

static uint64_t left(const struct rd *r) { return r->f->size - r->at; }

/* n more bytes must be there for what (a printf-ready phrase). */
static int need(struct rd *r, uint64_t n, const char *what)
{
    if (n <= left(r))
        return 0;
    return err_set(r->err, r->errlen, "%s: truncated in %s: %s needs %llu bytes at byte %llu, the file has %zu",
                   r->f->path, r->where, what, (unsigned long long)n, (unsigned long long)r->at, r->f->size);
}

static int take_u32(struct rd *r, const char *what, uint32_t *v)
{
    if (need(r, 4, what))
        return -1;
    *v = (uint32_t)gguf_le(r->f->map + r->at, 4);
    r->at += 4;
    return 0;
}

static int take_u64(struct rd *r, const char *what, uint64_t *v)
{
    if (need(r, 8, what))
        return -1;
    *v = gguf_le(r->f->map + r->at, 8);
    r->at += 8;
    return 0;
}

/* A string (length, then bytes) into *p and *len, the bytes left in the map. */
static int take_string(struct rd *r, const char *what, const unsigned char **p, uint64_t *len)
{
    char phrase[160];
    if (take_u64(r, what, len))
        return -1;
    snprintf(phrase, sizeof phrase, "%s of %llu bytes", what, (unsigned long long)*len);
    if (need(r, *len, phrase))
        return -1;
    *p = r->f->map + r->at;
    r->at += *len;
    return 0;
}

/* The fewest bytes one element of type t takes (t already checked). */
static uint64_t min_elem_bytes(uint32_t t)
{
    if (t == GGUF_TYPE_STRING)
        return 8;
    if (t == GGUF_TYPE_ARRAY)
        return 4 + 8;
    return gguf_vtype_size(t);
}

static int read_value(struct rd *r, uint32_t type, int depth, struct gguf_value *v);

/* n bools at p: each byte 0 or 1. */
static int check_bools(struct rd *r, const unsigned char *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] > 1)
            return err_set(r->err, r->errlen, "%s: %s holds a bool of value %u at byte %llu (a bool is 0 or 1)",
                           r->f->path, r->where, p[i], (unsigned long long)(p - r->f->map + i));
    return 0;
}

/* An array's element type and count, checked against the bytes left. */
static int array_head(struct rd *r, int depth, struct gguf_value *v)
{
    uint32_t elem;
    if (depth >= GGUF_MAX_ARRAY_DEPTH)
        return err_set(r->err, r->errlen, "%s: %s nests arrays more than %d deep", r->f->path, r->where,
                       GGUF_MAX_ARRAY_DEPTH);
    if (take_u32(r, "an array's element type", &elem) || take_u64(r, "an array's length", &v->count))
        return -1;
    if (elem >= GGUF_TYPE_COUNT)
        return err_set(r->err, r->errlen, "%s: %s is an array of unknown value type %u (0..%d)", r->f->path, r->where,
                       elem, GGUF_TYPE_COUNT - 1);
    v->elem_type = (enum gguf_vtype)elem;
    if (v->count > left(r) / min_elem_bytes(elem))
        return err_set(r->err, r->errlen,
                       "%s: %s is an array of %llu %s elements, more than the %llu bytes left in the file could hold",
                       r->f->path, r->where, (unsigned long long)v->count, gguf_vtype_name(elem),
                       (unsigned long long)left(r));
    return 0;
}

static int read_array(struct rd *r, int depth, struct gguf_value *v)
{
    if (array_head(r, depth, v))
        return -1;
    uint64_t start = r->at, size = gguf_vtype_size(v->elem_type);
    v->data = r->f->map + start;
    if (size) { /* fixed-size elements: array_head's bound made them fit */
        if (v->elem_type == GGUF_TYPE_BOOL && check_bools(r, v->data, v->count))
            return -1;
        r->at += v->count * size;
    } else {
        struct gguf_value e;
        for (uint64_t i = 0; i < v->count; i++)
            if (read_value(r, v->elem_type, depth + 1, &e))
                return -1;
    }
    v->bytes = r->at - start;
    return 0;
}

static int read_value(struct rd *r, uint32_t type, int depth, struct gguf_value *v)
{
    memset(v, 0, sizeof *v);
    if (type >= GGUF_TYPE_COUNT)
        return err_set(r->err, r->errlen, "%s: %s has unknown value type %u (0..%d)", r->f->path, r->where, type,
                       GGUF_TYPE_COUNT - 1);
    v->type = (enum gguf_vtype)type;
    if (type == GGUF_TYPE_ARRAY)
        return read_array(r, depth, v);
    if (type == GGUF_TYPE_STRING)
        return take_string(r, "a string", &v->data, &v->bytes);
    v->bytes = gguf_vtype_size(type);
    if (need(r, v->bytes, "its value"))
        return -1;
    v->data = r->f->map + r->at;
    r->at += v->bytes;
    return type == GGUF_TYPE_BOOL ? check_bools(r, v->data, 1) : 0;
}

/* Key i's name, checked: not empty, no NUL byte. */
static int read_key(struct rd *r, uint64_t i, struct gguf_kv *kv)
{
    const unsigned char *p;
    snprintf(r->where, sizeof r->where, "key %llu of %llu", (unsigned long long)i + 1, (unsigned long long)r->f->n_kv);
    if (take_string(r, "its name", &p, &kv->key_len))
        return -1;
    if (kv->key_len == 0)
        return err_set(r->err, r->errlen, "%s: %s has an empty name", r->f->path, r->where);
    if (memchr(p, 0, kv->key_len))
        return err_set(r->err, r->errlen, "%s: %s has a NUL byte in its name", r->f->path, r->where);
    kv->key = (const char *)p; /* copied once every key is read */
    snprintf(r->where, sizeof r->where, "key '%.*s'", kv->key_len > 120 ? 120 : (int)kv->key_len, kv->key);
    return 0;
}

/* The keys' NUL-terminated copies in one block (their bytes were in the
 * file, so the block is smaller than it). */
static int copy_keys(struct rd *r)
{
    struct gguf_file *f = r->f;
    uint64_t total = 1;
    for (uint64_t i = 0; i < f->n_kv; i++)
        total += f->kv[i].key_len + 1;
    f->keys = malloc(total);
    if (!f->keys)
        return err_set(r->err, r->errlen, "%s: out of memory for %llu keys", f->path, (unsigned long long)f->n_kv);
    char *at = f->keys;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        memcpy(at, f->kv[i].key, f->kv[i].key_len);
        at[f->kv[i].key_len] = '\0';
        f->kv[i].key = at;
        at += f->kv[i].key_len + 1;
    }
    return 0;
}

static int read_kvs(struct rd *r)
{
    struct gguf_file *f = r->f;
    f->kv = calloc(f->n_kv ? f->n_kv : 1, sizeof *f->kv);
    if (!f->kv)
        return err_set(r->err, r->errlen, "%s: out of memory for %llu keys", f->path, (unsigned long long)f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        uint32_t type;
        if (read_key(r, i, &f->kv[i]) || take_u32(r, "its value type", &type) ||
            read_value(r, type, 0, &f->kv[i].value))
            return -1;
    }
    return copy_keys(r);
}

/* A tensor info's name: 1..GGUF_MAX_NAME - 1 bytes, no NUL. */
static int read_tensor_name(struct rd *r, uint64_t i, struct gguf_tensor *t)
{
    const unsigned char *p;
    uint64_t len;
    snprintf(r->where, sizeof r->where, "tensor info %llu of %llu", (unsigned long long)i + 1,
             (unsigned long long)r->f->n_tensors);
    if (take_string(r, "its name", &p, &len))
        return -1;
    if (len == 0 || len >= GGUF_MAX_NAME || memchr(p, 0, len))
        return err_set(r->err, r->errlen, "%s: %s has a name of %llu bytes%s (1 to %d, no NUL byte)", r->f->path,
                       r->where, (unsigned long long)len, memchr(p, 0, len) ? " holding a NUL" : "", GGUF_MAX_NAME - 1);
    memcpy(t->name, p, len);
    t->name[len] = '\0';
    snprintf(r->where, sizeof r->where, "tensor '%s'", t->name);
    return 0;
}

/* n_dims, then each dim: 1..GGUF_MAX_DIMS of them, none 0, their product
 * (the element count) not overflowing. */
static int read_dims(struct rd *r, struct gguf_tensor *t)
{
    if (take_u32(r, "its dimension count", &t->n_dims))
        return -1;
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
        return err_set(r->err, r->errlen, "%s: %s has %u dimensions (1 to %d)", r->f->path, r->where, t->n_dims,
                       GGUF_MAX_DIMS);
    t->elems = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t->dims[d] = 1;
        if (d < t->n_dims && take_u64(r, "a dimension", &t->dims[d]))
            return -1;
        if (t->dims[d] == 0)
            return err_set(r->err, r->errlen, "%s: %s has dimension %u of 0", r->f->path, r->where, d);
        if (t->dims[d] > UINT64_MAX / t->elems)
            return err_set(r->err, r->errlen, "%s: %s has dimensions whose element count overflows 64 bits", r->f->path,
                           r->where);
        t->elems *= t->dims[d];
    }
    return 0;
}

static int read_tensor_infos(struct rd *r)
{
    struct gguf_file *f = r->f;
    f->tensors = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *f->tensors);
    if (!f->tensors)
        return err_set(r->err, r->errlen, "%s: out of memory for %llu tensors", f->path,
                       (unsigned long long)f->n_tensors);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        struct gguf_tensor *t = &f->tensors[i];
        if (read_tensor_name(r, i, t) || read_dims(r, t) || take_u32(r, "its type", &t->type_code) ||
            take_u64(r, "its offset", &t->offset))
            return -1;
    }
    return 0;
}

/* Magic and version (1 refused by name, a big-endian file too), then the
 * two counts, each bounded by what the rest of the file could hold. */
static int read_counts(struct rd *r)
{
    struct gguf_file *f = r->f;
    snprintf(r->where, sizeof r->where, "the header");
    if (f->size < GGUF_HEADER_BYTES || memcmp(f->map, "GGUF", 4))
        return err_set(r->err, r->errlen, "%s: not a GGUF file (%s)", f->path,
                       f->size < 4                 ? "shorter than the magic"
                       : memcmp(f->map, "GGUF", 4) ? "no GGUF magic"
                                                   : "shorter than the 24-byte header");
    f->version = (uint32_t)gguf_le(f->map + 4, 4);
    uint32_t swapped = (uint32_t)f->map[4] << 24 | (uint32_t)f->map[5] << 16 | (uint32_t)f->map[6] << 8 | f->map[7];
    if (f->version == 1)
        return err_set(r->err, r->errlen, "%s: GGUF version 1, which flashbed does not read (versions 2 and 3)",
                       f->path);
    if (f->version != 2 && f->version != 3)
        return err_set(r->err, r->errlen, "%s: GGUF version %u%s, which flashbed does not read (versions 2 and 3)",
                       f->path, f->version, swapped == 2 || swapped == 3 ? " (a big-endian file)" : "");
    f->n_tensors = gguf_le(f->map + 8, 8);
    f->n_kv = gguf_le(f->map + 16, 8);
    r->at = GGUF_HEADER_BYTES;
    if (f->n_kv > left(r) / MIN_KV_BYTES)
        return err_set(r->err, r->errlen,
                       "%s: the header claims %llu keys, more than the %llu bytes after it could hold", f->path,
                       (unsigned long long)f->n_kv, (unsigned long long)left(r));
    if (f->n_tensors > (left(r) - f->n_kv * MIN_KV_BYTES) / MIN_TENSOR_INFO_BYTES)
        return err_set(
            r->err, r->errlen,
            "%s: the header claims %llu tensors, more than the %llu bytes after it could hold (with %llu keys)",
            f->path, (unsigned long long)f->n_tensors, (unsigned long long)left(r), (unsigned long long)f->n_kv);
    return 0;
}

int gguf_read_header(struct gguf_file *f, uint64_t *infos_end, char *err, size_t errlen)
{
    struct rd r = {.f = f, .err = err, .errlen = errlen};
    if (read_counts(&r) || read_kvs(&r) || read_tensor_infos(&r))
        return -1;
    *infos_end = r.at;
    return 0;
}
