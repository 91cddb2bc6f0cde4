#include "common/model_shape.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "common/errbuf.h"
#include "common/json_names.h"
#include "common/json_file.h"

int config_file_path(const struct fb_settings *set, const char *kind, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    int w = strchr(name, '/') || (n > 5 && strcmp(name + n - 5, ".json") == 0)
                ? snprintf(buf, len, "%s", name)
                : snprintf(buf, len, "%s/%s/%s.json", set->configs_dir, kind, name);
    if (w < 0 || (size_t)w >= len) {
        buf[0] = '\0';
        return -1;
    }
    return 0;
}

static int get_u32(const cJSON *o, const char *key, uint32_t *out, uint32_t min, uint32_t max,
                   const char *path, char *err, size_t errlen)
{
    uint64_t v;
    if (json_get_u64(o, key, min, max, &v, path, err, errlen))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int get_str(const cJSON *o, const char *key, char *out, size_t len, const char *path,
                   char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= len) {
        err_set(err, errlen, "%s: \"%s\" must be a string of under %zu characters", path, key, len);
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
        err_set(err, errlen, "%s: \"%s\" must be true or false", path, key);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

/* A non-negative finite number (eps, rope theta and fraction, threshold). */
static int get_num(const cJSON *o, const char *key, double *out, const char *path, char *err,
                   size_t errlen)
{
    return json_get_finite(o, key, 0, 1e300, out, path, err, errlen);
}

/* A list of numbers (longrope's factors), at most MODEL_MAX_ROPE_PAIRS of
 * them, into out; *n its length (model_shape_check judges the values and
 * the length). */
static int get_num_list(const cJSON *o, const char *key, double *out, uint32_t *n, const char *path, char *err,
                        size_t errlen)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, key), *v;
    int size = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    if (size < 1 || size > (int)MODEL_MAX_ROPE_PAIRS)
        return err_set(err, errlen, "%s: \"%s\" must be a list of 1 to %u numbers", path, key,
                       MODEL_MAX_ROPE_PAIRS);
    *n = 0;
    cJSON_ArrayForEach(v, list)
    {
        if (!cJSON_IsNumber(v))
            return err_set(err, errlen, "%s: \"%s\"[%u] is not a number", path, key, *n);
        out[(*n)++] = v->valuedouble;
    }
    return 0;
}

/* longrope's keys: the original context and the two factor lists, of
 * one length. */
static int get_longrope(const cJSON *o, struct model_shape *s, const char *path, char *err, size_t errlen)
{
    uint32_t n_long;
    if (get_u32(o, "rope_original_max_positions", &s->rope_original_max_positions, 1, MODEL_MAX_POSITIONS, path,
                err, errlen) ||
        get_num_list(o, "rope_short_factor", s->rope_short_factor, &s->rope_pairs, path, err, errlen) ||
        get_num_list(o, "rope_long_factor", s->rope_long_factor, &n_long, path, err, errlen))
        return -1;
    if (n_long != s->rope_pairs)
        return err_set(err, errlen, "%s: \"rope_long_factor\" has %u numbers, \"rope_short_factor\" %u", path,
                       n_long, s->rope_pairs);
    return 0;
}

/* rope_scaling and its numbers, when the file has it (every number a
 * scaling type needs must be there; model_shape_check judges them). */
static int get_rope_scaling(const cJSON *o, struct model_shape *s, const char *path, char *err, size_t errlen)
{
    if (!cJSON_HasObjectItem(o, "rope_scaling"))
        return 0;
    if (get_str(o, "rope_scaling", s->rope_scaling, sizeof s->rope_scaling, path, err, errlen) ||
        get_num(o, "rope_factor", &s->rope_factor, path, err, errlen))
        return -1;
    if (!strcmp(s->rope_scaling, "longrope"))
        return get_longrope(o, s, path, err, errlen);
    if (strcmp(s->rope_scaling, "llama3") != 0)
        return 0;
    return get_num(o, "rope_low_freq_factor", &s->rope_low_freq_factor, path, err, errlen) ||
                   get_num(o, "rope_high_freq_factor", &s->rope_high_freq_factor, path, err, errlen) ||
                   get_u32(o, "rope_original_max_positions", &s->rope_original_max_positions, 1,
                           MODEL_MAX_POSITIONS, path, err, errlen)
               ? -1
               : 0;
}

