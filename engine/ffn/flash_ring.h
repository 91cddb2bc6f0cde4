/* The flash FFN's pinned staging ring on a device whose memory is not the
 * host's (issue 31): rows read from flash land here, then go up to the
 * device in as few copies as their destinations allow.
 *
 *   slots    FLASH_RING_SLOTS slots of slot_rows rows each, aligned for
 *            direct I/O (io/io_buffer.h, huge pages where allowed) and
 *            registered with the backend (register_host: pinned in place,
 *            so the copies run at the device's pinned rate and the reads
 *            land where the copies start). When the backend cannot pin
 *            them, they stay ordinary memory: the same path, slower, and
 *            said so (pinned false, run.json's staging_pinned).
 *   place    a row and its up bias, with the device place each goes to (a
 *            row of the device neuron cache, or of the device staging
 *            area where rows used once are computed); consecutive places
 *            whose destinations are consecutive too become one upload run
 *   send     enqueues the current slot's runs (the rows, then their
 *            biases), records the event the slot is reused after, and
 *            moves to the next slot
 *   ready    before the first row is placed in a slot, waits for its
 *            previous send unless a later event was already waited for
 *            (fring_covered; events are numbered in order, backend.h): so
 *            reads into one slot overlap the copies and compute of the
 *            other, and the wait comes as late as it can
 *
 * The caller fills a slot's rows (flash reads into the addresses place
 * returns) and completes them before send. Timing: each send is
 * bracketed by two events; fring_take_ms sums the device time of the
 * sends whose events are complete (the backend's event_elapsed), which
 * after a sync is all of them.
 * Every call returns 0, or -1 with the backend's error (ops->error); init
 * returns -1 with err. One host thread. */
#ifndef FLASHBED_ENGINE_FLASH_RING_H
#define FLASHBED_ENGINE_FLASH_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/compute/backend.h"
#include "io/io_buffer.h"

enum { FLASH_RING_SLOTS = 2 };

/* Consecutive rows of a slot going to consecutive device rows. */
struct flash_ring_run {
    uint32_t at, n;            /* slot rows [at, at + n) */
    struct dev_ref rows, bias; /* where the first goes; bias buf NULL: no bias */
};

struct flash_ring_slot {
    struct io_buffer mem;      /* slot_rows * stride bytes */
    struct dev_buf *reg;       /* the registration, NULL when unpinned */
    float *bias;               /* [slot_rows] the rows' up biases */
    uint64_t start, done;      /* the events around its last send */
    bool pending;              /* done not yet waited for */
    bool timed;                /* start..done not yet added to the time taken */
};

struct flash_ring {
    const struct backend_ops *ops;
    struct backend *be;
    uint32_t slot_rows;
    uint64_t stride;
    bool pinned;                /* every slot pinned in place */
    struct flash_ring_slot slot[FLASH_RING_SLOTS];
    int cur;                    /* the slot being filled */
    uint32_t used;              /* its rows placed */
    struct flash_ring_run *runs; /* [slot_rows] the current slot's */
    uint32_t n_runs;
    uint64_t covered;           /* the latest event known complete */
    /* counts, reset by the caller */
    uint64_t sends, runs_sent, waits, bytes_up;
};

/* slot_rows rows of stride bytes (a multiple of the direct-I/O alignment)
 * per slot. 0, or -1 with err; fring_free is safe after. */
int fring_init(struct flash_ring *r, const struct backend_ops *ops, struct backend *be, uint32_t slot_rows,
               uint64_t stride, char *err, size_t errlen);
/* Waits for nothing: the caller syncs the backend first. */
void fring_free(struct flash_ring *r);

/* Rows still free in the current slot. */
uint32_t fring_room(const struct flash_ring *r);
/* Makes the current slot writable (see ready above); the caller calls it
 * before placing rows after a send. */
int fring_ready(struct flash_ring *r);
/* Whether fring_ready has anything to do: the current slot's last send may
 * still be pending (checked per row placed, so no call). */
static inline bool fring_slot_pending(const struct flash_ring *r)
{
    return r->slot[r->cur].pending;
}
/* Every event up to ev is complete (the caller waited for it). */
void fring_covered(struct flash_ring *r, uint64_t ev);
/* Everything enqueued is complete (the caller synced the backend). */
void fring_synced(struct flash_ring *r);
/* The next row of the current slot (fring_room must be > 0, the slot
 * ready): its host address, to be filled before send; it goes to rows
 * (and bias, with the bias value, unless bias.buf is NULL). */
uint8_t *fring_place(struct flash_ring *r, struct dev_ref rows, struct dev_ref bias, float bias_value);
/* Enqueues the current slot's runs and moves on (see above); nothing
 * when no row was placed. */
int fring_send(struct flash_ring *r);
/* The device time (ms) of the completed sends not yet taken: call after
 * the backend synced, or it counts only those already waited for. */
int fring_take_ms(struct flash_ring *r, double *ms);

#endif
