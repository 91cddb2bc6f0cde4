/* Training-free sparsity (issue 33) on a synthetic SwiGLU llama-tiny:
 *   - the cut: exactly floor(S·n) values at or below it; -1 at S = 0
 *   - calibration: per layer, exactly floor(S·N) of the gate, input and
 *     intermediate values of the calibration samples fall at or below the
 *     thresholds (N the values over the rows)
 *   - teal at sparsity 0 is dense (logits within 1e-6), its bytes dense's
 *   - teal's FFN against a double-precision reference on random inputs,
 *     with exact counts of kept channels, kept rows and bytes
 *   - gate-cal with every layer's threshold T is the gate with T
 *   - the global gate cut: exact on a small model (every value pooled),
 *     within 1/Q of the share on layers of more values than its pool;
 *   - sparsify.json round trip (in the folder and at a path of its own); a file from another model (fingerprint,
 *     shape) and one without the thresholds asked for are refused, naming
 *     the file and the key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "common/json_file.h"
#include "common/model_shape.h"
#include "common/rng.h"
#include "engine/ffn/ffn_select.h"
#include "engine/ffn/sparsify_file.h"
#include "engine/forward/engine.h"
#include "engine/import/import.h"
#include "engine/import/synthetic.h"
#include "engine/model/model_format.h"
#include "engine/training/sparsify_calibrate.h"

enum { N_ROWS = 40, N_PROMPT = 6, MAX_SEQ = 48 };

/* A synthetic llama-tiny (SwiGLU) folder at tmp/NAME. */
static int make_llama(const char *tmp, const char *name, uint64_t seed, char *dir, size_t dlen, char *err,
                      size_t errlen)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape shape;
    char hf[600];
    snprintf(hf, sizeof hf, "%s/hf-%s", tmp, name);
    snprintf(dir, dlen, "%s/%s", tmp, name);
    if (model_shape_load(&set, "llama-tiny", &shape, err, errlen) != 0 ||
        synthetic_hf(&shape, DTYPE_F32, seed, -1, NULL, hf, NULL, err, errlen) != 0)
        return -1;
    return import_hf(hf, NULL, dir, NULL, NULL, err, errlen); /* NULL: the checkpoint's own dtype, f32 */
}

static void random_tokens(int *t, size_t n, uint32_t vocab, uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        t[i] = 3 + (int)rng_below(&r, vocab - 3);
}

static size_t count_at_or_below(const float *v, size_t n, float cut)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += v[i] <= cut;
    return k;
}

static void test_cut(void)
{
    enum { N = 1000 };
    float v[N];
    struct rng r;
    rng_seed(&r, 3);
    const double shares[] = {0, 0.25, 0.5, 0.7, 0.9, 0.999};
    for (size_t s = 0; s < sizeof shares / sizeof *shares; s++) {
        for (int i = 0; i < N; i++)
            v[i] = (float)rng_unit(&r);
        float copy[N];
        memcpy(copy, v, sizeof v);
        float cut = sparsify_cut(copy, N, shares[s]);
        CHECK_U64(count_at_or_below(v, N, cut), (size_t)floor(shares[s] * N + 1e-9));
    }
    CHECK(sparsify_cut(v, N, 0) == -1.0f);
    CHECK_U64((size_t)floor(0.7 * N + 1e-9), 700);
}

/* Samples of the dense model over random tokens. */
static void collect(const struct model *m, struct predictor_samples *s)
{
    const struct fb_settings set = fb_settings_defaults();
    char err[512];
    int toks[N_ROWS];
    random_tokens(toks, N_ROWS, m->shape.vocab_size, 11);
    struct predictor_collect_config c = {.settings = &set, .threads = 1};
    CHECK(predictor_samples_alloc(s, m->shape.n_layers, m->shape.d_model, m->shape.d_ff, N_ROWS, err, sizeof err) == 0);
    CHECK(predictor_samples_collect(s, m, toks, N_ROWS, &c, err, sizeof err) == 0);
    CHECK_U64(s->n_rows, N_ROWS);
}

/* Each threshold leaves exactly floor(S·N) values at or below it; the
 * global gate cut floor(S·L·N) of all layers' (a layer's values fewer than
 * the pool's Q: every one pooled, so exact). */
