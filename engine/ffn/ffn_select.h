/* The dense FFN computed on the chosen neurons only: every weight stays in
 * DRAM, and per layer a source (engine/ffn/neuron_select.h: the predictor, the
 * gate, the oracle) chooses the neurons whose bundles the FFN is computed
 * on; the others count as zero. It measures what a choice of neurons costs
 * in accuracy (perplexity, generated text) apart from any flash I/O.
 *
 * The chosen bundles are gathered into a compact buffer, a batch at a time,
 * and computed with the backend's ffn_rows. When a layer's choice is every
 * neuron the layer is computed in place, exactly as ffn_dense does, so a
 * choice of all neurons reproduces dense bit for bit. Otherwise the sum
 * over the same neurons is grouped differently (the backend's fixed
 * groups are cut over the rows it is given), so a choice that holds every
 * neuron whose activation is not zero gives dense's result up to float
 * rounding. On a model that holds its FFN's matrices as a source stored
 * them (a GGUF's blocks, ffn.h) the layer is computed on those instead, as
 * dense computes it (ffn_matrices_host: h zero outside the choice before
 * down), so that a choice of every neuron reproduces dense bit for bit
 * there too and a partial one differs from dense by the choice alone, not
 * by ffn.bin's f16 decode of the blocks; the bytes counted stay the
 * bundles' (what the flash FFN reads). The model must hold its FFN in DRAM. */
#ifndef FLASHBED_ENGINE_FFN_SELECT_H
#define FLASHBED_ENGINE_FFN_SELECT_H

#include <stdint.h>

#include "engine/ffn/ffn.h"
#include "engine/ffn/neuron_select.h"

/* ffn_select.create reads its struct select_config from f->config
 * (engine_init_with's ffn_config; kept by pointer). */
extern const struct ffn_ops ffn_select;

/* What the choice came to since create: layer steps, neurons chosen (all
 * layers), the FFN weight bytes those steps would read, and the time spent
 * choosing. Bytes are exact counts in the model's dtype, biases aside: a
 * neuron source reads the whole bundle of each chosen neuron (up, gate and
 * down rows: (2 or 3)·d_model elements, what the flash FFN reads); input
 * sparsity reads the kept channels' columns of up and gate ((1 or 2)·d_ff
 * elements each) and the kept rows of down (d_model each). Dense reads
 * d_ff bundles a layer. */
struct ffn_select_stats {
    uint64_t steps;       /* layer forward calls */
    uint64_t chosen;      /* neurons chosen over them (teal: rows of down kept) */
    uint64_t kept_inputs; /* teal: input channels kept over them; else 0 */
    uint64_t bytes;       /* FFN weight bytes read over them */
    double select_ms;     /* choosing them */
};

void ffn_select_stats(const struct ffn *f, struct ffn_select_stats *out);

/* Per token and layer shares and per token bytes, for the reports. */
struct ffn_select_summary {
    double density;          /* neurons (rows of down) computed / d_ff */
    double input_density;    /* teal: input channels kept / d_model; -1 for the other sources */
    double bytes_per_token;  /* FFN weight bytes a token reads, all layers */
    double dense_bytes_per_token;
    double select_ms_per_token;
};

void ffn_select_summarize(const struct ffn *f, struct ffn_select_summary *out);

/* The dense FFN's weight bytes per token (all layers), by the rule above. */
uint64_t ffn_dense_bytes_per_token(const struct model *m);

#endif
