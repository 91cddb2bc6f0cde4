/* DRAM read bandwidth, measured by a vectorized multi-threaded read loop:
 * the ceiling for memory-bound decode at batch 1, against which the
 * engine's achieved weight bandwidth is reported. */
#ifndef FLASHBED_ENGINE_MEMBW_H
#define FLASHBED_ENGINE_MEMBW_H

#include <stddef.h>

/* Bytes per second reading a buffer of `bytes` (far larger than the caches)
 * with `threads` threads; the best of `passes` timed passes after one
 * warm-up. 0 when the buffer cannot be allocated. */
double dram_read_bandwidth(int threads, size_t bytes, int passes);

#endif
