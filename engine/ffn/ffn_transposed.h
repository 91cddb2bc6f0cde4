/* Input sparsity (TEAL-style, the neuron source teal) with the FFN on
 * flash (issue 33): the flash FFN of the transposed layout
 * (cache/transposed.h), reading ffn_t.bin (engine/model/ffn_transposed.h).
 * Per token and layer, on the cpu backend:
 *
 *   1. channels: the input channels j of x with |x_j| above the layer's
 *      input cut (sparsify.json's, as neuron_select's teal_layer)
 *   2. the channel cache decides (cache_request over d_model channel
 *      bundles: hits, misses, deletions, by the policy as for neuron rows);
 *      missing bundles are read from ffn_t.bin with the reader pool
 *      (direct I/O, aligned) into their cache rows, or into a staging area
 *      when the policy does not keep them
 *   3. z = up x', g = gate x' as sums of the kept channels' columns times
 *      x_j (ck_axpy_rows, the compute team), hits first, then each batch of
 *      reads as it lands
 *   4. rows of down: neuron i when |h_i| passes the layer's intermediate
 *      cut (h = act(g)·z, or act(z + b) without a gate: teal_layer's rule)
 *   5. the down cache decides the same way over d_ff down rows; y = the sum
 *      of h_i times down row i, plus the down bias
 *
 * Both caches have the run's policy; their capacities are
 * cache_transposed_capacity's split of the budget (run_plan_transposed).
 * Policies that read whole layers (naive, hybrid) or rank sets known
 * beforehand (hot, belady, friends) are refused by the run's setup; no
 * read-ahead (the channels depend on this layer's x). Counted per token
 * as the caches decided: bytes and reads of each stream (what replay of
 * the same sets counts). Recording (cfg.record), per token and layer the
 * sink gets the kept channels (its channels hook) and then the kept rows
 * of down as the active set, no predicted set: what steps 1 and 4 chose,
 * which replay --layout transposed then decides the same way. Everything
 * is allocated by create; nothing per token. One caller at a time (the engine's forward pass).
 *
 * Its reads are still its own (slots, synchronous batches, checksums,
 * counts), not the streamer's (engine/ffn/streamer.h) that the neuron
 * bundle's FFN uses: moving them there keeps the counts only once the
 * streamer can compute just the needed rows held, in the needed order
 * (it computes every row its cache holds, in cache order, which is the
 * neuron FFN's sum and not this one's), keep rows in place (its cache
 * moves the last row into a hole and counts the move; this one's slots
 * do not move) and count a stream's reads as they complete. What would
 * not come with it anyway: read-ahead, since layer L+1's channels depend
 * on layer L's output and its rows of down on its own h, so no set is
 * known before the layer's input; and the device path, since no backend
 * op sums gathered rows (ck_axpy_rows is the cpu kernel's; backend.h has
 * ffn_rows only), so a device run needs that op first.
 *
 * It is a struct ffn_ops like ffn_flash, and ffn_flash's per-token
 * accessors (ffn_flash_take_token, ffn_flash_error, ffn_flash_dram_bytes,
 * ...) answer for it, so a run measures it as any flash FFN. */
#ifndef FLASHBED_ENGINE_FFN_TRANSPOSED_H
#define FLASHBED_ENGINE_FFN_TRANSPOSED_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/ffn/ffn.h"
#include "engine/ffn/ffn_flash.h"

/* create reads its struct ffn_flash_config from f->config: policy, layout
 * (transposed), capacity_rows and stream.staging_rows (channels),
 * down.capacity_rows and down.staging_rows, the teal thresholds (select),
 * the stream's I/O settings and verify. */
extern const struct ffn_ops ffn_transposed;

/* Whether f is this FFN (ffn_flash's accessors ask). */
static inline bool ffn_is_transposed(const struct ffn *f)
{
    return f->ops == &ffn_transposed;
}

/* The staging rows a stream of rows of row_bytes uses (the rows read for
 * one token only go through it a batch at a time): FFN_T_STAGING_BYTES of
 * them, at least FFN_T_STAGING_MIN_ROWS (a batch for the reader threads),
 * at most a layer's rows. */
enum { FFN_T_STAGING_BYTES = 4u << 20, FFN_T_STAGING_MIN_ROWS = 32 };
uint32_t ffn_transposed_staging_rows(uint32_t rows, uint64_t row_bytes);

/* ffn_flash's accessors' answers for this FFN. */
void ffn_transposed_next_token(struct ffn *f, unsigned trace_flags);
void ffn_transposed_take_token(struct ffn *f, struct ffn_flash_token *out);
const char *ffn_transposed_error(const struct ffn *f);
uint64_t ffn_transposed_dram_bytes(const struct ffn *f);
uint64_t ffn_transposed_read_align(const struct ffn *f);

#endif
