#include "common/model_shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/json_file.h"

#ifndef FLASHBED_SOURCE_DIR
#define FLASHBED_SOURCE_DIR "."
#endif

static char configs_dir_given[4096];

const char *configs_dir(void)
{
    return configs_dir_given[0] ? configs_dir_given : FLASHBED_SOURCE_DIR "/configs";
}

void configs_dir_set(const char *dir)
{
    snprintf(configs_dir_given, sizeof configs_dir_given, "%s", dir ? dir : "");
}

void config_file_path(const char *kind, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    if (strchr(name, '/') || (n > 5 && strcmp(name + n - 5, ".json") == 0))
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "%s/%s/%s.json", configs_dir(), kind, name);
}

static int get_u32(const cJSON *o, const char *key, uint32_t *out, int positive, const char *path,
                   char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < (positive ? 1 : 0) || v->valuedouble > 4e9 ||
        v->valuedouble != (double)(uint32_t)v->valuedouble) {
        snprintf(err, errlen, "%s: \"%s\" must be a %s whole number", path, key,
                 positive ? "positive" : "non-negative");
        return -1;
    }
    *out = (uint32_t)v->valuedouble;
    return 0;
}

static int get_str(const cJSON *o, const char *key, char *out, size_t len, const char *path,
                   char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= len) {
        snprintf(err, errlen, "%s: \"%s\" must be a string of under %zu characters", path, key, len);
        return -1;
    }
    strcpy(out, v->valuestring);
    return 0;
}

static int get_bool(const cJSON *o, const char *key, bool *out, const char *path, char *err,
                    size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsBool(v)) {
        snprintf(err, errlen, "%s: \"%s\" must be true or false", path, key);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

static int get_num(const cJSON *o, const char *key, double *out, const char *path, char *err,
                   size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0) {
        snprintf(err, errlen, "%s: \"%s\" must be a non-negative number", path, key);
        return -1;
    }
    *out = v->valuedouble;
    return 0;
}

/* The keys later architectures added, absent from older files. */
static int get_optional(const cJSON *o, struct model_shape *s, const char *path, char *err, size_t errlen)
{
    if (cJSON_HasObjectItem(o, "fatrelu_threshold") &&
        get_num(o, "fatrelu_threshold", &s->fatrelu_threshold, path, err, errlen))
        return -1;
    if (cJSON_HasObjectItem(o, "qk_norm") && get_bool(o, "qk_norm", &s->qk_norm, path, err, errlen))
        return -1;
    if (cJSON_HasObjectItem(o, "output_bias") && get_bool(o, "output_bias", &s->output_bias, path, err, errlen))
        return -1;
    return 0;
}

