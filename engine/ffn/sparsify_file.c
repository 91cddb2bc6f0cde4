/* sparsify.json both ways (sparsify_file.h). */
#include "engine/ffn/sparsify_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "common/sha256.h"
#include "engine/model/dtype.h"
#include "engine/model/model_integrity.h"

enum { FORMAT_VERSION = 1 };

int sparsify_alloc(struct sparsify_thresholds *t, uint32_t n_layers, enum sparsify_kind kind, char *err,
                   size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->n_layers = n_layers;
    t->kind = kind;
    size_t n = n_layers ? n_layers : 1;
    bool ok = true;
    if (kind & SPARSIFY_GATE)
        ok = (t->gate = calloc(n, sizeof *t->gate)) != NULL;
    if (ok && (kind & SPARSIFY_INPUT))
        ok = (t->input = calloc(n, sizeof *t->input)) && (t->inter = calloc(n, sizeof *t->inter));
    if (!ok) {
        sparsify_free(t);
        return err_set(err, errlen, "out of memory for %u layers' thresholds", n_layers);
    }
    return 0;
}

void sparsify_free(struct sparsify_thresholds *t)
{
    free(t->gate);
    free(t->input);
    free(t->inter);
    t->gate = t->input = t->inter = NULL;
}

const char *sparsify_kind_name(enum sparsify_kind k)
{
    return k == SPARSIFY_GATE ? "gate" : k == SPARSIFY_INPUT ? "input" : "both";
}

bool sparsify_kind_parse(const char *name, enum sparsify_kind *out)
{
    static const enum sparsify_kind kinds[] = {SPARSIFY_GATE, SPARSIFY_INPUT, SPARSIFY_BOTH};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(name, sparsify_kind_name(kinds[i]))) {
            *out = kinds[i];
            return true;
        }
    return false;
}

bool sparsify_present(const char *model_dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", model_dir, SPARSIFY_FILE);
    return path_exists(path);
}

/* Bundle `id` of layer l into buf: from DRAM (checked at load), or from
 * ffn.bin, checked against ffn.crc32c. */
static int read_bundle(const struct model *m, FILE *in, uint32_t l, uint32_t id, uint8_t *buf, char *err,
                       size_t errlen)
{
    if (m->layers[l].ffn_bundles) {
        memcpy(buf, (const uint8_t *)m->layers[l].ffn_bundles + (size_t)id * m->bundle_stride, m->bundle_bytes);
        return 0;
    }
    long long at = ((long long)l * m->shape.d_ff + id) * (long long)m->bundle_stride;
    if (fseeko(in, (off_t)at, SEEK_SET) != 0 || fread(buf, 1, m->bundle_bytes, in) != m->bundle_bytes)
        return err_set(err, errlen, "%s: cannot read bundle %u of layer %u", m->ffn_path, id, l);
    return model_bundle_check(m, l, id, buf, err, errlen); /* checked as loaded (issue 47) */
}

static void hash_layers(const struct model *m, struct sha256 *h, FILE *in, uint8_t *buf, int *rc, char *err,
                        size_t errlen)
{
    const struct model_shape *s = &m->shape;
    for (uint32_t l = 0; *rc == 0 && l < s->n_layers; l++) {
        const float *norm = m->layers[l].ffn_norm ? m->layers[l].ffn_norm : m->layers[l].attn_norm;
        if (norm)
            sha256_update(h, norm, s->d_model * sizeof *norm);
        uint32_t ids[2] = {0, s->d_ff - 1};
        for (int k = 0; *rc == 0 && k < 2; k++) {
            *rc = read_bundle(m, in, l, ids[k], buf, err, errlen);
            if (*rc == 0)
                sha256_update(h, buf, m->bundle_bytes);
        }
    }
}

int sparsify_model_fingerprint(const struct model *m, char hex[65], char *err, size_t errlen)
{
    const struct model_shape *s = &m->shape;
    struct sha256 h;
    sha256_init(&h);
    uint32_t dims[4] = {s->n_layers, s->d_model, s->d_ff, (uint32_t)m->dtype};
    sha256_update(&h, dims, sizeof dims);
    FILE *in = NULL;
    if (s->n_layers && !m->layers[0].ffn_bundles && !(in = fopen(m->ffn_path, "rb")))
        return err_set(err, errlen, "%s: cannot open: %s", m->ffn_path, strerror(errno));
    uint8_t *buf = malloc(m->bundle_bytes ? m->bundle_bytes : 1);
    int rc = buf ? 0 : err_set(err, errlen, "out of memory fingerprinting %s", m->dir);
    hash_layers(m, &h, in, buf, &rc, err, errlen);
    free(buf);
    if (in)
        fclose(in);
    if (rc == 0)
        sha256_final_hex(&h, hex);
    return rc;
}

