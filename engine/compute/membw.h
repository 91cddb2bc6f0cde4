/* DRAM read bandwidth, measured by a vectorized multi-threaded read loop:
 * the ceiling for memory-bound decode at batch 1, against which the
 * engine's achieved weight bandwidth is reported. */
#ifndef FLASHBED_ENGINE_MEMBW_H
#define FLASHBED_ENGINE_MEMBW_H

#include <stddef.h>

/* Worker `worker` of `workers` reads its contiguous share of buf (`bytes`,
 * 32-byte aligned) and returns a sum of what it read, which the caller
 * must use (store it), so the loads cannot be optimized away. The
 * CPU kernels' ck_read_pass runs this on its own thread team. */
float membw_read_share(const void *buf, size_t bytes, int worker, int workers);

#endif
