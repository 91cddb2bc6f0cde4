/* A tensorless GGUF v3 holding a source file's tokenizer.* metadata (and
 * general.architecture), so that a model folder keeps its tokenizer
 * without the weights it came with. Values are copied as their bytes
 * are in the source: the reader checked them when it opened it. */
#include "engine/tokenizer/tokenizer_gguf.h"

#include <stdio.h>
#include <string.h>

#include "common/atomic_file.h"
#include "common/errbuf.h"

static bool kept(const struct gguf_kv *kv)
{
    return !strcmp(kv->key, "general.architecture") || !strncmp(kv->key, "tokenizer.", 10);
}

static void put_le(FILE *o, uint64_t v, unsigned n)
{
    unsigned char b[8];
    for (unsigned i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    fwrite(b, 1, n, o);
}

/* One pair: key, type, value (a string's length first; an array's element
 * type and count, then its elements' bytes as they were). */
static void put_kv(FILE *o, const struct gguf_kv *kv)
{
    put_le(o, kv->key_len, 8);
    fwrite(kv->key, 1, kv->key_len, o);
    put_le(o, (uint64_t)kv->value.type, 4);
    if (kv->value.type == GGUF_TYPE_STRING)
        put_le(o, kv->value.bytes, 8);
    if (kv->value.type == GGUF_TYPE_ARRAY) {
        put_le(o, (uint64_t)kv->value.elem_type, 4);
        put_le(o, kv->value.count, 8);
    }
    if (kv->value.bytes)
        fwrite(kv->value.data, 1, kv->value.bytes, o);
}

int tokenizer_gguf_write(const struct gguf_file *src, const char *dst_path, char *err, size_t errlen)
{
    uint64_t n_kv = 0;
    bool has_tokens = false;
    for (uint64_t i = 0; i < src->n_kv; i++) {
        n_kv += kept(&src->kv[i]);
        has_tokens |= !strcmp(src->kv[i].key, "tokenizer.ggml.tokens");
    }
    if (!has_tokens)
        return err_set(err, errlen, "%s: no tokenizer.ggml.tokens: the file carries no tokenizer", src->path);
    struct atomic_file af;
    if (atomic_open(&af, NULL, dst_path, err, errlen))
        return -1;
    fwrite("GGUF", 1, 4, af.f);
    put_le(af.f, 3, 4); /* version */
    put_le(af.f, 0, 8); /* tensors */
    put_le(af.f, n_kv, 8);
    for (uint64_t i = 0; i < src->n_kv; i++)
        if (kept(&src->kv[i]))
            put_kv(af.f, &src->kv[i]);
    return atomic_commit(&af, err, errlen);
}
