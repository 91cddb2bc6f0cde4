/* calibrate's compute rates on a device backend (calibrate.h): the
 * engine's matvec through the backend interface (engine/compute/backend.h)
 * on weights in the device's own memory. */
#include "harness/calibrate.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "engine/model/dtype.h"
#include "harness/calibrate_transfer.h"

/* Buffers of one timing: copies of W, x and y, in the device's memory. */
struct dev_matvec {
    const struct backend_ops *ops;
    struct backend *b;
    struct dev_buf *w, *x, *y;
    size_t bytes, copies; /* one matrix's, and how many are taken in turn */
};

static void dev_matvec_free(struct dev_matvec *d)
{
    d->ops->sync(d->b); /* nothing left in flight on what is freed */
    d->ops->buf_free(d->b, d->w);
    d->ops->buf_free(d->b, d->x);
    d->ops->buf_free(d->b, d->y);
}

/* The copies of an all-ones W and x = 1/(i+1), uploaded and waited for. */
static int dev_matvec_fill(struct dev_matvec *d, size_t rows, size_t cols, enum fb_dtype t, char *err, size_t errlen)
{
    const struct backend_ops *o = d->ops;
    float *ones = malloc(cols * sizeof *ones), *x = malloc(cols * sizeof *x);
    char *w = malloc(d->bytes);
    int rc = ones && x && w ? 0 : err_set(err, errlen, "out of memory for a %zu x %zu matrix", rows, cols);
    for (size_t i = 0; rc == 0 && i < cols; i++) {
        ones[i] = 1.0f;
        x[i] = 1.0f / (float)(i + 1);
    }
    for (size_t r = 0; rc == 0 && r < rows; r++)
        dtype_from_f32(w + r * wtype_row_bytes(t, cols), t, ones, cols);
    for (size_t c = 0; rc == 0 && c < d->copies; c++)
        rc = o->upload(d->b, (struct dev_ref){d->w, c * d->bytes}, w, d->bytes);
    if (rc == 0)
        rc = o->upload(d->b, (struct dev_ref){d->x, 0}, x, cols * sizeof *x);
    if (rc == 0)
        rc = o->sync(d->b); /* the sources are freed below */
    if (rc != 0 && !err[0])
        err_set(err, errlen, "%s backend: %s", o->name, o->error(d->b));
    free(ones), free(x), free(w);
    return rc ? -1 : 0;
}

/* Launches in batches of 8, each batch waited for, until seconds passed
 * (at least two batches); the passes into *passes, the seconds returned,
 * or -1 with err. */
static double dev_matvec_time(struct dev_matvec *d, int rows, int cols, enum fb_dtype t, double seconds,
                              uint64_t *passes, char *err, size_t errlen)
{
    const struct backend_ops *o = d->ops;
    struct dev_ref y = {d->y, 0}, x = {d->x, 0}, none = {0};
    *passes = 0;
    uint64_t t0 = now_ns(), now = t0;
    while (now - t0 < (uint64_t)(seconds * 1e9) || *passes < 16) {
        for (int i = 0; i < 8; i++, (*passes)++) {
            struct dev_ref w = {d->w, (size_t)(*passes % d->copies) * d->bytes};
            if (o->matvec(d->b, y, w, t, x, none, rows, cols) != 0)
                return err_set(err, errlen, "%s backend: %s", o->name, o->error(d->b));
        }
        if (o->sync(d->b) != 0)
            return err_set(err, errlen, "%s backend: %s", o->name, o->error(d->b));
        now = now_ns();
    }
    return (double)(now - t0) * 1e-9;
}

double measure_backend_matvec(const struct backend_ops *ops, struct backend *b, size_t rows, size_t cols,
                              enum fb_dtype t, size_t span, double seconds, double *flops, char *err, size_t errlen)
{
    struct dev_matvec d = {.ops = ops, .b = b, .bytes = rows * wtype_row_bytes(t, cols)};
    d.copies = span / d.bytes + 1;
    err[0] = '\0';
    double rate = 0;
    if (ops->alloc(b, d.copies * d.bytes, BUF_DEVICE, &d.w) != 0 ||
        ops->alloc(b, cols * sizeof(float), BUF_DEVICE, &d.x) != 0 ||
        ops->alloc(b, rows * sizeof(float), BUF_DEVICE, &d.y) != 0)
        err_set(err, errlen, "%s backend: %s", ops->name, ops->error(b));
    else if (dev_matvec_fill(&d, rows, cols, t, err, errlen) == 0) {
        /* warm: the kernel's first launch (a driver may compile it then) */
        uint64_t passes;
        double secs = dev_matvec_time(&d, (int)rows, (int)cols, t, 0, &passes, err, errlen);
        if (secs >= 0)
            secs = dev_matvec_time(&d, (int)rows, (int)cols, t, seconds, &passes, err, errlen);
        if (secs > 0) {
            rate = (double)d.bytes * (double)passes / secs;
            if (flops)
                *flops = 2.0 * (double)rows * (double)cols * (double)passes / secs;
        }
    }
    dev_matvec_free(&d);
    return rate;
}

