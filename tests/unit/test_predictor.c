/* Activation predictors (engine/predictor/predictor.h): the forward against a
 * double-precision reference, the thresholds' ends, the weights' round
 * trips through f16 and through the model folder, and the refusals. */
#include "check.h"
#include "model_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/json_file.h"
#include "common/model_shape.h"
#include "common/rng.h"
#include "engine/forward/engine.h"
#include "engine/import/import.h"
#include "engine/import/synthetic.h"
#include "engine/model/model.h"
#include "engine/predictor/predictor.h"

enum { L = 3, D = 48, F = 96 };
static const uint32_t ranks[L] = {4, 16, 48};

static void fill(float *v, size_t n, struct rng *r, float scale)
{
    for (size_t i = 0; i < n; i++)
        v[i] = scale * (2 * (float)rng_unit(r) - 1);
}

/* Random weights for every layer; returns the f32 copies (a, b, bias per layer). */
static float *random_predictor(struct predictor *p, enum fb_dtype t, uint64_t seed)
{
    char err[256];
    CHECK(predictor_alloc(p, L, D, F, ranks, t, err, sizeof err) == 0);
    size_t per = (size_t)D * D + (size_t)F * D + F; /* room for the largest rank */
    float *w = malloc(L * per * sizeof *w);
    struct rng r;
    rng_seed(&r, seed);
    for (uint32_t l = 0; l < L; l++) {
        float *a = w + l * per, *b = a + (size_t)ranks[l] * D, *bias = b + (size_t)F * ranks[l];
        fill(a, (size_t)ranks[l] * D, &r, 0.3f);
        fill(b, (size_t)F * ranks[l], &r, 0.3f);
        fill(bias, F, &r, 0.2f);
        predictor_set_layer(p, l, a, b, bias);
    }
    return w;
}

/* Reference: logits in double, predicted when sigmoid(logit) > t. */
static uint32_t reference(const float *a, const float *b, const float *bias, uint32_t rank, const float *x, double t,
                          uint32_t *out, double *margin)
{
    double h[D];
    for (uint32_t k = 0; k < rank; k++) {
        h[k] = 0;
        for (uint32_t j = 0; j < D; j++)
            h[k] += (double)a[(size_t)k * D + j] * x[j];
    }
    uint32_t n = 0;
    *margin = INFINITY;
    for (uint32_t i = 0; i < F; i++) {
        double z = bias[i];
        for (uint32_t k = 0; k < rank; k++)
            z += (double)b[(size_t)i * rank + k] * h[k];
        double prob = 1 / (1 + exp(-z));
        *margin = fmin(*margin, fabs(prob - t));
        if (prob > t)
            out[n++] = i;
    }
    return n;
}

static void test_forward(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct predictor p;
    float *w = random_predictor(&p, DTYPE_F32, 7);
    char err[256];
    struct cpu_kernels *be = ck_create(&set, 2, F, 4, 1, err, sizeof err);
    CHECK(be != NULL);
    struct rng r;
    rng_seed(&r, 11);
    float x[D], h[D], logits[F];
    uint32_t got[F], want[F];
    size_t per = (size_t)D * D + (size_t)F * D + F;
    int compared = 0;
    for (int trial = 0; trial < 40; trial++) {
        fill(x, D, &r, 1.0f);
        uint32_t l = (uint32_t)trial % L;
        const float *a = w + l * per, *b = a + (size_t)ranks[l] * D, *bias = b + (size_t)F * ranks[l];
        double margin;
        uint32_t nw = reference(a, b, bias, ranks[l], x, 0.5, want, &margin);
        uint32_t ng = predictor_predict(&p, l, be, x, h, logits, got);
        if (margin < 1e-5)
            continue; /* a probability on the threshold: float and double may differ */
        compared++;
        CHECK_U64(ng, nw);
        CHECK(ng == nw && memcmp(got, want, ng * sizeof *got) == 0);
    }
    CHECK(compared >= 30);
    /* the thresholds' ends: 0 predicts every neuron, 1 none */
    predictor_set_threshold(&p, 0);
    CHECK_U64(predictor_predict(&p, 0, be, x, h, logits, got), F);
    predictor_set_threshold(&p, 1);
    CHECK_U64(predictor_predict(&p, 0, be, x, h, logits, got), 0);
    /* a layer's own threshold serves that layer only */
    p.layers[1].threshold = 0;
    CHECK_U64(predictor_predict(&p, 1, be, x, h, logits, got), F);
    CHECK_U64(predictor_predict(&p, 0, be, x, h, logits, got), 0);
    double t;
    CHECK(!predictor_threshold_uniform(&p, &t));
    CHECK(isinf(predictor_logit_threshold(0)) && predictor_logit_threshold(0) < 0);
    CHECK(fabsf(predictor_logit_threshold(0.5)) < 1e-7f);
    /* a calibrated cut survives the trip through a probability (to logit 15, p = 1 - 3e-7; past
     * about 20 a double's 1 - p no longer holds the cut to a float's precision) */
    const float cuts[] = {-30.5f, -2.25f, 0.0f, 1e-3f, 7.75f, 15.0f};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++)
        CHECK(predictor_logit_threshold(predictor_threshold_of_logit(cuts[i])) == cuts[i]);
    /* what it costs */
    CHECK_U64(predictor_madds(&p), (4 + 16 + 48) * (D + F));
    CHECK(predictor_bytes(&p) >= (uint64_t)(4 + 16 + 48) * (D + F) * 4 + L * F * 4);
    CHECK_U64(predictor_max_rank(&p), 48);
    ck_destroy(be);
    predictor_free(&p);
    free(w);
}

