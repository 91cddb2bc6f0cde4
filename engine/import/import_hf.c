/* Hugging Face model folders: config.json, model.safetensors (or shards
 * listed in model.safetensors.index.json) and tokenizer.json. What differs
 * between architectures (their config keys and tensor names) is in one
 * file each (import_hf_<arch>.c, behind import_hf_arch.h); here is what
 * they share: the shape's checks, the layer loop, the tokenizer and
 * model.json's metadata. */
#include "engine/import/import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "common/progress.h"
#include "engine/import/import_hf_arch.h"
#include "engine/import/safetensors.h"
#include "engine/model/model.h"
#include "engine/model/model_format.h"
#include "engine/tokenizer/tokenizer.h"

/* The architectures a folder may be, by config.json's model_type, with
 * what each is: the one table that dispatches them and that convert --help
 * and the refusal list (import_hf_archs). */
static const struct {
    const struct hf_arch *arch;
    const char *about;
} archs[] = {
    {&hf_arch_llama, "Llama 2, Llama 3.x; SwiGLU, ReLU or FATReLU"},
    {&hf_arch_mistral, "Mistral"},
    {&hf_arch_qwen2, "Qwen2, Qwen2.5"},
    {&hf_arch_qwen3, "Qwen3"},
    {&hf_arch_phi3, "Phi-3"},
    {&hf_arch_sparsellama, "ProSparse's FATReLU Llama"},
    {&hf_arch_bamboo, "TurboSparse-Mistral, dReLU"},
    {&hf_arch_opt, "OPT"},
    {&hf_arch_falcon, "Falcon"},
    {&hf_arch_persimmon, "Persimmon"},
    {&hf_arch_phi, "Phi-1, Phi-1.5, Phi-2"},
};
#define N_ARCHS (sizeof archs / sizeof archs[0])

void import_hf_archs(char *buf, size_t len, bool about)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_ARCHS && used < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", archs[i].arch->model_type);
        if (about && used < len)
            used += (size_t)snprintf(buf + used, len - used, " (%s)", archs[i].about);
    }
}

static const struct hf_arch *find_arch(const struct config *c)
{
    const char *type = cfg_str(c->json, "model_type");
    if (!type) {
        err_set(c->err, c->errlen, "%s: no \"model_type\"", c->path);
        return NULL;
    }
    for (size_t i = 0; i < N_ARCHS; i++)
        if (!strcmp(type, archs[i].arch->model_type))
            return archs[i].arch;
    char known[512];
    import_hf_archs(known, sizeof known, false);
    err_set(c->err, c->errlen, "%s: model_type \"%.64s\" is not supported (%s)", c->path, type, known);
    return NULL;
}

/* What the engine needs of any shape: heads that divide, and an even,
 * non-empty rotated share of each head. */
static int check_shape(const struct config *c, const struct model_shape *s)
{
    if (model_shape_check(s, c->path, c->err, c->errlen))
        return -1;
    if (!strcmp(s->position, "rope")) {
        uint32_t rot = hf_rope_dims(s); /* rope_fraction is in (0, 1] by now */
        if (rot == 0 || rot % 2)
            return err_set(c->err, c->errlen,
                           "%s: partial_rotary_factor %g rotates %u of the %u dims of a head: needs an even "
                           "number from 2 to all of them",
                           c->path, s->rope_fraction, rot, hf_head_dim(s));
    }
    return 0;
}

/* The shape from config.json; -1 (reason in c->err) for what is not supported. */
static const struct hf_arch *shape_from_config(const struct config *c, const char *name, struct model_shape *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    const struct hf_arch *a = find_arch(c);
    if (!a)
        return NULL;
    s->norm_eps = 1e-5;
    s->rope_fraction = 1.0;
    s->rope_theta = 10000;
    if (a->shape(c, s) != 0)
        return NULL;
    if (!s->n_kv_heads)
        s->n_kv_heads = s->n_heads;
    return check_shape(c, s) == 0 ? a : NULL;
}

