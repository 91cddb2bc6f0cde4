/* calibrate's copy and queue rates on a device backend
 * (calibrate_transfer.h). */
#include "harness/calibrate_transfer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "common/median.h"

/* The sizes the engine copies (issue 31's pipeline, OPT-6.7B in 16 bits,
 * the paper's GPU row): 16 KiB is one neuron bundle (an up row and a
 * down column of d_model = 4096, the paper's read size), uploaded into its
 * cache row; 256 KiB is a staging slot of 16 bundles, and about the
 * logits a token downloads (50,272 floats); 4 MiB is about the rows a
 * layer admits per token under the window (2.4% of 16,384 bundles); 64
 * MiB is the bulk rate that naive's whole-layer uploads approach (half of
 * a layer's attention weights). Below 16 KiB a copy is its latency, which
 * the waits measure. */
static const size_t engine_sizes[] = {(size_t)16 << 10, (size_t)256 << 10, (size_t)4 << 20, (size_t)64 << 20};

struct xfer_plan calibrate_xfer_plan(bool quick)
{
    return (struct xfer_plan){.sizes = engine_sizes,
                              .n_sizes = sizeof engine_sizes / sizeof engine_sizes[0],
                              .samples = quick ? 5 : 11,
                              .launches = quick ? 200 : 1000,
                              .waits = quick ? 21 : 101};
}

enum { LAUNCH_ROUNDS = 5 };

/* One measurement's buffers: a device buffer and a pinned one of the
 * largest size, a malloc'd one as large, and room for the samples. */
struct xfer {
    const struct backend_ops *ops;
    struct backend *b;
    struct dev_buf *dev, *pinned;
    char *pinned_host, *pageable;
    double *times;
    struct xfer_tally *tally;
};

static int xfer_open(struct xfer *x, const struct xfer_plan *p, char *err, size_t errlen)
{
    size_t max = p->sizes[p->n_sizes - 1];
    int n = p->samples > p->waits ? p->samples : p->waits;
    if (x->ops->alloc(x->b, max, BUF_DEVICE, &x->dev) != 0 || x->ops->alloc(x->b, max, BUF_PINNED, &x->pinned) != 0)
        return -1; /* the backend's reason */
    x->pinned_host = x->ops->host_ptr(x->b, x->pinned);
    if (!x->pinned_host)
        return err_set(err, errlen, "%s backend: a pinned buffer without a host address", x->ops->name);
    x->pageable = malloc(max);
    x->times = malloc((size_t)(n > LAUNCH_ROUNDS ? n : LAUNCH_ROUNDS) * sizeof *x->times);
    if (!x->pageable || !x->times)
        return err_set(err, errlen, "out of memory for %zu bytes of copies", max);
    /* every page touched here: no page fault lands in a timing */
    memset(x->pinned_host, 0, max);
    memset(x->pageable, 0, max);
    return 0;
}

static void xfer_close(struct xfer *x)
{
    /* nothing in flight on what is freed (a failed backend says so again: ignored) */
    if (x->ops->sync(x->b) == 0)
        x->tally->syncs++;
    x->ops->buf_free(x->b, x->dev);
    x->ops->buf_free(x->b, x->pinned);
    free(x->pageable);
    free(x->times);
}

/* One copy of bytes (h2d: host -> device), from or to pinned or
 * malloc'd memory, between two events, and a sync: the device's seconds
 * between the events (event_elapsed), or -1. The device's time, not the
 * host's around the sync: the sync's own latency is sync_s, priced apart
 * (device_terms), and what the engine reports of its copies (a token's
 * h2d_ms) is event time too. */
static double copy_once(struct xfer *x, bool h2d, bool pinned, size_t bytes)
{
    char *host = pinned ? x->pinned_host : x->pageable;
    struct dev_ref d = {x->dev, 0};
    uint64_t e0, e1;
    double ms = -1;
    int rc = x->ops->event_record(x->b, &e0);
    if (rc == 0)
        rc = h2d ? x->ops->upload(x->b, d, host, bytes) : x->ops->download(x->b, host, d, bytes);
    if (rc == 0)
        rc = x->ops->event_record(x->b, &e1);
    if (rc == 0)
        rc = x->ops->sync(x->b);
    if (rc == 0)
        rc = x->ops->event_elapsed(x->b, e0, e1, &ms);
    if (rc != 0)
        return -1;
    x->tally->copies++;
    x->tally->syncs++;
    *(h2d ? &x->tally->bytes_up : &x->tally->bytes_down) += bytes;
    return ms * 1e-3;
}

