/* Which FFN neurons a token uses in a layer, chosen from the layer's FFN
 * input x (after its norm), by a neuron source (neuron_source.h: one file
 * each, engine/ffn/source_<name>.c):
 *
 *   predictor  the paper's deployable low-rank predictor (predictor.h):
 *              sigmoid(B·(A·x) + bias) > its threshold
 *   gate       GLU FFNs only (the paper's App. C.5): the gate projection
 *              decides, neuron i when |act(gate_i·x)| > threshold; the
 *              calibrated gate (CATS-style, --active gate-cal) is the same
 *              source with one threshold per layer (sparsify_file.h)
 *   teal       input sparsity (TEAL-style): the input channels j with
 *              |x_j| <= the layer's input threshold are dropped (x' keeps
 *              the others; the dropped columns of up and gate are never
 *              used), and neuron i is chosen when |act(gate_i·x')·(up_i·x')|
 *              (|act(up_i·x' + b)| without a gate) > the layer's
 *              intermediate threshold: the rows of down it keeps. The FFN
 *              is then computed on x' (neuron_select.xs).
 *   oracle     the true activations from the up (and gate) rows, by the
 *              rule of activation.h: the ReLU family when the activation's
 *              output is not zero (a GLU's gate), SiLU and GELU when
 *              |act(gate·x)·(up·x)| (a GLU) or |act(up·x + b)| > threshold.
 *              A measuring device, not a deployable mode.
 *   trace      a trace's recorded sets (the flash FFN's, run --active
 *              trace:FILE): replayed there, not computed here.
 *
 * The flash FFN (ffn_flash.h) reads the neurons chosen; the masked dense
 * FFN (ffn_select.h) computes on them only. The gate and the oracle hold
 * rows of every layer in DRAM as contiguous [n_layers][d_ff][d_model]
 * matrices in the model's dtype, copied at open from the model's DRAM
 * bundles, or read from ffn.bin when the FFN stays on flash.
 *
 * What a source holds in DRAM and its multiply-adds per token are known
 * before opening (a DRAM budget counts them): the predictor's weights, the
 * gate's rows (a deployment would hold them: they count as its predictor),
 * the oracle's rows (reported apart: not deployable). */
#ifndef FLASHBED_ENGINE_NEURON_SELECT_H
#define FLASHBED_ENGINE_NEURON_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/compute/cpu_kernels.h"
#include "engine/ffn/neuron_source.h"
#include "engine/ffn/value_sample.h"
#include "engine/model/model.h"
#include "engine/predictor/predictor.h"

struct trace;

/* A neuron source as a value: which source, and what it reads. A zeroed
 * value (ops NULL) is the oracle with threshold 0 (select_source), as the
 * first source has always been: configurations built field by field keep
 * their meaning. Plain data: copy it freely. */
struct select_config {
    const struct neuron_source_ops *ops; /* NULL: the oracle */
    const struct predictor *predictor; /* the predictor: of the model's shape; kept by pointer,
                                        * its own threshold applies */
    float threshold;                   /* the gate: |act(gate·x)| above it; the oracle on a
                                        * SiLU or GELU FFN: |h| above it (unused for the ReLU family) */
    const float *layer_thresholds;     /* the gate calibrated (gate-cal): [n_layers], replacing threshold;
                                        * or NULL */
    const float *input_thresholds;     /* teal: [n_layers] |x_j| above it is kept */
    const float *inter_thresholds;     /* teal: [n_layers] |h_i| above it is kept */
    const struct trace *trace;         /* a source that replays (trace): its sets, of the model's shape */
    bool use_predicted;                /* the trace's predicted sets, else its active sets */
};

/* The source of c (the oracle for a zeroed value). */
static inline const struct neuron_source_ops *select_source(const struct select_config *c)
{
    return c->ops ? c->ops : &source_oracle;
}

/* The name a result gives c: the source's, or its cal_name with per-layer
 * thresholds ("gate-cal"). */
static inline const char *select_label(const struct select_config *c)
{
    const struct neuron_source_ops *o = select_source(c);
    return o->cal_name && c->layer_thresholds ? o->cal_name : o->name;
}

struct neuron_select {
    struct select_config cfg;
    const struct model *m;
    void *up, *gate;     /* [n_layers][d_ff][d_model], model dtype: what the source reads, or NULL */
    float *z, *g;        /* [d_ff] pre-activations (the predictor's logits in z) */
    float *h;            /* [max rank] the predictor's A·x */
    float *xs;           /* [d_model] reads_channels: the last input with its dropped channels zero */
    uint32_t kept_inputs; /* reads_channels: channels kept in the last call */
    uint64_t rows_bytes; /* up + gate */
    struct value_sample sample; /* the oracle on a SiLU or GELU FFN: |h| of the first tokens (value_sample.h),
                                 * for a threshold to suggest; else empty */
};

/* Whether c can choose m's neurons (its source's check: gate needs a GLU
 * FFN, the predictor the model's shape; a trace's sets are not computed).
 * 0, or -1 with err. Loads nothing. */
int neuron_select_check(const struct model *m, const struct select_config *c, char *err, size_t errlen);

/* DRAM the source holds for m (weights or rows; scratch aside), and its
 * multiply-adds per token (all layers). */
uint64_t neuron_select_bytes(const struct model *m, const struct select_config *c);
uint64_t neuron_select_madds(const struct model *m, const struct select_config *c);

/* Checks c and loads what the source reads. 0, or -1 with err naming the
 * file; *s is then closed (closing it again is safe). */
int neuron_select_open(struct neuron_select *s, const struct model *m, const struct select_config *c, char *err,
                       size_t errlen);
void neuron_select_close(struct neuron_select *s);

/* Layer l's chosen neurons for FFN input x[d_model]: ascending ids into
 * out[d_ff]; returns how many. With the backend's matvec (its threads);
 * allocates nothing. */
uint32_t neuron_select_layer(struct neuron_select *s, int layer, struct cpu_kernels *k,
                             const float *x, uint32_t *out);

/* For the sources' files: bytes of one [n_layers][d_ff][d_model] matrix
 * in m's dtype, and that matrix of vector vec (0: up, 1: gate) loaded
 * into *out (malloc'd). 0, or -1 with err. */
uint64_t neuron_select_matrix_bytes(const struct model *m);
int neuron_select_load_matrix(const struct model *m, unsigned vec, void **out, char *err, size_t errlen);

/* Layer l's part of s's [n_layers][d_ff][d_model] matrix, or NULL. */
const void *neuron_select_rows(const struct neuron_select *s, const void *matrix, int layer);

#endif
