/* What every architecture's part of the HF importer shares: reading
 * config.json keys, reading and writing tensors, and the two layout
 * changes (fused QKV split, rotate-half RoPE to adjacent pairs). */
#include "engine/import/import_hf_arch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/import/hf_act.h"
#include "engine/model/model.h"

cJSON *hf_read_json(const char *path, char *err, size_t errlen)
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

int cfg_uint(const struct config *c, const char *key, uint32_t *out, int required)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->json, key);
    /* transformers saves an optional key it leaves unset as null
     * (Falcon's num_ln_in_parallel_attn): as good as absent */
    if ((!v || cJSON_IsNull(v)) && !required)
        return 0;
    uint64_t u;
    /* no count in a config is larger (model_shape_check bounds each later) */
    if (json_get_u64(c->json, key, 1, MODEL_MAX_VOCAB, &u, c->path, c->err, c->errlen))
        return -1;
    *out = (uint32_t)u;
    return 0;
}

int cfg_uint_any(const struct config *c, const char *const *keys, uint32_t *out, int required)
{
    for (int i = 0; keys[i]; i++)
        if (cJSON_HasObjectItem(c->json, keys[i]) && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c->json, keys[i])))
            return cfg_uint(c, keys[i], out, 1);
    return required ? cfg_uint(c, keys[0], out, 1) : 0;
}

