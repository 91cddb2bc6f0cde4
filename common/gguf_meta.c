/* A GGUF file's metadata read in place (common/gguf.h): a key
 * found, its value read as the type the caller names, arrays walked
 * without copying. Every value was checked at open (its bytes inside the
 * file, bools 0 or 1), so nothing here reads past them. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/gguf_internal.h"

const struct gguf_kv *gguf_find(const struct gguf_file *f, const char *key)
{
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (!strcmp(f->kv[i].key, key))
            return &f->kv[i];
    return NULL;
}

bool gguf_str_eq(const struct gguf_value *v, const char *s)
{
    size_t n = strlen(s);
    return v->type == GGUF_TYPE_STRING && v->bytes == n && !memcmp(v->data, s, n);
}

static bool is_unsigned(uint32_t t)
{
    return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_UINT64;
}

static bool is_signed(uint32_t t)
{
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}

/* n bytes at p as a two's complement number. */
static int64_t signed_le(const unsigned char *p, unsigned n)
{
    uint64_t u = gguf_le(p, n);
    if (n < 8 && (u >> (8 * n - 1)))
        u |= ~(uint64_t)0 << (8 * n);
    int64_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static double float_le(const unsigned char *p, unsigned n)
{
    uint64_t u = gguf_le(p, n);
    if (n == 4) {
        uint32_t u32 = (uint32_t)u;
        float x;
        memcpy(&x, &u32, sizeof x);
        return x;
    }
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* key's pair, or -1 naming it as missing. */
static const struct gguf_kv *find_or_fail(const struct gguf_file *f, const char *key, char *err, size_t errlen)
{
    const struct gguf_kv *kv = gguf_find(f, key);
    if (!kv)
        err_set(err, errlen, "%s: key '%s' is missing", f->path, key);
    return kv;
}

static int wrong_type(const struct gguf_file *f, const struct gguf_kv *kv, const char *want, char *err, size_t errlen)
{
    return err_set(err, errlen, "%s: key '%s' is a %s, not %s", f->path, kv->key, gguf_vtype_name(kv->value.type),
                   want);
}

/* key's integer value, of any integer type, inside [min, max]. */
static int get_int(const struct gguf_file *f, const char *key, int64_t min, uint64_t max, bool *neg, uint64_t *mag,
                   char *err, size_t errlen)
{
    const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
    if (!kv)
        return -1;
    const struct gguf_value *v = &kv->value;
    if (is_unsigned(v->type)) {
        *neg = false, *mag = gguf_le(v->data, (unsigned)v->bytes);
    } else if (is_signed(v->type)) {
        int64_t s = signed_le(v->data, (unsigned)v->bytes);
        *neg = s < 0, *mag = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    } else
        return wrong_type(f, kv, "an integer", err, errlen);
    uint64_t min_mag = min < 0 ? (uint64_t)0 - (uint64_t)min : 0;
    if ((*neg && *mag > min_mag) || (!*neg && *mag > max))
        return err_set(err, errlen, "%s: key '%s' is %s%llu, outside %lld..%llu", f->path, key, *neg ? "-" : "",
                       (unsigned long long)*mag, (long long)min, (unsigned long long)max);
    return 0;
}

int gguf_get_u32(const struct gguf_file *f, const char *key, uint32_t *out, char *err, size_t errlen)
{
    bool neg = false; /* set by get_int when it returns 0 (GCC -O3 cannot see it) */
    uint64_t mag = 0;
    if (get_int(f, key, 0, UINT32_MAX, &neg, &mag, err, errlen))
        return -1;
    *out = (uint32_t)mag;
    return 0;
}

int gguf_get_u64(const struct gguf_file *f, const char *key, uint64_t *out, char *err, size_t errlen)
{
    bool neg = false; /* set by get_int when it returns 0 (GCC -O3 cannot see it) */
    uint64_t mag = 0;
    if (get_int(f, key, 0, UINT64_MAX, &neg, &mag, err, errlen))
        return -1;
    *out = mag;
    return 0;
}

int gguf_get_i32(const struct gguf_file *f, const char *key, int32_t *out, char *err, size_t errlen)
{
    bool neg = false; /* set by get_int when it returns 0 (GCC -O3 cannot see it) */
    uint64_t mag = 0;
    if (get_int(f, key, INT32_MIN, INT32_MAX, &neg, &mag, err, errlen))
        return -1;
    *out = neg ? (int32_t)(-(int64_t)mag) : (int32_t)mag;
    return 0;
}

int gguf_get_f32(const struct gguf_file *f, const char *key, float *out, char *err, size_t errlen)
{
    const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
    if (!kv)
        return -1;
    if (kv->value.type != GGUF_TYPE_FLOAT32 && kv->value.type != GGUF_TYPE_FLOAT64)
        return wrong_type(f, kv, "a float", err, errlen);
    double d = float_le(kv->value.data, (unsigned)kv->value.bytes);
    if (isfinite(d) && fabs(d) > FLT_MAX) /* the conversion would be undefined */
        return err_set(err, errlen, "%s: key '%s' is %g, outside float32's range", f->path, key, d);
    *out = (float)d;
    return 0;
}

int gguf_get_bool(const struct gguf_file *f, const char *key, bool *out, char *err, size_t errlen)
{
    const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
    if (!kv)
        return -1;
    if (kv->value.type != GGUF_TYPE_BOOL)
        return wrong_type(f, kv, "a bool", err, errlen);
    *out = kv->value.data[0] != 0;
    return 0;
}

int gguf_get_str(const struct gguf_file *f, const char *key, const char **s, size_t *len, char *err, size_t errlen)
{
    const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
    if (!kv)
        return -1;
    if (kv->value.type != GGUF_TYPE_STRING)
        return wrong_type(f, kv, "a string", err, errlen);
    *s = (const char *)kv->value.data;
    *len = (size_t)kv->value.bytes;
    return 0;
}

int gguf_get_array(const struct gguf_file *f, const char *key, uint32_t elem, struct gguf_value *out, char *err,
                   size_t errlen)
{
    const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
    if (!kv)
        return -1;
    if (kv->value.type != GGUF_TYPE_ARRAY)
        return wrong_type(f, kv, "an array", err, errlen);
    if (elem < GGUF_TYPE_COUNT && kv->value.elem_type != elem)
        return err_set(err, errlen, "%s: key '%s' is an array of %s, not of %s", f->path, key,
                       gguf_vtype_name(kv->value.elem_type), gguf_vtype_name(elem));
    *out = kv->value;
    return 0;
}

/* Element i's bytes when a holds fixed-size elements and i is inside. */
static const unsigned char *elem_at(const struct gguf_value *a, uint64_t i, unsigned *size)
{
    *size = (unsigned)gguf_vtype_size(a->elem_type);
    if (a->type != GGUF_TYPE_ARRAY || !*size || i >= a->count)
        return NULL;
    return a->data + i * *size;
}

uint64_t gguf_elem_uint(const struct gguf_value *a, uint64_t i)
{
    unsigned size;
    const unsigned char *p = elem_at(a, i, &size);
    return p && (is_unsigned(a->elem_type) || a->elem_type == GGUF_TYPE_BOOL) ? gguf_le(p, size) : 0;
}

int64_t gguf_elem_int(const struct gguf_value *a, uint64_t i)
{
    unsigned size;
    const unsigned char *p = elem_at(a, i, &size);
    return p && is_signed(a->elem_type) ? signed_le(p, size) : 0;
}

double gguf_elem_float(const struct gguf_value *a, uint64_t i)
{
    unsigned size;
    const unsigned char *p = elem_at(a, i, &size);
    return p && (a->elem_type == GGUF_TYPE_FLOAT32 || a->elem_type == GGUF_TYPE_FLOAT64) ? float_le(p, size) : 0;
}

void gguf_cursor_init(struct gguf_cursor *c, const struct gguf_value *array)
{
    bool is_array = array->type == GGUF_TYPE_ARRAY;
    c->at = is_array ? array->data : NULL;
    c->left = is_array ? array->count : 0;
    c->type = is_array ? array->elem_type : GGUF_TYPE_UINT8;
}

/* The bytes of the value of type t at p, as gguf_read.c checked them. */
static uint64_t value_at(const unsigned char *p, enum gguf_vtype t, struct gguf_value *v)
{
    memset(v, 0, sizeof *v);
    v->type = t;
    if (t == GGUF_TYPE_STRING) {
        v->bytes = gguf_le(p, 8);
        v->data = p + 8;
        return 8 + v->bytes;
    }
    if (t != GGUF_TYPE_ARRAY) {
        v->bytes = gguf_vtype_size(t);
        v->data = p;
        return v->bytes;
    }
    v->elem_type = (enum gguf_vtype)gguf_le(p, 4);
    v->count = gguf_le(p + 4, 8);
    v->data = p + 12;
    uint64_t size = gguf_vtype_size(v->elem_type);
    if (size)
        v->bytes = v->count * size;
    else {
        struct gguf_value e;
        const unsigned char *q = v->data;
        for (uint64_t i = 0; i < v->count; i++)
            q += value_at(q, v->elem_type, &e);
        v->bytes = (uint64_t)(q - v->data);
    }
    return 12 + v->bytes;
}

int gguf_cursor_next(struct gguf_cursor *c, struct gguf_value *v)
{
    if (!c->left)
        return 0;
    c->at += value_at(c->at, c->type, v);
    c->left--;
    return 1;
}
