/* Limits every command and library layer shares, so that a value one
 * command accepts is accepted by all (option tables, the sweep, the
 * flash reader). */
#ifndef FLASHBED_COMMON_LIMITS_H
#define FLASHBED_COMMON_LIMITS_H

/* Threads of any kind: compute threads, flash reader threads, sweep threads. */
#define FB_MAX_THREADS 1024

/* Reads in flight per thread (io_uring). */
#define FB_MAX_IODEPTH 4096

/* A measured or discarded time (sweep --runtime, --ramp): a week. Bounded
 * so that it converts to whole nanoseconds (uint64_t) without overflow. */
#define FB_MAX_SECONDS (7 * 24 * 3600)

#endif
