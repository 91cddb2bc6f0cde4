/* The activation predictor (engine/predictor/predictor.h) computed on a
 * device whose memory is not the host's, so that a flash FFN choosing its
 * neurons with it never brings x to the host: per layer two matvecs on the
 * device (A·x, then B·h + bias) and one download of the d_ff logits into
 * pinned memory, the layer's one forced synchronisation; the host then
 * thresholds them (predictor_choose) exactly as the host path does, so on
 * sim (the CPU kernels) the chosen sets are the cpu run's bit for bit.
 *
 *   weights  the predictor's one allocation (p->mem: every layer's A, B
 *            and bias) uploaded once at init, each layer at its offset
 *   h        [max rank] floats on the device
 *   logits   [d_ff] floats on the device, and their pinned host copy
 *
 * Every call returns 0, or -1 with err (init) or the backend's error
 * (ops->error). One host thread. */
#ifndef FLASHBED_ENGINE_PREDICTOR_DEV_H
#define FLASHBED_ENGINE_PREDICTOR_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "engine/compute/backend.h"
#include "engine/predictor/predictor.h"

struct predictor_dev {
    const struct backend_ops *ops;
    struct backend *be;         /* NULL: not open */
    const struct predictor *p;
    struct dev_buf *w, *h, *logits, *pinned;
    float *host;                /* the pinned logits' host address */
};

/* p's weights onto be (synced before it returns: p->mem may be reused). */
int pdev_init(struct predictor_dev *d, const struct backend_ops *ops, struct backend *be, const struct predictor *p,
              char *err, size_t errlen);
void pdev_free(struct predictor_dev *d);
/* Layer l's chosen neurons for the FFN input x (d_model floats on the
 * device): ascending ids into out[d_ff], *n of them; *waited is the event
 * waited for (everything enqueued before it is complete). */
int pdev_choose(struct predictor_dev *d, uint32_t l, struct dev_ref x, uint32_t *out, uint32_t *n,
                uint64_t *waited);
/* The device's bytes: the weights and the scratch. */
uint64_t pdev_bytes(const struct predictor_dev *d);

#endif
