/* Activation predictors in the model folder (predictor.h): the weights in
 * predictor.safetensors, the description in model.json's "predictor". */
#include "engine/predictor/predictor.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/import/safetensors.h"

static void tensor_name(char *buf, size_t len, uint32_t l, const char *what)
{
    snprintf(buf, len, "layers.%u.predictor.%s", l, what);
}

void predictor_thresholds_json(const struct predictor *p, cJSON *obj)
{
    double t;
    if (predictor_threshold_uniform(p, &t) && p->target_recall <= 0) {
        cJSON_AddNumberToObject(obj, "threshold", t);
        return;
    }
    cJSON *th = cJSON_AddArrayToObject(obj, "thresholds");
    for (uint32_t l = 0; l < p->n_layers; l++)
        cJSON_AddItemToArray(th, cJSON_CreateNumber(p->layers[l].threshold));
    if (p->target_recall > 0)
        cJSON_AddNumberToObject(obj, "target_recall", p->target_recall);
}

cJSON *predictor_describe(const struct predictor *p)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "file", PREDICTOR_FILE);
    cJSON_AddStringToObject(d, "dtype", wtype_name(p->dtype));
    cJSON *ranks = cJSON_AddArrayToObject(d, "ranks");
    for (uint32_t l = 0; l < p->n_layers; l++)
        cJSON_AddItemToArray(ranks, cJSON_CreateNumber(p->layers[l].rank));
    predictor_thresholds_json(p, d);
    cJSON_AddStringToObject(d, "target", predictor_target_name(p->target));
    cJSON_AddNumberToObject(d, "act_threshold", p->act_threshold);
    cJSON_AddNumberToObject(d, "bytes", (double)predictor_bytes(p));
    cJSON_AddNumberToObject(d, "madds_per_token", (double)predictor_madds(p));
    if (p->training)
        cJSON_AddItemToObject(d, "training", cJSON_Duplicate(p->training, 1));
    return d;
}

/* Every layer's A, B and bias as f32 tensors (freed by the caller: *f32). */
static struct st_tensor *weight_tensors(const struct predictor *p, char (*names)[64], float **f32)
{
    size_t total = 0;
    for (uint32_t l = 0; l < p->n_layers; l++)
        total += (size_t)p->layers[l].rank * (p->d_model + p->d_ff) + p->d_ff;
    struct st_tensor *t = calloc(3 * (size_t)p->n_layers, sizeof *t);
    *f32 = malloc(total * sizeof(float));
    if (!t || !*f32) {
        free(t);
        free(*f32);
        return NULL;
    }
    float *at = *f32;
    for (uint32_t l = 0; l < p->n_layers; l++) {
        uint32_t r = p->layers[l].rank;
        float *a = at, *b = a + (size_t)r * p->d_model, *bias = b + (size_t)p->d_ff * r;
        at = bias + p->d_ff;
        predictor_get_layer(p, l, a, b, bias);
        struct st_tensor *T = &t[3 * l];
        tensor_name(names[3 * l], 64, l, "a");
        tensor_name(names[3 * l + 1], 64, l, "b");
        tensor_name(names[3 * l + 2], 64, l, "bias");
        T[0] = (struct st_tensor){names[3 * l], p->dtype, 2, {r, p->d_model}, a};
        T[1] = (struct st_tensor){names[3 * l + 1], p->dtype, 2, {p->d_ff, r}, b};
        T[2] = (struct st_tensor){names[3 * l + 2], DTYPE_F32, 1, {p->d_ff, 0}, bias};
    }
    return t;
}

static int write_weights(const struct predictor *p, const char *path, char *err, size_t errlen)
{
    char (*names)[64] = calloc(3 * (size_t)p->n_layers, sizeof *names);
    float *f32 = NULL;
    struct st_tensor *t = names ? weight_tensors(p, names, &f32) : NULL;
    if (!t) {
        free(names);
        return err_set(err, errlen, "%s: out of memory", path);
    }
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "format", "flashbed-predictor");
    int rc = st_write(path, t, 3 * (int)p->n_layers, meta, err, errlen);
    cJSON_Delete(meta);
    free(t);
    free(f32);
    free(names);
    return rc;
}

