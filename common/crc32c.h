/* CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and
 * final XOR 0xFFFFFFFF, as in iSCSI, ext4 and SSE4.2's crc32), to detect
 * damage in files flashbed writes (the trace format's checksums). It
 * catches every single-bit error and every burst of up to 32 bits; it is
 * not a cryptographic hash. Portable software (slicing by 8 bytes), or
 * SSE4.2's crc32 instruction where the CPU has it (5x faster).
 *
 * Incremental use: crc = 0, then crc = crc32c_update(crc, part, len) for
 * each part in order; the result equals crc32c() of the parts joined.
 * crc32c("123456789") is 0xE3069283. Pure functions: thread-safe (the
 * tables are built once, under pthread_once). */
#ifndef FLASHBED_COMMON_CRC32C_H
#define FLASHBED_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len);
/* crc32c() of three buffers of len bytes each, computed side by side
 * (three times one's rate with the SSE4.2 instruction). */
void crc32c_x3(const void *const bufs[3], size_t len, uint32_t out[3]);

/* The same by the tables alone, whatever the CPU: what tests compare the
 * SSE4.2 instruction's results with. */
uint32_t crc32c_update_portable(uint32_t crc, const void *data, size_t len);

static inline uint32_t crc32c(const void *data, size_t len)
{
    return crc32c_update(0, data, len);
}

#endif
