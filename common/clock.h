/* Monotonic time in nanoseconds and wall-clock timestamps. */
#ifndef FLASHBED_COMMON_CLOCK_H
#define FLASHBED_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Monotonic milliseconds, for per-token cost accounting. */
static inline double now_ms(void)
{
    return (double)now_ns() * 1e-6;
}

#endif
