/* The eight-row dot products (quant_dot.h's quant_dot8_of): each of the
 * eight outputs equals the portable one-row dot product of its row bit
 * for bit, for every block type that has the form in this build, on
 * random rows (random bytes, random halves: the scales' and mins'
 * signs, magnitudes and subnormals all occur, and infinities and NaNs,
 * where both must give a NaN, its sign and payload unspecified) against an activation of
 * random blocks with zero blocks among them, at lengths of 1, 2, 18
 * (SmolLM2's 576) and 64 blocks of 32 and 1, 3 and 8 blocks of 256 (the
 * K-quants: Gemma 3's attention output is 1024 wide, its FFN down 2048;
 * random scale bytes give every 6-bit scale and min); the rows are laid out as a matvec's,
 * and the 24 rows checked eight at a time leave rows after the last
 * group, which the form's prefetching of later rows reads ahead into
 * (a prefetch, never a load: no bytes past the rows are touched). The
 * float types have no such form; in the portable build no type has it,
 * and quant_dot_form says "portable" exactly then. It prints the form and
 * the count of outputs compared (tools/check-arm.sh reads both). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/wtype.h"
#include "engine/compute/quant_dot.h"

static uint64_t rng_state = 0x5EED5EED12345678ull;
static int identical; /* outputs equal to the portable form's, for the report line */

static uint64_t next64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

enum { ROWS = 24, MAX_N = 2048 };

/* x: blocks of 32 at scales 2^-3 .. 2^3, every seventh block zeros */
static void random_x(float *x, int n)
{
    for (int b = 0; b < n / 32; b++) {
        float s = ldexpf(1.0f, (int)(next64() % 7) - 3);
        for (int j = 0; j < 32; j++)
            x[b * 32 + j] = b % 7 == 6 ? 0.0f : s * (float)((double)(next64() >> 11) * 0x1p-52 - 1.0);
    }
}

/* one type at one length: 0 where every output matches */
static int check_type(enum fb_dtype t, quant_dot8_fn dot8, int n)
{
    quant_dot_fn portable;
    enum quant_act act;
    static float x[MAX_N];
    CHECK(quant_dot_portable(t, &portable, &act) == 0);
    size_t row_bytes = wtype_row_bytes(t, (uint64_t)n);
    uint8_t *w = malloc(row_bytes * ROWS);
    void *xq = malloc(quant_act_bytes(act, (size_t)n));
    int bad = 0;
    if (!w || !xq) {
        free(w);
        free(xq);
        return 1;
    }
    for (size_t i = 0; i < row_bytes * ROWS; i++)
        w[i] = (uint8_t)next64();
    random_x(x, n);
    quant_act_from_f32(xq, act, x, (size_t)n);
    for (int r = 0; r + 8 <= ROWS; r += 8) {
        float out[8];
        dot8(w + (size_t)r * row_bytes, row_bytes, xq, n, out);
        for (int k = 0; k < 8; k++) {
            float want = portable(w + (size_t)(r + k) * row_bytes, xq, n);
            bool same = memcmp(&want, &out[k], sizeof want) == 0 || (isnan(want) && isnan(out[k]));
            bad += !same;
            identical += same;
        }
    }
    free(w);
    free(xq);
    return bad;
}

int main(void)
{
    static const int lengths[] = {32, 64, 256, 576, 768, MAX_N};
    int with_form = 0;
    for (int i = WTYPE_FLOAT_COUNT; i < DTYPE_COUNT; i++) {
        enum fb_dtype t = (enum fb_dtype)i;
        quant_dot8_fn dot8 = quant_dot8_of(t);
        if (!dot8)
            continue;
        with_form++;
        for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++)
            if (lengths[l] % (int)wtype_block_elems(t) == 0)
                CHECK_U64(check_type(t, dot8, lengths[l]), 0);
    }
    /* the library's target flags, not this file's, decide: all eight
     * (q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k, q6_k) in the AVX2 and
     * NEON builds or, in the portable build, none */
    CHECK(with_form == 8 || with_form == 0);
    CHECK((with_form == 8) == (strcmp(quant_dot_form(), "portable") != 0));
    printf("quant_dot form: %s; %d outputs of %d types bit-identical to the portable form\n", quant_dot_form(),
           identical, with_form);
    for (int i = 0; i < WTYPE_FLOAT_COUNT; i++)
        CHECK(quant_dot8_of((enum fb_dtype)i) == NULL);
    return check_report("test_quant_dot_rows");
}