static void check_counts(const struct model *m, const struct predictor_samples *s, double S,
                         const struct sparsify_thresholds *t)
{
    char err[256];
    size_t nf = s->n_rows * m->shape.d_ff, nd = s->n_rows * m->shape.d_model, global = 0;
    float *v = malloc(nf * sizeof *v);
    CHECK(nf <= SPARSIFY_POOL_PER_LAYER);
    for (uint32_t l = 0; l < m->shape.n_layers; l++) {
        CHECK(sparsify_gate_values(m, s, l, v, err, sizeof err) == 0);
        CHECK_U64(count_at_or_below(v, nf, t->gate[l]), (size_t)floor(S * nf + 1e-9));
        global += count_at_or_below(v, nf, t->gate_global);
        sparsify_input_values(s, l, v);
        CHECK_U64(count_at_or_below(v, nd, t->input[l]), (size_t)floor(S * nd + 1e-9));
        size_t raw = 0; /* the input values straight from the samples, not through the library */
        for (size_t r = 0; r < s->n_rows; r++)
            for (uint32_t j = 0; j < m->shape.d_model; j++)
                raw += fabsf(samples_x(s, l, r)[j]) <= t->input[l];
        CHECK_U64(raw, (size_t)floor(S * nd + 1e-9));
        CHECK(sparsify_inter_values(m, s, l, t->input[l], v, err, sizeof err) == 0);
        CHECK_U64(count_at_or_below(v, nf, t->inter[l]), (size_t)floor(S * nf + 1e-9));
        CHECK(t->gate[l] > 0 && t->input[l] > 0 && t->inter[l] > 0);
    }
    CHECK_U64(global, (size_t)floor(S * nf * m->shape.n_layers + 1e-9));
    free(v);
}

/* The pool of order statistics: layers of more values than Q, of unlike
 * scales, the pooled cut within 1/Q of the share of all their values. */
static void test_pool(void)
{
    enum { L = 3, N = 3 * SPARSIFY_POOL_PER_LAYER + 17 };
    float *v = malloc((size_t)L * N * sizeof *v), *sorted = malloc(N * sizeof *v);
    float *pool = malloc((size_t)L * SPARSIFY_POOL_PER_LAYER * sizeof *pool);
    struct rng r;
    rng_seed(&r, 9);
    CHECK_U64(sparsify_pool_count(N), SPARSIFY_POOL_PER_LAYER);
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < N; i++)
            v[(size_t)l * N + i] = (float)(rng_unit(&r) * (l + 1) * (l + 1));
        memcpy(sorted, v + (size_t)l * N, N * sizeof *v);
        sparsify_cut(sorted, N, 0.5); /* sorts */
        sparsify_pool_add(sorted, N, pool + (size_t)l * SPARSIFY_POOL_PER_LAYER);
        CHECK(pool[(size_t)(l + 1) * SPARSIFY_POOL_PER_LAYER - 1] == sorted[N - 1]);
    }
    const double shares[] = {0.1, 0.5, 0.7, 0.9};
    for (size_t s = 0; s < sizeof shares / sizeof *shares; s++) {
        float *copy = malloc((size_t)L * SPARSIFY_POOL_PER_LAYER * sizeof *copy);
        memcpy(copy, pool, (size_t)L * SPARSIFY_POOL_PER_LAYER * sizeof *copy);
        float cut = sparsify_cut(copy, (size_t)L * SPARSIFY_POOL_PER_LAYER, shares[s]);
        double share = (double)count_at_or_below(v, (size_t)L * N, cut) / ((double)L * N);
        CHECK(fabs(share - shares[s]) <= 1.0 / SPARSIFY_POOL_PER_LAYER);
        free(copy);
    }
    free(v);
    free(sorted);
    free(pool);
}

static void test_calibration(const struct model *m, const struct predictor_samples *s)
{
    char err[256];
    const double shares[] = {0.25, 0.5, 0.7, 0.9};
    for (size_t i = 0; i < sizeof shares / sizeof *shares; i++) {
        struct sparsify_thresholds t;
        CHECK(sparsify_from_samples(m, s, shares[i], SPARSIFY_BOTH, &t, err, sizeof err) == 0);
        CHECK(t.sparsity == shares[i]);
        check_counts(m, s, shares[i], &t);
        sparsify_free(&t);
    }
    struct sparsify_thresholds t;
    CHECK(sparsify_from_samples(m, s, 1.0, SPARSIFY_BOTH, &t, err, sizeof err) == -1);
    CHECK(strstr(err, "not in [0, 1)") != NULL);
    CHECK(sparsify_from_samples(m, s, -0.1, SPARSIFY_GATE, &t, err, sizeof err) == -1);
}

