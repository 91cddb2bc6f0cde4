/* The block formats' decode (engine/model/dtype_quant.h, through
 * dtype_to_f32) against an independent reference: gguf-py's numpy
 * dequantize, on hundreds of random blocks of each type
 * (tests/data/quant/quant_ref.txt, written by tools/make_quant_fixture.py
 * with the gguf and numpy versions it records). And q8_0's activation
 * quantizer (engine/compute/quant_dot.h) and the weight encoders of the
 * 32-element types (engine/model/dtype_encode.h) against gguf-py's
 * quantize, with what the encoders refuse.
 *
 * The inputs are not stored: both sides draw them from splitmix64 (the
 * script's generator, reimplemented here), and the fixture's SHA-256 of
 * the input bytes proves the two drew the same. The outputs are compared
 * by SHA-256 of all of them, and element by element on the first block
 * (stored in full), so a difference is named.
 *
 * Exactness: bit for bit, every type. Both sides compute each value in
 * f32 with the same operations in the same order (scales widened from
 * halves exactly, then d * q, d * q + m, (d * sc) * q - dmin * m), and
 * the build keeps -ffp-contract=off (C11 mode), so no step may round
 * differently; the q8_0 quantizer's roundf (halves away from zero) is
 * gguf-py's np_roundf. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/sha256.h"
#include "common/wtype.h"
#include "engine/compute/quant_dot.h"
#include "engine/model/dtype.h"
#include "engine/model/dtype_encode.h"
#include "engine/model/dtype_quant.h"

#ifndef TEST_DATA_DIR
#error TEST_DATA_DIR must be defined
#endif

#define REF_FILE TEST_DATA_DIR "/quant/quant_ref.txt"

static uint64_t seed_base;

/* The script's splitmix64. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void random_bytes(uint8_t *out, size_t n, uint64_t seed)
{
    uint64_t state = seed;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = splitmix64(&state);
        for (size_t k = 0; k < 8 && i + k < n; k++)
            out[i + k] = (uint8_t)(r >> (8 * k));
    }
}

/* The script's blocks: random, each half's exponent moved off all-ones. */
static uint8_t *make_blocks(enum fb_dtype t, size_t blocks)
{
    size_t bytes = wtype_block_bytes(t);
    uint8_t *raw = malloc(bytes * blocks);
    if (!raw)
        return NULL;
    random_bytes(raw, bytes * blocks, seed_base + wtype_traits(t)->code);
    int off[2], n = quant_block_halves(t, off);
    for (size_t b = 0; b < blocks; b++)
        for (int k = 0; k < n; k++) {
            uint8_t *p = raw + b * bytes + off[k];
            uint16_t h = (uint16_t)(p[0] | p[1] << 8);
            if ((h & 0x7C00) == 0x7C00)
                h &= (uint16_t)~0x0400;
            p[0] = (uint8_t)h, p[1] = (uint8_t)(h >> 8);
        }
    return raw;
}

static void hex_of(const void *p, size_t n, char hex[65])
{
    struct sha256 s;
    sha256_init(&s);
    sha256_update(&s, p, n);
    sha256_final_hex(&s, hex);
}

/* The first block's reference values ("%08x" words) against got. */
static void check_first(const char *words, const float *got, int n, const char *name)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        unsigned long want = strtoul(words, (char **)&words, 16);
        uint32_t u;
        memcpy(&u, &got[i], 4);
        if (u != want && bad++ == 0)
            fprintf(stderr, "%s: element %d is %08x, gguf-py's %08lx\n", name, i, (unsigned)u, want);
    }
    CHECK(bad == 0);
}

/* "decode NAME BLOCKS IN_SHA OUT_SHA" and the "first NAME ..." line after it. */
static void check_decode(const char *line, const char *first, int *types)
{
    char name[16], in_sha[65], out_sha[65], got_sha[65];
    size_t blocks;
    enum fb_dtype t;
    CHECK(sscanf(line, "decode %15s %zu %64s %64s", name, &blocks, in_sha, out_sha) == 4);
    CHECK(wtype_parse(name, &t) == 0 && wtype_traits(t)->quantized);
    size_t elems = blocks * wtype_block_elems(t);
    uint8_t *raw = make_blocks(t, blocks);
    float *out = malloc(elems * sizeof *out);
    CHECK(raw && out);
    if (raw && out) {
        hex_of(raw, blocks * wtype_block_bytes(t), got_sha);
        CHECK_STR(got_sha, in_sha); /* the same inputs as the script's */
        dtype_to_f32(out, raw, t, elems);
        hex_of(out, elems * sizeof *out, got_sha);
        if (strcmp(got_sha, out_sha))
            fprintf(stderr, "%s: the %zu decoded values differ from gguf-py's\n", name, elems);
        CHECK_STR(got_sha, out_sha);
        size_t skip = strlen("first ") + strlen(name) + 1;
        CHECK(strncmp(first, "first ", 6) == 0 && strlen(first) > skip);
        check_first(first + skip, out, (int)wtype_block_elems(t), name);
        (*types)++;
    }
    free(raw);
    free(out);
}

/* The script's activations: 24-bit integers times 2^-(8 + r % 24), every
 * 16th block zeros; with constant_blocks (the weights encoded), every 16th
 * from the 8th on its first value repeated. */
static void make_activations(float *x, size_t blocks, uint64_t seed, bool constant_blocks)
{
    uint64_t state = seed;
    for (size_t b = 0; b < blocks; b++) {
        int e = 8 + (int)(splitmix64(&state) % 24);
        for (int j = 0; j < 32; j++) {
            int64_t v = (int64_t)(splitmix64(&state) >> 40) - (1 << 23);
            x[b * 32 + j] = b % 16 == 15 ? 0.0f : (float)v / (float)(1ull << e);
        }
        for (int j = 1; j < 32 && constant_blocks && b % 16 == 7; j++)
            x[b * 32 + j] = x[b * 32];
    }
}