static cJSON *floats_json(const float *v, uint32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (uint32_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *model_json(const struct model *m, const char *fingerprint)
{
    const struct model_shape *s = &m->shape;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", s->name);
    cJSON_AddNumberToObject(j, "n_layers", s->n_layers);
    cJSON_AddNumberToObject(j, "d_model", s->d_model);
    cJSON_AddNumberToObject(j, "d_ff", s->d_ff);
    cJSON_AddStringToObject(j, "dtype", wtype_name(m->dtype));
    cJSON_AddStringToObject(j, "fingerprint_sha256", fingerprint);
    return j;
}

static void add_thresholds(cJSON *j, const struct sparsify_thresholds *t)
{
    if (t->gate) {
        cJSON *g = cJSON_AddObjectToObject(j, "gate");
        cJSON_AddStringToObject(g, "rule", "neuron i kept when |act(gate_i.x)| > thresholds[layer]");
        cJSON_AddItemToObject(g, "thresholds", floats_json(t->gate, t->n_layers));
        cJSON_AddStringToObject(g, "global_rule", "perplexity/generate/run --active gate --sparsify FILE: neuron i "
                                "kept when |act(gate_i.x)| > global_threshold in every layer");
        cJSON_AddNumberToObject(g, "global_threshold", t->gate_global);
    }
    if (t->input) {
        cJSON *in = cJSON_AddObjectToObject(j, "input");
        cJSON_AddStringToObject(in, "rule", "input channel j kept when |x_j| > thresholds[layer]; row i of down kept "
                                "when |act(gate_i.x')*(up_i.x')| > intermediate_thresholds[layer], x' the kept "
                                "channels");
        cJSON_AddItemToObject(in, "thresholds", floats_json(t->input, t->n_layers));
        cJSON_AddItemToObject(in, "intermediate_thresholds", floats_json(t->inter, t->n_layers));
    }
}

int sparsify_write(const struct model *m, const struct sparsify_thresholds *t, cJSON *extra, const char *path,
                   char *err, size_t errlen)
{
    char fp[65], in_dir[4200];
    if (sparsify_model_fingerprint(m, fp, err, errlen) != 0) {
        cJSON_Delete(extra);
        return -1;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "flashbed-sparsify");
    cJSON_AddNumberToObject(j, "format_version", FORMAT_VERSION);
    cJSON_AddItemToObject(j, "model", model_json(m, fp));
    cJSON_AddNumberToObject(j, "sparsity", t->sparsity);
    cJSON_AddStringToObject(j, "kind", sparsify_kind_name(t->kind));
    add_thresholds(j, t);
    while (extra && extra->child) {
        cJSON *item = cJSON_DetachItemViaPointer(extra, extra->child);
        cJSON_AddItemToObject(j, item->string, item);
    }
    cJSON_Delete(extra);
    snprintf(in_dir, sizeof in_dir, "%s/%s", m->dir, SPARSIFY_FILE);
    int rc = atomic_write_json(NULL, path ? path : in_dir, j, err, errlen);
    cJSON_Delete(j);
    return rc;
}

/* ---- reading ---- */

static int check_number(const cJSON *model, const char *key, uint32_t want, const char *path, char *err,
                        size_t errlen)
{
    char what[64];
    snprintf(what, sizeof what, "\"model\".\"%s\"", key);
    uint64_t v;
    if (json_number_u64(cJSON_GetObjectItemCaseSensitive(model, key), what, 0, UINT32_MAX, &v, path, err,
                        errlen) != 0)
        return -1;
    if (v != want)
        return err_set(err, errlen, "%s: %s is %llu, the model has %u: the thresholds are for another model "
                       "(calibrate this one with flashbed sparsify calibrate)", path, what, (unsigned long long)v, want);
    return 0;
}

static int check_string(const cJSON *model, const char *key, const char *want, const char *path, char *err,
                        size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, key);
    if (!cJSON_IsString(v))
        return err_set(err, errlen, "%s: \"model\".\"%s\" is missing or not a string", path, key);
    if (strcmp(v->valuestring, want))
        return err_set(err, errlen, "%s: \"model\".\"%s\" is %s, the model's is %s: the thresholds are for another "
                       "model (calibrate this one with flashbed sparsify calibrate)", path, key, v->valuestring, want);
    return 0;
}

/* The file's "model" against m. */
static int check_model(const struct model *m, const cJSON *j, const char *path, char *err, size_t errlen)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    const struct model_shape *s = &m->shape;
    char fp[65];
    if (!cJSON_IsObject(model))
        return err_set(err, errlen, "%s: \"model\" is missing or not an object", path);
    if (check_number(model, "n_layers", s->n_layers, path, err, errlen) != 0 ||
        check_number(model, "d_model", s->d_model, path, err, errlen) != 0 ||
        check_number(model, "d_ff", s->d_ff, path, err, errlen) != 0 ||
        check_string(model, "dtype", wtype_name(m->dtype), path, err, errlen) != 0 ||
        sparsify_model_fingerprint(m, fp, err, errlen) != 0)
        return -1;
    return check_string(model, "fingerprint_sha256", fp, path, err, errlen);
}

