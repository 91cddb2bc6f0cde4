/* The numbers read from files: common/checked.h's overflow-checked sums and
 * products, json_file.h's range-checked number readers at their exact
 * edges (2^64 - 1, -1, 1e300, NaN, 0.5 where a count is meant), and
 * model_shape_check on the shapes that used to load (odd head_dim with
 * RoPE, n_heads that do not divide d_model, dimensions past the bounds),
 * and the one thread limit. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache/unit_geometry.h"
#include "check.h"
#include "common/checked.h"
#include "common/json_file.h"
#include "common/limits.h"
#include "common/machine.h"
#include "common/model_shape.h"

static void test_add_mul(void)
{
    uint64_t r = 7;
    CHECK(checked_add_u64(1, 2, &r) == 0 && r == 3);
    CHECK(checked_add_u64(UINT64_MAX - 1, 1, &r) == 0 && r == UINT64_MAX);
    r = 7;
    CHECK(checked_add_u64(UINT64_MAX, 1, &r) == -1 && r == 7); /* untouched on overflow */
    CHECK(checked_add_u64(1, UINT64_MAX, &r) == -1);
    CHECK(checked_add_u64((uint64_t)1 << 63, (uint64_t)1 << 63, &r) == -1);
    CHECK(checked_mul_u64(0, UINT64_MAX, &r) == 0 && r == 0);
    CHECK(checked_mul_u64(UINT64_MAX, 0, &r) == 0 && r == 0);
    CHECK(checked_mul_u64(UINT64_MAX, 1, &r) == 0 && r == UINT64_MAX);
    CHECK(checked_mul_u64((uint64_t)1 << 32, (uint64_t)1 << 31, &r) == 0 && r == (uint64_t)1 << 63);
    CHECK(checked_mul_u64((uint64_t)1 << 32, (uint64_t)1 << 32, &r) == -1);
    CHECK(checked_mul_u64(UINT64_MAX / 3 + 1, 3, &r) == -1);
    CHECK(checked_mul_u64(UINT64_MAX / 3, 3, &r) == 0 && r == UINT64_MAX / 3 * 3);
    /* a shape: rows x columns x element size */
    CHECK(checked_mul3_u64(16384, 4096, 4, &r) == 0 && r == 268435456ull);
    CHECK(checked_mul3_u64((uint64_t)1 << 40, (uint64_t)1 << 40, 1, &r) == -1);
    CHECK(checked_mul3_u64((uint64_t)1 << 31, (uint64_t)1 << 31, 4, &r) == -1); /* 2^64 exactly */
    CHECK(checked_mul3_u64((uint64_t)1 << 31, (uint64_t)1 << 31, 2, &r) == 0 && r == (uint64_t)1 << 63);
    size_t z = 5;
    CHECK(checked_add_size(SIZE_MAX, 1, &z) == -1 && z == 5);
    CHECK(checked_add_size(SIZE_MAX - 5, 5, &z) == 0 && z == SIZE_MAX);
    CHECK(checked_mul_size(SIZE_MAX / 2 + 1, 2, &z) == -1);
    CHECK(checked_mul_size(SIZE_MAX / 2, 2, &z) == 0 && z == SIZE_MAX - 1);
}

static void test_range_within(void)
{
    CHECK(range_within(0, 0, 0));
    CHECK(range_within(0, 10, 10));
    CHECK(range_within(10, 0, 10));
    CHECK(!range_within(11, 0, 10));
    CHECK(!range_within(1, 10, 10));
    CHECK(!range_within(0, 11, 10));
    /* the wrap model.json's tensor offsets hit: offset + len passes 2^64 and
     * comes back small */
    CHECK(!range_within(UINT64_MAX - 1023, 131072, 230656));
    CHECK(!range_within(UINT64_MAX, 1, UINT64_MAX));
    CHECK(range_within(UINT64_MAX - 1, 1, UINT64_MAX));
    CHECK(!range_within(1, UINT64_MAX, UINT64_MAX));
}

/* json_number_u64 on a parsed JSON number text. */
static int u64_of(const char *text, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
    cJSON *v = cJSON_Parse(text);
    int rc = json_number_u64(v, "\"k\"", min, max, out, "f.json", err, errlen);
    cJSON_Delete(v);
    return rc;
}

