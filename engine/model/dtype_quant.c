/* The quantized blocks' decode (dtype_quant.h): per type, the block's
 * integers (the layout's one reading) and then ggml's dequantize_row_*
 * formula with the f32 operations in its order. */
#include "engine/model/dtype_quant.h"

static uint32_t u32_at(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v; /* the files are little-endian, as the hosts built for */
}

/* ---- the integers ---- */

/* 32 nibbles (element j the low nibble of byte j, j + 16 its high one),
 * each with its fifth bit from qh (NULL: none), minus offset. */
static void ints_32(const uint8_t *nib, const uint8_t *qh, int offset, int8_t q[32])
{
    uint32_t h = qh ? u32_at(qh) : 0;
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(((nib[j] & 0xF) | (int)((h >> j) & 1) << 4) - offset);
        q[j + 16] = (int8_t)(((nib[j] >> 4) | (int)((h >> (j + 16)) & 1) << 4) - offset);
    }
}

void quant_ints_q4_0(const uint8_t *block, int8_t q[32]) { ints_32(block + 2, NULL, 8, q); }
void quant_ints_q4_1(const uint8_t *block, int8_t q[32]) { ints_32(block + 4, NULL, 0, q); }
void quant_ints_q5_0(const uint8_t *block, int8_t q[32]) { ints_32(block + 6, block + 2, 16, q); }
void quant_ints_q5_1(const uint8_t *block, int8_t q[32]) { ints_32(block + 8, block + 4, 0, q); }

/* The 2-bit fields of the K-quants: two halves of 128 elements, each
 * half's 32 bytes holding four 32-element shifts. Written as ggml writes
 * them (loops over whole runs, no per-element index arithmetic), which
 * compilers vectorize. */
static void bits2(const uint8_t *qs, int8_t q[256])
{
    for (int half = 0; half < 2; half++, qs += 32)
        for (int shift = 0; shift < 4; shift++, q += 32)
            for (int l = 0; l < 32; l++)
                q[l] = (int8_t)((qs[l] >> (2 * shift)) & 3);
}

void quant_ints_q2_k(const uint8_t *block, int8_t q[256]) { bits2(block + 16, q); }

void quant_ints_q3_k(const uint8_t *block, int8_t q[256])
{
    const uint8_t *hmask = block;
    bits2(block + 32, q);
    for (int bit = 0; bit < 8; bit++, q += 32) /* element 32 bit + l: bit `bit` of hmask[l] */
        for (int l = 0; l < 32; l++)
            q[l] = (int8_t)(q[l] - ((hmask[l] >> bit) & 1 ? 0 : 4));
}

/* q4_k and q5_k: 64 elements per 32 bytes of nibbles (low nibbles the
 * first 32, high the next); hbits (q5_k's fifth bits: bit j of byte l for
 * element 32 j + l) NULL for q4_k. */
static void ints_k4(const uint8_t *hbits, const uint8_t *qs, int8_t q[256])
{
    for (int c = 0; c < 4; c++, qs += 32)
        for (int l = 0; l < 32; l++) {
            q[64 * c + l] = (int8_t)(qs[l] & 0xF);
            q[64 * c + 32 + l] = (int8_t)(qs[l] >> 4);
        }
    for (int j = 0; hbits && j < 8; j++)
        for (int l = 0; l < 32; l++)
            q[32 * j + l] = (int8_t)(q[32 * j + l] + ((hbits[l] >> j) & 1 ? 16 : 0));
}

void quant_ints_q4_k(const uint8_t *block, int8_t q[256]) { ints_k4(NULL, block + 16, q); }
void quant_ints_q5_k(const uint8_t *block, int8_t q[256]) { ints_k4(block + 16, block + 48, q); }

/* q6_k: per half of 128, 64 bytes of low nibbles and 32 of 2-bit highs;
 * element 32 k + l of the half takes nibble k / 2 of byte 32 (k % 2) + l
 * and bits 2 k of high byte l. */
