/* SHA-256 (FIPS 180-4), to tie a result to the exact bytes of an input
 * file: the hashes in shared/data/MANIFEST.md are SHA-256, so a recorded
 * hash can be checked against them by eye. Not constant-time; not for
 * secrets. Returns 0, or -1 with the reason (naming the file) in err. */
#ifndef FLASHBED_COMMON_SHA256_H
#define FLASHBED_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t block[64];
    size_t used;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
/* The digest as 64 lowercase hex digits and a NUL. */
void sha256_final_hex(struct sha256 *s, char hex[65]);

int sha256_file_hex(const char *path, char hex[65], char *err, size_t errlen);

#endif
