/* The checks over a parsed GGUF header (common/gguf_internal.h):
 * unique keys, general.alignment, the data section, each tensor's row and
 * range, unique tensor names, tensors apart. Sorting needs one index per
 * key or tensor: bounded by the counts the parse already bounded. */
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/errbuf.h"
#include "common/gguf_internal.h"

static int by_key(const void *a, const void *b)
{
    return strcmp((*(const struct gguf_kv *const *)a)->key, (*(const struct gguf_kv *const *)b)->key);
}

static int check_unique_keys(const struct gguf_file *f, char *err, size_t errlen)
{
    const struct gguf_kv **k = malloc((f->n_kv ? f->n_kv : 1) * sizeof *k);
    if (!k)
        return err_set(err, errlen, "%s: out of memory for %llu keys", f->path, (unsigned long long)f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++)
        k[i] = &f->kv[i];
    qsort(k, f->n_kv, sizeof *k, by_key);
    int rc = 0;
    for (uint64_t i = 1; i < f->n_kv && !rc; i++)
        if (!strcmp(k[i - 1]->key, k[i]->key))
            rc = err_set(err, errlen, "%s: key '%.120s' appears twice", f->path, k[i]->key);
    free(k);
    return rc;
}

/* general.alignment: a uint32, a nonzero power of two; 32 when absent. */
static int read_alignment(struct gguf_file *f, char *err, size_t errlen)
{
    const struct gguf_kv *kv = gguf_find(f, "general.alignment");
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    if (!kv)
        return 0;
    if (kv->value.type != GGUF_TYPE_UINT32)
        return err_set(err, errlen, "%s: key 'general.alignment' is a %s (the format's is a uint32)", f->path,
                       gguf_vtype_name(kv->value.type));
    uint64_t a = gguf_le(kv->value.data, 4);
    if (a == 0 || (a & (a - 1)))
        return err_set(err, errlen, "%s: key 'general.alignment' is %llu, not a nonzero power of two", f->path,
                       (unsigned long long)a);
    f->alignment = a;
    return 0;
}

/* One tensor alone: its offset aligned, its type's row, its bytes inside
 * the data section (an unknown type: at least its first byte). */
static int check_tensor(const struct gguf_file *f, struct gguf_tensor *t, char *err, size_t errlen)
{
    uint64_t data_bytes = f->size - f->data_start;
    if (t->offset % f->alignment)
        return err_set(err, errlen, "%s: tensor '%s' has offset %llu, not a multiple of the alignment %llu", f->path,
                       t->name, (unsigned long long)t->offset, (unsigned long long)f->alignment);
    t->known = wtype_from_code(t->type_code, &t->type) == 0;
    if (t->known) {
        if (!wtype_row_fits(t->type, t->dims[0]))
            return err_set(
                err, errlen, "%s: tensor '%s' has rows of %llu elements, not a whole number of %s blocks (%u)", f->path,
                t->name, (unsigned long long)t->dims[0], wtype_traits(t->type)->upper_name, wtype_block_elems(t->type));
        uint64_t blocks = t->elems / wtype_block_elems(t->type);
        if (checked_mul_u64(blocks, wtype_block_bytes(t->type), &t->bytes))
            return err_set(err, errlen, "%s: tensor '%s' has a byte count that overflows 64 bits", f->path, t->name);
    }
    if (!range_within(t->offset, t->known ? t->bytes : 1, data_bytes))
        return err_set(err, errlen,
                       "%s: tensor '%s' (%llu bytes at offset %llu of the data section) ends past the end of the file "
                       "(the data section holds %llu bytes)",
                       f->path, t->name, (unsigned long long)(t->known ? t->bytes : 1), (unsigned long long)t->offset,
                       (unsigned long long)data_bytes);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct gguf_tensor *const *)a)->name, (*(const struct gguf_tensor *const *)b)->name);
}

/* By offset; at one offset the shorter first (its neighbour overlaps it). */
static int by_offset(const void *a, const void *b)
{
    const struct gguf_tensor *x = *(const struct gguf_tensor *const *)a, *y = *(const struct gguf_tensor *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A tensor's extent: its bytes, or one byte when its type is unknown. */
static uint64_t extent(const struct gguf_tensor *t) { return t->known ? t->bytes : 1; }

static int check_apart(const struct gguf_file *f, const struct gguf_tensor **t, char *err, size_t errlen)
{
    qsort(t, f->n_tensors, sizeof *t, by_name);
    for (uint64_t i = 1; i < f->n_tensors; i++)
        if (!strcmp(t[i - 1]->name, t[i]->name))
            return err_set(err, errlen, "%s: tensor '%s' is listed twice", f->path, t[i]->name);
    qsort(t, f->n_tensors, sizeof *t, by_offset);
    for (uint64_t i = 1; i < f->n_tensors; i++) {
        uint64_t end = t[i - 1]->offset + extent(t[i - 1]); /* inside the file: checked */
        if (t[i]->offset < end)
            return err_set(err, errlen,
                           "%s: tensor '%s' (at offset %llu of the data section) overlaps tensor '%s' (%llu..%llu)",
                           f->path, t[i]->name, (unsigned long long)t[i]->offset, t[i - 1]->name,
                           (unsigned long long)t[i - 1]->offset, (unsigned long long)end);
    }
    return 0;
}

static int check_tensors(struct gguf_file *f, char *err, size_t errlen)
{
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (check_tensor(f, &f->tensors[i], err, errlen))
            return -1;
    const struct gguf_tensor **t = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *t);
    if (!t)
        return err_set(err, errlen, "%s: out of memory for %llu tensors", f->path, (unsigned long long)f->n_tensors);
    for (uint64_t i = 0; i < f->n_tensors; i++)
        t[i] = &f->tensors[i];
    int rc = check_apart(f, t, err, errlen);
    free(t);
    return rc;
}

int gguf_check(struct gguf_file *f, uint64_t infos_end, char *err, size_t errlen)
{
    if (check_unique_keys(f, err, errlen) || read_alignment(f, err, errlen))
        return -1;
    /* infos_end <= size and alignment <= 2^31: no wrap */
    f->data_start = (infos_end + f->alignment - 1) / f->alignment * f->alignment;
    if (f->data_start > f->size) {
        if (f->n_tensors)
            return err_set(err, errlen,
                           "%s: the data section starts at byte %llu (the tensor infos end at %llu, aligned to %llu), "
                           "past the end of the file (%zu bytes)",
                           f->path, (unsigned long long)f->data_start, (unsigned long long)infos_end,
                           (unsigned long long)f->alignment, f->size);
        f->data_start = f->size; /* no tensors: the padding may be left out */
    }
    return check_tensors(f, err, errlen);
}
