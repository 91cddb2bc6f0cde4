/* Per-layer predictor ranks from a default and overrides, as the paper
 * gives its "sensitive" layers larger ranks (App. C: the last 4 of OPT,
 * Falcon and Persimmon at 1024-1152, the middle 8 of Phi-2). The overrides'
 * syntax: comma-separated "L:R" or "A-B:R" (layers A to B inclusive, from
 * 0), later entries winning: "28-31:1024" or "0:64,2-3:32".
 *
 * Returns 0, or -1 with the reason in err (bad syntax, a layer past
 * n_layers, a rank outside 1..max_rank). No allocation; any thread. */
#ifndef FLASHBED_ENGINE_PREDICTOR_RANKS_H
#define FLASHBED_ENGINE_PREDICTOR_RANKS_H

#include <stddef.h>
#include <stdint.h>

/* ranks[n_layers] = rank, then the overrides of spec (NULL or "": none). */
int predictor_ranks_parse(const char *spec, uint32_t rank, uint32_t n_layers, uint32_t max_rank, uint32_t *ranks,
                          char *err, size_t errlen);

#endif