static void test_json_u64(void)
{
    char err[256];
    uint64_t u = 42;
    CHECK(u64_of("0", 0, 10, &u, err, sizeof err) == 0 && u == 0);
    CHECK(u64_of("10", 0, 10, &u, err, sizeof err) == 0 && u == 10);
    u = 42;
    CHECK(u64_of("11", 0, 10, &u, err, sizeof err) == -1 && u == 42);
    CHECK(strstr(err, "f.json") && strstr(err, "\"k\"") && strstr(err, "11"));
    CHECK(u64_of("-1", 0, UINT64_MAX, &u, err, sizeof err) == -1 && strstr(err, "-1"));
    CHECK(u64_of("0.5", 0, UINT64_MAX, &u, err, sizeof err) == -1 && strstr(err, "0.5"));
    CHECK(u64_of("1e300", 0, UINT64_MAX, &u, err, sizeof err) == -1 && strstr(err, "1e+300"));
    CHECK(u64_of("1e999", 0, UINT64_MAX, &u, err, sizeof err) == -1 && strstr(err, "inf"));
    /* 2^64 - 1 reads as the double 2^64, which no uint64_t holds */
    CHECK(u64_of("18446744073709551615", 0, UINT64_MAX, &u, err, sizeof err) == -1);
    /* the largest double below 2^64 converts exactly */
    CHECK(u64_of("18446744073709549568", 0, UINT64_MAX, &u, err, sizeof err) == 0 &&
          u == 18446744073709549568ull);
    CHECK(u64_of("9007199254740993", 0, UINT64_MAX, &u, err, sizeof err) == 0 && u == 9007199254740992ull);
    CHECK(u64_of("\"5\"", 0, 10, &u, err, sizeof err) == -1 && strstr(err, "string"));
    CHECK(u64_of("null", 0, 10, &u, err, sizeof err) == -1 && strstr(err, "not a number"));
    CHECK(u64_of("3", 4, 10, &u, err, sizeof err) == -1 && strstr(err, "from 4 to 10"));
    cJSON *nan = cJSON_CreateNumber(NAN);
    CHECK(json_number_u64(nan, "\"k\"", 0, 10, &u, "f.json", err, sizeof err) == -1 && strstr(err, "nan"));
    CHECK(json_number_u64(NULL, "\"k\"", 0, 10, &u, "f.json", err, sizeof err) == -1 && strstr(err, "missing"));
    cJSON_Delete(nan);
}

static void test_json_finite(void)
{
    char err[256];
    double d = 42;
    cJSON *o = cJSON_Parse("{\"a\": 1.5, \"b\": -1, \"c\": 1e999, \"d\": -1e999, \"e\": \"x\", \"f\": 1e300}");
    CHECK(json_get_finite(o, "a", 0, 2, &d, "p.json", err, sizeof err) == 0 && d == 1.5);
    d = 42;
    CHECK(json_get_finite(o, "b", 0, 2, &d, "p.json", err, sizeof err) == -1 && d == 42);
    CHECK(strstr(err, "p.json") && strstr(err, "\"b\"") && strstr(err, "-1"));
    CHECK(json_get_finite(o, "c", 0, INFINITY, &d, "p.json", err, sizeof err) == -1 && strstr(err, "inf"));
    CHECK(json_get_finite(o, "d", -INFINITY, 0, &d, "p.json", err, sizeof err) == -1 && strstr(err, "-inf"));
    CHECK(json_get_finite(o, "e", 0, 2, &d, "p.json", err, sizeof err) == -1 && strstr(err, "string"));
    CHECK(json_get_finite(o, "f", 0, 1e18, &d, "p.json", err, sizeof err) == -1);
    CHECK(json_get_finite(o, "f", 0, 1e300, &d, "p.json", err, sizeof err) == 0 && d == 1e300);
    CHECK(json_get_finite(o, "nope", 0, 2, &d, "p.json", err, sizeof err) == -1 && strstr(err, "missing"));
    CHECK(json_get_finite(NULL, "a", 0, 2, &d, "p.json", err, sizeof err) == -1);
    uint64_t u;
    CHECK(json_get_u64(o, "a", 0, 10, &u, "p.json", err, sizeof err) == -1 && strstr(err, "\"a\""));
    cJSON *nan = cJSON_CreateNumber(NAN);
    CHECK(json_number_finite(nan, "\"k\"", -1e300, 1e300, &d, "p.json", err, sizeof err) == -1);
    cJSON_Delete(nan);
    cJSON_Delete(o);
}