/* Gemma 3's keys (model_shape.h), each optional. */
static int get_gemma_keys(const cJSON *o, struct model_shape *s, const char *path, char *err, size_t errlen)
{
    return (cJSON_HasObjectItem(o, "sliding_window_pattern") &&
            get_u32(o, "sliding_window_pattern", &s->sliding_window_pattern, 1, MODEL_MAX_LAYERS, path, err,
                    errlen)) ||
                   (cJSON_HasObjectItem(o, "rope_local_theta") &&
                    get_num(o, "rope_local_theta", &s->rope_local_theta, path, err, errlen)) ||
                   (cJSON_HasObjectItem(o, "embedding_scale") &&
                    get_num(o, "embedding_scale", &s->embedding_scale, path, err, errlen)) ||
                   (cJSON_HasObjectItem(o, "post_norms") && get_bool(o, "post_norms", &s->post_norms, path, err, errlen))
               ? -1
               : 0;
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
    if ((cJSON_HasObjectItem(o, "head_dim") &&
         get_u32(o, "head_dim", &s->head_dim, 1, MODEL_MAX_D_MODEL, path, err, errlen)) ||
        (cJSON_HasObjectItem(o, "qkv_bias") && get_bool(o, "qkv_bias", &s->qkv_bias, path, err, errlen)) ||
        (cJSON_HasObjectItem(o, "sliding_window") &&
         get_u32(o, "sliding_window", &s->sliding_window, 1, MODEL_MAX_POSITIONS, path, err, errlen)))
        return -1;
    return get_gemma_keys(o, s, path, err, errlen) || get_rope_scaling(o, s, path, err, errlen) ? -1 : 0;
}

static int check_dim(const char *path, const char *key, uint32_t v, uint32_t min, uint32_t max, char *err,
                     size_t errlen)
{
    if (v >= min && v <= max)
        return 0;
    return err_set(err, errlen, "%s: \"%s\" must be from %u to %u, not %u", path, key, min, max, v);
}

static int check_real(const char *path, const char *key, double v, char *err, size_t errlen)
{
    if (isfinite(v) && v >= 0)
        return 0;
    return err_set(err, errlen, "%s: \"%s\" must be a finite non-negative number, not %g", path, key, v);
}

/* Heads split d_model evenly, KV heads share query heads evenly, and RoPE
 * rotates pairs of a head's dims: an odd head_dim would leave one dim
 * without its partner (the rotation reads one past the head). */
static int check_heads(const struct model_shape *s, const char *path, char *err, size_t errlen)
{
    if (!s->head_dim && s->d_model % s->n_heads)
        return err_set(err, errlen, "%s: \"n_heads\" %u does not divide \"d_model\" %u", path, s->n_heads,
                       s->d_model);
    if (s->n_heads % s->n_kv_heads)
        return err_set(err, errlen, "%s: \"n_kv_heads\" %u does not divide \"n_heads\" %u", path,
                       s->n_kv_heads, s->n_heads);
    uint32_t head_dim = model_shape_head_dim(s);
    if (strcmp(s->position, "rope") == 0 && head_dim % 2)
        return s->head_dim
                   ? err_set(err, errlen, "%s: \"head_dim\" %u: RoPE needs an even head_dim", path, head_dim)
                   : err_set(err, errlen,
                             "%s: \"d_model\" %u / \"n_heads\" %u gives head_dim %u: RoPE needs an even head_dim", path,
                             s->d_model, s->n_heads, head_dim);
    if ((uint64_t)head_dim * s->n_heads > MODEL_MAX_D_MODEL)
        return err_set(err, errlen, "%s: \"head_dim\" %u x \"n_heads\" %u is over %u", path, head_dim, s->n_heads,
                       MODEL_MAX_D_MODEL);
    if (strcmp(s->position, "rope") == 0 && !(s->rope_fraction > 0 && s->rope_fraction <= 1))
        return err_set(err, errlen, "%s: \"rope_fraction\" must be above 0 and at most 1 with RoPE, not %g",
                       path, s->rope_fraction);
    return 0;
}

