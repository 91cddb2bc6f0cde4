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
 * rounding. The model must hold its FFN in DRAM. */
#ifndef FLASHBED_ENGINE_FFN_SELECT_H
#define FLASHBED_ENGINE_FFN_SELECT_H

#include <stdint.h>

#include "engine/ffn/ffn.h"
#include "engine/ffn/neuron_select.h"

/* ffn_select.create reads its struct select_config from f->config
 * (engine_init_with's ffn_config; kept by pointer). */
extern const struct ffn_ops ffn_select;

/* What the choice came to since create: layer steps, neurons chosen (all
 * layers) and the time spent choosing. */
struct ffn_select_stats {
    uint64_t steps;   /* layer forward calls */
    uint64_t chosen;  /* neurons chosen over them */
    double select_ms; /* choosing them */
};

void ffn_select_stats(const struct ffn *f, struct ffn_select_stats *out);

#endif
