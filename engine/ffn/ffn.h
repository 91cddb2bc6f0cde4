/* The per-layer FFN step, replaceable: `dense` computes over all d_ff
 * bundles on the engine's backend (backend.h), where the weights are; the
 * flash-resident FFN (neuron cache) computes on the backend too, over the
 * rows its cache holds in device memory (ffn_flash.h; on the cpu backend
 * in place on the host); the selected and the probed FFNs compute on the
 * host with the CPU kernels over the rows they hold, and the engine brings
 * them the layer's input and takes their output back (no copy on the cpu
 * backend). forward.c calls only this.
 *
 * The dense FFN computes on the layer's bundles, or, where the model holds
 * its FFN's matrices as a source stored them (model.h: ffn_up, ffn_gate,
 * ffn_down; a GGUF's blocks), on those: up and gate matvecs, ffn_act,
 * down's matvec. */
#ifndef FLASHBED_ENGINE_FFN_H
#define FLASHBED_ENGINE_FFN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/compute/backend.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/compute/dev_model.h"
#include "engine/model/model.h"

struct ffn;

struct ffn_ops {
    const char *name;
    /* Prepares the FFN of every layer of m (preallocating all it needs);
     * 0, or -1 with the reason in err. After a failure the caller calls
     * destroy, which releases what create started. */
    int (*create)(struct ffn *f, char *err, size_t errlen);
    /* out[d_model] = FFN_layer(x) for the FFN-normed input x, down bias
     * included, on the host. Called once per layer per token; must not
     * allocate. NULL when the FFN computes on the device only. */
    void (*forward)(struct ffn *f, int layer, int pos, const float *x, float *out);
    /* The same on the backend's buffers, enqueued (x and out of d_model
     * floats); 0, or -1 with the backend's error. NULL for a host FFN.
     * The engine calls it whenever it is there. */
    int (*forward_device)(struct ffn *f, int layer, int pos, struct dev_ref x, struct dev_ref out);
    void (*destroy)(struct ffn *f);
};

struct ffn {
    const struct ffn_ops *ops;
    const struct model *m;
    struct cpu_kernels *ck;       /* the host's kernels */
    const struct dev_model *dev;  /* the weights on the backend (dev->ops, dev->be) */
    const void *config; /* the implementation's settings (e.g. struct ffn_flash_config), or NULL */
    void *priv;         /* the implementation's own state */
    float *host_zg;     /* [2 * d_ff]: up's and gate's outputs for the dense FFN's host form on a model's
                         * FFN matrices (model.h), which FFNs watching it call with their own priv; the
                         * engine allocates it when the model has them, else NULL */
};

extern const struct ffn_ops ffn_dense;

/* out[d_model] = the layer's FFN on its matrices as a source stored them
 * (L->ffn_down set, f->host_zg allocated: the model has them), on the host,
 * down bias included: up and gate matvecs, ffn_act, down's matvec. With ids
 * (n of them) h is zero outside the chosen neurons before down, so that
 * ffn_select computes a choice on the stored blocks too, in dense's own
 * arithmetic (ids NULL: dense's host form itself, bit for bit). */
void ffn_matrices_host(struct ffn *f, const struct layer_weights *L, const float *x, const uint32_t *ids, uint32_t n,
                       float *out);

#endif
