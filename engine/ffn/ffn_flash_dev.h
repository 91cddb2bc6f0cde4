/* The flash FFN's compute on a device whose memory is not the host's
 * (ffn_flash.c's device path; the rows it keeps are in
 * neuron_cache_dev.h): a layer's output is built on the device from
 * groups of rows with ops->ffn_rows and ops->add, in the order and with
 * the partial sums the host path uses (out = 0, then out += FFN(group)
 * per group), so that sim gives the cpu backend's bits.
 *
 *   x        downloaded once per layer into pinned memory and waited for,
 *            only when a host-side selector reads it (the oracle's, the
 *            predictor's or the gate's choice, check, a record): the
 *            layer's one forced synchronisation
 *   staging  rows used once (naive's and hybrid's streamed rows, a
 *            predictor's, what a full cache cannot keep) and their biases
 *            go up (through the pinned ring, flash_ring.h) into a device
 *            staging area of staging_rows rows, fdev_stage_rows/_bias, and
 *            are computed there as one group, fdev_rows; the in-order
 *            queue keeps the next group's uploads behind that compute
 *
 * Every call returns 0, or -1 with the backend's error (ops->error). One
 * host thread. */
#ifndef FLASHBED_ENGINE_FFN_FLASH_DEV_H
#define FLASHBED_ENGINE_FFN_FLASH_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/compute/backend.h"
#include "engine/model/model.h"

struct flash_dev {
    const struct backend_ops *ops;
    struct backend *be;
    const struct model *m;
    uint32_t staging_rows;
    struct dev_buf *tmp;                    /* d_model floats: one group's output */
    struct dev_buf *stage_rows, *stage_bias; /* the staging area (bias NULL without an up bias) */
    struct dev_buf *x_pinned;
    float *x_host;                          /* the layer's x, when downloaded */
    struct dev_ref x, out;                  /* the layer's */
    bool written;                           /* out holds a group's sum already */
};

/* For model m and a staging area of staging_rows rows. 0, or -1 with err;
 * fdev_free is safe after. */
int fdev_init(struct flash_dev *fd, const struct backend_ops *ops, struct backend *be, const struct model *m,
              uint32_t staging_rows, char *err, size_t errlen);
void fdev_free(struct flash_dev *fd);

/* A layer begins: x and out are the engine's; with need_x, x is brought
 * to fd->x_host and waited for. */
int fdev_layer_begin(struct flash_dev *fd, struct dev_ref x, struct dev_ref out, bool need_x);
/* out (+)= the FFN over n rows at rows (stride: the model's bundle
 * stride) with biases bias (none: no up bias); the first group of a layer
 * writes out, so a layer with no rows at all still gives zeros. */
int fdev_rows(struct flash_dev *fd, struct dev_ref rows, uint32_t n, struct dev_ref bias);
/* Row k of the device staging area, and its bias (none without an up bias). */
struct dev_ref fdev_stage_rows(const struct flash_dev *fd, uint32_t k);
struct dev_ref fdev_stage_bias(const struct flash_dev *fd, uint32_t k);
/* The layer ends: zeros if nothing was computed, then the down bias. */
int fdev_layer_end(struct flash_dev *fd, struct dev_ref down_bias);

#endif