/* llama-tiny's shape, changed by the caller, through model_shape_check. */
static int shape_ok(void (*change)(struct model_shape *), char *err, size_t errlen)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    if (model_shape_load(&set, "llama-tiny", &s, err, errlen) != 0)
        return -2;
    change(&s);
    return model_shape_check(&s, "m.json", err, errlen);
}

static void same(struct model_shape *s) { (void)s; }
static void odd_head(struct model_shape *s) { s->d_model = 66, s->n_heads = 6, s->n_kv_heads = 6; }
static void odd_head_learned(struct model_shape *s)
{
    odd_head(s);
    snprintf(s->position, sizeof s->position, "learned");
}
static void heads_not_dividing(struct model_shape *s) { s->n_heads = 7, s->n_kv_heads = 7; }
static void kv_not_dividing(struct model_shape *s) { s->n_heads = 8, s->n_kv_heads = 3; }
static void zero_heads(struct model_shape *s) { s->n_heads = 0; }
static void huge_d_ff(struct model_shape *s) { s->d_ff = MODEL_MAX_D_FF + 1; }
static void huge_layers(struct model_shape *s) { s->n_layers = UINT32_MAX; }
static void nan_eps(struct model_shape *s) { s->norm_eps = NAN; }
static void inf_theta(struct model_shape *s) { s->rope_theta = INFINITY; }
static void rope_fraction_zero(struct model_shape *s) { s->rope_fraction = 0; }
static void llama3(struct model_shape *s)
{
    snprintf(s->rope_scaling, sizeof s->rope_scaling, "llama3");
    s->rope_factor = 8, s->rope_low_freq_factor = 1, s->rope_high_freq_factor = 4, s->rope_original_max_positions = 64;
}
static void yarn(struct model_shape *s) { llama3(s), snprintf(s->rope_scaling, sizeof s->rope_scaling, "yarn"); }
static void factor_zero(struct model_shape *s) { llama3(s), s->rope_factor = 0; }
static void bands_crossed(struct model_shape *s) { llama3(s), s->rope_high_freq_factor = 1; }
static void no_original(struct model_shape *s) { llama3(s), s->rope_original_max_positions = 0; }
/* longrope over llama-tiny's heads: one factor per rotated pair */
static void longrope(struct model_shape *s)
{
    snprintf(s->rope_scaling, sizeof s->rope_scaling, "longrope");
    s->rope_factor = 4, s->rope_original_max_positions = 8;
    s->rope_pairs = model_shape_head_dim(s) / 2;
    for (uint32_t j = 0; j < s->rope_pairs; j++)
        s->rope_short_factor[j] = 1 + j, s->rope_long_factor[j] = 2 + j;
}
static void longrope_short_list(struct model_shape *s) { longrope(s), s->rope_pairs--; }
static void longrope_zero_factor(struct model_shape *s) { longrope(s), s->rope_long_factor[2] = 0; }
static void longrope_nan_factor(struct model_shape *s) { longrope(s), s->rope_short_factor[1] = NAN; }
static void longrope_original_past_max(struct model_shape *s) { longrope(s), s->rope_original_max_positions = s->max_positions + 1; }
static void longrope_factor_under_1(struct model_shape *s) { longrope(s), s->rope_factor = 0.5; }
static void head_dim_odd(struct model_shape *s) { s->head_dim = 9; }
static void head_dim_heads_not_dividing(struct model_shape *s) { s->head_dim = 16, s->n_heads = 7, s->n_kv_heads = 7; }