bool predictor_present(const char *model_dir)
{
    char json_path[4200], st_path[4200];
    snprintf(json_path, sizeof json_path, "%s/model.json", model_dir);
    snprintf(st_path, sizeof st_path, "%s/%s", model_dir, PREDICTOR_FILE);
    cJSON *model = read_json_file(json_path);
    bool has = cJSON_HasObjectItem(model, "predictor") || access(st_path, F_OK) == 0;
    cJSON_Delete(model);
    return has;
}

int predictor_save(const struct predictor *p, const char *model_dir, bool replace, char *err, size_t errlen)
{
    char json_path[4200], st_path[4200];
    snprintf(json_path, sizeof json_path, "%s/model.json", model_dir);
    snprintf(st_path, sizeof st_path, "%s/%s", model_dir, PREDICTOR_FILE);
    cJSON *model = read_json_file(json_path);
    if (!cJSON_IsObject(model)) {
        cJSON_Delete(model);
        return err_set(err, errlen, "%s: cannot read it as a flashbed model description", json_path);
    }
    bool had = cJSON_HasObjectItem(model, "predictor") || access(st_path, F_OK) == 0;
    if (had && !replace) {
        cJSON_Delete(model);
        return err_set(err, errlen, "%s already has a predictor (%s)", model_dir, PREDICTOR_FILE);
    }
    int rc = write_weights(p, st_path, err, errlen);
    if (rc == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(model, "predictor");
        cJSON_AddItemToObject(model, "predictor", predictor_describe(p));
        rc = atomic_write_json(NULL, json_path, model, err, errlen);
        if (rc != 0 && !had)
            unlink(st_path); /* no half-added predictor */
    }
    cJSON_Delete(model);
    return rc;
}

static bool is_probability(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 1;
}

/* "threshold" (every layer) or "thresholds" (one per layer) into thr[n_layers]. */
static int read_thresholds(const cJSON *d, uint32_t n_layers, double *thr, double *target_recall, char *err,
                           size_t errlen)
{
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(d, "threshold");
    const cJSON *ths = cJSON_GetObjectItemCaseSensitive(d, "thresholds");
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(d, "target_recall");
    if (!th == !ths)
        return err_set(err, errlen, "model.json: \"predictor\" needs either \"threshold\" or \"thresholds\"");
    if (th && !is_probability(th))
        return err_set(err, errlen, "model.json: predictor threshold is not a probability (0 to 1)");
    if (ths && (!cJSON_IsArray(ths) || cJSON_GetArraySize(ths) != (int)n_layers))
        return err_set(err, errlen, "model.json: predictor thresholds are not an array of %u numbers", n_layers);
    for (uint32_t l = 0; l < n_layers; l++) {
        const cJSON *v = th ? th : cJSON_GetArrayItem(ths, (int)l);
        if (!is_probability(v))
            return err_set(err, errlen, "model.json: predictor thresholds[%u] is not a probability (0 to 1)", l);
        thr[l] = v->valuedouble;
    }
    if (tr && (!is_probability(tr) || tr->valuedouble <= 0))
        return err_set(err, errlen, "model.json: predictor target_recall is not in (0, 1]");
    *target_recall = tr ? tr->valuedouble : 0;
    return 0;
}