/* A special token id: def when absent or not a number (newer configs give
 * a list), else a whole number inside the vocabulary. */
static int special_id(const struct config *c, const char *key, int def, uint32_t vocab, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->json, key);
    uint64_t id;
    if (!cJSON_IsNumber(v)) {
        *out = def;
        return 0;
    }
    if (json_get_u64(c->json, key, 0, vocab - 1, &id, c->path, c->err, c->errlen))
        return -1;
    *out = (int)id;
    return 0;
}

/* The shape, its architecture and the special token ids from dir/config.json. */
static const struct hf_arch *read_config(const char *dir, struct model_shape *s, int *bos, int *eos, char *err,
                                         size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *json = hf_read_json(path, err, errlen);
    if (!json)
        return NULL;
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    struct config c = {json, path, err, errlen};
    const struct hf_arch *a = shape_from_config(&c, base, s);
    if (a && (special_id(&c, "bos_token_id", a->bos_id, s->vocab_size, bos) ||
              special_id(&c, "eos_token_id", a->eos_id, s->vocab_size, eos)))
        a = NULL;
    cJSON_Delete(json);
    return a;
}

/* Every tensor, layer by layer, each layer reported. */
static int copy_weights(struct hf_ctx *c, const struct hf_arch *a, const struct progress_report *progress)
{
    progress_report(progress, "convert", 0, c->s->n_layers, NULL);
    int rc = a->embeddings(c);
    for (uint32_t l = 0; l < c->s->n_layers && !rc; l++) {
        rc = a->layer(c, l);
        progress_report(progress, "convert", l + 1, c->s->n_layers, NULL);
    }
    return rc ? rc : a->head(c);
}

/* The tokenizer into the model folder: the given tokenizer.bin, else
 * tokenizer.model (spm) or tokenizer.json converted (SentencePiece kind)
 * or copied (byte-level),
 * then read back as the engine will. */
static int add_tokenizer(struct model_writer *w, const struct model_shape *s, const char *tokpath, bool spm,
                         const char *tokenizer, bool *byte_level, char *err, size_t errlen)
{
    char tmp_tok[4300];
    snprintf(tmp_tok, sizeof tmp_tok, "%s/tokenizer.bin", w->tmp);
    *byte_level = false;
    int rc;
    if (tokenizer)
        rc = model_writer_copy_file(w, tokenizer, "tokenizer.bin");
    else if (spm)
        rc = hf_convert_spm_tokenizer(tokpath, s, tmp_tok, err, errlen);
    else if ((rc = hf_convert_sp_tokenizer(tokpath, s, tmp_tok, err, errlen)) == 1) {
        *byte_level = true;
        snprintf(tmp_tok, sizeof tmp_tok, "%s/tokenizer.json", w->tmp);
        rc = model_writer_copy_file(w, tokpath, "tokenizer.json");
    }
    if (rc)
        return -1;
    struct tokenizer t;
    if ((*byte_level ? tokenizer_load_hf_bytelevel(&t, tmp_tok, (int)s->vocab_size, err, errlen)
                     : tokenizer_load_llama2c(&t, tmp_tok, (int)s->vocab_size, err, errlen)) != 0)
        return -1;
    tokenizer_free(&t);
    return 0;
}

/* What flashbed model make recorded in config.json ("flashbed_shape",
 * "flashbed_up_spectrum", ...), copied into src under the same names: a
 * converted synthetic model keeps saying how its weights were made. */
