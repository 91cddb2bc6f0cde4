/* Fuzzes the GGUF reader (common/gguf*.c): the header, every
 * key/value pair and tensor info checked at open; then everything an
 * accepted file offers is read back as the importer will read it: each
 * key through every typed getter, each array walked element by element
 * (nested ones too) and read by index, each tensor looked up by name and
 * its bytes summed. A value or tensor the checks let through that lies
 * outside the file is a crash under ASan (the map's neighbours are not
 * ours); one whose recorded size disagrees with the walk aborts. */
#include <stdlib.h>
#include <string.h>

#include "common/gguf.h"
#include "fuzz_util.h"

static unsigned sink; /* keeps the reads from being optimised away */

static void walk(const struct gguf_value *a, int depth)
{
    if (depth > GGUF_MAX_ARRAY_DEPTH)
        abort(); /* accepted deeper than the reader allows */
    struct gguf_cursor c;
    struct gguf_value e;
    uint64_t n = 0, bytes = 0;
    gguf_cursor_init(&c, a);
    while (gguf_cursor_next(&c, &e)) {
        if (e.type == GGUF_TYPE_ARRAY) {
            walk(&e, depth + 1);
            bytes += 12;
        } else if (e.type == GGUF_TYPE_STRING)
            bytes += 8;
        for (uint64_t i = 0; i < e.bytes; i++)
            sink += e.data[i];
        bytes += e.bytes;
        sink += (unsigned)gguf_elem_uint(a, n) + (unsigned)gguf_elem_int(a, n) + (gguf_elem_float(a, n) > 0);
        n++;
    }
    if (n != a->count || bytes != a->bytes)
        abort(); /* the walk and the open disagree on the array's extent */
}

static void read_every_key(const struct gguf_file *f)
{
    char err[512];
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const struct gguf_kv *kv = &f->kv[i];
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        float x;
        bool b;
        const char *s;
        size_t len;
        struct gguf_value a;
        if (gguf_find(f, kv->key) != kv)
            abort(); /* keys are unique: the lookup finds this one */
        sink += !gguf_get_u32(f, kv->key, &u32, err, sizeof err) + !gguf_get_i32(f, kv->key, &i32, err, sizeof err) +
                !gguf_get_u64(f, kv->key, &u64, err, sizeof err) + !gguf_get_f32(f, kv->key, &x, err, sizeof err) +
                !gguf_get_bool(f, kv->key, &b, err, sizeof err);
        if (!gguf_get_str(f, kv->key, &s, &len, err, sizeof err) && len)
            sink += (unsigned char)s[0] + (unsigned char)s[len - 1];
        if (!gguf_get_array(f, kv->key, GGUF_TYPE_COUNT, &a, err, sizeof err))
            walk(&a, 1);
    }
}

static void read_every_tensor(const struct gguf_file *f)
{
    char err[512];
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const struct gguf_tensor *t;
        const void *data;
        if (gguf_tensor_get(f, f->tensors[i].name, &t, &data, err, sizeof err))
            continue; /* a type flashbed does not read: refused by name */
        if (t != &f->tensors[i] || f->data_start + t->offset + t->bytes > f->size)
            abort();
        const unsigned char *p = data;
        for (uint64_t b = 0; b < t->bytes; b++)
            sink += p[b];
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("model.gguf", data, size);
    struct gguf_file f;
    char err[512];
    int rc = gguf_open(&f, path, err, sizeof err);
    fuzz_note("gguf_open", rc, err);
    if (rc == 0) {
        read_every_key(&f);
        read_every_tensor(&f);
        gguf_close(&f);
    }
    return 0;
}