static int read_description(struct predictor *p, const cJSON *d, uint32_t n_layers, uint32_t *ranks, double *thr,
                            char *err, size_t errlen)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(d, "ranks");
    const char *dt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "dtype"));
    const char *target = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "target"));
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(d, "act_threshold");
    if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != (int)n_layers || !dt || !target || !cJSON_IsNumber(at))
        return err_set(err, errlen, "model.json: \"predictor\" needs ranks for each of %u layers, dtype, target "
                       "and act_threshold", n_layers);
    for (uint32_t l = 0; l < n_layers; l++) {
        double v = cJSON_GetNumberValue(cJSON_GetArrayItem(r, (int)l));
        ranks[l] = v >= 1 && v <= UINT32_MAX ? (uint32_t)v : 0;
    }
    char names[64];
    /* the type's own name only, as predictor_save writes it */
    if (wtype_parse(dt, &p->dtype) != 0 || strcmp(dt, wtype_name(p->dtype)) || !predictor_wtype_ok(p->dtype))
        return err_set(err, errlen, "model.json: predictor dtype '%s' is not %s", dt,
                       predictor_wtype_names(names, sizeof names, ", ", " or "));
    if (strcmp(target, "relu") && strcmp(target, "glu_abs"))
        return err_set(err, errlen, "model.json: predictor target '%s' is not relu or glu_abs", target);
    p->target = !strcmp(target, "glu_abs") ? PREDICT_GLU_ABS : PREDICT_RELU;
    if (!(at->valuedouble >= 0 && at->valuedouble <= FLT_MAX))
        return err_set(err, errlen, "model.json: predictor act_threshold %g is not a finite number >= 0",
                       at->valuedouble);
    p->act_threshold = (float)at->valuedouble;
    return read_thresholds(d, n_layers, thr, &p->target_recall, err, errlen);
}

static int read_weights(struct predictor *p, const char *path, char *err, size_t errlen)
{
    struct st_set st;
    if (st_open_file(&st, path, err, errlen) != 0)
        return -1;
    int rc = 0;
    for (uint32_t l = 0; l < p->n_layers && rc == 0; l++) {
        uint32_t r = p->layers[l].rank;
        char na[64], nb[64], nc[64];
        tensor_name(na, sizeof na, l, "a");
        tensor_name(nb, sizeof nb, l, "b");
        tensor_name(nc, sizeof nc, l, "bias");
        uint64_t da[2] = {r, p->d_model}, db[2] = {p->d_ff, r}, dc[1] = {p->d_ff};
        float *a = st_read_f32(&st, na, 2, da, err, errlen);
        float *b = a ? st_read_f32(&st, nb, 2, db, err, errlen) : NULL;
        float *c = b ? st_read_f32(&st, nc, 1, dc, err, errlen) : NULL;
        if (c)
            predictor_set_layer(p, l, a, b, c);
        else
            rc = -1;
        free(a);
        free(b);
        free(c);
    }
    st_close(&st);
    return rc;
}

int predictor_load(struct predictor *p, const char *model_dir, uint32_t n_layers, uint32_t d_model, uint32_t d_ff,
                   char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    char path[4200];
    snprintf(path, sizeof path, "%s/model.json", model_dir);
    cJSON *model = read_json_file(path);
    if (!model)
        return err_set(err, errlen, "%s: cannot read it", path);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(model, "predictor");
    if (!d) {
        cJSON_Delete(model);
        return 1;
    }
    struct predictor shape = {0};
    uint32_t *ranks = calloc(n_layers ? n_layers : 1, sizeof *ranks);
    double *thr = calloc(n_layers ? n_layers : 1, sizeof *thr);
    int rc = ranks && thr ? read_description(&shape, d, n_layers, ranks, thr, err, errlen)
                          : err_set(err, errlen, "out of memory");
    if (rc == 0)
        rc = predictor_alloc(p, n_layers, d_model, d_ff, ranks, shape.dtype, err, errlen);
    if (rc == 0) {
        for (uint32_t l = 0; l < n_layers; l++)
            p->layers[l].threshold = thr[l];
        p->target_recall = shape.target_recall;
        p->target = shape.target;
        p->act_threshold = shape.act_threshold;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "training");
        p->training = t ? cJSON_Duplicate(t, 1) : NULL;
        snprintf(path, sizeof path, "%s/%s", model_dir, PREDICTOR_FILE);
        rc = read_weights(p, path, err, errlen);
        if (rc != 0)
            predictor_free(p);
    }
    free(ranks);
    free(thr);
    cJSON_Delete(model);
    return rc;
}