static void test_f16(void)
{
    struct predictor p;
    float *w = random_predictor(&p, DTYPE_F16, 3);
    float a[D * D], b[F * D], bias[F];
    predictor_get_layer(&p, 1, a, b, bias);
    size_t per = (size_t)D * D + (size_t)F * D + F;
    const float *a0 = w + per, *b0 = a0 + 16 * D, *c0 = b0 + F * 16;
    double worst = 0;
    for (size_t i = 0; i < 16 * D; i++)
        worst = fmax(worst, fabs(a[i] - a0[i]));
    for (size_t i = 0; i < F * 16; i++)
        worst = fmax(worst, fabs(b[i] - b0[i]));
    CHECK(worst < 0.3 / 1024); /* half precision: 11 bits on values below 0.3 */
    CHECK(memcmp(bias, c0, sizeof bias) == 0); /* biases stay f32 */
    predictor_free(&p);
    free(w);
}

static void test_refusals(void)
{
    struct predictor p;
    char err[256];
    uint32_t bad[L] = {4, 0, 4};
    CHECK(predictor_alloc(&p, L, D, F, bad, DTYPE_F32, err, sizeof err) == -1);
    CHECK(strstr(err, "layer 1: rank 0 is not 1 to 48") != NULL);
    uint32_t big[L] = {4, 4, 49};
    CHECK(predictor_alloc(&p, L, D, F, big, DTYPE_F32, err, sizeof err) == -1);
    CHECK(strstr(err, "rank 49") != NULL);
    CHECK(predictor_alloc(&p, L, D, F, ranks, DTYPE_BF16, err, sizeof err) == -1);
}

/* model.json with a predictor entry edited by hand: each bad threshold
 * refused with its key named. */
