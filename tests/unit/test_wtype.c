/* The weight-type table: each row's bytes per block (the block formats'
 * as ggml's common header has them), names in every spelling, file codes
 * (ggml's enum ggml_type), and refusals of rows that are not whole
 * blocks or types outside the table. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "common/wtype.h"

static void test_rows(void)
{
    CHECK_U64(DTYPE_COUNT, 13);
    CHECK_U64(WTYPE_FLOAT_COUNT, 3);
    CHECK_U64(wtype_row_bytes(DTYPE_F32, 576), 2304);
    CHECK_U64(wtype_row_bytes(DTYPE_F16, 576), 1152);
    CHECK_U64(wtype_row_bytes(DTYPE_BF16, 3), 6);
    CHECK_U64(wtype_row_bytes(DTYPE_F32, 0), 0);
    CHECK_U64(wtype_row_bytes((enum fb_dtype)DTYPE_COUNT, 32), 0); /* outside the table */
    CHECK(wtype_traits((enum fb_dtype)-1) == NULL && wtype_traits((enum fb_dtype)DTYPE_COUNT) == NULL);
    for (int t = 0; t < DTYPE_COUNT; t++) {
        const struct wtype_traits *w = wtype_traits((enum fb_dtype)t);
        CHECK(w && w->block_elems >= 1 && w->block_bytes >= 1);
        CHECK(wtype_row_fits((enum fb_dtype)t, (uint64_t)w->block_elems * 7));
        CHECK_U64(wtype_row_bytes((enum fb_dtype)t, (uint64_t)w->block_elems * 7), (uint64_t)w->block_bytes * 7);
        CHECK(w->quantized == (t >= WTYPE_FLOAT_COUNT)); /* the three float types first */
    }
}

/* The block formats: ggml's block sizes and type numbers, each checked
 * against ggml's common header's static_asserts (sizeof(block_q4_0) ==
 * sizeof(ggml_half) + QK4_0 / 2 ...) and its enum ggml_type. */
static void test_block_rows(void)
{
    static const struct {
        enum fb_dtype t;
        const char *name, *upper;
        uint32_t elems, bytes, code;
    } rows[] = {
        {DTYPE_Q4_0, "q4_0", "Q4_0", 32, 2 + 16, 2},            /* d, 16 bytes of nibbles */
        {DTYPE_Q4_1, "q4_1", "Q4_1", 32, 2 + 2 + 16, 3},        /* d, m, nibbles */
        {DTYPE_Q5_0, "q5_0", "Q5_0", 32, 2 + 4 + 16, 6},        /* d, qh, nibbles */
        {DTYPE_Q5_1, "q5_1", "Q5_1", 32, 2 + 2 + 4 + 16, 7},    /* d, m, qh, nibbles */
        {DTYPE_Q8_0, "q8_0", "Q8_0", 32, 2 + 32, 8},            /* d, 32 int8 */
        {DTYPE_Q2_K, "q2_k", "Q2_K", 256, 16 + 64 + 2 + 2, 10}, /* scales, 2-bit q, d, dmin */
        {DTYPE_Q3_K, "q3_k", "Q3_K", 256, 32 + 64 + 12 + 2, 11}, /* hmask, 2-bit q, scales, d */
        {DTYPE_Q4_K, "q4_k", "Q4_K", 256, 2 + 2 + 12 + 128, 12}, /* d, dmin, scales, nibbles */
        {DTYPE_Q5_K, "q5_k", "Q5_K", 256, 2 + 2 + 12 + 32 + 128, 13}, /* ... qh, nibbles */
        {DTYPE_Q6_K, "q6_k", "Q6_K", 256, 128 + 64 + 16 + 2, 14}, /* ql, qh, int8 scales, d */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct wtype_traits *w = wtype_traits(rows[i].t);
        enum fb_dtype t = DTYPE_F32;
        CHECK(w && w->quantized);
        CHECK_STR(w->name, rows[i].name);
        CHECK_STR(w->upper_name, rows[i].upper);
        CHECK_U64(w->block_elems, rows[i].elems);
        CHECK_U64(w->block_bytes, rows[i].bytes);
        CHECK_U64(w->code, rows[i].code);
        CHECK(wtype_from_code(rows[i].code, &t) == 0 && t == rows[i].t);
        CHECK(wtype_parse(rows[i].upper, &t) == 0 && t == rows[i].t);
    }
    CHECK_U64(wtype_row_bytes(DTYPE_Q4_0, 576), 18 * 18); /* SmolLM2's d_model: 18 blocks */
    CHECK_U64(wtype_row_bytes(DTYPE_Q4_K, 2048), 8 * 144);
    CHECK(!wtype_row_fits(DTYPE_Q4_K, 640) && wtype_row_bytes(DTYPE_Q4_K, 640) == 0); /* Gemma's 640: no */
    CHECK(wtype_row_fits(DTYPE_Q8_0, 640) && !wtype_row_fits(DTYPE_Q5_0, 48));
    CHECK(wtype_parse("q4_K", &(enum fb_dtype){DTYPE_F32}) == 0); /* ggml's own spelling */
}

static void test_names(void)
{
    CHECK_STR(wtype_name(DTYPE_F32), "f32");
    CHECK_STR(wtype_name(DTYPE_BF16), "bf16");
    CHECK_STR(wtype_name((enum fb_dtype)DTYPE_COUNT), "?");
    CHECK_STR(wtype_names(), "f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k");
    CHECK_STR(WTYPE_ALLOWED, "f32|f16|bf16"); /* what a command writes: the float types */
    const char *spellings[][2] = {{"f16", "f16"}, {"float16", "f16"}, {"F16", "f16"}, {"bfloat16", "bf16"},
                                  {"BF16", "bf16"}, {"float32", "f32"}};
    for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
        enum fb_dtype t = (enum fb_dtype)DTYPE_COUNT;
        CHECK(wtype_parse(spellings[i][0], &t) == 0);
        CHECK_STR(wtype_name(t), spellings[i][1]);
    }
    enum fb_dtype t = DTYPE_F16;
    CHECK(wtype_parse("iq4_nl", &t) == -1 && t == DTYPE_F16); /* not a row: untouched */
    CHECK(wtype_parse("", &t) == -1 && wtype_parse("f1", &t) == -1);
}

static void test_codes(void)
{
    enum fb_dtype t;
    CHECK(wtype_from_code(0, &t) == 0 && t == DTYPE_F32);
    CHECK(wtype_from_code(1, &t) == 0 && t == DTYPE_F16);
    CHECK(wtype_from_code(30, &t) == 0 && t == DTYPE_BF16);
    CHECK(wtype_from_code(2, &t) == 0 && t == DTYPE_Q4_0);
    CHECK(wtype_from_code(9, &t) == -1);  /* ggml's Q8_1: an activation type, not a weight row */
    CHECK(wtype_from_code(15, &t) == -1); /* Q8_K: the same */
    CHECK(wtype_from_code(20, &t) == -1); /* IQ4_NL: not a row */
    for (int a = 0; a < DTYPE_COUNT; a++) /* codes are unique */
        for (int b = a + 1; b < DTYPE_COUNT; b++)
            CHECK(wtype_traits((enum fb_dtype)a)->code != wtype_traits((enum fb_dtype)b)->code);
}

int main(void)
{
    test_rows();
    test_block_rows();
    test_names();
    test_codes();
    return check_report("test_wtype");
}