/* longrope's numbers: rope_factor (max over original context) at least
 * 1, an original context from 2 (its log divides) to max_positions, and
 * every factor above 0 and finite (each divides a frequency). The lists'
 * length against the rotated pairs: check_longrope_pairs. */
static int check_longrope(const struct model_shape *s, const char *path, char *err, size_t errlen)
{
    if (!(isfinite(s->rope_factor) && s->rope_factor >= 1))
        return err_set(err, errlen, "%s: \"rope_factor\" must be at least 1 with longrope, not %g", path,
                       s->rope_factor);
    if (s->rope_original_max_positions < 2 || s->rope_original_max_positions > s->max_positions)
        return err_set(err, errlen,
                       "%s: \"rope_original_max_positions\" %u must be from 2 to \"max_positions\" %u with longrope",
                       path, s->rope_original_max_positions, s->max_positions);
    for (uint32_t j = 0; j < s->rope_pairs && j < MODEL_MAX_ROPE_PAIRS; j++) {
        if (!(isfinite(s->rope_short_factor[j]) && s->rope_short_factor[j] > 0))
            return err_set(err, errlen, "%s: \"rope_short_factor\"[%u] must be above 0, not %g", path, j,
                           s->rope_short_factor[j]);
        if (!(isfinite(s->rope_long_factor[j]) && s->rope_long_factor[j] > 0))
            return err_set(err, errlen, "%s: \"rope_long_factor\"[%u] must be above 0, not %g", path, j,
                           s->rope_long_factor[j]);
    }
    return 0;
}

/* longrope's lists hold one factor per rotated pair of a head. */
static int check_longrope_pairs(const struct model_shape *s, const char *path, char *err, size_t errlen)
{
    if (strcmp(s->rope_scaling, "longrope") != 0)
        return 0;
    uint32_t pairs = (uint32_t)(s->rope_fraction * model_shape_head_dim(s)) / 2;
    if (s->rope_pairs != pairs)
        return err_set(err, errlen,
                       "%s: \"rope_short_factor\" and \"rope_long_factor\" have %u numbers: longrope needs one per "
                       "rotated pair of a head, %u",
                       path, s->rope_pairs, pairs);
    return 0;
}

/* A rope_scaling this engine computes, with numbers it can use: factor
 * above 0; llama3's high_freq_factor above its low_freq_factor, which is
 * above 0 (the blend divides by their difference and by each). */
static int check_rope_scaling(const struct model_shape *s, const char *path, char *err, size_t errlen)
{
    if (!s->rope_scaling[0])
        return 0;
    bool llama3 = !strcmp(s->rope_scaling, "llama3");
    if (!strcmp(s->rope_scaling, "longrope"))
        return check_longrope(s, path, err, errlen);
    if (!llama3 && strcmp(s->rope_scaling, "linear") != 0)
        return err_set(err, errlen, "%s: \"rope_scaling\" \"%s\" is not one of linear, llama3, longrope", path,
                       s->rope_scaling);
    if (!(isfinite(s->rope_factor) && s->rope_factor > 0))
        return err_set(err, errlen, "%s: \"rope_factor\" must be above 0, not %g", path, s->rope_factor);
    if (llama3 && !(isfinite(s->rope_high_freq_factor) && s->rope_low_freq_factor > 0 &&
                    s->rope_high_freq_factor > s->rope_low_freq_factor))
        return err_set(err, errlen,
                       "%s: \"rope_low_freq_factor\" %g and \"rope_high_freq_factor\" %g: llama3 needs 0 < low < high",
                       path, s->rope_low_freq_factor, s->rope_high_freq_factor);
    if (llama3 && !s->rope_original_max_positions)
        return err_set(err, errlen, "%s: \"rope_original_max_positions\" must be at least 1 with llama3", path);
    return 0;
}