/* Logits of the prompt's last position under FFN ops f (config c); *st its stats with ffn_select. */
static void logits_of(const struct model *m, const struct ffn_ops *f, const void *c, float *out,
                      struct ffn_select_stats *st)
{
    const struct fb_settings set = fb_settings_defaults();
    struct engine e;
    char err[512];
    int prompt[N_PROMPT];
    random_tokens(prompt, N_PROMPT, m->shape.vocab_size, 5);
    CHECK(engine_init_with(&e, &set, m, &backend_cpu, f, c, 1, MAX_SEQ, err, sizeof err) == 0);
    for (int pos = 0; pos < N_PROMPT; pos++)
        engine_forward(&e, prompt[pos], pos);
    memcpy(out, e.s.logits, m->shape.vocab_size * sizeof *out);
    if (st)
        ffn_select_stats(&e.ffn, st);
    engine_free(&e);
}

static double max_diff(const float *a, const float *b, uint32_t n)
{
    double d = 0;
    for (uint32_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static void test_teal_dense(const struct model *m, const struct predictor_samples *s)
{
    char err[256];
    uint32_t V = m->shape.vocab_size;
    struct sparsify_thresholds t;
    CHECK(sparsify_from_samples(m, s, 0, SPARSIFY_BOTH, &t, err, sizeof err) == 0);
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        CHECK(t.gate[l] == -1.0f && t.input[l] == -1.0f && t.inter[l] == -1.0f);
    float *dense = malloc(V * sizeof *dense), *got = malloc(V * sizeof *got);
    logits_of(m, &ffn_dense, NULL, dense, NULL);
    struct select_config c = {.ops = &source_teal, .input_thresholds = t.input, .inter_thresholds = t.inter};
    struct ffn_select_stats st;
    logits_of(m, &ffn_select, &c, got, &st);
    CHECK(max_diff(got, dense, V) <= 1e-6);
    CHECK_U64(st.bytes, N_PROMPT * ffn_dense_bytes_per_token(m));
    CHECK_U64(ffn_dense_bytes_per_token(m), (uint64_t)m->shape.n_layers * m->shape.d_ff * 3 * m->shape.d_model * 4);
    CHECK_U64(st.kept_inputs, (uint64_t)N_PROMPT * m->shape.n_layers * m->shape.d_model);
    CHECK_U64(st.chosen, (uint64_t)N_PROMPT * m->shape.n_layers * m->shape.d_ff);
    free(dense);
    free(got);
    sparsify_free(&t);
}

/* The teal FFN of layer l in double: x's channels above cut_x, rows with |h| above cut_h. */
struct teal_ref {
    double out[64];
    uint32_t kept, rows;
};

static void teal_reference(const struct model *m, uint32_t l, const float *x, float cut_x, float cut_h,
                           struct teal_ref *r)
{
    uint32_t d = m->shape.d_model;
    const float *b = m->layers[l].ffn_bundles;
    size_t stride = m->bundle_stride / sizeof(float);
    memset(r, 0, sizeof *r);
    for (uint32_t j = 0; j < d; j++)
        r->kept += fabsf(x[j]) > cut_x;
    for (uint32_t i = 0; i < m->shape.d_ff; i++) {
        const float *up = b + i * stride, *gate = up + d, *down = up + ffn_bundle_down(&m->shape);
        double z = 0, g = 0;
        for (uint32_t j = 0; j < d; j++)
            if (fabsf(x[j]) > cut_x)
                z += (double)up[j] * x[j], g += (double)gate[j] * x[j];
        double h = g / (1 + exp(-g)) * z;
        if (fabs(h) <= cut_h)
            continue;
        r->rows++;
        for (uint32_t j = 0; j < d; j++)
            r->out[j] += h * down[j];
    }
}

/* One layer step of the teal FFN on x against the reference. */
static void check_teal_step(const struct model *m, uint32_t l, const float *x, float cut_x, float cut_h)
{
    const struct fb_settings set = fb_settings_defaults();
    uint32_t n = m->shape.n_layers, d = m->shape.d_model;
    float in[8], inter[8], out[64];
    for (uint32_t k = 0; k < n; k++)
        in[k] = cut_x, inter[k] = cut_h;
    struct select_config c = {.ops = &source_teal, .input_thresholds = in, .inter_thresholds = inter};
    struct engine e;
    char err[512];
    CHECK(engine_init_with(&e, &set, m, &backend_cpu, &ffn_select, &c, 1, MAX_SEQ, err, sizeof err) == 0);
    e.ffn.ops->forward(&e.ffn, (int)l, 0, x, out);
    struct ffn_select_stats st;
    ffn_select_stats(&e.ffn, &st);
    engine_free(&e);
    struct teal_ref r;
    teal_reference(m, l, x, cut_x, cut_h, &r);
    double scale = 0, diff = 0;
    for (uint32_t j = 0; j < d; j++)
        scale = fmax(scale, fabs(r.out[j])), diff = fmax(diff, fabs(out[j] - r.out[j]));
    CHECK(scale > 0 && diff <= 1e-5 * scale);
    CHECK_U64(st.kept_inputs, r.kept);
    CHECK_U64(st.chosen, r.rows);
    CHECK_U64(st.bytes, ((uint64_t)r.kept * 2 * m->shape.d_ff + (uint64_t)r.rows * d) * 4);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The midpoint of the widest gap among the middle |h| values (no value near the cut). */
static float middle_cut(const struct model *m, uint32_t l, const float *x, float cut_x)
{
    uint32_t f = m->shape.d_ff, d = m->shape.d_model;
    double *h = malloc(f * sizeof *h);
    const float *b = m->layers[l].ffn_bundles;
    size_t stride = m->bundle_stride / sizeof(float);
    for (uint32_t i = 0; i < f; i++) {
        double z = 0, g = 0;
        for (uint32_t j = 0; j < d; j++)
            if (fabsf(x[j]) > cut_x)
                z += (double)b[i * stride + j] * x[j], g += (double)b[i * stride + d + j] * x[j];
        h[i] = fabs(g / (1 + exp(-g)) * z);
    }
    qsort(h, f, sizeof *h, cmp_double);
    uint32_t best = f / 3;
    for (uint32_t i = f / 3; i < 2 * f / 3; i++)
        if (h[i + 1] - h[i] > h[best + 1] - h[best])
            best = i;
    float cut = (float)((h[best] + h[best + 1]) / 2);
    free(h);
    return cut;
}

static void test_teal_reference(const struct model *m)
{
    struct rng r;
    rng_seed(&r, 21);
    uint32_t d = m->shape.d_model;
    float x[64];
    for (int trial = 0; trial < 4; trial++) {
        for (uint32_t j = 0; j < d; j++)
            x[j] = (float)(rng_unit(&r) * 4 - 2);
        uint32_t l = (uint32_t)trial % m->shape.n_layers;
        float cut_x = trial < 2 ? 0.8f : -1.0f; /* half the channels dropped, or none */
        check_teal_step(m, l, x, cut_x, middle_cut(m, l, x, cut_x));
        check_teal_step(m, l, x, cut_x, -1.0f); /* every row of down */
    }
}

static void test_gate_cal_is_gate(const struct model *m)
{
    uint32_t V = m->shape.vocab_size;
    float *a = malloc(V * sizeof *a), *b = malloc(V * sizeof *b);
    float per_layer[8];
    const float T = 0.05f;
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        per_layer[l] = T;
    struct select_config gate = {.ops = &source_gate, .threshold = T};
    struct select_config cal = {.ops = &source_gate, .layer_thresholds = per_layer};
    struct ffn_select_stats sa, sb;
    logits_of(m, &ffn_select, &gate, a, &sa);
    logits_of(m, &ffn_select, &cal, b, &sb);
    CHECK(memcmp(a, b, V * sizeof *a) == 0);
    CHECK_U64(sa.chosen, sb.chosen);
    CHECK_U64(sa.bytes, sb.bytes);
    CHECK_U64(sb.bytes, sb.chosen * 3 * m->shape.d_model * 4);
    CHECK(sb.chosen > 0 && sb.chosen < sb.steps * m->shape.d_ff);
    free(a);
    free(b);
}

/* sparsify.json with one member replaced, or removed when v is NULL. */
static void edit_file(const struct model *m, const char *section, const char *key, cJSON *v)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", m->dir, SPARSIFY_FILE);
    cJSON *j = read_json_file(path);
    cJSON *obj = section ? cJSON_GetObjectItemCaseSensitive(j, section) : j;
    if (v)
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v);
    else
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    char *text = cJSON_Print(j);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(j);
}

static void check_refused(const struct model *m, enum sparsify_kind need, const char *key)
{
    struct sparsify_thresholds t;
    char err[4800];
    CHECK(sparsify_load(m, NULL, need, &t, err, sizeof err) == -1);
    CHECK(strstr(err, SPARSIFY_FILE) != NULL && strstr(err, key) != NULL);
    if (!strstr(err, key))
        fprintf(stderr, "  (message: %s)\n", err);
}

/* Written to and read from a path of its own; a missing path is named. */
static void test_file_elsewhere(const struct model *m, const struct sparsify_thresholds *t)
{
    char err[4800], path[4300];
    struct sparsify_thresholds back;
    snprintf(path, sizeof path, "%s/elsewhere.json", m->dir);
    CHECK(sparsify_load(m, path, SPARSIFY_GATE, &back, err, sizeof err) == 1);
    CHECK(strstr(err, "elsewhere.json") != NULL);
    CHECK(sparsify_write(m, t, cJSON_CreateObject(), path, err, sizeof err) == 0);
    CHECK(sparsify_load(m, path, SPARSIFY_BOTH, &back, err, sizeof err) == 0);
    CHECK(back.gate_global == t->gate_global && back.gate[0] == t->gate[0] && back.inter[0] == t->inter[0]);
    sparsify_free(&back);
    CHECK(remove(path) == 0);
}

static void test_file(const struct model *m, const struct model *other, const struct predictor_samples *s)
{
    char err[4800], cmd[9000];
    struct sparsify_thresholds t, back;
    CHECK(sparsify_load(m, NULL, SPARSIFY_GATE, &back, err, sizeof err) == 1); /* none yet */
    CHECK(sparsify_from_samples(m, s, 0.5, SPARSIFY_BOTH, &t, err, sizeof err) == 0);
    CHECK(sparsify_write(m, &t, cJSON_CreateObject(), NULL, err, sizeof err) == 0);
    CHECK(sparsify_load(m, NULL, SPARSIFY_BOTH, &back, err, sizeof err) == 0);
    CHECK(back.sparsity == 0.5 && back.gate_global == t.gate_global && t.gate_global > 0);
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        CHECK(back.gate[l] == t.gate[l] && back.input[l] == t.input[l] && back.inter[l] == t.inter[l]);
    sparsify_free(&back);
    test_file_elsewhere(m, &t);
    snprintf(cmd, sizeof cmd, "cp '%s/%s' '%s/'", m->dir, SPARSIFY_FILE, other->dir);
    CHECK(system(cmd) == 0);
    check_refused(other, SPARSIFY_GATE, "fingerprint_sha256"); /* same shape, other weights */
    edit_file(m, "model", "d_ff", cJSON_CreateNumber(m->shape.d_ff + 1));
    check_refused(m, SPARSIFY_GATE, "\"d_ff\"");
    edit_file(m, "model", "d_ff", cJSON_CreateNumber(m->shape.d_ff));
    edit_file(m, NULL, "gate", NULL);
    check_refused(m, SPARSIFY_GATE, "\"gate\"");
    CHECK(sparsify_load(m, NULL, SPARSIFY_INPUT, &back, err, sizeof err) == 0);
    sparsify_free(&back);
    sparsify_free(&t);
}

int main(void)
{
    char tmp[] = "/tmp/fb-sparsify-XXXXXX", dir[700], dir2[700], err[1024];
    CHECK(mkdtemp(tmp) != NULL);
    struct model m, other;
    if (make_llama(tmp, "a", 5, dir, sizeof dir, err, sizeof err) != 0 ||
        make_llama(tmp, "b", 6, dir2, sizeof dir2, err, sizeof err) != 0 || model_open(&m, dir, err, sizeof err) != 0 ||
        model_open(&other, dir2, err, sizeof err) != 0) {
        fprintf(stderr, "fixture: %s\n", err);
        return 1;
    }
    CHECK(m.arch.glu && m.shape.d_model <= 64 && m.shape.n_layers <= 8);
    test_cut();
    test_pool();
    struct predictor_samples s;
    collect(&m, &s);
    test_calibration(&m, &s);
    test_teal_dense(&m, &s);
    test_teal_reference(&m);
    test_gate_cal_is_gate(&m);
    test_file(&m, &other, &s);
    predictor_samples_free(&s);
    model_close(&m);
    model_close(&other);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0);
    return check_report("test_sparsify");
}
