/* calibrate's fixed costs (sim/hw_profile.h: struct hw_fixed): what the
 * engine pays beside its bytes, measured with the engine's own parts.
 *   reads  through the engine's reader (io/flash_reader.h) on a file of
 *          the flash device swept: per I/O engine, one thread at queue
 *          depth 1, the time of a read over two sizes (4 KiB, 64 KiB;
 *          intercept: the fixed cost per read, slope: its byte rate); the
 *          time a one-read batch takes beyond its read (batch_s); per
 *          thread count, a batch of one read per thread against the time
 *          per read-per-thread of a long batch (the tail)
 *   team   the engine's thread team (engine/compute/threadpool.h) of the
 *          compute threads: an empty job back to back (hot) and after the
 *          team slept (cold)
 * Each term's source says how it was measured. Library code: returns
 * errors, prints nothing; single-threaded caller. */
#ifndef FLASHBED_HARNESS_CALIBRATE_FIXED_H
#define FLASHBED_HARNESS_CALIBRATE_FIXED_H

#include <stdbool.h>
#include <stddef.h>

#include "common/settings.h"
#include "sim/hw_profile.h"

/* The read terms on `path` (direct I/O; `io_threads` the most reader
 * threads the tail is measured at). An engine that cannot open the file
 * (io_uring refused by the kernel, say) gets 0 and its reason in the
 * source. 0, or -1 with err when psync fails (no term is written then). */
int calibrate_measure_reads(struct hw_fixed *f, const char *path, unsigned io_threads, bool quick, char *err,
                            size_t errlen);

/* The read terms when no file was read (calibrate --sweep without
 * --file): 0, the source saying so. */
void calibrate_reads_unmeasured(struct hw_fixed *f, const char *why);

/* The team terms for `threads` compute threads under set's
 * min_parallel_work, and the token term. 0, or -1 with err when the team
 * cannot start. */
int calibrate_measure_team(struct hw_fixed *f, const struct fb_settings *set, unsigned threads, bool quick,
                           char *err, size_t errlen);

#endif
