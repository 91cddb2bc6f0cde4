/* Which FFN neurons a token uses in a layer, chosen from the layer's FFN
 * input x (after its norm). Three sources behind one call:
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
#include "engine/ffn/value_sample.h"
#include "engine/model/model.h"
#include "engine/predictor/predictor.h"

/* The one neuron-source type: what chooses a token's needed neurons.
 * neuron_select computes the first three; a trace (the flash FFN's, run
 * --active trace:FILE) replays recorded sets. */
enum neuron_source { SOURCE_ORACLE, SOURCE_PREDICTOR, SOURCE_GATE, SOURCE_TRACE, SOURCE_TEAL };

struct select_config {
    enum neuron_source source;
    const struct predictor *predictor; /* SOURCE_PREDICTOR: of the model's shape; kept by pointer,
                                        * its own threshold applies */
    float threshold;                   /* SOURCE_GATE: |act(gate·x)| above it; SOURCE_ORACLE on a
                                        * SiLU or GELU FFN: |h| above it (unused for the ReLU family) */
    const float *layer_thresholds;     /* SOURCE_GATE calibrated: [n_layers], replacing threshold; or NULL */
    const float *input_thresholds;     /* SOURCE_TEAL: [n_layers] |x_j| above it is kept */
    const float *inter_thresholds;     /* SOURCE_TEAL: [n_layers] |h_i| above it is kept */
};

struct neuron_select {
    struct select_config cfg;
    const struct model *m;
    void *up, *gate;     /* [n_layers][d_ff][d_model], model dtype: what the source reads, or NULL */
    float *z, *g;        /* [d_ff] pre-activations (the predictor's logits in z) */
    float *h;            /* [max rank] the predictor's A·x */
    float *xs;           /* [d_model] SOURCE_TEAL: the last input with its dropped channels zero */
    uint32_t kept_inputs; /* SOURCE_TEAL: channels kept in the last call */
    uint64_t rows_bytes; /* up + gate */
    struct value_sample sample; /* SOURCE_ORACLE on a SiLU or GELU FFN: |h| of the first tokens (value_sample.h),
                                 * for a threshold to suggest; else empty */
};

/* Whether c can choose m's neurons: gate needs a GLU FFN, the predictor
 * the model's shape. 0, or -1 with err. Loads nothing. */
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

/* "oracle", "predictor", "gate", "trace", "teal". */
const char *neuron_source_name(enum neuron_source src);
/* The computed source name names (oracle, predictor, gate, teal) into
 * *out; false for any other text. */
bool neuron_source_parse(const char *name, enum neuron_source *out);

#endif
