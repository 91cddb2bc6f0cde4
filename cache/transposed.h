/* The transposed layout: input sparsity (TEAL-style, the neuron source
 * `teal`) read from flash (issue 33). Decisions only, as cache.h.
 *
 * Input sparsity drops input channels j of the FFN's input x (after the
 * norm): a dropped channel's column of up (and gate) is never read. Then the
 * intermediate h = act(gate x') * (up x') is thresholded and the rows of
 * down of the small h_i are not read either. Stored by neuron (ffn.bin's
 * row-column bundles) the kept columns are scattered over every bundle; the
 * transposed file (ffn_t.bin, engine/model/model_format.h) keeps together
 * what this source reads together: per layer, one channel bundle per input
 * channel (its up column [d_ff], then its gate column [d_ff] for a GLU),
 * then one down row per neuron [d_model].
 *
 * A token's layer is then two requests, each to a cache (cache.h) of its
 * own with the same policy: the kept channels over d_model channel bundles
 * ("channels"), and the kept rows of down over d_ff down rows ("down"). In
 * both streams every row needed and not resident is a read of its own
 * (layout_transposed, as bundled: a channel bundle is already d_ff-sized,
 * far past the SSD's knee, Fig. 2b). The replay (sim/replay.c), the engine's
 * flash FFN and the cost model all split a budget and shape the two caches
 * through the functions here, so the three agree on what is cached and read.
 * Plain functions of their arguments; thread-safe. */
#ifndef FLASHBED_CACHE_TRANSPOSED_H
#define FLASHBED_CACHE_TRANSPOSED_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"

/* The two streams' shapes: chan, the channel bundles (UNIT_CHANNEL_BUNDLE:
 * d_model per layer, an up column and for a GLU a gate column of d_ff
 * weights) and down, the rows of down (UNIT_DOWN_ROW: d_ff per layer of
 * d_model weights), each as a unit geometry and as its cache's geometry
 * (cache_geometry_of_unit). align: the engine's direct-I/O block
 * (FFN_ALIGN), to which each unit's stride is padded and per-vector reads
 * widen; 0 for units packed exactly (the replay's default). */
struct transposed_geometry {
    struct unit_geometry chan_unit, down_unit;
    struct cache_geometry chan, down;
};

/* 0, or -1 with err (unit_geometry_make's refusals). */
int cache_transposed_geometry(const struct unit_dims *d, uint64_t align, struct transposed_geometry *g, char *err,
                              size_t errlen);

/* The one sizing rule of the two caches (cache_shared_capacity over the
 * two units): the budget is split between them in proportion to their
 * whole sizes on flash (row_bytes x rows x layers), so both keep the same
 * share of their rows; each part then goes through cache_capacity_rows.
 * *chan_rows, *down_rows: per-layer capacities. */
void cache_transposed_capacity(uint64_t budget_bytes, const struct transposed_geometry *g, uint64_t *chan_rows,
                               uint64_t *down_rows);

#endif