static void copy_flashbed_keys(const char *dir, cJSON *src)
{
    char path[4200], why[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *c = hf_read_json(path, why, sizeof why); /* read once before: failing now adds nothing */
    const cJSON *item;
    cJSON_ArrayForEach(item, c)
    {
        if (item->string && !strncmp(item->string, "flashbed_", 9))
            cJSON_AddItemToObject(src, item->string, cJSON_Duplicate(item, 1));
    }
    cJSON_Delete(c);
}

/* The dtype to write: the one asked for, or the checkpoint's matrices'. */
static void choose_dtype(const struct st_set *st, struct import_dtype *dt)
{
    struct st_dtypes d = st_dtype_census(st);
    char m[24], v[24];
    snprintf(dt->held, sizeof dt->held, "matrices %s, vectors %s", st_dtype_mask_name(d.matrices, m, sizeof m),
             st_dtype_mask_name(d.vectors, v, sizeof v));
    if (dt->keep)
        dt->dtype = st_matrix_dtype(d);
}

static void dtype_meta(cJSON *src, const struct import_dtype *dt)
{
    cJSON_AddStringToObject(src, "dtype", wtype_name(dt->dtype));
    cJSON_AddStringToObject(src, "dtype_from", dt->keep ? "checkpoint (its matrices')" : "--dtype");
    cJSON_AddStringToObject(src, "checkpoint_dtypes", dt->held);
}

/* model.json's "tokenizer" and "source" sections. */
static cJSON *model_meta(const char *dir, const char *tokenizer, const char *tokpath, bool byte_level, int bos,
                         int eos, const struct import_dtype *dt)
{
    cJSON *meta = cJSON_CreateObject();
    cJSON *tok = cJSON_AddObjectToObject(meta, "tokenizer");
    cJSON_AddStringToObject(tok, "kind", byte_level ? "byte-level-bpe" : "sentencepiece-bpe");
    cJSON_AddStringToObject(tok, "file", byte_level ? "tokenizer.json" : "tokenizer.bin");
    cJSON_AddNumberToObject(tok, "bos_id", bos);
    cJSON_AddNumberToObject(tok, "eos_id", eos);
    cJSON *src = cJSON_AddObjectToObject(meta, "source");
    cJSON_AddStringToObject(src, "format", "huggingface");
    cJSON_AddStringToObject(src, "folder", dir);
    char hex[17], path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (file_fnv1a64(path, hex) == 0)
        cJSON_AddStringToObject(src, "config_fnv1a64", hex);
    cJSON_AddStringToObject(src, "tokenizer", tokenizer ? tokenizer : tokpath);
    dtype_meta(src, dt);
    copy_flashbed_keys(dir, src);
    return meta;
}

int import_hf(const char *dir, const char *tokenizer, const char *out_dir, struct import_dtype *dtype,
              const struct progress_report *progress, char *err, size_t errlen)
{
    struct model_shape s;
    int bos = 1, eos = 2;
    const struct hf_arch *a = read_config(dir, &s, &bos, &eos, err, errlen);
    if (!a)
        return -1;
    char tokpath[4200];
    bool spm;
    if (hf_folder_check(dir, tokenizer, tokpath, sizeof tokpath, &spm, err, errlen) != 0)
        return -1;
    struct st_set st;
    if (st_open(&st, dir, err, errlen))
        return -1;
    struct import_dtype own = {.keep = true, .dtype = DTYPE_F32};
    if (!dtype)
        dtype = &own;
    choose_dtype(&st, dtype);
    struct model_writer w;
    if (model_writer_begin(&w, out_dir, &s, dtype->dtype, err, errlen)) {
        st_close(&st);
        return -1;
    }
    struct hf_ctx c = {&st, &w, &s, err, errlen};
    bool byte_level = false;
    int rc = copy_weights(&c, a, progress);
    if (!rc)
        rc = add_tokenizer(&w, &s, tokpath, spm, tokenizer, &byte_level, err, errlen);
    st_close(&st);
    if (rc) {
        model_writer_abort(&w); /* removes the temporary folder */
        return -1;
    }
    return model_writer_finish(&w, model_meta(dir, tokenizer, tokpath, byte_level, bos, eos, dtype));
}
