/* Input sparsity (TEAL-style, the neuron source teal) with the FFN on
 * flash (issue 33): the flash FFN of the transposed layout
 * (cache/transposed.h), reading ffn_t.bin (engine/model/ffn_transposed.h).
 * Per token and layer, on the cpu backend:
 *
 *   1. channels: the input channels j of x with |x_j| above the layer's
 *      input cut (sparsify.json's, as neuron_select's teal_layer)
 *   2. the channel streamer (engine/ffn/streamer.h) decides over d_model
 *      channel bundles (cache_request: hits, misses, deletions, by the
 *      policy as for neuron rows) and reads the missing bundles from
 *      ffn_t.bin (direct I/O, aligned) into their cache rows, or into its
 *      staging area when the policy does not keep them, checking each
 *      against ffn_t.crc32c
 *   3. z = up x', g = gate x' as sums of the kept channels' columns times
 *      x_j (ck_axpy_rows, the compute team), hits first in channel order,
 *      then each batch of reads as it lands, in read order
 *   4. rows of down: neuron i when |h_i| passes the layer's intermediate
 *      cut (h = act(g)·z, or act(z + b) without a gate: teal_layer's rule)
 *   5. the down streamer does the same over d_ff rows of down; y = the sum
 *      of h_i times down row i, plus the down bias
 *
 * The two streamers share one reader of ffn_t.bin, whose layers hold both
 * streams (a layer's channel bundles, then its rows of down: each
 * streamer's units at the file's per-layer pitch, its checksums at theirs)
 * and sum in needed order (STREAMER_NEEDED_ORDER: only the needed rows, in
 * the needed order, which fixes the bits; their cache rows stay where they
 * landed). Both caches have the run's policy; their capacities are
 * cache_transposed_capacity's split of the budget (run_plan_transposed).
 * Policies that read whole layers (naive, hybrid) or rank sets known
 * beforehand (hot, belady, friends) are refused by the run's setup.
 * Counted per token as the caches decided: bytes and reads of each stream
 * as their batches complete (what replay of the same sets counts).
 * Recording (cfg.record), per token and layer the sink gets the kept
 * channels (its channels hook) and then the kept rows of down as the
 * active set, no predicted set: what steps 1 and 4 chose, which replay
 * --layout transposed then decides the same way. Everything is allocated
 * by create; nothing per token. One caller at a time (the engine's
 * forward pass).
 *
 * What the streamer gives the neuron FFN and this one cannot use:
 *   read-ahead: impossible here. Layer L+1's channels depend on layer L's
 *     output (x of L+1), and a layer's rows of down on its own h, so no
 *     set is known before the layer's input; the streamers are opened
 *     without it.
 *   the device path: not yet. It needs a backend op that sums gathered
 *     rows weighted by a vector (ck_axpy_rows is the cpu kernel's;
 *     backend.h has ffn_rows only) in every backend (cpu, sim, opencl,
 *     cuda, one kernel source), the needed order on the streamer's device
 *     side (ring and mirrors, which today move rows as the neuron cache
 *     does), and steps 1 and 4 either on the device or with x and z, g
 *     brought back per layer: the run's setup refuses a device (cpu only).
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
struct ffn_flash_sanity ffn_transposed_sanity(const struct ffn *f);
uint64_t ffn_transposed_dram_bytes(const struct ffn *f);
uint64_t ffn_transposed_read_align(const struct ffn *f);

#endif