/* Bytes/s of the median of `samples` copies, after one untimed. */
static int copy_rate(struct xfer *x, bool h2d, bool pinned, size_t bytes, int samples, double *bw)
{
    if (copy_once(x, h2d, pinned, bytes) < 0)
        return -1;
    for (int i = 0; i < samples; i++)
        if ((x->times[i] = copy_once(x, h2d, pinned, bytes)) < 0)
            return -1;
    /* a clock too coarse for the copy: one nanosecond, not a division by 0 */
    *bw = (double)bytes / fmax(median_sorting(x->times, (size_t)samples), 1e-9);
    return 0;
}

/* Size i's four bandwidths into d. */
static int size_rates(struct xfer *x, const struct xfer_plan *p, size_t i, struct hw_device *d)
{
    double *out[4] = {&d->h2d_pinned_bw[i], &d->h2d_pageable_bw[i], &d->d2h_pinned_bw[i], &d->d2h_pageable_bw[i]};
    d->xfer_bytes[i] = (double)p->sizes[i];
    for (int k = 0; k < 4; k++)
        if (copy_rate(x, k < 2, k % 2 == 0, p->sizes[i], p->samples, out[k]) != 0)
            return -1;
    return 0;
}

/* Rounds of `launches` adds of one float, each round then one sync: the
 * median of the rounds' seconds per launch (a round before them warms). */
static int launch_rate(struct xfer *x, int launches, double *launch_s)
{
    /* two floats the uploads above wrote (zeros) */
    struct dev_ref y = {x->dev, 0}, v = {x->dev, sizeof(float)};
    for (int r = 0; r <= LAUNCH_ROUNDS; r++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < launches; i++)
            if (x->ops->add(x->b, y, v, 1) != 0)
                return -1;
        if (x->ops->sync(x->b) != 0)
            return -1;
        if (r > 0)
            x->times[r - 1] = (double)(now_ns() - t0) * 1e-9 / launches;
        x->tally->launches += (uint64_t)launches;
        x->tally->syncs++;
    }
    *launch_s = fmax(median_sorting(x->times, LAUNCH_ROUNDS), 1e-9);
    return 0;
}

/* The median seconds of `waits` syncs (event false), or event record +
 * wait pairs (event true), on an empty queue. */
static int wait_rate(struct xfer *x, bool event, int waits, double *secs)
{
    for (int i = 0; i < waits; i++) {
        uint64_t t0 = now_ns(), e;
        int rc = event ? x->ops->event_record(x->b, &e) : x->ops->sync(x->b);
        if (rc == 0 && event)
            rc = x->ops->event_wait(x->b, e);
        if (rc != 0)
            return -1;
        x->times[i] = (double)(now_ns() - t0) * 1e-9;
        x->tally->syncs++;
    }
    *secs = fmax(median_sorting(x->times, (size_t)waits), 1e-9);
    return 0;
}

int measure_device_transfers(const struct backend_ops *ops, struct backend *b, const struct xfer_plan *p,
                             struct hw_device *dev, struct xfer_tally *tally, char *err, size_t errlen)
{
    *tally = (struct xfer_tally){0};
    err[0] = '\0';
    if (!p->n_sizes || p->n_sizes > HW_MAX_XFER || p->samples < 1 || p->launches < 1 || p->waits < 1 ||
        p->sizes[p->n_sizes - 1] < 2 * sizeof(float))
        return err_set(err, errlen, "internal: a transfer plan of %zu sizes, %d samples, %d launches, %d waits",
                       p->n_sizes, p->samples, p->launches, p->waits);
    struct xfer x = {.ops = ops, .b = b, .tally = tally};
    int rc = xfer_open(&x, p, err, errlen);
    for (size_t i = 0; rc == 0 && i < p->n_sizes; i++)
        rc = size_rates(&x, p, i, dev);
    if (rc == 0)
        rc = launch_rate(&x, p->launches, &dev->launch_s);
    if (rc == 0)
        rc = wait_rate(&x, false, p->waits, &dev->sync_s);
    if (rc == 0)
        rc = wait_rate(&x, true, p->waits, &dev->event_s);
    if (rc != 0 && !err[0])
        err_set(err, errlen, "%s backend: %s", ops->name, ops->error(b));
    xfer_close(&x);
    if (rc == 0)
        dev->n_xfer = p->n_sizes;
    return rc ? -1 : 0;
}
