/* Size and offset arithmetic that cannot wrap: the sums and products of
 * numbers read from files (tensor offsets, shape dimensions, header fields)
 * before they index a buffer. Each helper returns 0 with the result in
 * *out, or -1 (leaving *out alone) when the exact result does not fit.
 * Pure functions, safe from any thread. */
#ifndef FLASHBED_COMMON_CHECKED_H
#define FLASHBED_COMMON_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline int checked_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a > UINT64_MAX - b)
        return -1;
    *out = a + b;
    return 0;
}

static inline int checked_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

/* a * b * c, as shapes multiply (rows x columns x element size). */
static inline int checked_mul3_u64(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t ab;
    return checked_mul_u64(a, b, &ab) || checked_mul_u64(ab, c, out) ? -1 : 0;
}

static inline int checked_add_size(size_t a, size_t b, size_t *out)
{
    if (a > SIZE_MAX - b)
        return -1;
    *out = a + b;
    return 0;
}

static inline int checked_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

/* Whether [offset, offset + len) lies inside [0, limit): "offset + len <=
 * limit" written so that it cannot wrap for any offset and len. */
static inline bool range_within(uint64_t offset, uint64_t len, uint64_t limit)
{
    return len <= limit && offset <= limit - len;
}

#endif
