/* Facts about the machine a result was measured on. */
#ifndef FLASHBED_COMMON_MACHINE_H
#define FLASHBED_COMMON_MACHINE_H

#include <stdint.h>

struct machine_info {
    char hostname[128];
    char os[256];        /* "Linux 6.1.0 x86_64" */
    char cpu_model[160];
    int logical_cpus;
    uint64_t mem_bytes;
};

void machine_info_get(struct machine_info *m);

/* Compute threads for an option whose 0 means "all CPUs": asked when not 0,
 * else the online CPUs, at most FB_MAX_THREADS (the limit every thread
 * count shares), at least 1. */
int machine_compute_threads(uint64_t asked);

#endif