/* Gemma 3's keys: a pattern needs a window (and some layer inside it),
 * finite non-negative reals. */
static int check_gemma_keys(const struct model_shape *s, const char *path, char *err, size_t errlen)
{
    if (check_dim(path, "sliding_window_pattern", s->sliding_window_pattern, 0, MODEL_MAX_LAYERS, err, errlen) ||
        check_real(path, "rope_local_theta", s->rope_local_theta, err, errlen) ||
        check_real(path, "embedding_scale", s->embedding_scale, err, errlen))
        return -1;
    if (s->sliding_window_pattern && !s->sliding_window)
        return err_set(err, errlen, "%s: \"sliding_window_pattern\" %u needs a \"sliding_window\"", path,
                       s->sliding_window_pattern);
    return 0;
}

int model_shape_check(const struct model_shape *s, const char *path, char *err, size_t errlen)
{
    if (check_dim(path, "d_model", s->d_model, 1, MODEL_MAX_D_MODEL, err, errlen) ||
        check_dim(path, "d_ff", s->d_ff, 1, MODEL_MAX_D_FF, err, errlen) ||
        check_dim(path, "n_layers", s->n_layers, 1, MODEL_MAX_LAYERS, err, errlen) ||
        check_dim(path, "n_heads", s->n_heads, 1, s->head_dim ? MODEL_MAX_D_MODEL : s->d_model, err, errlen) ||
        check_dim(path, "n_kv_heads", s->n_kv_heads, 1, s->n_heads, err, errlen) ||
        check_dim(path, "vocab_size", s->vocab_size, 1, MODEL_MAX_VOCAB, err, errlen) ||
        check_dim(path, "max_positions", s->max_positions, 1, MODEL_MAX_POSITIONS, err, errlen) ||
        check_dim(path, "position_offset", s->position_offset, 0, MODEL_MAX_POSITIONS, err, errlen) ||
        check_real(path, "norm_eps", s->norm_eps, err, errlen) ||
        check_real(path, "rope_fraction", s->rope_fraction, err, errlen) ||
        check_real(path, "rope_theta", s->rope_theta, err, errlen) ||
        check_real(path, "fatrelu_threshold", s->fatrelu_threshold, err, errlen) ||
        check_dim(path, "head_dim", s->head_dim, 0, MODEL_MAX_D_MODEL, err, errlen) ||
        check_dim(path, "sliding_window", s->sliding_window, 0, MODEL_MAX_POSITIONS, err, errlen) ||
        check_rope_scaling(s, path, err, errlen) || check_gemma_keys(s, path, err, errlen))
        return -1;
    return check_heads(s, path, err, errlen) || check_longrope_pairs(s, path, err, errlen) ? -1 : 0;
}

/* The keys every shape file has, each within its bounds; ffn_kind from
 * its name. */