static void test_bad_thresholds(const char *dir, const struct model_shape *shape)
{
    char path[700], err[512];
    snprintf(path, sizeof path, "%s/model.json", dir);
    cJSON *good = read_json_file(path);
    CHECK(good != NULL);
    static const struct {
        const char *key, *json, *msg;
    } cases[] = {
        {"thresholds", "[0.5]", "not an array of"},
        {"thresholds", "\"x\"", "not an array of"},
        {"target_recall", "1.5", "target_recall is not in"},
        {"threshold", "0.5", "either \"threshold\" or \"thresholds\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *m = cJSON_Duplicate(good, 1);
        cJSON *d = cJSON_GetObjectItem(m, "predictor");
        cJSON_DeleteItemFromObject(d, cases[i].key);
        cJSON_AddItemToObject(d, cases[i].key, cJSON_Parse(cases[i].json));
        CHECK(atomic_write_json(NULL, path, m, err, sizeof err) == 0);
        struct predictor q;
        CHECK(predictor_load(&q, dir, shape->n_layers, shape->d_model, shape->d_ff, err, sizeof err) == -1);
        CHECK(strstr(err, cases[i].msg) != NULL);
        if (!strstr(err, cases[i].msg))
            fprintf(stderr, "  case %zu: %s\n", i, err);
        cJSON_Delete(m);
    }
    /* one threshold for all, out of range */
    cJSON *m = cJSON_Duplicate(good, 1);
    cJSON *d = cJSON_GetObjectItem(m, "predictor");
    cJSON_DeleteItemFromObject(d, "thresholds");
    cJSON_DeleteItemFromObject(d, "target_recall");
    cJSON_AddNumberToObject(d, "threshold", -0.5);
    CHECK(atomic_write_json(NULL, path, m, err, sizeof err) == 0);
    struct predictor q;
    CHECK(predictor_load(&q, dir, shape->n_layers, shape->d_model, shape->d_ff, err, sizeof err) == -1);
    CHECK(strstr(err, "threshold is not a probability") != NULL);
    cJSON_Delete(m);
    CHECK(atomic_write_json(NULL, path, good, err, sizeof err) == 0);
    cJSON_Delete(good);
}

/* A random predictor for shape, rank 8 + l in layer l, f16, with a
 * uniform threshold, a target, an activation threshold and training notes
 * to round-trip. w: the weights' scratch (the caller frees it). */
static void folder_predictor(struct predictor *p, const struct model_shape *shape, float **w)
{
    char err[512];
    uint32_t r[64];
    for (uint32_t l = 0; l < shape->n_layers; l++)
        r[l] = 8 + l;
    CHECK(predictor_alloc(p, shape->n_layers, shape->d_model, shape->d_ff, r, DTYPE_F16, err, sizeof err) == 0);
    struct rng g;
    rng_seed(&g, 5);
    size_t n = (size_t)(8 + shape->n_layers) * (shape->d_model + shape->d_ff) + shape->d_ff;
    *w = malloc(n * sizeof **w);
    for (uint32_t l = 0; l < shape->n_layers; l++) {
        fill(*w, n, &g, 0.5f);
        predictor_set_layer(p, l, *w, *w + (size_t)r[l] * shape->d_model,
                            *w + (size_t)r[l] * (shape->d_model + shape->d_ff));
    }
    predictor_set_threshold(p, 0.3);
    p->target = PREDICT_GLU_ABS;
    p->act_threshold = 0.01f;
    p->training = cJSON_CreateObject();
    cJSON_AddNumberToObject(p->training, "epochs", 2);
}

/* Saved once, refused a second time without replace, then replaced and
 * loaded: every field and the f16 weights bit for bit; loading it for
 * another number of layers is refused. */
static void check_save_and_load(const struct predictor *p, const char *dir, const struct model_shape *shape)
{
    char err[512];
    struct predictor q;
    CHECK(predictor_save(p, dir, false, err, sizeof err) == 0);
    CHECK(predictor_save(p, dir, false, err, sizeof err) == -1);
    CHECK(strstr(err, "already has a predictor") != NULL);
    CHECK(predictor_save(p, dir, true, err, sizeof err) == 0);
    CHECK(predictor_load(&q, dir, shape->n_layers, shape->d_model, shape->d_ff, err, sizeof err) == 0);
    CHECK(q.dtype == DTYPE_F16 && q.target == PREDICT_GLU_ABS);
    double t;
    CHECK(predictor_threshold_uniform(&q, &t) && t == 0.3 && q.target_recall == 0);
    CHECK(fabsf(q.act_threshold - 0.01f) < 1e-6f);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(q.training, "epochs")) == 2);
    CHECK_U64(q.mem_bytes, p->mem_bytes);
    CHECK(memcmp(q.mem, p->mem, p->mem_bytes) == 0); /* the f16 weights, bit for bit */
    predictor_free(&q);
    CHECK(predictor_load(&q, dir, shape->n_layers + 1, shape->d_model, shape->d_ff, err, sizeof err) == -1);
    CHECK(strstr(err, "ranks for each of") != NULL);
}

/* per-layer thresholds from a target recall, exactly as saved */
static void check_per_layer_thresholds(struct predictor *p, const char *dir, const struct model_shape *shape)
{
    char err[512];
    struct predictor q;
    double t;
    for (uint32_t l = 0; l < shape->n_layers; l++)
        p->layers[l].threshold = predictor_threshold_of_logit(-3.0f + 0.37f * (float)l);
    p->target_recall = 0.95;
    CHECK(predictor_save(p, dir, true, err, sizeof err) == 0);
    CHECK(predictor_load(&q, dir, shape->n_layers, shape->d_model, shape->d_ff, err, sizeof err) == 0);
    CHECK(q.target_recall == 0.95 && !predictor_threshold_uniform(&q, &t));
    for (uint32_t l = 0; l < shape->n_layers; l++)
        CHECK(q.layers[l].threshold == p->layers[l].threshold);
    char text[128];
    predictor_threshold_text(&q, text, sizeof text);
    CHECK(strstr(text, "per layer") && strstr(text, "recall 0.95"));
    predictor_free(&q);
}

/* Through a real model folder: saved, found, loaded bit for bit, refused
 * twice without replace, and the model still opens with it. */
static void test_model_folder(void)
{
    char tmp[] = "/tmp/flashbed-predictor-XXXXXX";
    struct model_shape shape;
    char err[512], dir[600];
    CHECK(fixture_opt_tiny(tmp, dir, sizeof dir, 3, 0.2, &shape, err, sizeof err) == 0);
    struct predictor none;
    CHECK(predictor_load(&none, dir, shape.n_layers, shape.d_model, shape.d_ff, err, sizeof err) == 1);

    struct predictor p;
    float *w;
    folder_predictor(&p, &shape, &w);
    check_save_and_load(&p, dir, &shape);
    check_per_layer_thresholds(&p, dir, &shape);
    test_bad_thresholds(dir, &shape);
    struct model m;
    CHECK(model_open(&m, dir, err, sizeof err) == 0); /* model.json with a predictor still opens */
    model_close(&m);
    predictor_free(&p);
    free(w);
    CHECK(fixture_remove(tmp) == 0);
}

int main(void)
{
    test_forward();
    test_f16();
    test_refusals();
    test_model_folder();
    return check_report("test_predictor");
}