static int read_floats(const cJSON *obj, const char *section, const char *key, float *out, uint32_t n,
                       const char *path, char *err, size_t errlen)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsArray(a) || (uint32_t)cJSON_GetArraySize(a) != n)
        return err_set(err, errlen, "%s: \"%s\".\"%s\" is not an array of %u numbers (one per layer)", path, section,
                       key, n);
    uint32_t i = 0;
    for (const cJSON *v = a->child; v; v = v->next, i++) {
        char what[96];
        snprintf(what, sizeof what, "\"%s\".\"%s\"[%u]", section, key, i);
        double d;
        if (json_number_finite(v, what, -1, 3.4e38, &d, path, err, errlen) != 0)
            return -1;
        out[i] = (float)d;
    }
    return 0;
}

/* The gate's global cut; a file from before it had none reads as an error
 * naming the key (calibrate again). */
static int read_global(const cJSON *g, float *out, const char *path, char *err, size_t errlen)
{
    double d;
    if (json_number_finite(cJSON_GetObjectItemCaseSensitive(g, "global_threshold"), "\"gate\".\"global_threshold\"",
                           -1, 3.4e38, &d, path, err, errlen) != 0)
        return -1;
    *out = (float)d;
    return 0;
}

static int read_section(const cJSON *j, const char *section, const char *why, const char *path, char *err,
                        size_t errlen, const cJSON **out)
{
    *out = cJSON_GetObjectItemCaseSensitive(j, section);
    if (!cJSON_IsObject(*out))
        return err_set(err, errlen, "%s: no \"%s\" thresholds (%s): calibrate with `flashbed sparsify calibrate "
                       "--kind %s` (or both)", path, section, why, section);
    return 0;
}

static int read_thresholds(const cJSON *j, enum sparsify_kind need, struct sparsify_thresholds *t, const char *path,
                           char *err, size_t errlen)
{
    uint32_t n = t->n_layers;
    const cJSON *g, *in;
    if ((need & SPARSIFY_GATE) &&
        (read_section(j, "gate", "the calibrated gate needs them", path, err, errlen, &g) != 0 ||
         read_floats(g, "gate", "thresholds", t->gate, n, path, err, errlen) != 0 ||
         read_global(g, &t->gate_global, path, err, errlen) != 0))
        return -1;
    if ((need & SPARSIFY_INPUT) &&
        (read_section(j, "input", "input sparsity needs them", path, err, errlen, &in) != 0 ||
         read_floats(in, "input", "thresholds", t->input, n, path, err, errlen) != 0 ||
         read_floats(in, "input", "intermediate_thresholds", t->inter, n, path, err, errlen) != 0))
        return -1;
    return 0;
}

static int read_file(const struct model *m, const cJSON *j, enum sparsify_kind need, struct sparsify_thresholds *t,
                     const char *path, char *err, size_t errlen)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
    uint64_t version;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "flashbed-sparsify"))
        return err_set(err, errlen, "%s: \"format\" is not \"flashbed-sparsify\"", path);
    if (json_get_u64(j, "format_version", FORMAT_VERSION, FORMAT_VERSION, &version, path, err, errlen) != 0 ||
        check_model(m, j, path, err, errlen) != 0)
        return -1;
    if (sparsify_alloc(t, m->shape.n_layers, need, err, errlen) != 0)
        return -1;
    if (json_get_finite(j, "sparsity", 0, 0.999999999, &t->sparsity, path, err, errlen) != 0 ||
        read_thresholds(j, need, t, path, err, errlen) != 0) {
        sparsify_free(t);
        return -1;
    }
    return 0;
}

int sparsify_load(const struct model *m, const char *file, enum sparsify_kind need, struct sparsify_thresholds *t,
                  char *err, size_t errlen)
{
    char path[4200];
    memset(t, 0, sizeof *t);
    snprintf(path, sizeof path, "%s", file ? file : "");
    if (!file)
        snprintf(path, sizeof path, "%s/%s", m->dir, SPARSIFY_FILE);
    if (file && !path_exists(path)) {
        err_set(err, errlen, "%s: no such file (make it with `flashbed sparsify calibrate --model %s --text FILE "
                "--sparsity S --out %s`)", path, m->dir, path);
        return 1;
    }
    if (!path_exists(path)) {
        err_set(err, errlen, "%s has no sparsity thresholds (%s): make them with `flashbed sparsify calibrate "
                "--model %s --text FILE --sparsity S`", m->dir, SPARSIFY_FILE, m->dir);
        return 1;
    }
    cJSON *j = read_json_file(path);
    if (!j)
        return err_set(err, errlen, "%s: cannot read it as JSON", path);
    int rc = read_file(m, j, need, t, path, err, errlen);
    cJSON_Delete(j);
    return rc;
}
