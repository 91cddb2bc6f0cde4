/* Weight storage conversions and the sampler. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "engine/forward/sampler.h"
#include "engine/model/dtype.h"

/* f16: exact bit patterns, rounding to nearest even, subnormals, overflow */
static void test_f16(void)
{
    CHECK_U64(f32_to_f16(1.0f), 0x3c00);
    CHECK_U64(f32_to_f16(-2.0f), 0xc000);
    CHECK_U64(f32_to_f16(65504.0f), 0x7bff);
    CHECK_U64(f32_to_f16(65520.0f), 0x7c00);
    CHECK_U64(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* halfway: to even */
    CHECK_U64(f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
    CHECK_U64(f32_to_f16(5.9604645e-08f), 0x0001);    /* smallest subnormal */
    CHECK_U64(f32_to_f16(0.0f), 0);
    CHECK(f16_to_f32(0x3555) > 0.3332f && f16_to_f32(0x3555) < 0.3334f);
    CHECK(isinf(f16_to_f32(0x7c00)) && isnan(f16_to_f32(0x7e00)));
    for (uint32_t h = 0; h <= 0xffff; h++) { /* every half, against its definition */
        int e = (h >> 10) & 31, m = h & 0x3ff;
        double want = e == 0 ? ldexp(m, -24) : e < 31 ? ldexp(1024 + m, e - 25) : m ? NAN : INFINITY;
        want = h & 0x8000 ? -want : want;
        float got = f16_to_f32((uint16_t)h);
        uint32_t got_bits;
        memcpy(&got_bits, &got, sizeof got_bits);
        bool ok = isnan(want) ? isnan(got) && (got_bits >> 31) == (h >> 15) && (got_bits >> 13 & 0x3ff) == (uint32_t)m
                              : (double)got == want && !signbit(got) == !signbit(want);
        if (!ok) {
            CHECK_U64(h, 0x10000); /* names the first half that converts wrongly */
            break;
        }
    }
    for (uint32_t h = 0; h < 0x7c00; h++) /* every finite half survives the round trip */
        if (f32_to_f16(f16_to_f32((uint16_t)h)) != h) {
            CHECK_U64(f32_to_f16(f16_to_f32((uint16_t)h)), h);
            break;
        }
}

static void test_bf16_and_names(void)
{
    CHECK_U64(f32_to_bf16(1.0f), 0x3f80);
    CHECK_U64(f32_to_bf16(1.00390625f), 0x3f80); /* halfway: to even */
    CHECK_U64(f32_to_bf16(1.01171875f), 0x3f82);
    CHECK(bf16_to_f32(0x4049) == 3.140625f);
    enum fb_dtype t;
    CHECK(wtype_parse("bf16", &t) == 0 && t == DTYPE_BF16);
    CHECK(wtype_parse("f8", &t) == -1);

}

/* sampler: greedy takes the argmax; tiny top-p always the top token;
 * one seed, one sequence */
static void test_sampler_choices(void)
{
    float logits[4];
    struct sampler s;
    CHECK(sampler_init(&s, 4, 0.0f, 0.9f, 1) == 0);
    memcpy(logits, (float[]){0.1f, 3.0f, 2.9f, -1.0f}, sizeof logits);
    CHECK_U64(sampler_sample(&s, logits), 1);
    sampler_free(&s);
    CHECK(sampler_init(&s, 4, 1.0f, 0.01f, 2) == 0);
    for (int i = 0; i < 100; i++) {
        memcpy(logits, (float[]){0.1f, 3.0f, 2.9f, -1.0f}, sizeof logits);
        if (sampler_sample(&s, logits) != 1) {
            CHECK(0);
            break;
        }
    }
    sampler_free(&s);
    int seq[2][20];
    for (int r = 0; r < 2; r++) {
        CHECK(sampler_init(&s, 4, 1.0f, 1.0f, 99) == 0);
        for (int i = 0; i < 20; i++) {
            memcpy(logits, (float[]){0.0f, 1.0f, 2.0f, 0.5f}, sizeof logits);
            seq[r][i] = sampler_sample(&s, logits);
        }
        sampler_free(&s);
    }
    CHECK(memcmp(seq[0], seq[1], sizeof seq[0]) == 0);
}

/* samples follow the distribution, within top-p's nucleus */
static void test_sampler_distribution(void)
{
    float logits[4];
    struct sampler s;
    int counts[4] = {0};
    CHECK(sampler_init(&s, 4, 1.0f, 1.0f, 5) == 0);
    for (int i = 0; i < 20000; i++) {
        memcpy(logits, (float[]){0.0f, 1.0f, 2.0f, 0.5f}, sizeof logits);
        counts[sampler_sample(&s, logits)]++;
    }
    sampler_free(&s);
    /* softmax(0,1,2,0.5) = 0.0784, 0.2131, 0.5793, 0.1293: 20000 draws within 5 sigma */
    double want[4] = {0.0784, 0.2131, 0.5793, 0.1293};
    for (int i = 0; i < 4; i++)
        CHECK(fabs(counts[i] / 20000.0 - want[i]) < 5 * sqrt(want[i] * (1 - want[i]) / 20000));
    /* top-p 0.7 keeps only {2, 1}: never samples 0 or 3 */
    CHECK(sampler_init(&s, 4, 1.0f, 0.7f, 5) == 0);
    int outside = 0;
    for (int i = 0; i < 2000; i++) {
        memcpy(logits, (float[]){0.0f, 1.0f, 2.0f, 0.5f}, sizeof logits);
        int k = sampler_sample(&s, logits);
        outside += k == 0 || k == 3;
    }
    CHECK_U64(outside, 0);
    sampler_free(&s);
}

/* greedy sampling (two vector passes over the logits) answers what
 * argmax does, the first of the largest, on lengths around the vector
 * widths, with the largest repeated, at either end, every value negative
 * or zeros of both signs; and SAMPLER_NOT_FINITE for a NaN or infinity
 * anywhere, in the vector part or the tail */
static void test_sampler_greedy(void)
{
    static float v[1031];
    unsigned seed = 7;
    int wrong = 0, cases = 0;
    for (int n = 1; n <= 1031; n += n < 40 ? 1 : 97) {
        for (int kind = 0; kind < 5; kind++) {
            for (int i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                float r = (float)(seed >> 8) / (float)(1u << 24);
                float by_kind[5] = {r, -1.0f - r, (float)(seed % 5), seed & 256 ? 0.0f : -0.0f, -r};
                v[i] = by_kind[kind];
            }
            if (kind == 4) /* the largest at the end */
                v[n - 1] = 2.0f;
            struct sampler s;
            CHECK(sampler_init(&s, n, 0.0f, 1.0f, 1) == 0);
            int want = argmax(v, n);
            wrong += sampler_sample(&s, v) != want;
            cases++;
            int at = (int)(seed % (unsigned)n);
            v[at] = kind % 2 ? NAN : (kind == 2 ? -INFINITY : INFINITY);
            wrong += sampler_sample(&s, v) != SAMPLER_NOT_FINITE;
            sampler_free(&s);
        }
    }
    CHECK_U64(wrong, 0);
    CHECK(cases > 200);
}

int main(void)
{
    test_f16();
    test_bf16_and_names();
    test_sampler_choices();
    test_sampler_distribution();
    test_sampler_greedy();
    return check_report("test_dtype_sampler");
}
