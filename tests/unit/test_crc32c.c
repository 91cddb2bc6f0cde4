/* CRC-32C: the standard check value, RFC 3720's test vectors (B.4), and the
 * sliced implementation against a bit-at-a-time one written from the
 * definition, one-shot and in pieces split at every point, from every
 * alignment. */
#include <stdint.h>
#include <string.h>

#include "check.h"

#include "common/crc32c.h"
#include "common/rng.h"

/* The definition: reflected polynomial 0x82F63B78, one bit at a time. */
static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

static void vectors(void)
{
    CHECK_U64(crc32c("123456789", 9), 0xE3069283u);
    CHECK_U64(crc32c("", 0), 0);
    uint8_t b[48];
    memset(b, 0, 32);
    CHECK_U64(crc32c(b, 32), 0x8A9136AAu); /* 32 bytes of zeros */
    memset(b, 0xFF, 32);
    CHECK_U64(crc32c(b, 32), 0x62A8AB43u); /* 32 bytes of ones */
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    CHECK_U64(crc32c(b, 32), 0x46DD794Eu); /* 0, 1, ..., 31 */
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    CHECK_U64(crc32c(b, 32), 0x113FDB5Cu); /* 31, 30, ..., 0 */
    /* an iSCSI read command PDU */
    static const uint8_t pdu[48] = {0x01, 0xC0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                    0x14, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18,
                                    0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0};
    CHECK_U64(crc32c(pdu, sizeof pdu), 0xD9963A56u);
}

static void against_definition(void)
{
    enum { N = 300 };
    uint8_t buf[N + 8];
    struct rng r;
    rng_seed(&r, 7);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rng_below(&r, 256);
    int bad_len = 0, bad_split = 0;
    for (size_t align = 0; align < 8; align++)
        for (size_t n = 0; n <= N; n++) {
            const uint8_t *p = buf + align;
            uint32_t want = crc_bitwise(p, n);
            bad_len += crc32c(p, n) != want;
            for (size_t cut = 0; cut <= n; cut += align + 1)
                bad_split += crc32c_update(crc32c(p, cut), p + cut, n - cut) != want;
        }
    CHECK_U64(bad_len, 0);
    CHECK_U64(bad_split, 0);
    /* three pieces, the middle one empty, as a writer feeding fields would */
    uint32_t c = crc32c_update(crc32c_update(crc32c("1234", 4), "", 0), "56789", 5);
    CHECK_U64(c, 0xE3069283u);
}

/* Every single flipped bit of a message changes its CRC. */
static void single_flips(void)
{
    uint8_t m[64];
    for (int i = 0; i < 64; i++)
        m[i] = (uint8_t)(i * 37 + 11);
    uint32_t base = crc32c(m, sizeof m);
    int missed = 0;
    for (int bit = 0; bit < 64 * 8; bit++) {
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        missed += crc32c(m, sizeof m) == base;
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    CHECK_U64(missed, 0);
}

/* The CPU's instruction (where crc32c_update uses it) and the tables agree
 * at every length and alignment, in one piece and in parts. */
static void instruction_equals_tables(void)
{
    static uint8_t buf[4096 + 16];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len < 300; len += 1 + len / 8)
            CHECK(crc32c_update(7, buf + off, len) == crc32c_update_portable(7, buf + off, len));
    for (size_t len = 0; len < 200; len += 1 + len / 5) {
        const void *const bufs[3] = {buf + 1, buf + 700, buf + 2049};
        uint32_t x3[3];
        crc32c_x3(bufs, len, x3);
        for (int k = 0; k < 3; k++)
            CHECK(x3[k] == crc32c_update_portable(0, bufs[k], len));
    }
    uint32_t parts = crc32c_update(crc32c_update(0, buf, 1001), buf + 1001, 4096 - 1001);
    CHECK(parts == crc32c_update_portable(0, buf, 4096));
}

int main(void)
{
    vectors();
    instruction_equals_tables();
    against_definition();
    single_flips();
    return check_report("test_crc32c");
}
