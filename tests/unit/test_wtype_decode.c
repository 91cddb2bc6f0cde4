/* Every row of the weight-type table reaches each place that decodes or
 * names a type: the CPU kernels' decode entries (load8 and elem, through
 * matvec and axpy_rows) give, for every float type, the values of
 * dtype_to_f32, the reference decode, bit for bit (the block formats'
 * decode is test_quant_decode's, their block path test_quant_dot's); the
 * device kernels'
 * numbers (engine/compute/kernels/wtypes.kern) are the table's (at compile time, and
 * here again at run time); the table's inline block sizes are its rows;
 * the options' allowed list, sim's bytes per weight, the predictor's and
 * calibrate's subsets come from the rows. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/settings.h"
#include "common/wtype.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/compute/kernels/wtypes_check.h"
#include "engine/model/dtype.h"
#include "engine/predictor/predictor.h"
#include "harness/calibrate.h"
#include "sim/cost_model.h"

/* 45 elements: one 32-wide step, one 8-wide step and a scalar tail of 5. */
enum { N = 45 };

/* Values every type holds exactly or rounds its own way, signs, a
 * subnormal half and large ones among them. */
static void values(float *v)
{
    for (int i = 0; i < N; i++)
        v[i] = (i % 2 ? -1.0f : 1.0f) * ldexpf(1.0f + 0.37f * (float)i, (i % 13) - 6);
    v[3] = 0.0f;
    v[7] = 6.0e-8f; /* a subnormal f16 */
    v[11] = 60000.0f;
}

/* Element j of the row through matvec: x = e_j, so the dot is exactly it. */
static void check_matvec(struct cpu_kernels *k, enum fb_dtype t, const void *row, const float *want)
{
    float x[N], out;
    int bad = 0;
    for (int j = 0; j < N; j++) {
        memset(x, 0, sizeof x);
        x[j] = 1.0f;
        ck_matvec(k, &out, row, t, x, NULL, 1, N);
        bad += memcmp(&out, &want[j], sizeof out) != 0;
    }
    CHECK(bad == 0);
}

/* The row through axpy_rows: 0 + 1 * w is w. */
static void check_axpy(struct cpu_kernels *k, enum fb_dtype t, const void *row, const float *want)
{
    float y[N] = {0}, a = 1.0f;
    const void *rows[1] = {row};
    ck_axpy_rows(k, y, N, rows, &a, 1, t);
    CHECK(memcmp(y, want, sizeof y) == 0);
}

static void test_cpu_decode(void)
{
    struct fb_settings set = fb_settings_defaults();
    char err[256];
    struct cpu_kernels *k = ck_create(&set, 1, N, 1, 1, err, sizeof err);
    CHECK(k != NULL);
    float v[N], want[N];
    values(v);
    for (int i = 0; k && i < WTYPE_FLOAT_COUNT; i++) {
        enum fb_dtype t = (enum fb_dtype)i;
        CHECK(wtype_row_fits(t, N));
        void *row = malloc(wtype_row_bytes(t, N));
        CHECK(row != NULL);
        if (!row)
            continue;
        dtype_from_f32(row, t, v, N);
        dtype_to_f32(want, row, t, N);
        check_matvec(k, t, row, want);
        check_axpy(k, t, row, want);
        float emb[N];
        ck_embed(k, emb, row, t, 0, N);
        CHECK(memcmp(emb, want, sizeof emb) == 0);
        free(row);
    }
    ck_destroy(k);
}

/* The kernels' numbers, which wtypes_check.h asserts at compile time. */
static void test_kernel_numbers(void)
{
    CHECK_U64(FB_DTYPE_COUNT, DTYPE_COUNT);
#define ROW(id) FB_##id
    const int numbers[] = {ROW(F32),  ROW(F16),  ROW(BF16), ROW(Q4_0), ROW(Q4_1), ROW(Q5_0), ROW(Q5_1),
                           ROW(Q8_0), ROW(Q2_K), ROW(Q3_K), ROW(Q4_K), ROW(Q5_K), ROW(Q6_K)};
#undef ROW
#define ROW(id) FB_##id##_BLOCK_ELEMS
    const int elems[] = {ROW(F32),  ROW(F16),  ROW(BF16), ROW(Q4_0), ROW(Q4_1), ROW(Q5_0), ROW(Q5_1),
                         ROW(Q8_0), ROW(Q2_K), ROW(Q3_K), ROW(Q4_K), ROW(Q5_K), ROW(Q6_K)};
#undef ROW
#define ROW(id) FB_##id##_BLOCK_BYTES
    const int bytes[] = {ROW(F32),  ROW(F16),  ROW(BF16), ROW(Q4_0), ROW(Q4_1), ROW(Q5_0), ROW(Q5_1),
                         ROW(Q8_0), ROW(Q2_K), ROW(Q3_K), ROW(Q4_K), ROW(Q5_K), ROW(Q6_K)};
#undef ROW
    CHECK_U64(sizeof numbers / sizeof numbers[0], DTYPE_COUNT);
    for (int t = 0; t < DTYPE_COUNT; t++) {
        const struct wtype_traits *w = wtype_traits((enum fb_dtype)t);
        CHECK(numbers[t] == t);
        CHECK_U64(elems[t], w->block_elems);
        CHECK_U64(bytes[t], w->block_bytes);
    }
}

static void test_inline_rows(void)
{
    for (int t = 0; t < DTYPE_COUNT; t++) {
        const struct wtype_traits *w = wtype_traits((enum fb_dtype)t);
        CHECK_U64(wtype_block_elems((enum fb_dtype)t), w->block_elems);
        CHECK_U64(wtype_block_bytes((enum fb_dtype)t), w->block_bytes);
    }
    CHECK_U64(wtype_block_bytes((enum fb_dtype)DTYPE_COUNT), 0);
    CHECK_U64(WTYPE_BLOCK_BYTES_F16, 2);
}

static void test_names_from_rows(void)
{
    CHECK_STR(WTYPE_ALLOWED, "f32|f16|bf16");
    char buf[64];
    CHECK_STR(predictor_wtype_names(buf, sizeof buf, ", ", " or "), "f32 or f16");
    CHECK_STR(predictor_wtype_names(buf, sizeof buf, "|", "|"), "f32|f16");
    CHECK(predictor_wtype_ok(DTYPE_F32) && predictor_wtype_ok(DTYPE_F16) && !predictor_wtype_ok(DTYPE_BF16));
    /* the CPU's profile: f32 then f16, as before the table */
    CHECK(calibrate_cpu_measures(DTYPE_F32) && calibrate_cpu_measures(DTYPE_F16));
    CHECK(!calibrate_cpu_measures(DTYPE_BF16));
}

static void test_sim_bytes(void)
{
    CHECK(cost_weight_bytes("f32") == 4.0 && cost_weight_bytes("f16") == 2.0 && cost_weight_bytes("bf16") == 2.0);
    CHECK(cost_weight_bytes("q3") == 0.0 && cost_weight_bytes("") == 0.0);
    CHECK_U64(cost_row_bytes("bf16", 3), 6);
    CHECK_U64(cost_row_bytes("f32", 576), 2304);
    CHECK_U64(cost_row_bytes("f8", 4), 0);
}

int main(void)
{
    test_cpu_decode();
    test_kernel_numbers();
    test_inline_rows();
    test_names_from_rows();
    test_sim_bytes();
    return check_report("test_wtype_decode");
}