/* The hex of n bytes at p. */
static void hex_bytes(const void *p, size_t n, char *hex)
{
    for (size_t i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((const uint8_t *)p)[i]);
}

/* "quantize q8_0 BLOCKS IN_SHA OUT_SHA" and "qfirst q8_0 HEX" (the first two blocks' bytes). */
static void check_quantize(const char *line, const char *first)
{
    char in_sha[65], out_sha[65], got_sha[65];
    size_t blocks;
    CHECK(sscanf(line, "quantize q8_0 %zu %64s %64s", &blocks, in_sha, out_sha) == 3);
    float *x = malloc(blocks * 32 * sizeof *x);
    struct q8_0_block *y = malloc(blocks * sizeof *y);
    CHECK(x && y);
    if (x && y) {
        make_activations(x, blocks, seed_base + 1000, false);
        hex_of(x, blocks * 32 * sizeof *x, got_sha);
        CHECK_STR(got_sha, in_sha);
        quant_q8_0(y, x, blocks * 32);
        hex_of(y, blocks * sizeof *y, got_sha);
        CHECK_STR(got_sha, out_sha);
        char hex[2 * 2 * sizeof *y + 1];
        hex_bytes(y, 2 * sizeof *y, hex);
        CHECK(strncmp(first, "qfirst q8_0 ", 12) == 0);
        CHECK(strncmp(first + 12, hex, strlen(hex)) == 0);
    }
    free(x);
    free(y);
}

/* "encode NAME BLOCKS IN_SHA OUT_SHA" and "efirst NAME HEX" (its first
 * eight blocks): the weights encoded by quant_encode as gguf-py's quantize. */
static void check_encode(const char *line, const char *first, int *types)
{
    char name[16], in_sha[65], out_sha[65], got_sha[65];
    size_t blocks;
    enum fb_dtype t;
    CHECK(sscanf(line, "encode %15s %zu %64s %64s", name, &blocks, in_sha, out_sha) == 4);
    CHECK(wtype_parse(name, &t) == 0 && quant_encode_supports(t));
    size_t bytes = blocks * wtype_block_bytes(t);
    float *x = malloc(blocks * 32 * sizeof *x);
    uint8_t *y = malloc(bytes);
    char *hex = malloc(2 * 8 * wtype_block_bytes(t) + 1);
    CHECK(x && y && hex);
    if (x && y && hex) {
        make_activations(x, blocks, seed_base + 2000 + wtype_traits(t)->code, true);
        hex_of(x, blocks * 32 * sizeof *x, got_sha);
        CHECK_STR(got_sha, in_sha);
        CHECK(quant_encode(y, t, x, blocks * 32) == 0);
        hex_of(y, bytes, got_sha);
        if (strcmp(got_sha, out_sha))
            fprintf(stderr, "%s: the %zu encoded blocks differ from gguf-py's\n", name, blocks);
        CHECK_STR(got_sha, out_sha);
        hex_bytes(y, 8 * wtype_block_bytes(t), hex);
        size_t skip = strlen("efirst ") + strlen(name) + 1;
        CHECK(strncmp(first, "efirst ", 7) == 0 && strncmp(first + skip, hex, strlen(hex)) == 0);
        (*types)++;
    }
    free(x);
    free(y);
    free(hex);
}

/* What quant_encode refuses: a type without an encoder, a non-finite element. */
static void check_encode_refusals(void)
{
    float x[32] = {1.0f};
    uint8_t y[34], before[34];
    memset(y, 0xAB, sizeof y);
    memcpy(before, y, sizeof y);
    CHECK(quant_encode(y, DTYPE_Q4_K, x, 32) == QUANT_ENCODE_NO_ENCODER);
    CHECK(quant_encode(y, DTYPE_F16, x, 32) == QUANT_ENCODE_NO_ENCODER);
    x[17] = NAN;
    CHECK(quant_encode(y, DTYPE_Q8_0, x, 32) == QUANT_ENCODE_NOT_FINITE);
    x[17] = INFINITY;
    CHECK(quant_encode(y, DTYPE_Q4_1, x, 32) == QUANT_ENCODE_NOT_FINITE);
    CHECK(memcmp(y, before, sizeof y) == 0);
}

int main(void)
{
    FILE *f = fopen(REF_FILE, "r");
    CHECK(f != NULL);
    if (!f)
        return check_report("test_quant_decode");
    static char line[4096], next[4096];
    int types = 0, quantized = 0, encoded = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long seed;
        if (sscanf(line, "seed %llu", &seed) == 1)
            seed_base = seed;
        bool decode = !strncmp(line, "decode ", 7), quant = !strncmp(line, "quantize ", 9);
        bool encode = !strncmp(line, "encode ", 7);
        if (!decode && !quant && !encode)
            continue;
        CHECK(fgets(next, sizeof next, f) != NULL);
        if (decode)
            check_decode(line, next, &types);
        else if (encode)
            check_encode(line, next, &encoded);
        else
            check_quantize(line, next), quantized++;
    }
    fclose(f);
    CHECK(seed_base != 0);
    CHECK(types == DTYPE_COUNT - WTYPE_FLOAT_COUNT); /* every block format */
    CHECK(quantized == 1);
    CHECK(encoded == 5); /* q4_0, q4_1, q5_0, q5_1, q8_0 */
    check_encode_refusals();
    printf("quant decode: %d types compared with gguf-py's decode, bit for bit; q8_0 quantize with its quantize; "
           "%d types encoded as its quantize encodes them\n", types, encoded);
    return check_report("test_quant_decode");
}
