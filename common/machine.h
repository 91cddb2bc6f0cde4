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

#endif
