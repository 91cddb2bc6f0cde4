/* The tests' uniform random numbers: a xorshift32 stream with a fixed
 * seed, one per test program (the state is this file's, per translation
 * unit), so a failure reproduces exactly. Not for statistics. */
#ifndef FLASHBED_TEST_RNG_H
#define FLASHBED_TEST_RNG_H

#include <stdint.h>

static uint32_t test_rng_state = 2463534242u;

/* in [-1, 1) */
static inline float uniform(void)
{
    test_rng_state ^= test_rng_state << 13;
    test_rng_state ^= test_rng_state >> 17;
    test_rng_state ^= test_rng_state << 5;
    return (float)(test_rng_state >> 8) / 8388608.0f - 1.0f;
}

#endif