static int get_required(const cJSON *o, struct model_shape *s, const char *path, char *err, size_t errlen)
{
    char kind[16];
    if (get_str(o, "name", s->name, sizeof s->name, path, err, errlen) ||
        get_str(o, "arch", s->arch, sizeof s->arch, path, err, errlen) ||
        get_u32(o, "d_model", &s->d_model, 1, MODEL_MAX_D_MODEL, path, err, errlen) ||
        get_u32(o, "d_ff", &s->d_ff, 1, MODEL_MAX_D_FF, path, err, errlen) ||
        get_u32(o, "n_layers", &s->n_layers, 1, MODEL_MAX_LAYERS, path, err, errlen) ||
        get_u32(o, "n_heads", &s->n_heads, 1, MODEL_MAX_D_MODEL, path, err, errlen) ||
        get_u32(o, "n_kv_heads", &s->n_kv_heads, 1, MODEL_MAX_D_MODEL, path, err, errlen) ||
        get_u32(o, "vocab_size", &s->vocab_size, 1, MODEL_MAX_VOCAB, path, err, errlen) ||
        get_u32(o, "max_positions", &s->max_positions, 1, MODEL_MAX_POSITIONS, path, err, errlen) ||
        get_str(o, "ffn_kind", kind, sizeof kind, path, err, errlen) ||
        get_str(o, "ffn_activation", s->ffn_activation, sizeof s->ffn_activation, path, err, errlen) ||
        get_str(o, "norm", s->norm, sizeof s->norm, path, err, errlen) ||
        get_num(o, "norm_eps", &s->norm_eps, path, err, errlen) ||
        get_str(o, "position", s->position, sizeof s->position, path, err, errlen) ||
        get_u32(o, "position_offset", &s->position_offset, 0, MODEL_MAX_POSITIONS, path, err, errlen) ||
        get_num(o, "rope_fraction", &s->rope_fraction, path, err, errlen) ||
        get_num(o, "rope_theta", &s->rope_theta, path, err, errlen) ||
        get_bool(o, "biases", &s->biases, path, err, errlen) ||
        get_bool(o, "tied_embeddings", &s->tied_embeddings, path, err, errlen) ||
        get_bool(o, "parallel_block", &s->parallel_block, path, err, errlen))
        return -1;
    if (strcmp(kind, "relu") == 0)
        s->ffn_kind = FFN_RELU;
    else if (strcmp(kind, "glu") == 0)
        s->ffn_kind = FFN_GLU;
    else
        return err_set(err, errlen, "%s: \"ffn_kind\" must be \"relu\" or \"glu\", not \"%s\"", path, kind);
    return 0;
}

/* The shape in the file at path (named name in messages) into s (zeroed). */
static int shape_from_file(const char *name, const char *path, struct model_shape *s, char *err, size_t errlen)
{
    char *text = read_text_file(path, NULL);
    if (!text) {
        err_set(err, errlen, "model shape %s: cannot read %s", name, path);
        return -1;
    }
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(o)) {
        err_set(err, errlen, "%s: not a JSON object", path);
        cJSON_Delete(o);
        return -1;
    }
    int rc = -1;
    if (get_required(o, s, path, err, errlen) || get_optional(o, s, path, err, errlen) ||
        model_shape_check(s, path, err, errlen))
        goto out;
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(o, "paper_statistics");
    if (cJSON_IsString(ps))
        snprintf(s->paper_statistics, sizeof s->paper_statistics, "%s", ps->valuestring);
    rc = 0;
out:
    cJSON_Delete(o);
    return rc;
}

/* Shape paths are at most this long, as config_file_path makes them. */
#define SHAPE_PATH_MAX 4096

int model_shape_load(const struct fb_settings *set, const char *name, struct model_shape *s, char *err,
                     size_t errlen)
{
    memset(s, 0, sizeof *s);
    char path[SHAPE_PATH_MAX];
    struct stat st;
    if (stat(name, &st) == 0 && S_ISDIR(st.st_mode)) { /* a model folder, as every other --model takes */
        if (snprintf(path, sizeof path, "%s/model.json", name) >= (int)sizeof path)
            return err_set(err, errlen, "model %.200s...: the name is too long for a path", name);
        if (stat(path, &st) != 0)
            return err_set(err, errlen, "model %s: a folder without model.json (not a flashbed model folder: "
                                        "flashbed convert makes one)", name);
        return shape_from_file(name, path, s, err, errlen);
    }
    if (config_file_path(set, "models", name, path, sizeof path) != 0)
        return err_set(err, errlen, "model shape %.200s...: the name is too long for a path", name);
    if (stat(path, &st) != 0) {
        char known[2048], dir[SHAPE_PATH_MAX];
        snprintf(dir, sizeof dir, "%s/models", set->configs_dir);
        json_names_list(dir, "", false, known, sizeof known);
        return err_set(err, errlen, "model %s: neither a model folder nor a shape flashbed knows (no %s; the "
                                    "shapes: %s) nor a .json file", name, path, known[0] ? known : "none");
    }
    return shape_from_file(name, path, s, err, errlen);
}

