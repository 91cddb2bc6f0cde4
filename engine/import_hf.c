/* Hugging Face model folders: config.json, model.safetensors (or shards
 * listed in model.safetensors.index.json) and tokenizer.json. Llama and
 * OPT; what differs between them is the name table and a few flags. */
#include "engine/import.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "common/progress.h"
#include "engine/model.h"
#include "engine/model_format.h"
#include "engine/safetensors.h"
#include "engine/tokenizer.h"

static cJSON *read_json(const char *path, char *err, size_t errlen)
{
    char *text = read_text_file(path, NULL);
    if (!text) {
        err_set(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(o)) {
        err_set(err, errlen, "%s: not a JSON object", path);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* config.json, with where to say what is wrong with it. */
struct config {
    const cJSON *json;
    const char *path;
    char *err;
    size_t errlen;
};

static int cfg_uint(const struct config *c, const char *key, uint32_t *out, int required)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->json, key);
    if (!v && !required)
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 4e9 ||
        v->valuedouble != (double)(uint32_t)v->valuedouble)
        return err_set(c->err, c->errlen, "%s: \"%s\" must be a positive whole number", c->path, key);
    *out = (uint32_t)v->valuedouble;
    return 0;
}

static double cfg_num(const cJSON *c, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static int cfg_bool(const cJSON *c, const char *key, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

static const char *cfg_str(const cJSON *c, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int llama_shape(const struct config *c, struct model_shape *s)
{
    snprintf(s->arch, sizeof s->arch, "llama");
    if (cfg_uint(c, "hidden_size", &s->d_model, 1) || cfg_uint(c, "intermediate_size", &s->d_ff, 1) ||
        cfg_uint(c, "num_hidden_layers", &s->n_layers, 1) ||
        cfg_uint(c, "num_attention_heads", &s->n_heads, 1) ||
        cfg_uint(c, "num_key_value_heads", &s->n_kv_heads, 0) || cfg_uint(c, "vocab_size", &s->vocab_size, 1) ||
        cfg_uint(c, "max_position_embeddings", &s->max_positions, 1))
        return -1;
    const char *act = cfg_str(c->json, "hidden_act");
    if (act && strcmp(act, "silu") != 0)
        return err_set(c->err, c->errlen, "%s: hidden_act \"%s\" is not supported for llama (silu)", c->path,
                       act);
    const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(c->json, "rope_scaling");
    if (scaling && !cJSON_IsNull(scaling))
        return err_set(c->err, c->errlen, "%s: rope_scaling is not supported", c->path);
    s->ffn_kind = FFN_GLU;
    snprintf(s->ffn_activation, sizeof s->ffn_activation, "swiglu");
    snprintf(s->norm, sizeof s->norm, "rmsnorm");
    s->norm_eps = cfg_num(c->json, "rms_norm_eps", 1e-6);
    snprintf(s->position, sizeof s->position, "rope");
    s->rope_theta = cfg_num(c->json, "rope_theta", 10000);
    s->tied_embeddings = cfg_bool(c->json, "tie_word_embeddings", 0);
    return 0;
}

static int opt_shape(const struct config *c, struct model_shape *s)
{
    snprintf(s->arch, sizeof s->arch, "opt");
    uint32_t proj = 0;
    if (cfg_uint(c, "hidden_size", &s->d_model, 1) || cfg_uint(c, "ffn_dim", &s->d_ff, 1) ||
        cfg_uint(c, "num_hidden_layers", &s->n_layers, 1) ||
        cfg_uint(c, "num_attention_heads", &s->n_heads, 1) || cfg_uint(c, "vocab_size", &s->vocab_size, 1) ||
        cfg_uint(c, "max_position_embeddings", &s->max_positions, 1) ||
        cfg_uint(c, "word_embed_proj_dim", &proj, 0))
        return -1;
    const char *act = cfg_str(c->json, "activation_function");
    if (act && strcmp(act, "relu") != 0)
        return err_set(c->err, c->errlen, "%s: activation_function \"%s\" is not supported for opt (relu)",
                       c->path, act);
    if (!cfg_bool(c->json, "do_layer_norm_before", 1) || (proj && proj != s->d_model))
        return err_set(c->err, c->errlen,
                       "%s: post-LayerNorm or projected-embedding OPT variants (opt-350m) are not supported",
                       c->path);
    if (!cfg_bool(c->json, "enable_bias", 1))
        return err_set(c->err, c->errlen, "%s: OPT without biases is not supported", c->path);
    s->ffn_kind = FFN_RELU;
    snprintf(s->ffn_activation, sizeof s->ffn_activation, "relu");
    snprintf(s->norm, sizeof s->norm, "layernorm");
    snprintf(s->position, sizeof s->position, "learned");
    s->position_offset = 2;
    s->biases = true;
    s->tied_embeddings = cfg_bool(c->json, "tie_word_embeddings", 1);
    return 0;
}

/* The shape from config.json; -1 (reason in c->err) for what is not supported. */
static int shape_from_config(const struct config *c, const char *name, struct model_shape *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    const char *type = cfg_str(c->json, "model_type");
    if (!type)
        return err_set(c->err, c->errlen, "%s: no \"model_type\"", c->path);
    s->n_kv_heads = 0;
    s->norm_eps = 1e-5;
    s->rope_fraction = 1.0;
    s->rope_theta = 10000;
    int rc;
    if (!strcmp(type, "llama"))
        rc = llama_shape(c, s);
    else if (!strcmp(type, "opt"))
        rc = opt_shape(c, s);
    else
        rc = err_set(c->err, c->errlen, "%s: model_type \"%s\" is not supported (llama, opt)", c->path, type);
    if (rc)
        return -1;
    if (!s->n_kv_heads)
        s->n_kv_heads = s->n_heads;
    if (s->d_model % s->n_heads || s->n_heads % s->n_kv_heads || (s->d_model / s->n_heads) % 2)
        return err_set(c->err, c->errlen, "%s: hidden_size %u, heads %u and key/value heads %u do not divide",
                       c->path, s->d_model, s->n_heads, s->n_kv_heads);
    return 0;
}

/* HF Llama rotates each head's first half against its second half; the
 * engine (like llama2.c) rotates adjacent pairs. Reorder the rows of q and
 * k so that HF's pair (i, i + hd/2) becomes (2i, 2i + 1). */
static void interleave_rope_rows(float *w, uint32_t heads, uint32_t hd, uint64_t cols, float *tmp)
{
    for (uint32_t h = 0; h < heads; h++) {
        float *head = w + (uint64_t)h * hd * cols;
        memcpy(tmp, head, hd * cols * sizeof *tmp);
        for (uint32_t i = 0; i < hd / 2; i++) {
            memcpy(head + (2 * i) * cols, tmp + i * cols, cols * sizeof *tmp);
            memcpy(head + (2 * i + 1) * cols, tmp + (i + hd / 2) * cols, cols * sizeof *tmp);
        }
    }
}

struct hf_ctx {
    const struct st_set *st;
    struct model_writer *w;
    const struct model_shape *s;
    char *err; /* the writer's buffer too */
    size_t errlen;
};

/* Reads HF tensor src with the given shape and writes it as dst. */
static int copy_tensor(struct hf_ctx *c, const char *src, const char *dst, int ndim, uint64_t d0, uint64_t d1)
{
    uint64_t dims[2] = {d0, d1};
    float *v = st_read_f32(c->st, src, ndim, dims, c->err, c->errlen);
    if (!v)
        return -1;
    int rc = model_writer_tensor(c->w, dst, v, ndim, dims);
    free(v);
    return rc;
}

static int hf_layer(struct hf_ctx *c, uint32_t l, bool opt)
{
    const struct model_shape *s = c->s;
    uint64_t d = s->d_model, hd = d / s->n_heads, q = s->n_heads * hd, kv = s->n_kv_heads * hd, ff = s->d_ff;
    char src[160], dst[96], pre[64];
    snprintf(pre, sizeof pre, opt ? "model.decoder.layers.%u." : "model.layers.%u.", l);
#define COPY(from, to, nd, a, b)                                                                   \
    do {                                                                                          \
        snprintf(src, sizeof src, "%s%s", pre, from);                                             \
        layer_tensor_name(dst, sizeof dst, (int)l, to);                                           \
        if (copy_tensor(c, src, dst, nd, a, b))                                                   \
            return -1;                                                                            \
    } while (0)
    if (opt) {
        COPY("self_attn_layer_norm.weight", "attn_norm.weight", 1, d, 0);
        COPY("self_attn_layer_norm.bias", "attn_norm.bias", 1, d, 0);
        COPY("self_attn.q_proj.weight", "attn.wq", 2, q, d);
        COPY("self_attn.k_proj.weight", "attn.wk", 2, kv, d);
        COPY("self_attn.v_proj.weight", "attn.wv", 2, kv, d);
        COPY("self_attn.out_proj.weight", "attn.wo", 2, d, q);
        COPY("self_attn.q_proj.bias", "attn.bq", 1, q, 0);
        COPY("self_attn.k_proj.bias", "attn.bk", 1, kv, 0);
        COPY("self_attn.v_proj.bias", "attn.bv", 1, kv, 0);
        COPY("self_attn.out_proj.bias", "attn.bo", 1, d, 0);
        COPY("final_layer_norm.weight", "ffn_norm.weight", 1, d, 0);
        COPY("final_layer_norm.bias", "ffn_norm.bias", 1, d, 0);
        COPY("fc1.bias", "ffn.up_bias", 1, ff, 0);
        COPY("fc2.bias", "ffn.down_bias", 1, d, 0);
    } else {
        COPY("input_layernorm.weight", "attn_norm.weight", 1, d, 0);
        /* q and k need their rows reordered for the engine's RoPE */
        const char *qk[2] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight"};
        const char *to[2] = {"attn.wq", "attn.wk"};
        uint64_t rows[2] = {q, kv};
        uint32_t heads[2] = {s->n_heads, s->n_kv_heads};
        for (int i = 0; i < 2; i++) {
            snprintf(src, sizeof src, "%s%s", pre, qk[i]);
            float *v = st_read_f32(c->st, src, 2, (uint64_t[]){rows[i], d}, c->err, c->errlen);
            float *tmp = v ? malloc(hd * d * sizeof *tmp) : NULL;
            int rc = -1;
            if (v && !tmp)
                err_set(c->err, c->errlen, "out of memory reordering %s", src);
            if (tmp) {
                interleave_rope_rows(v, heads[i], (uint32_t)hd, d, tmp);
                layer_tensor_name(dst, sizeof dst, (int)l, to[i]);
                rc = model_writer_tensor(c->w, dst, v, 2, (uint64_t[]){rows[i], d});
            }
            free(tmp);
            free(v);
            if (rc)
                return -1;
        }
        COPY("self_attn.v_proj.weight", "attn.wv", 2, kv, d);
        COPY("self_attn.o_proj.weight", "attn.wo", 2, d, q);
        COPY("post_attention_layernorm.weight", "ffn_norm.weight", 1, d, 0);
    }
#undef COPY
    /* the FFN: up, gate (GLU) and down, bundled by neuron */
    float *up, *gate = NULL, *down;
    snprintf(src, sizeof src, "%s%s", pre, opt ? "fc1.weight" : "mlp.up_proj.weight");
    up = st_read_f32(c->st, src, 2, (uint64_t[]){ff, d}, c->err, c->errlen);
    snprintf(src, sizeof src, "%s%s", pre, opt ? "fc2.weight" : "mlp.down_proj.weight");
    down = up ? st_read_f32(c->st, src, 2, (uint64_t[]){d, ff}, c->err, c->errlen) : NULL;
    if (!opt && down) {
        snprintf(src, sizeof src, "%s%s", pre, "mlp.gate_proj.weight");
        gate = st_read_f32(c->st, src, 2, (uint64_t[]){ff, d}, c->err, c->errlen);
    }
    int rc = up && down && (opt || gate) ? model_writer_ffn_layer(c->w, (int)l, up, gate, down) : -1;
    free(up);
    free(gate);
    free(down);
    return rc;
}

/* tokenizer.json of the SentencePiece kind (Llama: BPE with byte fallback,
 * "▁" for spaces) rewritten as a llama2.c tokenizer.bin: merge rank r
 * becomes the merged piece's score -r. Returns 1, writing nothing, for a
 * byte-level BPE (GPT-2/OPT), which the engine reads as tokenizer.json. */
static int convert_sp_tokenizer(const char *path, const struct model_shape *s, const char *out, char *err,
                                size_t errlen)
{
    cJSON *t = read_json(path, err, errlen);
    if (!t)
        return -1;
    int rc = -1;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(t, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const char *type = cfg_str(model, "type");
    char **pieces = calloc(s->vocab_size, sizeof *pieces);
    float *scores = malloc(s->vocab_size * sizeof *scores);
    FILE *f = NULL;
    if (!pieces || !scores) {
        err_set(err, errlen, "%s: out of memory for %u pieces", path, s->vocab_size);
        goto out;
    }
    if (!type || strcmp(type, "BPE") != 0 || !cJSON_IsObject(vocab) || !cJSON_IsArray(merges)) {
        err_set(err, errlen, "%s: not a BPE tokenizer with \"vocab\" and \"merges\"", path);
        goto out;
    }
    if (!cfg_bool(model, "byte_fallback", 0)) {
        rc = 1; /* byte-level: kept as tokenizer.json */
        goto out;
    }
    for (uint32_t i = 0; i < s->vocab_size; i++)
        scores[i] = TOKENIZER_NO_MERGE;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab)
    {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= s->vocab_size) {
            err_set(err, errlen, "%s: vocab entry '%s' has an id outside 0..%u", path, e->string,
                    s->vocab_size - 1);
            goto out;
        }
        /* "▁" (U+2581, e2 96 81) is SentencePiece's space */
        size_t n = strlen(e->string);
        char *p = malloc(n + 1), *q = p;
        if (!p) {
            err_set(err, errlen, "%s: out of memory", path);
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            if (i + 2 < n && !memcmp(e->string + i, "\xe2\x96\x81", 3)) {
                *q++ = ' ';
                i += 2;
            } else
                *q++ = e->string[i];
        }
        *q = '\0';
        free(pieces[(int)e->valuedouble]);
        pieces[(int)e->valuedouble] = p;
    }
    int rank = 0;
    cJSON_ArrayForEach(e, merges)
    {
        char merged[512];
        if (cJSON_IsString(e)) { /* "a b" */
            const char *sp = strchr(e->valuestring, ' ');
            if (!sp)
                continue;
            snprintf(merged, sizeof merged, "%.*s%s", (int)(sp - e->valuestring), e->valuestring, sp + 1);
        } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2) { /* ["a", "b"] */
            snprintf(merged, sizeof merged, "%s%s", cJSON_GetArrayItem(e, 0)->valuestring,
                     cJSON_GetArrayItem(e, 1)->valuestring);
        } else
            continue;
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(vocab, merged);
        if (cJSON_IsNumber(id) && scores[(int)id->valuedouble] == TOKENIZER_NO_MERGE)
            scores[(int)id->valuedouble] = -(float)rank;
        rank++;
    }
    f = fopen(out, "wb");
    int32_t max_len = 1;
    for (uint32_t i = 0; i < s->vocab_size; i++) {
        if (!pieces[i]) {
            err_set(err, errlen, "%s: no vocab entry for id %u", path, i);
            goto out;
        }
        if ((int32_t)strlen(pieces[i]) > max_len)
            max_len = (int32_t)strlen(pieces[i]);
    }
    int bad = !f || fwrite(&max_len, 4, 1, f) != 1;
    for (uint32_t i = 0; i < s->vocab_size && !bad; i++) {
        int32_t len = (int32_t)strlen(pieces[i]);
        bad = fwrite(&scores[i], 4, 1, f) != 1 || fwrite(&len, 4, 1, f) != 1 ||
              fwrite(pieces[i], 1, (size_t)len, f) != (size_t)len;
    }
    if (f && fclose(f) != 0)
        bad = 1;
    f = NULL;
    if (bad)
        err_set(err, errlen, "%s: cannot write", out);
    rc = bad ? -1 : 0;
out:
    if (f)
        fclose(f);
    for (uint32_t i = 0; pieces && i < s->vocab_size; i++)
        free(pieces[i]);
    free(pieces);
    free(scores);
    cJSON_Delete(t);
    return rc;
}

/* The shape and the special token ids from dir/config.json. */
static int read_config(const char *dir, struct model_shape *s, int *bos, int *eos, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *json = read_json(path, err, errlen);
    if (!json)
        return -1;
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    struct config c = {json, path, err, errlen};
    int rc = shape_from_config(&c, base, s);
    *bos = (int)cfg_num(json, "bos_token_id", 1);
    *eos = (int)cfg_num(json, "eos_token_id", 2);
    cJSON_Delete(json);
    return rc;
}

/* Every tensor, layer by layer (with progress on a terminal). */
static int copy_weights(struct hf_ctx *c, bool opt)
{
    const struct model_shape *s = c->s;
    uint64_t d = s->d_model;
    struct progress pr;
    progress_begin(&pr, "convert", s->n_layers);
    int rc = copy_tensor(c, opt ? "model.decoder.embed_tokens.weight" : "model.embed_tokens.weight",
                         "tok_embedding", 2, s->vocab_size, d);
    if (!rc && opt)
        rc = copy_tensor(c, "model.decoder.embed_positions.weight", "pos_embedding", 2,
                         s->max_positions + s->position_offset, d);
    for (uint32_t l = 0; l < s->n_layers && !rc; l++) {
        rc = hf_layer(c, l, opt);
        progress_update(&pr, l + 1, NULL);
    }
    progress_end(&pr);
    if (!rc)
        rc = copy_tensor(c, opt ? "model.decoder.final_layer_norm.weight" : "model.norm.weight",
                         "final_norm.weight", 1, d, 0);
    if (!rc && opt)
        rc = copy_tensor(c, "model.decoder.final_layer_norm.bias", "final_norm.bias", 1, d, 0);
    if (!rc && !s->tied_embeddings)
        rc = copy_tensor(c, "lm_head.weight", "output", 2, s->vocab_size, d);
    return rc;
}

/* The tokenizer into the model folder: the given tokenizer.bin, else
 * tokenizer.json converted (SentencePiece kind) or copied (byte-level),
 * then read back as the engine will. */
static int add_tokenizer(struct model_writer *w, const struct model_shape *s, const char *tokpath,
                         const char *tokenizer, bool *byte_level, char *err, size_t errlen)
{
    char tmp_tok[4300];
    snprintf(tmp_tok, sizeof tmp_tok, "%s/tokenizer.bin", w->tmp);
    *byte_level = false;
    int rc;
    if (tokenizer)
        rc = model_writer_copy_file(w, tokenizer, "tokenizer.bin");
    else if ((rc = convert_sp_tokenizer(tokpath, s, tmp_tok, err, errlen)) == 1) {
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
    cJSON *c = read_json(path, why, sizeof why); /* read once before: failing now adds nothing */
    const cJSON *item;
    cJSON_ArrayForEach(item, c)
    {
        if (item->string && !strncmp(item->string, "flashbed_", 9))
            cJSON_AddItemToObject(src, item->string, cJSON_Duplicate(item, 1));
    }
    cJSON_Delete(c);
}

/* model.json's "tokenizer" and "source" sections. */
static cJSON *model_meta(const char *dir, const char *tokenizer, const char *tokpath, bool byte_level, int bos,
                         int eos)
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
    copy_flashbed_keys(dir, src);
    return meta;
}

int import_hf(const char *dir, const char *tokenizer, const char *out_dir, enum fb_dtype dtype, char *err,
              size_t errlen)
{
    struct model_shape s;
    int bos, eos;
    if (read_config(dir, &s, &bos, &eos, err, errlen) != 0)
        return -1;
    bool opt = !strcmp(s.arch, "opt");
    char tokpath[4200];
    snprintf(tokpath, sizeof tokpath, "%s/tokenizer.json", dir);
    struct st_set st;
    if (st_open(&st, dir, err, errlen))
        return -1;
    struct model_writer w;
    if (model_writer_begin(&w, out_dir, &s, dtype, err, errlen)) {
        st_close(&st);
        return -1;
    }
    struct hf_ctx c = {&st, &w, &s, err, errlen};
    bool byte_level = false;
    int rc = copy_weights(&c, opt);
    if (!rc)
        rc = add_tokenizer(&w, &s, tokpath, tokenizer, &byte_level, err, errlen);
    st_close(&st);
    if (rc) {
        model_writer_abort(&w); /* removes the temporary folder */
        return -1;
    }
    return model_writer_finish(&w, model_meta(dir, tokenizer, tokpath, byte_level, bos, eos));
}