void quant_ints_q6_k(const uint8_t *block, int8_t q[256])
{
    const uint8_t *ql = block, *qh = block + 128;
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, q += 128)
        for (int l = 0; l < 32; l++) {
            q[l] = (int8_t)(((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32);
            q[l + 32] = (int8_t)(((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32);
            q[l + 64] = (int8_t)(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
            q[l + 96] = (int8_t)(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
        }
}

void quant_q3k_scales(const uint8_t *s, int out[16])
{
    for (int j = 0; j < 16; j++) {
        int low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
        int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (low | high << 4) - 32;
    }
}

/* ---- the decode ---- */

/* The 32-element types: w = d * q (+ m when the block has a min). */
static void decode_32(float *out, const uint8_t *b, size_t n_blocks, size_t bytes, bool has_min,
                      void (*ints)(const uint8_t *, int8_t *))
{
    int8_t q[32];
    for (size_t i = 0; i < n_blocks; i++, b += bytes, out += 32) {
        float d = quant_half_at(b);
        ints(b, q);
        if (has_min) {
            float m = quant_half_at(b + 2);
            for (int j = 0; j < 32; j++)
                out[j] = d * (float)q[j] + m;
        } else {
            for (int j = 0; j < 32; j++)
                out[j] = d * (float)q[j];
        }
    }
}

void quant_decode_q4_0(float *out, const void *blocks, size_t n) { decode_32(out, blocks, n, 18, false, quant_ints_q4_0); }
void quant_decode_q4_1(float *out, const void *blocks, size_t n) { decode_32(out, blocks, n, 20, true, quant_ints_q4_1); }
void quant_decode_q5_0(float *out, const void *blocks, size_t n) { decode_32(out, blocks, n, 22, false, quant_ints_q5_0); }
void quant_decode_q5_1(float *out, const void *blocks, size_t n) { decode_32(out, blocks, n, 24, true, quant_ints_q5_1); }

void quant_decode_q8_0(float *out, const void *blocks, size_t n_blocks)
{
    const uint8_t *b = blocks;
    for (size_t i = 0; i < n_blocks; i++, b += 34, out += 32) {
        float d = quant_half_at(b);
        for (int j = 0; j < 32; j++)
            out[j] = (float)(int8_t)b[2 + j] * d;
    }
}

void quant_decode_q2_k(float *out, const void *blocks, size_t n_blocks)
{
    const uint8_t *b = blocks;
    int8_t q[256];
    for (size_t i = 0; i < n_blocks; i++, b += 84, out += 256) {
        float d = quant_half_at(b + 80), dmin = quant_half_at(b + 82);
        quant_ints_q2_k(b, q);
        for (int e = 0; e < 256; e++) {
            float dl = d * (float)(b[e / 16] & 0xF), ml = dmin * (float)(b[e / 16] >> 4);
            out[e] = dl * (float)q[e] - ml;
        }
    }
}

void quant_decode_q3_k(float *out, const void *blocks, size_t n_blocks)
{
    const uint8_t *b = blocks;
    int8_t q[256];
    int sc[16];
    for (size_t i = 0; i < n_blocks; i++, b += 110, out += 256) {
        float d = quant_half_at(b + 108);
        quant_ints_q3_k(b, q);
        quant_q3k_scales(b + 96, sc);
        for (int e = 0; e < 256; e++)
            out[e] = (d * (float)sc[e / 16]) * (float)q[e];
    }
}

/* q4_k and q5_k: w = (d * sc) * q - dmin * m, a scale and min per 32. */
static void decode_k4(float *out, const uint8_t *b, const int8_t *q)
{
    float d = quant_half_at(b), dmin = quant_half_at(b + 2);
    for (int sub = 0; sub < 8; sub++) {
        int sc, m;
        quant_k4_scale_min(b + 4, sub, &sc, &m);
        float dl = d * (float)sc, ml = dmin * (float)m;
        for (int l = 0; l < 32; l++)
            out[sub * 32 + l] = dl * (float)q[sub * 32 + l] - ml;
    }
}

void quant_decode_q4_k(float *out, const void *blocks, size_t n_blocks)
{
    const uint8_t *b = blocks;
    int8_t q[256];
    for (size_t i = 0; i < n_blocks; i++, b += 144, out += 256) {
        quant_ints_q4_k(b, q);
        decode_k4(out, b, q);
    }
}

void quant_decode_q5_k(float *out, const void *blocks, size_t n_blocks)
{
    const uint8_t *b = blocks;
    int8_t q[256];
    for (size_t i = 0; i < n_blocks; i++, b += 176, out += 256) {
        quant_ints_q5_k(b, q);
        decode_k4(out, b, q);
    }
}

void quant_decode_q6_k(float *out, const void *blocks, size_t n_blocks)
{
    const uint8_t *b = blocks;
    int8_t q[256];
    for (size_t i = 0; i < n_blocks; i++, b += 210, out += 256) {
        const int8_t *sc = (const int8_t *)(b + 192);
        float d = quant_half_at(b + 208);
        quant_ints_q6_k(b, q);
        for (int e = 0; e < 256; e++)
            out[e] = (d * (float)sc[e / 16]) * (float)q[e];
    }
}

int quant_block_halves(enum fb_dtype t, int off[2])
{
    switch (t) {
    case DTYPE_F32:
    case DTYPE_F16:
    case DTYPE_BF16:
        return 0;
    case DTYPE_Q4_0:
    case DTYPE_Q5_0:
    case DTYPE_Q8_0:
        off[0] = 0;
        return 1;
    case DTYPE_Q4_1:
    case DTYPE_Q5_1:
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
        off[0] = 0, off[1] = 2;
        return 2;
    case DTYPE_Q2_K:
        off[0] = 80, off[1] = 82;
        return 2;
    case DTYPE_Q3_K:
        off[0] = 108;
        return 1;
    case DTYPE_Q6_K:
        off[0] = 208;
        return 1;
    }
    return 0;
}
