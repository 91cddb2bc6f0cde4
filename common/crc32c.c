/* CRC-32C by table lookup, eight bytes per step ("slicing by 8"):
 * table[0][b] is the CRC register after shifting byte b through eight
 * polynomial steps; table[k][b] is the same byte pushed k bytes further,
 * so eight table lookups fold eight input bytes into the register at once.
 * Built at first use from the polynomial, so there is no table to copy.
 * On x86-64 CPUs with SSE4.2 the crc32 instruction computes the same
 * polynomial, 8 bytes per instruction: chosen once at first use (the
 * engine checks every bundle it reads with it, issue 34), the tables kept
 * for other CPUs and tested against it. */
#include "common/crc32c.h"

#include <pthread.h>

#define CRC32C_POLY 0x82F63B78u /* 0x1EDC6F41 bit-reversed */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int bit = 0; bit < 8; bit++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        table[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++)
            table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

static inline uint32_t step_byte(uint32_t c, uint8_t byte)
{
    return (c >> 8) ^ table[0][(c ^ byte) & 0xff];
}

/* Eight bytes, read little-endian whatever the host's byte order. */
static inline uint32_t step_8(uint32_t c, const uint8_t *p)
{
    uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    return table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
           table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
           table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
}

static uint32_t crc32c_tables(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t c = ~crc; /* undo the previous final XOR: the register itself */
    for (; len >= 8; len -= 8, p += 8)
        c = step_8(c, p);
    for (; len; len--, p++)
        c = step_byte(c, *p);
    return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <string.h>

/* The last len (< 8) bytes into register c. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42_tail(uint32_t c, const uint8_t *p, size_t len)
{
    for (; len; len--, p++)
        c = __builtin_ia32_crc32qi(c, *p);
    return c;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t c = ~crc;
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8); /* x86 is little-endian, as the polynomial's bytes are taken */
        c = __builtin_ia32_crc32di(c, v);
    }
    return ~crc32c_sse42_tail((uint32_t)c, p, len);
}

/* Three buffers of len bytes in one pass: the instruction's latency is
 * three cycles and its throughput one, so three independent chains run
 * in the time of one (the engine checks many bundles of one size). */
__attribute__((target("sse4.2"))) static void crc32c_x3_sse42(const void *const bufs[3], size_t len,
                                                              uint32_t out[3])
{
    const uint8_t *a = bufs[0], *b = bufs[1], *c = bufs[2];
    uint64_t ca = 0xffffffffu, cb = 0xffffffffu, cc = 0xffffffffu;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t va, vb, vc;
        memcpy(&va, a + i, 8);
        memcpy(&vb, b + i, 8);
        memcpy(&vc, c + i, 8);
        ca = __builtin_ia32_crc32di(ca, va);
        cb = __builtin_ia32_crc32di(cb, vb);
        cc = __builtin_ia32_crc32di(cc, vc);
    }
    out[0] = ~crc32c_sse42_tail((uint32_t)ca, a + i, len - i);
    out[1] = ~crc32c_sse42_tail((uint32_t)cb, b + i, len - i);
    out[2] = ~crc32c_sse42_tail((uint32_t)cc, c + i, len - i);
}
#endif

static void crc32c_x3_tables(const void *const bufs[3], size_t len, uint32_t out[3])
{
    for (int k = 0; k < 3; k++)
        out[k] = crc32c_tables(0, bufs[k], len);
}

static uint32_t (*crc_impl)(uint32_t, const void *, size_t) = crc32c_tables;
static void (*crc_x3_impl)(const void *const[3], size_t, uint32_t[3]) = crc32c_x3_tables;

static void choose_impl(void)
{
    build_tables();
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc_impl = crc32c_sse42;
        crc_x3_impl = crc32c_x3_sse42;
    }
#endif
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&table_once, choose_impl);
    return crc_impl(crc, data, len);
}

uint32_t crc32c_update_portable(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&table_once, choose_impl);
    return crc32c_tables(crc, data, len);
}

void crc32c_x3(const void *const bufs[3], size_t len, uint32_t out[3])
{
    pthread_once(&table_once, choose_impl);
    crc_x3_impl(bufs, len, out);
}
