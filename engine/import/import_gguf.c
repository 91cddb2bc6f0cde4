/* GGUF files (llama.cpp's format, common/gguf.h) into flashbed model
 * folders: the architecture and shape from the metadata
 * (import_gguf_meta.c), the tensors as stored or decoded
 * (import_gguf_tensors.c), the tokenizer, and model.json's "source". */
#include "engine/import/import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/errbuf.h"
#include "common/gguf.h"
#include "common/sha256.h"
#include "engine/import/import_gguf_arch.h"
#include "engine/model/model.h"
#include "engine/model/model_format.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_eog.h"
#include "engine/tokenizer/tokenizer_gguf.h"

/* The model's name: the file's general.name when it is printable ASCII
 * (model.json's "name", as an HF import's is its folder's; ASCII, so that
 * cutting it to what model_shape holds splits no character), else the
 * file's name without folders and ".gguf". */
static void model_name(const struct gguf_file *f, char *name, size_t len)
{
    const char *given = NULL;
    size_t n = 0;
    char ignored[8];
    if (gguf_find(f, "general.name") && gguf_get_str(f, "general.name", &given, &n, ignored, sizeof ignored) == 0)
        for (size_t i = 0; i < n; i++)
            if (given[i] < 0x20 || given[i] > 0x7e)
                n = 0;
    if (n == 0) {
        const char *base = strrchr(f->path, '/');
        given = base && base[1] ? base + 1 : f->path;
        n = strlen(given);
        if (n > 5 && !strcmp(given + n - 5, ".gguf"))
            n -= 5;
    }
    snprintf(name, len, "%.*s", (int)(n < len ? n : len - 1), given);
}

/* What the file holds: "Q4_1 x 210, Q8_0 x 1, F32 x 61" (file order of first use). */
static void types_held(const struct gguf_file *f, char *out, size_t len)
{
    uint64_t count[DTYPE_COUNT] = {0};
    enum fb_dtype order[DTYPE_COUNT];
    int n = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const struct gguf_tensor *t = &f->tensors[i];
        if (!t->known) /* gguf_tensor_get refuses it by name when it is read */
            continue;
        if (count[t->type]++ == 0)
            order[n++] = t->type;
    }
    out[0] = '\0';
    for (int i = 0, at = 0; i < n && at < (int)len; i++)
        at += snprintf(out + at, len - (size_t)at, "%s%s x %llu", i ? ", " : "", wtype_name(order[i]),
                       (unsigned long long)count[order[i]]);
}

/* A special token id from tokenizer.ggml.KEY: def when absent. */
static int token_id(const struct gguf_file *f, const char *key, int def, uint32_t vocab, int *out, char *err,
                    size_t errlen)
{
    uint32_t id;
    *out = def;
    if (!gguf_find(f, key))
        return 0;
    if (gguf_get_u32(f, key, &id, err, errlen))
        return -1;
    if (id >= vocab)
        return err_set(err, errlen, "%s: key %s %u is outside the vocabulary of %u tokens", f->path, key, id, vocab);
    *out = (int)id;
    return 0;
}

/* The tokenizer into the folder, checked as the engine will read it:
 * the GGUF's own (tokenizer_gguf_write: tokenizer.gguf, kind "gguf"), or
 * a given llama2.c tokenizer.bin in its place. */
static int write_tokenizer(struct model_writer *w, const struct gguf_file *f, const struct model_shape *s,
                           const char *tokenizer, const char **kind, const char **file, char *err, size_t errlen)
{
    *kind = tokenizer ? "sentencepiece-bpe" : "gguf";
    *file = tokenizer ? "tokenizer.bin" : "tokenizer.gguf";
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", w->tmp, *file);
    struct tokenizer t;
    if (tokenizer)
        return model_writer_copy_file(w, tokenizer, *file) ||
                       tokenizer_load_llama2c(&t, path, (int)s->vocab_size, err, errlen)
                   ? -1
                   : (tokenizer_free(&t), 0);
    struct gguf_file g;
    if (tokenizer_gguf_write(f, path, err, errlen) || gguf_open(&g, path, err, errlen))
        return -1;
    int rc = tokenizer_load_gguf(&t, &g, (int)s->vocab_size, err, errlen);
    gguf_close(&g);
    if (rc == 0)
        tokenizer_free(&t);
    return rc;
}

/* model.json's "tokenizer", with the GGUF's bos and eos ids, and as stop
 * ids its other end-of-generation tokens as llama.cpp determines them
 * (tokenizer_eog.h: <end_of_turn>, <|im_end|>, the eot and eom keys, ...). */
