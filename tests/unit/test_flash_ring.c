/* The flash FFN's pinned staging ring (engine/ffn/flash_ring.h) on the
 * strict sim backend:
 *   - rows placed for consecutive destinations become one upload run, a
 *     gap or another buffer starts a new one; biases go with their rows;
 *   - send uploads exactly the rows and biases placed (sim's counts), and
 *     the device holds them where they were sent once synced;
 *   - the ring is pinned in place (register_host), its slots aligned;
 *   - a slot is written only after its previous send completed: ready
 *     waits for it, unless a later event was waited for (covered) or the
 *     backend synced; nothing placed: no send;
 *   - the device time of the sends is taken once, >= 0 after a sync. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/compute/backend.h"
#include "engine/ffn/flash_ring.h"

enum { STRIDE = 4096, SLOT = 4, DEV_ROWS = 16 };

static struct cpu_kernels *ck;

static struct backend *start(void)
{
    const struct fb_settings set = fb_settings_defaults();
    char err[256];
    ck = ck_create(&set, 1, 64, 4, 1, err, sizeof err);
    if (!ck)
        return NULL;
    struct backend_config cfg = {.set = &set, .threads = 1, .max_dim = 64, .max_seq = 4, .max_heads = 1, .host = ck};
    struct backend *b = backend_sim.create(&cfg, err, sizeof err);
    if (!b)
        fprintf(stderr, "sim: %s\n", err);
    return b;
}

/* Places row k (filled with byte k) going to device row dst. */
static void place(struct flash_ring *r, struct dev_buf *rows, struct dev_buf *bias, uint32_t dst, int k)
{
    uint8_t *p = fring_place(r, (struct dev_ref){rows, (size_t)dst * STRIDE},
                             (struct dev_ref){bias, (size_t)dst * sizeof(float)}, (float)k);
    memset(p, k, STRIDE);
}

static bool device_row_is(struct backend *b, struct dev_buf *rows, struct dev_buf *bias, uint32_t dst, int k)
{
    static uint8_t got[STRIDE];
    float f = -1;
    if (backend_sim.download(b, got, (struct dev_ref){rows, (size_t)dst * STRIDE}, STRIDE) ||
        backend_sim.download(b, &f, (struct dev_ref){bias, (size_t)dst * sizeof(float)}, sizeof f) ||
        backend_sim.sync(b))
        return false;
    for (int i = 0; i < STRIDE; i++)
        if (got[i] != (uint8_t)k)
            return false;
    return f == (float)k;
}

static void test_runs_and_waits(struct backend *b)
{
    struct flash_ring r;
    struct dev_buf *rows, *bias, *other;
    char err[256];
    CHECK(backend_sim.alloc(b, DEV_ROWS * STRIDE, BUF_DEVICE, &rows) == 0);
    CHECK(backend_sim.alloc(b, DEV_ROWS * sizeof(float), BUF_DEVICE, &bias) == 0);
    CHECK(backend_sim.alloc(b, DEV_ROWS * STRIDE, BUF_DEVICE, &other) == 0);
    CHECK(fring_init(&r, &backend_sim, b, SLOT, STRIDE, err, sizeof err) == 0);
    CHECK(r.pinned);
    for (int k = 0; k < FLASH_RING_SLOTS; k++)
        CHECK((uintptr_t)r.slot[k].mem.base % STRIDE == 0);
    struct backend_counts c0, c1;
    backend_sim.counts(b, &c0);
    CHECK(fring_send(&r) == 0 && r.sends == 0); /* nothing placed */
    place(&r, rows, bias, 5, 1);
    place(&r, rows, bias, 6, 2);  /* continues: one run */
    place(&r, rows, bias, 9, 3);  /* a gap: a second run */
    CHECK_U64(r.n_runs, 2);
    CHECK_U64(fring_room(&r), 1);
    CHECK(fring_send(&r) == 0);
    CHECK(fring_ready(&r) == 0 && r.waits == 0); /* the second slot was never sent */
    place(&r, rows, bias, 0, 4);
    place(&r, other, NULL, 1, 5); /* another buffer, no bias: a third run */
    CHECK(fring_send(&r) == 0);
    CHECK(fring_ready(&r) == 0 && r.waits == 1); /* back to the first slot: its send waited for */
    place(&r, rows, bias, 10, 6);
    CHECK(fring_send(&r) == 0);
    uint64_t ev;
    CHECK(backend_sim.event_record(b, &ev) == 0 && backend_sim.event_wait(b, ev) == 0);
    fring_covered(&r, ev);
    CHECK(fring_ready(&r) == 0 && r.waits == 1); /* covered by the later wait */
    place(&r, rows, bias, 11, 7);
    CHECK(fring_send(&r) == 0);
    fring_synced(&r);
    CHECK(fring_ready(&r) == 0 && r.waits == 1);
    CHECK_U64(r.sends, 4);
    CHECK_U64(r.runs_sent, 6);
    CHECK(backend_sim.sync(b) == 0); /* sim counts what ran */
    backend_sim.counts(b, &c1);
    uint64_t up = 7 * STRIDE + 6 * sizeof(float);
    CHECK_U64(c1.bytes_up - c0.bytes_up, up);
    CHECK_U64(r.bytes_up, up);
    CHECK_U64(c1.copies - c0.copies, 6 + 5); /* a rows upload per run, a biases upload for five */
    CHECK(device_row_is(b, rows, bias, 5, 1) && device_row_is(b, rows, bias, 6, 2));
    CHECK(device_row_is(b, rows, bias, 9, 3) && device_row_is(b, rows, bias, 0, 4));
    CHECK(device_row_is(b, rows, bias, 10, 6) && device_row_is(b, rows, bias, 11, 7));
    double ms = -1, again = -1;
    CHECK(fring_take_ms(&r, &ms) == 0 && isfinite(ms) && ms >= 0);
    CHECK(fring_take_ms(&r, &again) == 0 && again == 0); /* taken once */
    fring_free(&r);
    backend_sim.buf_free(b, rows);
    backend_sim.buf_free(b, bias);
    backend_sim.buf_free(b, other);
}

int main(void)
{
    struct backend *b = start();
    CHECK(b != NULL);
    if (b) {
        test_runs_and_waits(b);
        backend_sim.destroy(b);
    }
    if (ck)
        ck_destroy(ck);
    return check_report("test_flash_ring");
}
