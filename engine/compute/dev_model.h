/* A model's weights where a backend computes on them: the DRAM tensors
 * (and the FFN bundles, and the FFN's matrices as stored, when they are
 * in memory) as one buffer each,
 * registered in place on the cpu backend, uploaded once to a device's
 * memory elsewhere. Every weight pointer of struct model then has one
 * dev_ref. 0, or -1 with the reason in err (a device that refuses the
 * allocation: the model does not fit). */
#ifndef FLASHBED_ENGINE_DEV_MODEL_H
#define FLASHBED_ENGINE_DEV_MODEL_H

#include <stddef.h>

#include "engine/compute/backend.h"
#include "engine/model/model.h"

struct dev_model {
    const struct model *m;
    const struct backend_ops *ops;
    struct backend *be;
    struct dev_buf *dram, *ffn; /* ffn NULL when the FFN stays on flash */
    struct dev_buf *mats;       /* the FFN's matrices as stored (ffn_matrices.bin), NULL when not read */
};

int dev_model_load(struct dev_model *dm, const struct model *m, const struct backend_ops *ops, struct backend *be,
                   char *err, size_t errlen);
void dev_model_free(struct dev_model *dm);

/* The place of weight p (a pointer into m->dram or m->ffn); none for NULL. */
struct dev_ref dev_model_ref(const struct dev_model *dm, const void *p);

#endif