static int add_tokenizer(struct model_writer *w, const struct gguf_file *f, const struct model_shape *s,
                         const char *tokenizer, cJSON *meta, char *err, size_t errlen)
{
    int bos, eos, eog[MODEL_MAX_STOP_IDS], n_eog;
    const char *kind, *file;
    if (token_id(f, "tokenizer.ggml.bos_token_id", 1, s->vocab_size, &bos, err, errlen) ||
        token_id(f, "tokenizer.ggml.eos_token_id", 2, s->vocab_size, &eos, err, errlen) ||
        tokenizer_gguf_eog(f, (int)s->vocab_size, eos, eog, MODEL_MAX_STOP_IDS, &n_eog, err, errlen) ||
        write_tokenizer(w, f, s, tokenizer, &kind, &file, err, errlen))
        return -1;
    cJSON *tok = cJSON_AddObjectToObject(meta, "tokenizer");
    cJSON_AddStringToObject(tok, "kind", kind);
    cJSON_AddStringToObject(tok, "file", file);
    cJSON_AddNumberToObject(tok, "bos_id", bos);
    cJSON_AddNumberToObject(tok, "eos_id", eos);
    cJSON *stops = cJSON_AddArrayToObject(tok, "stop_ids");
    for (int i = 0; i < n_eog; i++)
        if (eog[i] != eos)
            cJSON_AddItemToArray(stops, cJSON_CreateNumber(eog[i]));
    return 0;
}

/* model.json's "source": the file, its hash, what it holds, what was written. */
static cJSON *source_meta(const struct gguf_file *f, const struct gguf_arch *a, const struct import_dtype *dt,
                          char *err, size_t errlen)
{
    char hex[65];
    if (sha256_file_hex(f->path, hex, err, errlen))
        return NULL;
    cJSON *meta = cJSON_CreateObject(), *src = cJSON_AddObjectToObject(meta, "source");
    cJSON_AddStringToObject(src, "format", "gguf");
    cJSON_AddStringToObject(src, "file", f->path);
    cJSON_AddStringToObject(src, "sha256", hex);
    cJSON_AddNumberToObject(src, "gguf_version", f->version);
    cJSON_AddStringToObject(src, "architecture", a->name);
    cJSON_AddStringToObject(src, "types_held", dt->held);
    cJSON_AddStringToObject(src, "dtype", wtype_name(dt->dtype));
    cJSON_AddStringToObject(src, "dtype_from",
                            dt->keep ? "as stored: each matrix in its GGUF type (tensor_dtypes per-tensor), the FFN's "
                                       "also in ffn_matrices.bin; ffn.bin's bundles decoded into dtype"
                                     : "--dtype: every weight decoded into it");
    cJSON_AddStringToObject(src, "rope", a->neox ? "NEOX halves reordered into adjacent pairs"
                                                 : "adjacent pairs, as stored");
    return meta;
}

/* The dtype to write: --dtype's float type, or f16 for the bundles when kept. */
static int choose_dtype(const struct gguf_file *f, struct import_dtype *dt, char *err, size_t errlen)
{
    types_held(f, dt->held, sizeof dt->held);
    if (dt->keep) {
        dt->dtype = DTYPE_F16;
        return 0;
    }
    if (dt->dtype == DTYPE_F32 || dt->dtype == DTYPE_F16 || dt->dtype == DTYPE_BF16)
        return 0;
    return err_set(err, errlen, "%s: --dtype %s: a GGUF file converts as stored, or decoded into f32, f16 or bf16",
                   f->path, wtype_name(dt->dtype));
}

/* The weights, the tokenizer and model.json into out_dir, or nothing. */
static int convert(const struct gguf_file *f, const struct gguf_arch *a, const struct model_shape *s,
                   const char *tokenizer, const char *out_dir, struct import_dtype *dt,
                   const struct progress_report *progress, char *err, size_t errlen)
{
    cJSON *meta = source_meta(f, a, dt, err, errlen);
    bool *used = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *used);
    struct model_writer w;
    if (!meta || !used || model_writer_begin(&w, out_dir, s, dt->dtype, err, errlen)) {
        if (meta && !used)
            err_set(err, errlen, "%s: out of memory", f->path);
        cJSON_Delete(meta);
        free(used);
        return -1;
    }
    struct gguf_ctx c = {f, a, s, &w, dt->keep, used, err, errlen};
    int rc = gguf_copy_weights(&c, progress);
    free(used);
    if (rc || add_tokenizer(&w, f, s, tokenizer, meta, err, errlen)) {
        cJSON_Delete(meta);
        model_writer_abort(&w);
        return -1;
    }
    return model_writer_finish(&w, meta);
}

int import_gguf(const char *path, const char *tokenizer, const char *out_dir, struct import_dtype *dtype,
                const struct progress_report *progress, char *err, size_t errlen)
{
    struct gguf_file f;
    if (gguf_open(&f, path, err, errlen))
        return -1;
    struct import_dtype own = {.keep = true, .dtype = DTYPE_F16};
    if (!dtype)
        dtype = &own;
    const char *arch;
    size_t len;
    const struct gguf_arch *a = NULL;
    struct model_shape s;
    char name[sizeof s.name];
    model_name(&f, name, sizeof name);
    int rc = -1;
    if (gguf_get_str(&f, "general.architecture", &arch, &len, err, errlen) == 0 &&
        (a = gguf_arch_find(&f, arch, len, err, errlen)) && gguf_shape(&f, a, name, &s, err, errlen) == 0 &&
        choose_dtype(&f, dtype, err, errlen) == 0)
        rc = convert(&f, a, &s, tokenizer, out_dir, dtype, progress, err, errlen);
    gguf_close(&f);
    return rc;
}
