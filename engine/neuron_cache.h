/* The paper's per-layer neuron cache (§3.3, Fig. 6): a matrix preallocated
 * once for the most rows the policy can hold, filled compactly from row 0.
 *
 *   rows[r]      one neuron bundle (model_format.h: up | gate | down), read
 *                from flash straight into place; the FFN is computed on
 *                rows[0 .. num_used) directly (backend ffn_rows)
 *   pointer[r]   the neuron id row r holds
 *   up_bias[r]   that neuron's up-projection bias (models with biases)
 *   row_of[i]    the row holding neuron i, or -1
 *   last_active[i]  the last token that needed neuron i (last_k_active)
 *
 * Deletion overwrites a leaving row with the last used row (one bundle copy,
 * pointer and bias moved with it) and shrinks num_used; insertion appends at
 * num_used. Nothing is reallocated and the matrix is never rewritten whole.
 *
 * A token's step: neuron_cache_evict (what left the window goes), then
 * neuron_cache_reserve (rows for the needed neurons not resident, grouped
 * into runs of adjacent neuron ids so one flash read fills each run), the
 * reads, then compute over the rows. One cache per layer; not thread-safe
 * (the engine steps layers in order). */
#ifndef FLASHBED_ENGINE_NEURON_CACHE_H
#define FLASHBED_ENGINE_NEURON_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/io_buffer.h"

#define NEURON_CACHE_ALIGN 4096u /* rows start on direct-I/O boundaries */

struct neuron_cache {
    uint32_t d_ff;
    uint32_t capacity;      /* rows preallocated */
    uint64_t row_stride;    /* bytes per row: the model's bundle_stride */
    uint8_t *rows;          /* capacity * row_stride bytes, NEURON_CACHE_ALIGN-aligned */
    struct io_buffer rows_mem; /* the mapping behind rows (huge pages where allowed) */
    uint32_t *pointer;      /* [capacity] */
    float *up_bias;         /* [capacity], NULL when the model has no up bias */
    const float *bias_src;  /* [d_ff] the model's up bias, NULL without */
    uint32_t num_used;
    int32_t *row_of;        /* [d_ff] */
    int64_t *last_active;   /* [d_ff], -1: never */
    uint64_t deleted_total, inserted_total;
};

/* A run of `count` neurons with adjacent ids first..first+count-1 that go
 * into the adjacent rows row..row+count-1: one flash read of count bundles
 * at the file offset of `first`. */
struct neuron_run {
    uint32_t first, count, row;
};

/* Preallocates capacity rows of row_stride bytes (a multiple of
 * NEURON_CACHE_ALIGN) for a layer of d_ff neurons. up_bias: the layer's
 * [d_ff] up-projection bias, copied per row on insertion (NULL: none).
 * 0, or -1 with err. */
int neuron_cache_init(struct neuron_cache *c, uint32_t d_ff, uint32_t capacity, uint64_t row_stride,
                      const float *up_bias, char *err, size_t errlen);
void neuron_cache_free(struct neuron_cache *c);

/* Token `token` needs needed[0..n) (ascending, distinct ids < d_ff). Marks
 * them active at this token, then deletes every resident neuron that is not
 * needed now and was last active before token - (window - 1): window K
 * keeps the neurons of the last K tokens, the current one included (the
 * paper's k = 4 is window 5); window 0 deletes every row (the predictor
 * alone: load all it needs, keep nothing). A resident neuron never active
 * (last_active -1: a gap row) is outside every window, also in the first
 * tokens. token >= 0 and never decreases from call to call (a new sequence
 * goes on counting, or starts from a fresh cache). Returns the rows deleted. */
uint32_t neuron_cache_evict(struct neuron_cache *c, const uint32_t *needed, uint32_t n, int64_t token,
                            uint32_t window);

/* Deletes neuron id's row if it is resident (the last row moves into it).
 * What a cache/ policy decided to drop. */
void neuron_cache_delete(struct neuron_cache *c, uint32_t id);

/* Appends a row for neuron id (not resident; num_used < capacity) and
 * returns it: rows appended in ascending id order are adjacent, so one
 * flash read of adjacent neurons fills them. */
uint32_t neuron_cache_append(struct neuron_cache *c, uint32_t id);

/* Only marks needed[0..n) as active at this token (what evict does first):
 * evict(c, NULL, 0, ...) then mark drops what left the window whether or
 * not this token needs it, as the paper's window does between tokens. */
void neuron_cache_mark(struct neuron_cache *c, const uint32_t *needed, uint32_t n, int64_t token);

/* Appends rows for the needed neurons that are not resident, as runs in
 * ascending id order, into runs[] (room for n runs). gap G > 0 lets one run
 * also take up to G non-needed, non-resident neurons lying between two
 * misses (coalesced reads: those neurons become resident too); a resident
 * neuron always ends a run. Sets pointer, row_of, up_bias for the new rows
 * and grows num_used. Gap rows keep their last_active (they were not
 * needed), so the next evict deletes them unless that token needs them.
 * Returns the number of runs, *rows_added the rows appended (gap rows
 * included); or -1 when the rows would pass capacity: nothing changed,
 * runs[] untouched, *rows_added the rows it would have needed. */
int neuron_cache_reserve(struct neuron_cache *c, const uint32_t *needed, uint32_t n, uint32_t gap,
                         struct neuron_run *runs, uint32_t *rows_added);

/* Rows appended by the last reserve are filled from flash by the caller;
 * this checks the invariants (every resident neuron exactly once, pointer
 * and row_of agree, num_used <= capacity) for tests: 0, or -1 with err. */
int neuron_cache_check(const struct neuron_cache *c, char *err, size_t errlen);

#endif