static void test_shape_check(void)
{
    const struct fb_settings set = fb_settings_defaults();
    char err[512];
    CHECK(shape_ok(same, err, sizeof err) == 0);
    CHECK(shape_ok(odd_head, err, sizeof err) == -1 && strstr(err, "head_dim 11") && strstr(err, "m.json"));
    CHECK(shape_ok(odd_head_learned, err, sizeof err) == 0); /* no RoPE: no pairs to rotate */
    CHECK(shape_ok(heads_not_dividing, err, sizeof err) == -1 && strstr(err, "\"n_heads\""));
    CHECK(shape_ok(kv_not_dividing, err, sizeof err) == -1 && strstr(err, "\"n_kv_heads\""));
    CHECK(shape_ok(zero_heads, err, sizeof err) == -1 && strstr(err, "\"n_heads\""));
    CHECK(shape_ok(huge_d_ff, err, sizeof err) == -1 && strstr(err, "\"d_ff\""));
    CHECK(shape_ok(huge_layers, err, sizeof err) == -1 && strstr(err, "\"n_layers\""));
    CHECK(shape_ok(nan_eps, err, sizeof err) == -1 && strstr(err, "\"norm_eps\""));
    CHECK(shape_ok(inf_theta, err, sizeof err) == -1 && strstr(err, "\"rope_theta\""));
    CHECK(shape_ok(rope_fraction_zero, err, sizeof err) == -1 && strstr(err, "\"rope_fraction\""));
    CHECK(shape_ok(llama3, err, sizeof err) == 0);
    CHECK(shape_ok(yarn, err, sizeof err) == -1 && strstr(err, "\"rope_scaling\" \"yarn\""));
    CHECK(shape_ok(factor_zero, err, sizeof err) == -1 && strstr(err, "\"rope_factor\""));
    CHECK(shape_ok(bands_crossed, err, sizeof err) == -1 && strstr(err, "\"rope_high_freq_factor\""));
    CHECK(shape_ok(no_original, err, sizeof err) == -1 && strstr(err, "\"rope_original_max_positions\""));
    CHECK(shape_ok(longrope, err, sizeof err) == 0);
    CHECK(shape_ok(longrope_short_list, err, sizeof err) == -1 && strstr(err, "\"rope_short_factor\" and") &&
          strstr(err, "one per rotated pair"));
    CHECK(shape_ok(longrope_zero_factor, err, sizeof err) == -1 && strstr(err, "\"rope_long_factor\"[2]"));
    CHECK(shape_ok(longrope_nan_factor, err, sizeof err) == -1 && strstr(err, "\"rope_short_factor\"[1]"));
    CHECK(shape_ok(longrope_original_past_max, err, sizeof err) == -1 &&
          strstr(err, "\"rope_original_max_positions\""));
    CHECK(shape_ok(longrope_factor_under_1, err, sizeof err) == -1 && strstr(err, "\"rope_factor\""));
    CHECK(shape_ok(head_dim_odd, err, sizeof err) == -1 && strstr(err, "\"head_dim\" 9"));
    /* a stated head_dim: the heads need not divide d_model (Qwen3) */
    CHECK(shape_ok(head_dim_heads_not_dividing, err, sizeof err) == 0);
    /* the bounds keep the largest shape's products inside 64 bits */
    struct model_shape s;
    CHECK(model_shape_load(&set, "llama-tiny", &s, err, sizeof err) == 0);
    s.d_model = MODEL_MAX_D_MODEL, s.n_heads = 1, s.n_kv_heads = 1, s.d_ff = MODEL_MAX_D_FF;
    s.n_layers = MODEL_MAX_LAYERS, s.vocab_size = MODEL_MAX_VOCAB;
    CHECK(model_shape_check(&s, "m.json", err, sizeof err) == 0);
    struct param_counts c;
    model_shape_params(&s, &c);
    uint64_t ffn = 0;
    CHECK(checked_mul3_u64(unit_neuron_weights(&s), s.d_ff, s.n_layers, &ffn) == 0);
    CHECK(c.ffn >= ffn && c.total > c.ffn && c.total < (uint64_t)1 << 62);
}

/* "0: all CPUs" and every count given share one limit. */
static void test_thread_limit(void)
{
    CHECK(machine_compute_threads(5) == 5);
    CHECK(machine_compute_threads(FB_MAX_THREADS) == FB_MAX_THREADS);
    CHECK(machine_compute_threads(FB_MAX_THREADS + 1) == FB_MAX_THREADS);
    CHECK(machine_compute_threads(UINT64_MAX) == FB_MAX_THREADS);
    int all = machine_compute_threads(0);
    CHECK(all >= 1 && all <= FB_MAX_THREADS);
}

int main(void)
{
    test_add_mul();
    test_range_within();
    test_json_u64();
    test_json_finite();
    test_shape_check();
    test_thread_limit();
    return check_report("test_checked");
}
