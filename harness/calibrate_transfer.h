/* calibrate --backend B's copy and queue rates (issue 31), measured through
 * the backend interface (engine/compute/backend.h) so that every backend
 * is timed by the same code: upload and download bandwidth from pinned
 * memory (a BUF_PINNED buffer, through host_ptr) and from ordinary
 * malloc'd memory, at the sizes the engine copies, each copy timed by the
 * device (event_elapsed between events around it, as the engine times its
 * uploads); the time per launch of a tiny op when many are queued (the
 * host's clock: enqueueing, not only the device, bounds it); the time of
 * a wait on an empty queue (sync, and event_record + event_wait). Each
 * bandwidth and wait is the median of its samples (a shared machine's
 * rates swing).
 *
 * Returns 0, or -1 with the reason (the backend's error) in err: a
 * failing device fails the measurement, nothing is guessed. Threading:
 * the caller's thread only, as backend.h asks. */
#ifndef FLASHBED_HARNESS_CALIBRATE_TRANSFER_H
#define FLASHBED_HARNESS_CALIBRATE_TRANSFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/compute/backend.h"
#include "sim/hw_profile.h"

/* What to time: copy sizes (ascending, at most HW_MAX_XFER), samples per
 * size and memory kind, tiny launches per round (5 rounds), and waits. */
struct xfer_plan {
    const size_t *sizes;
    size_t n_sizes;
    int samples;  /* timed copy (events around it) + sync per size, direction and memory kind, after one untimed */
    int launches; /* adds of one float queued before one sync, per round */
    int waits;    /* syncs, and event record + waits, on an empty queue */
};

/* What a measurement enqueued and waited for, as struct backend_counts
 * counts it: a backend's counts grow by exactly this. */
struct xfer_tally {
    uint64_t bytes_up, bytes_down, copies, launches, syncs;
};

/* calibrate's plan: 16 KiB, 256 KiB, 4 MiB and 64 MiB (calibrate_transfer.c
 * says why these), fewer samples when quick. */
struct xfer_plan calibrate_xfer_plan(bool quick);

/* Times p on instance b into dev (its transfers, launch_s, sync_s,
 * event_s; name and source are the caller's), what was enqueued into
 * *tally (zeroed first). */
int measure_device_transfers(const struct backend_ops *ops, struct backend *b, const struct xfer_plan *p,
                             struct hw_device *dev, struct xfer_tally *tally, char *err, size_t errlen);

#endif