/* The backend on a host team of `threads` (its config's), with room for
 * vectors of max_dim. NULL with why set. */
static struct backend *start(const struct backend_ops *ops, const struct fb_settings *set, unsigned threads,
                             size_t max_dim, struct cpu_kernels **ck, char *why, size_t len)
{
    *ck = ck_create(set, threads < 1 ? 1 : (int)threads, max_dim, 1, 1, why, len);
    if (!*ck)
        return NULL;
    struct backend_config cfg = {.set = set, .threads = threads < 1 ? 1 : (int)threads, .max_dim = max_dim,
                                 .max_seq = 1, .max_heads = 1, .host = *ck};
    struct backend *b = ops->create(&cfg, why, len);
    if (!b) {
        ck_destroy(*ck);
        *ck = NULL;
    }
    return b;
}

_Static_assert((int)WTYPE_FLOAT_COUNT <= (int)HW_MAX_DTYPES, "a profile holds a compute rate for every float type");

/* The matvec rate of each type on b into hw->compute, in the table's
 * order (f32, f16, bf16: every type a GPU row may be priced at). */
static int device_compute(struct hw_profile *hw, const struct backend_ops *ops, struct backend *b,
                          const char *device, bool quick, char *err, size_t errlen)
{
    for (int h = 0; h < WTYPE_FLOAT_COUNT; h++) { /* the block formats are not priced yet */
        enum fb_dtype t = (enum fb_dtype)h;
        struct compute_rate *cr = &hw->compute[hw->n_compute++];
        snprintf(cr->dtype, sizeof cr->dtype, "%s", wtype_name(t));
        /* 256 MiB of copies: past a GPU's last-level cache (50 MiB on an
         * H100), as decode streams every weight once per token */
        cr->bw = measure_backend_matvec(ops, b, 8192, 4096, t, (size_t)256 << 20, quick ? 0.3 : 1.0, &cr->flops,
                                        err, errlen);
        if (!(cr->bw > 0))
            return err[0] ? -1 : err_set(err, errlen, "%s backend: no time measured for %s", ops->name, wtype_name(t));
        snprintf(cr->source, sizeof cr->source,
                 "measured: the %s backend's matvec on %.60s, 8192 x 4096 %s weights in device memory (copies "
                 "taken in turn, 256 MiB in all)", ops->name, device, wtype_name(t));
    }
    snprintf(hw->compute_note, sizeof hw->compute_note,
             "the engine's %s backend on %.60s, its matvec timed through the backend interface on 8192 x 4096 "
             "matrices in the device's memory, copies taken in turn so that none is in its caches", ops->name,
             device);
    return 0;
}

/* The device's name and copy and queue rates into hw->device; an
 * emulated device marks the profile. */
static int device_transfers(struct hw_profile *hw, const struct backend_ops *ops, struct backend *b,
                            const struct backend_device *info, bool quick, char *err, size_t errlen)
{
    struct hw_device *d = &hw->device;
    struct xfer_plan plan = calibrate_xfer_plan(quick);
    struct xfer_tally tally;
    if (measure_device_transfers(ops, b, &plan, d, &tally, err, errlen) != 0)
        return -1;
    d->present = true;
    snprintf(d->name, sizeof d->name, "%.*s", (int)sizeof d->name - 1, info->device);
    snprintf(d->source, sizeof d->source,
             "measured: the %s backend's upload and download (each copy then a sync; the median of %d) from "
             "pinned and from malloc'd memory, %d adds of one float per sync, and %d waits on an empty queue",
             ops->name, plan.samples, plan.launches, plan.waits);
    hw->emulated = info->emulated;
    if (info->emulated)
        snprintf(hw->emulated_note, sizeof hw->emulated_note,
                 "measured on an emulated device (%.80s): a check of the pipeline through the backend "
                 "interface, not a GPU's rates; predict refuses it without --allow-emulated", info->device);
    return 0;
}

int calibrate_measure_device(struct hw_profile *hw, const struct fb_settings *set, const struct backend_ops *ops,
                             unsigned threads, bool quick, char *err, size_t errlen)
{
    struct cpu_kernels *ck;
    err[0] = '\0';
    struct backend *b = start(ops, set, threads, 8192, &ck, err, errlen);
    if (!b)
        return -1;
    struct backend_device info;
    ops->info(b, &info);
    if (!info.device[0])
        snprintf(info.device, sizeof info.device, "?");
    int rc = device_transfers(hw, ops, b, &info, quick, err, errlen);
    if (rc == 0)
        rc = device_compute(hw, ops, b, info.device, quick, err, errlen);
    ops->destroy(b);
    ck_destroy(ck);
    return rc;
}