double cfg_num(const cJSON *c, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

int cfg_bool(const cJSON *c, const char *key, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

const char *cfg_str(const cJSON *c, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int cfg_refuse_true(const struct config *c, const char *key, int def, const char *why)
{
    if (cfg_bool(c->json, key, def))
        return err_set(c->err, c->errlen, "%s: \"%s\": true is not supported (%s)", c->path, key, why);
    return 0;
}

int cfg_refuse_rope_scaling(const struct config *c)
{
    const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(c->json, "rope_scaling");
    if (scaling && !cJSON_IsNull(scaling))
        return err_set(c->err, c->errlen, "%s: \"rope_scaling\" is not supported", c->path);
    return 0;
}

/* Whether name is one of the ", "-separated names in list. */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    if (n == 0) /* strstr finds "" everywhere: the loop would not advance */
        return false;
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

int cfg_activation(const struct config *c, const char *key, const char *def, const char *allowed,
                   struct model_shape *s)
{
    const char *act = cfg_str(c->json, key);
    if (!act && cJSON_HasObjectItem(c->json, key))
        return err_set(c->err, c->errlen, "%s: \"%s\" must be a string", c->path, key);
    if (!act)
        act = def;
    const char *fb = hf_act_to_flashbed(act);
    if (!fb || !in_list(allowed, act))
        return err_set(c->err, c->errlen, "%s: \"%s\": \"%s\" is not supported for %s (%s)", c->path, key, act,
                       cfg_str(c->json, "model_type"), allowed);
    snprintf(s->ffn_activation, sizeof s->ffn_activation, "%s", fb);
    return 0;
}

float *hf_read(struct hf_ctx *c, const char *src, int ndim, uint64_t d0, uint64_t d1)
{
    uint64_t dims[2] = {d0, d1};
    return st_read_f32(c->st, src, ndim, dims, c->err, c->errlen);
}

int hf_put(struct hf_ctx *c, const char *dst, float *v, int ndim, uint64_t d0, uint64_t d1)
{
    if (!v)
        return -1;
    uint64_t dims[2] = {d0, d1};
    int rc = model_writer_tensor(c->w, dst, v, ndim, dims);
    free(v);
    return rc;
}

int hf_copy(struct hf_ctx *c, const char *src, const char *dst, int ndim, uint64_t d0, uint64_t d1)
{
    return hf_put(c, dst, hf_read(c, src, ndim, d0, d1), ndim, d0, d1);
}

void hf_layer_name(char *buf, size_t len, uint32_t l, const char *what)
{
    layer_tensor_name(buf, len, (int)l, what);
}

float *hf_layer_read(struct hf_ctx *c, const char *pre, const char *name, int ndim, uint64_t d0, uint64_t d1)
{
    char src[200];
    snprintf(src, sizeof src, "%s%s", pre, name);
    return hf_read(c, src, ndim, d0, d1);
}

int hf_layer_copy(struct hf_ctx *c, const char *pre, uint32_t l, const char *from, const char *to, int ndim,
                  uint64_t d0, uint64_t d1)
{
    char src[200], dst[96];
    snprintf(src, sizeof src, "%s%s", pre, from);
    hf_layer_name(dst, sizeof dst, l, to);
    return hf_copy(c, src, dst, ndim, d0, d1);
}

int hf_layer_norm(struct hf_ctx *c, const char *pre, uint32_t l, const char *from, const char *to)
{
    char src[160], dst[64];
    uint64_t d = c->s->d_model;
    snprintf(src, sizeof src, "%s.weight", from);
    snprintf(dst, sizeof dst, "%s.weight", to);
    if (hf_layer_copy(c, pre, l, src, dst, 1, d, 0) != 0)
        return -1;
    snprintf(src, sizeof src, "%s.bias", from);
    snprintf(dst, sizeof dst, "%s.bias", to);
    return hf_layer_copy(c, pre, l, src, dst, 1, d, 0);
}

int hf_embed_tokens(struct hf_ctx *c)
{
    return hf_copy(c, "model.embed_tokens.weight", "tok_embedding", 2, c->s->vocab_size, c->s->d_model);
}

int hf_head_copy(struct hf_ctx *c, const char *norm_weight, const char *norm_bias)
{
    uint64_t d = c->s->d_model;
    if (hf_copy(c, norm_weight, "final_norm.weight", 1, d, 0) ||
        (norm_bias && hf_copy(c, norm_bias, "final_norm.bias", 1, d, 0)))
        return -1;
    return c->s->tied_embeddings ? 0 : hf_copy(c, "lm_head.weight", "output", 2, c->s->vocab_size, d);
}

uint32_t hf_head_dim(const struct model_shape *s)
{
    return model_shape_head_dim(s);
}

uint32_t hf_rope_dims(const struct model_shape *s)
{
    /* as HF computes it: int(head_dim * partial_rotary_factor) */
    return (uint32_t)((double)hf_head_dim(s) * s->rope_fraction);
}

int hf_rope_to_pairs(float *w, uint32_t heads, uint32_t hd, uint32_t rot, uint64_t cols)
{
    float *tmp = malloc((size_t)rot * cols * sizeof *tmp);
    if (!tmp)
        return -1;
    size_t row = cols * sizeof *tmp;
    for (uint32_t h = 0; h < heads; h++) {
        float *head = w + (uint64_t)h * hd * cols;
        memcpy(tmp, head, rot * row);
        for (uint32_t i = 0; i < rot / 2; i++) {
            memcpy(head + (2 * i) * cols, tmp + i * cols, row);
            memcpy(head + (2 * i + 1) * cols, tmp + (i + rot / 2) * cols, row);
        }
    }
    free(tmp);
    return 0;
}

int hf_put_rope(struct hf_ctx *c, uint32_t l, const char *what, float *v, uint32_t heads, uint64_t cols)
{
    uint32_t hd = hf_head_dim(c->s);
    char dst[96];
    hf_layer_name(dst, sizeof dst, l, what);
    if (v && hf_rope_to_pairs(v, heads, hd, hf_rope_dims(c->s), cols) != 0) {
        free(v);
        return err_set(c->err, c->errlen, "out of memory reordering %s", dst);
    }
    uint64_t rows = (uint64_t)heads * hd;
    return cols == 1 ? hf_put(c, dst, v, 1, rows, 0) : hf_put(c, dst, v, 2, rows, cols);
}

int hf_put_qkv(struct hf_ctx *c, uint32_t l, float *q, float *k, float *v, uint64_t cols)
{
    const struct model_shape *s = c->s;
    bool bias = cols == 1;
    char dst[96];
    hf_layer_name(dst, sizeof dst, l, bias ? "attn.bv" : "attn.wv");
    uint64_t kv_rows = (uint64_t)s->n_kv_heads * hf_head_dim(s);
    int rc = hf_put_rope(c, l, bias ? "attn.bq" : "attn.wq", q, s->n_heads, cols);
    rc = rc ? (free(k), -1) : hf_put_rope(c, l, bias ? "attn.bk" : "attn.wk", k, s->n_kv_heads, cols);
    if (rc) {
        free(v);
        return -1;
    }
    return bias ? hf_put(c, dst, v, 1, kv_rows, 0) : hf_put(c, dst, v, 2, kv_rows, cols);
}

int hf_ffn(struct hf_ctx *c, const char *pre, uint32_t l, const char *up_name, const char *gate_name,
           const char *down_name)
{
    uint64_t d = c->s->d_model, ff = c->s->d_ff;
    float *up = hf_layer_read(c, pre, up_name, 2, ff, d);
    float *down = up ? hf_layer_read(c, pre, down_name, 2, d, ff) : NULL;
    float *gate = down && gate_name ? hf_layer_read(c, pre, gate_name, 2, ff, d) : NULL;
    int rc = up && down && (gate || !gate_name) ? model_writer_ffn_layer(c->w, (int)l, up, gate, down) : -1;
    free(up);
    free(gate);
    free(down);
    return rc;
}

/* Copies head h's rows (hd of them, cols wide) of part (0 q, 1 k, 2 v)
 * out of the grouped fused layout (see hf_split_qkv) into out. */
static void take_head(const float *fused, uint32_t n_heads, uint32_t n_kv, uint32_t hd, uint64_t cols, int part,
                      uint32_t h, float *out)
{
    uint32_t per_group = n_heads / n_kv; /* query heads per key/value head */
    uint32_t group = part == 0 ? h / per_group : h;
    uint32_t slot = part == 0 ? h % per_group : per_group + (uint32_t)part - 1;
    uint64_t first = ((uint64_t)group * (per_group + 2) + slot) * hd;
    memcpy(out + (uint64_t)h * hd * cols, fused + first * cols, (size_t)hd * cols * sizeof *out);
}

int hf_split_qkv(struct hf_ctx *c, float *fused, uint64_t cols, float **q, float **k, float **v)
{
    const struct model_shape *s = c->s;
    uint32_t hd = hf_head_dim(s);
    uint64_t head = (uint64_t)hd * cols;
    *q = *k = *v = NULL;
    if (!fused)
        return -1;
    *q = malloc(s->n_heads * head * sizeof **q);
    *k = malloc(s->n_kv_heads * head * sizeof **k);
    *v = malloc(s->n_kv_heads * head * sizeof **v);
    if (!*q || !*k || !*v) {
        free(fused);
        free(*q);
        free(*k);
        free(*v);
        *q = *k = *v = NULL;
        return err_set(c->err, c->errlen, "out of memory splitting query_key_value");
    }
    for (uint32_t h = 0; h < s->n_heads; h++)
        take_head(fused, s->n_heads, s->n_kv_heads, hd, cols, 0, h, *q);
    for (uint32_t h = 0; h < s->n_kv_heads; h++) {
        take_head(fused, s->n_heads, s->n_kv_heads, hd, cols, 1, h, *k);
        take_head(fused, s->n_heads, s->n_kv_heads, hd, cols, 2, h, *v);
    }
    free(fused);
    return 0;
}
