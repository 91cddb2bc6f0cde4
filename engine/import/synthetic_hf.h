/* Inside model make's Hugging Face writer (synthetic.c): per architecture,
 * which tensors a folder has under which HF names, how each is filled, and
 * the config.json keys transformers reads for it (synthetic_hf.c). The
 * importer (import_hf_<arch>.c) reads back exactly these. */
#ifndef FLASHBED_ENGINE_SYNTHETIC_HF_H
#define FLASHBED_ENGINE_SYNTHETIC_HF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/model_shape.h"

/* How a tensor is filled. Every kind draws as many numbers from the one
 * random stream as the uniform fill would, so a model with a shaped up
 * projection has every other tensor equal to the flat model's of the same
 * seed: the two differ in the spectrum alone. */
enum syn_fill {
    FILL_UNIFORM,  /* uniform in [base - scale, base + scale] */
    FILL_SPECTRAL, /* the up spectrum (synthetic.c's writer), at the uniform fill's Frobenius norm */
    FILL_ROW_BIAS, /* base times each row's norm in the last FILL_SPECTRAL matrix */
};

struct syn_tensor {
    char name[96];
    uint64_t dims[2];
    int ndim;
    float scale, base;
    enum syn_fill fill;
};

/* 0 when the HF writer knows shape s (its arch, and a structure that
 * arch's transformers model can have), else -1 with why. */
int syn_hf_check(const struct model_shape *s, char *why, size_t len);

/* How many tensors syn_hf_tensors may list for s. */
int syn_hf_capacity(const struct model_shape *s);

/* s's tensors in HF names, in the order they are written, with how to
 * fill them: density (negative: none) sets the up projection's biases,
 * shaped gives the up projection (and a GLU's gate) the up spectrum.
 * Returns how many. */
int syn_hf_tensors(const struct model_shape *s, double density, bool shaped, struct syn_tensor *t);

/* config.json's keys for s (its architecture's, as transformers names
 * them), matrices' dtype torch_dtype ("float32", ...); the caller adds
 * flashbed's own keys after them. */
cJSON *syn_hf_config(const struct model_shape *s, const char *torch_dtype);

#endif
