/* The sim backend (backend.h's backend_sim): a strict simulated device,
 * to check without a GPU that the engine keeps a device's rules. It
 * computes with the CPU kernels (its own instance, cpu_kernels.h), so
 * its results are the cpu backend's bits on the same inputs, and breaks
 * every rule-breaking host the same way each time (never by timing):
 *
 *   memory   BUF_DEVICE buffers are allocations the host never gets an
 *            address of (host_ptr is NULL); BUF_PINNED ones the host
 *            reads and writes through host_ptr. Both start filled with
 *            SIM_POISON_BYTE (a device's memory starts undefined: f32
 *            NaN, int32 -1) and have SIM_GUARD_BYTES of guard zone before
 *            and at least as many after. Registered host memory is the
 *            caller's: copies and ops reach it in place, unguarded.
 *   queue    every copy and op is a command on an in-order ring of
 *            SIM_QUEUE_COMMANDS, its arguments copied in, run by a queue
 *            thread only while the host waits: event_wait (up to the
 *            event), sync and buf_free (everything; freeing memory waits
 *            for the device, as cudaFree does), and a full ring (its
 *            older half). So an upload reads its source when it runs: a
 *            source the host rewrites before the wait uploads the new
 *            bytes. A download fills its destination with SIM_POISON_BYTE
 *            when it is enqueued: a result read before the wait is NaN.
 *   checks   after each command, the guard zones of the buffer it
 *            wrote; at each wait, every buffer's (a host that wrote past
 *            a pinned buffer); at buf_free, the freed one's. ffn_ids' ids and move_rows'
 *            rows are checked when they run. A broken zone or a bad id
 *            fails the backend with the command, the buffer's size and
 *            the offset named.
 *   counts   struct backend_counts counts what ran: a command still on
 *            the ring is not counted yet; syncs counts the waits made.
 *   timing   event_elapsed answers only for events the host has waited
 *            for (event_wait on it or a later one, or sync; not a ring
 *            that ran because it was full, nor buf_free): before that it
 *            has not run. Its time is the queue thread's busy clock (the
 *            monotonic time it spent running commands, sim_delay_us's
 *            sleeps included) when the event's mark ran, so two events
 *            measure the work between them, e.g. an upload's memcpy, not
 *            the host's time before it waited. It is no wait: it runs
 *            nothing and counts nothing.
 *   faults   fb_settings' sim_fail_at (the Nth copy or launch, counted
 *            from 1 in the order enqueued, fails when it comes to run)
 *            and sim_delay_us (the queue thread sleeps this long before
 *            each copy and launch): what a device fault or a slow device
 *            does to the host. 0: off.
 *
 * A failure found on the queue (an injected fault, a broken guard zone,
 * a bad id) is reported by the next wait; the commands after it are
 * dropped and every later call fails with its reason. Threading: one host
 * thread calls an instance at a time; the queue thread runs only while
 * that thread is blocked in a wait, so the two never touch memory at the
 * same time. */
#ifndef FLASHBED_ENGINE_BACKEND_SIM_H
#define FLASHBED_ENGINE_BACKEND_SIM_H

enum {
    SIM_QUEUE_COMMANDS = 1024, /* the ring: a forward pass of a small model fits it between waits */
    SIM_GUARD_BYTES = 64,      /* guard zone before each buffer (after: 64 to 127, to a 64-byte end) */
    SIM_POISON_BYTE = 0xff,    /* fresh memory and a download's destination until it runs */
};

#endif
