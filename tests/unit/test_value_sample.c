/* The sample of thresholded values a run suggests --threshold from
 * (engine/ffn/value_sample.h, issue 35):
 *   - the stride a layer is sampled at, for stories260K's and a 7B
 *     model's d_ff
 *   - the cut: exactly max(1, ceil(S·n)) sampled values at or below it
 *     (no ties), -1 when empty; absolute values; the cap holds
 *   - the oracle on a synthetic SwiGLU llama-tiny samples exactly
 *     |act(gate·x)·(up·x)| of every stride-th neuron of every layer it is
 *     called for, in order, up to the cap; a ReLU model's oracle and the
 *     gate sample nothing (the threshold does not decide there). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/model_shape.h"
#include "common/rng.h"
#include "engine/compute/activation.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/value_sample.h"
#include "engine/import/import.h"
#include "engine/import/synthetic.h"
#include "engine/model/model.h"

static void test_stride(void)
{
    CHECK_U64(value_sample_stride(0), 1);
    CHECK_U64(value_sample_stride(172), 1);
    CHECK_U64(value_sample_stride(256), 1);
    CHECK_U64(value_sample_stride(257), 2);
    CHECK_U64(value_sample_stride(11008), 43); /* Llama-2-7B: 256 values a layer */
}

static size_t count_at_or_below(const float *v, size_t n, float cut)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += fabsf(v[i]) <= cut;
    return k;
}

static void test_cut(void)
{
    enum { N = 1000 };
    float v[N];
    struct rng r;
    rng_seed(&r, 11);
    struct value_sample s;
    CHECK(value_sample_init(&s, N) == 0);
    CHECK(value_sample_cut(&s, 0.5) == -1);
    for (int i = 0; i < N; i++) {
        v[i] = (float)(rng_unit(&r) - 0.5); /* negative values count by their magnitude */
        value_sample_push(&s, v[i]);
    }
    value_sample_push(&s, 1e9f); /* past the cap: not kept */
    CHECK_U64(s.n, N);
    const double shares[] = {0.0001, 0.25, 0.5, 0.7, 0.9, 1};
    const size_t want[] = {1, 250, 500, 700, 900, 1000};
    for (size_t i = 0; i < sizeof shares / sizeof *shares; i++)
        CHECK_U64(count_at_or_below(v, N, value_sample_cut(&s, shares[i])), want[i]);
    CHECK(value_sample_cut(&s, 1) < 0.5f);
    value_sample_free(&s);
}

/* A synthetic llama-tiny (SwiGLU) or opt-tiny (ReLU) folder at tmp/NAME. */
static int make_model(const char *tmp, const char *shape_name, char *dir, size_t dlen, char *err, size_t errlen)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape shape;
    char hf[600];
    snprintf(hf, sizeof hf, "%s/hf-%s", tmp, shape_name);
    snprintf(dir, dlen, "%s/%s", tmp, shape_name);
    struct import_dtype dt = {.keep = false, .dtype = DTYPE_F32};
    if (model_shape_load(&set, shape_name, &shape, err, errlen) != 0 ||
        synthetic_hf(&shape, DTYPE_F32, 7, -1, NULL, hf, NULL, err, errlen) != 0)
        return -1;
    return import_hf(hf, NULL, dir, &dt, NULL, err, errlen);
}

/* Each call of the oracle appends its layer's |h| at the stride, in order. */
static void calls_append_their_values(struct neuron_select *s, const struct model *m, struct cpu_kernels *k)
{
    uint32_t d = m->shape.d_model, d_ff = m->shape.d_ff, stride = (uint32_t)value_sample_stride(d_ff);
    float *x = malloc(d * sizeof *x);
    uint32_t *out = malloc(d_ff * sizeof *out);
    struct rng r;
    rng_seed(&r, 5);
    size_t per_call = (d_ff + stride - 1) / stride, equal = 0, calls = 0;
    while (s->sample.n + per_call <= s->sample.cap && calls < 64) {
        for (uint32_t j = 0; j < d; j++)
            x[j] = (float)(2 * rng_unit(&r) - 1);
        size_t before = s->sample.n;
        int layer = (int)(calls % m->shape.n_layers);
        CHECK_U64(neuron_select_layer(s, layer, k, x, out), d_ff); /* threshold 0: every neuron */
        CHECK_U64(s->sample.n, before + per_call);
        for (uint32_t i = 0, at = 0; i < d_ff; i += stride, at++)
            equal += s->sample.v[before + at] == fabsf(ffn_neuron_value(&m->arch, s->z[i], s->g[i]));
        calls++;
    }
    CHECK_U64(equal, calls * per_call);
    CHECK(calls == 64);
    free(x);
    free(out);
}

static void test_oracle(void)
{
    char tmp[] = "/tmp/fb-value-sample-XXXXXX", dir[700], relu[700], err[1024] = "";
    struct model m = {0}, o = {0};
    if (!mkdtemp(tmp) || make_model(tmp, "llama-tiny", dir, sizeof dir, err, sizeof err) != 0 ||
        make_model(tmp, "opt-tiny", relu, sizeof relu, err, sizeof err) != 0 ||
        model_open(&m, dir, err, sizeof err) != 0 || model_open(&o, relu, err, sizeof err) != 0) {
        fprintf(stderr, "fixture: %s\n", err);
        CHECK(0);
        return;
    }
    const struct fb_settings set = fb_settings_defaults();
    struct cpu_kernels *k = ck_create(&set, 1, 4096, 16, 16, err, sizeof err);
    CHECK(k != NULL);
    struct neuron_select s;
    struct select_config oracle = {.ops = &source_oracle, .threshold = 0};
    CHECK(neuron_select_open(&s, &m, &oracle, err, sizeof err) == 0);
    CHECK_U64(s.sample.cap, VALUE_SAMPLE_CAP);
    if (k && s.sample.v)
        calls_append_their_values(&s, &m, k);
    neuron_select_close(&s);
    struct select_config gate = {.ops = &source_gate, .threshold = 0.1f};
    CHECK(neuron_select_open(&s, &m, &gate, err, sizeof err) == 0);
    CHECK_U64(s.sample.cap, 0);
    neuron_select_close(&s);
    CHECK(neuron_select_open(&s, &o, &oracle, err, sizeof err) == 0);
    CHECK_U64(s.sample.cap, 0); /* ReLU: active when not zero, no threshold to suggest */
    neuron_select_close(&s);
    ck_destroy(k);
    model_close(&m);
    model_close(&o);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    test_stride();
    test_cut();
    test_oracle();
    return check_report("test_value_sample");
}
