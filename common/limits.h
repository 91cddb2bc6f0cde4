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

/* Where flashbed's model folder starts every FFN bundle on flash, so that
 * one direct-I/O read takes a run of bundles (512-byte and 4 KiB devices
 * alike): a bundle's stride is its bytes rounded up to this. The engine
 * stores and caches rows at that stride; replay's --row-stride aligned
 * counts with it. */
#define FB_BUNDLE_ALIGN 4096u

#endif