int model_shape_read(const char *path, struct model_shape *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (strlen(path) >= SHAPE_PATH_MAX)
        return err_set(err, errlen, "model shape %.200s...: the name is too long for a path", path);
    return shape_from_file(path, path, s, err, errlen);
}

uint32_t model_shape_ffn_matrices(const struct model_shape *s)
{
    switch (s->ffn_kind) {
    case FFN_RELU:
        return 2;
    case FFN_GLU:
        return 3;
    }
    return 2;
}

void model_shape_params(const struct model_shape *s, struct param_counts *c)
{
    memset(c, 0, sizeof *c);
    uint64_t d = s->d_model, L = s->n_layers;
    uint64_t head_dim = model_shape_head_dim(s);
    uint64_t q = head_dim * s->n_heads, kv = head_dim * s->n_kv_heads;
    c->embeddings = (uint64_t)s->vocab_size * d;
    if (strcmp(s->position, "learned") == 0)
        c->embeddings += (uint64_t)(s->max_positions + s->position_offset) * d;
    c->lm_head = s->tied_embeddings ? 0 : (uint64_t)s->vocab_size * d;
    if (s->output_bias)
        c->lm_head += s->vocab_size;
    uint64_t attn = d * q + 2 * d * kv + q * d; /* q, k, v, o */
    if (s->biases || s->qkv_bias)
        attn += q + 2 * kv;
    if (s->biases)
        attn += d; /* o */
    c->attention = attn * L;
    uint64_t ffn = (uint64_t)s->d_model * model_shape_ffn_matrices(s) * s->d_ff;
    if (s->biases)
        ffn += (uint64_t)s->d_ff * (s->ffn_kind == FFN_GLU ? 2 : 1) + d;
    c->ffn = ffn * L;
    uint64_t norm = strcmp(s->norm, "layernorm") == 0 ? 2 * d : d; /* weight (+ bias) */
    uint64_t norms_per_layer = (s->parallel_block ? 1 : 2) + (s->post_norms ? 2 : 0);
    c->norms = norm * (norms_per_layer * L + 1);
    if (s->qk_norm) /* q and k: weight (and a LayerNorm's bias) over a head */
        c->norms += (strcmp(s->norm, "layernorm") == 0 ? 4 : 2) * head_dim * L;
    c->total = c->embeddings + c->lm_head + c->attention + c->ffn + c->norms;
}

bool model_shape_layer_windowed(const struct model_shape *s, uint32_t l)
{
    return s->sliding_window && (!s->sliding_window_pattern || (l + 1) % s->sliding_window_pattern != 0);
}

double model_shape_attended(const struct model_shape *s, double context)
{
    double windowed = s->sliding_window && context > s->sliding_window ? s->sliding_window : context;
    if (!s->sliding_window_pattern)
        return windowed;
    uint32_t global = s->n_layers / s->sliding_window_pattern; /* layers pattern - 1, 2 pattern - 1, ... */
    return (windowed * (s->n_layers - global) + context * global) / s->n_layers;
}

uint32_t model_shape_head_dim(const struct model_shape *s)
{
    return s->head_dim ? s->head_dim : s->d_model / s->n_heads;
}
