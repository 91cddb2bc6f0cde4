/* In-memory traces for the replay tests: sets written as literals. */
#ifndef FLASHBED_TESTS_TRACE_FIXTURE_H
#define FLASHBED_TESTS_TRACE_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "traces/trace.h"

/* sets[t * n_layers + l] is a -1-terminated list of ascending ids. The
 * weights are f16 (the type table has no 1-byte type): a neuron-bundle
 * test halves d_model to keep its bytes what they were at 1 byte a weight;
 * the units are neuron bundles, d_ff per layer. */
static inline void fixture_trace(struct trace *tr, uint32_t n_layers, uint32_t d_model, uint32_t d_ff,
                                 uint32_t ffn_kind, uint64_t n_tokens, const int *const *sets)
{
    memset(tr, 0, sizeof *tr);
    tr->meta = (struct trace_meta){.n_layers = n_layers, .d_model = d_model, .d_ff = d_ff, .dtype = DTYPE_F16,
                                   .ffn_kind = ffn_kind, .source = strdup("{}")};
    trace_meta_set_units(&tr->meta);
    tr->n_tokens = n_tokens;
    tr->token_flags = calloc(n_tokens, 1);
    tr->token_flags[0] = TRACE_TOKEN_SEQ_START;
    tr->active_off = calloc(n_tokens * n_layers + 1, sizeof(uint64_t));
    uint64_t total = 0;
    for (uint64_t i = 0; i < n_tokens * n_layers; i++)
        for (const int *s = sets[i]; *s >= 0; s++)
            total++;
    tr->active_ids = malloc((total ? total : 1) * sizeof(uint32_t));
    uint64_t k = 0;
    for (uint64_t i = 0; i < n_tokens * n_layers; i++) {
        for (const int *s = sets[i]; *s >= 0; s++)
            tr->active_ids[k++] = (uint32_t)*s;
        tr->active_off[i + 1] = k;
    }
}

#endif
