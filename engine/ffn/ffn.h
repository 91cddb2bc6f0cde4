/* The per-layer FFN step, replaceable: `dense` computes over all d_ff
 * bundles held in DRAM; the flash-resident FFN (neuron cache) implements
 * the same ops over the compact rows it loaded. forward.c calls only this. */
#ifndef FLASHBED_ENGINE_FFN_H
#define FLASHBED_ENGINE_FFN_H

#include <stddef.h>

#include "engine/compute/backend.h"
#include "engine/model/model.h"

struct ffn;

struct ffn_ops {
    const char *name;
    /* Prepares the FFN of every layer of m (preallocating all it needs);
     * 0, or -1 with the reason in err. After a failure the caller calls
     * destroy, which releases what create started. */
    int (*create)(struct ffn *f, char *err, size_t errlen);
    /* out[d_model] = FFN_layer(x) for the FFN-normed input x, down bias
     * included. Called once per layer per token; must not allocate. */
    void (*forward)(struct ffn *f, int layer, int pos, const float *x, float *out);
    void (*destroy)(struct ffn *f);
};

struct ffn {
    const struct ffn_ops *ops;
    const struct model *m;
    const struct backend_ops *be_ops;
    struct backend *be;
    const void *config; /* the implementation's settings (e.g. struct ffn_flash_config), or NULL */
    void *priv;         /* the implementation's own state */
};

extern const struct ffn_ops ffn_dense;

#endif