int model_shape_load(const char *name, struct model_shape *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    char path[4096];
    config_file_path("models", name, path, sizeof path);
    char *text = read_text_file(path, NULL);
    if (!text) {
        snprintf(err, errlen, "model shape %s: cannot read %s", name, path);
        return -1;
    }
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(o)) {
        snprintf(err, errlen, "%s: not a JSON object", path);
        cJSON_Delete(o);
        return -1;
    }
    char kind[16];
    int rc = -1;
    if (get_str(o, "name", s->name, sizeof s->name, path, err, errlen) ||
        get_str(o, "arch", s->arch, sizeof s->arch, path, err, errlen) ||
        get_u32(o, "d_model", &s->d_model, 1, path, err, errlen) ||
        get_u32(o, "d_ff", &s->d_ff, 1, path, err, errlen) ||
        get_u32(o, "n_layers", &s->n_layers, 1, path, err, errlen) ||
        get_u32(o, "n_heads", &s->n_heads, 1, path, err, errlen) ||
        get_u32(o, "n_kv_heads", &s->n_kv_heads, 1, path, err, errlen) ||
        get_u32(o, "vocab_size", &s->vocab_size, 1, path, err, errlen) ||
        get_u32(o, "max_positions", &s->max_positions, 1, path, err, errlen) ||
        get_str(o, "ffn_kind", kind, sizeof kind, path, err, errlen) ||
        get_str(o, "ffn_activation", s->ffn_activation, sizeof s->ffn_activation, path, err, errlen) ||
        get_str(o, "norm", s->norm, sizeof s->norm, path, err, errlen) ||
        get_num(o, "norm_eps", &s->norm_eps, path, err, errlen) ||
        get_str(o, "position", s->position, sizeof s->position, path, err, errlen) ||
        get_u32(o, "position_offset", &s->position_offset, 0, path, err, errlen) ||
        get_num(o, "rope_fraction", &s->rope_fraction, path, err, errlen) ||
        get_num(o, "rope_theta", &s->rope_theta, path, err, errlen) ||
        get_bool(o, "biases", &s->biases, path, err, errlen) ||
        get_bool(o, "tied_embeddings", &s->tied_embeddings, path, err, errlen) ||
        get_bool(o, "parallel_block", &s->parallel_block, path, err, errlen))
        goto out;
    if (strcmp(kind, "relu") == 0)
        s->ffn_kind = FFN_RELU;
    else if (strcmp(kind, "glu") == 0)
        s->ffn_kind = FFN_GLU;
    else {
        snprintf(err, errlen, "%s: \"ffn_kind\" must be \"relu\" or \"glu\", not \"%s\"", path, kind);
        goto out;
    }
    if (s->d_model % s->n_heads || s->n_heads % s->n_kv_heads) {
        snprintf(err, errlen, "%s: d_model must divide into n_heads, n_heads into n_kv_heads", path);
        goto out;
    }
    if ((uint64_t)s->max_positions + s->position_offset > UINT32_MAX) {
        /* the learned position table has max_positions + position_offset rows, a 32-bit count */
        snprintf(err, errlen, "%s: max_positions %u + position_offset %u do not fit in 32 bits", path,
                 s->max_positions, s->position_offset);
        goto out;
    }
    if (get_optional(o, s, path, err, errlen))
        goto out;
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(o, "paper_statistics");
    if (cJSON_IsString(ps))
        snprintf(s->paper_statistics, sizeof s->paper_statistics, "%s", ps->valuestring);
    rc = 0;
out:
    cJSON_Delete(o);
    return rc;
}

uint64_t model_shape_neuron_weights(const struct model_shape *s)
{
    return (uint64_t)s->d_model * (s->ffn_kind == FFN_GLU ? 3 : 2);
}

void model_shape_params(const struct model_shape *s, struct param_counts *c)
{
    memset(c, 0, sizeof *c);
    uint64_t d = s->d_model, L = s->n_layers;
    uint64_t head_dim = d / s->n_heads;
    uint64_t kv = head_dim * s->n_kv_heads;
    c->embeddings = (uint64_t)s->vocab_size * d;
    if (strcmp(s->position, "learned") == 0)
        c->embeddings += (uint64_t)(s->max_positions + s->position_offset) * d;
    c->lm_head = s->tied_embeddings ? 0 : (uint64_t)s->vocab_size * d;
    if (s->output_bias)
        c->lm_head += s->vocab_size;
    uint64_t attn = d * d + 2 * d * kv + d * d; /* q, k, v, o */
    if (s->biases)
        attn += d + 2 * kv + d;
    c->attention = attn * L;
    uint64_t ffn = model_shape_neuron_weights(s) * s->d_ff;
    if (s->biases)
        ffn += (uint64_t)s->d_ff * (s->ffn_kind == FFN_GLU ? 2 : 1) + d;
    c->ffn = ffn * L;
    uint64_t norm = strcmp(s->norm, "layernorm") == 0 ? 2 * d : d; /* weight (+ bias) */
    uint64_t norms_per_layer = s->parallel_block ? 1 : 2;
    c->norms = norm * (norms_per_layer * L + 1);
    if (s->qk_norm)
        c->norms += 4 * head_dim * L; /* q and k: weight and bias over a head */
    c->total = c->embeddings + c->lm_head + c->attention + c->ffn + c->norms;
}
