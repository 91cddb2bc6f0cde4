/* The weight-type table: each row's bytes per block, names in every
 * spelling, file codes (ggml's), and refusals of rows that are not whole
 * blocks or types outside the table. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "common/wtype.h"

static void test_rows(void)
{
    CHECK_U64(DTYPE_COUNT, 3);
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
        CHECK(!w->quantized); /* the three float types */
    }
}

static void test_names(void)
{
    CHECK_STR(wtype_name(DTYPE_F32), "f32");
    CHECK_STR(wtype_name(DTYPE_BF16), "bf16");
    CHECK_STR(wtype_name((enum fb_dtype)DTYPE_COUNT), "?");
    CHECK_STR(wtype_names(), "f32, f16, bf16");
    const char *spellings[][2] = {{"f16", "f16"}, {"float16", "f16"}, {"F16", "f16"}, {"bfloat16", "bf16"},
                                  {"BF16", "bf16"}, {"float32", "f32"}};
    for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
        enum fb_dtype t = (enum fb_dtype)DTYPE_COUNT;
        CHECK(wtype_parse(spellings[i][0], &t) == 0);
        CHECK_STR(wtype_name(t), spellings[i][1]);
    }
    enum fb_dtype t = DTYPE_F16;
    CHECK(wtype_parse("q4_0", &t) == -1 && t == DTYPE_F16); /* not a row: untouched */
    CHECK(wtype_parse("", &t) == -1 && wtype_parse("f1", &t) == -1);
}

static void test_codes(void)
{
    enum fb_dtype t;
    CHECK(wtype_from_code(0, &t) == 0 && t == DTYPE_F32);
    CHECK(wtype_from_code(1, &t) == 0 && t == DTYPE_F16);
    CHECK(wtype_from_code(30, &t) == 0 && t == DTYPE_BF16);
    CHECK(wtype_from_code(2, &t) == -1); /* ggml's Q4_0: not a row yet */
    for (int a = 0; a < DTYPE_COUNT; a++) /* codes are unique */
        for (int b = a + 1; b < DTYPE_COUNT; b++)
            CHECK(wtype_traits((enum fb_dtype)a)->code != wtype_traits((enum fb_dtype)b)->code);
}

int main(void)
{
    test_rows();
    test_names();
    test_codes();
    return check_report("test_wtype");
}
