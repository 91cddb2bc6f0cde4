/* The paper's per-layer neuron cache storage (§3.3, Fig. 6): a matrix
 * preallocated once for the most rows the layer can hold, filled compactly
 * from row 0.
 *
 *   rows[r]      one neuron bundle (model_format.h: up | gate | down), read
 *                from flash straight into place; the FFN is computed on
 *                rows[0 .. num_used) directly (backend ffn_rows)
 *   pointer[r]   the neuron id row r holds
 *   up_bias[r]   that neuron's up-projection bias (models with biases)
 *   row_of[i]    the row holding neuron i, or -1
 *
 * This is storage only. Which neurons leave and which are kept is decided
 * by the policy objects in cache/; the engine (ffn_flash.c) then deletes and
 * appends here. Deletion moves the last used row into the hole (one bundle
 * copy, pointer, row_of and bias with it) and shrinks num_used; insertion
 * appends at num_used. Nothing is reallocated and the matrix is never
 * rewritten whole, so a step costs only the rows it changes.
 *
 * Kept in place (neuron_cache_keep_in_place, input sparsity's caches,
 * whose rows are summed in the needed order and never as a block): a
 * deletion leaves a hole and moves nothing; an append takes the hole
 * freed last (a stack; a fresh cache hands out row 0, 1, ... in order).
 * rows[0 .. capacity) then holds num_used rows among free ones
 * (pointer NEURON_CACHE_FREE).
 *
 * Consecutive appends take consecutive rows. So neurons first..first+k-1
 * appended in ascending id order, with no delete in between, lie in k
 * adjacent rows in the order ffn.bin holds them, and one flash read of k
 * bundles at first's file offset fills them all.
 *
 * The caller keeps num_used <= capacity (it knows the policy's budget and
 * reports a policy that keeps too much); append refuses rather than pass
 * capacity, so a mistake there cannot write past the arrays. One cache per
 * layer; not thread-safe (the engine steps layers in order). */
#ifndef FLASHBED_ENGINE_NEURON_CACHE_H
#define FLASHBED_ENGINE_NEURON_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/io_buffer.h"

#define NEURON_CACHE_ALIGN 4096u /* rows start on direct-I/O boundaries */

/* What neuron_cache_append returns when it appends nothing. */
#define NEURON_CACHE_NO_ROW UINT32_MAX
/* A free row's pointer in a cache kept in place. */
#define NEURON_CACHE_FREE UINT32_MAX

struct neuron_cache {
    uint32_t d_ff;
    uint32_t capacity;      /* rows preallocated */
    uint64_t row_stride;    /* bytes per row: the model's bundle_stride */
    uint8_t *rows;          /* capacity * row_stride bytes, NEURON_CACHE_ALIGN-aligned; NULL when
                             * the rows live elsewhere (a device's memory: bookkeeping only) */
    struct io_buffer rows_mem; /* the mapping behind rows (huge pages where allowed) */
    uint32_t *pointer;      /* [capacity] */
    float *up_bias;         /* [capacity], NULL when the model has no up bias */
    const float *bias_src;  /* [d_ff] the model's up bias, NULL without */
    uint32_t num_used;
    int32_t *row_of;        /* [d_ff] */
    uint32_t *free_rows;    /* kept in place: [capacity] a stack of the free rows (the top taken next);
                             * NULL: compact (a deletion moves the last row into the hole) */
    uint32_t n_free;
};

/* Preallocates capacity rows (1..d_ff) of row_stride bytes (a nonzero
 * multiple of NEURON_CACHE_ALIGN) for a layer of d_ff neurons, none
 * resident; without host_rows only the bookkeeping (rows NULL: the rows
 * are a device's, which the caller moves as delete says). up_bias: the
 * layer's [d_ff] up-projection bias, copied per row on append (NULL:
 * none); it must outlive the cache. 0, or -1 with err and *c cleared
 * (neuron_cache_free on it is safe). */
int neuron_cache_init(struct neuron_cache *c, uint32_t d_ff, uint32_t capacity, uint64_t row_stride,
                      const float *up_bias, bool host_rows, char *err, size_t errlen);

/* Releases everything and clears *c; safe twice, and after a failed init.
 * A cleared cache (zeroed, freed, or a failed init: a layer the engine
 * gives no rows) holds nothing: append refuses and delete finds nothing. */
void neuron_cache_free(struct neuron_cache *c);

/* From now on rows stay where they were appended (the cache must hold
 * none yet): 0, or -1 with err (memory). */
int neuron_cache_keep_in_place(struct neuron_cache *c, char *err, size_t errlen);

/* Deletes neuron id's row (kept in place: the row becomes a hole): the last used row (bytes, pointer, row_of, up
 * bias) moves into it, unless it was the last row itself, and num_used
 * shrinks by one. Returns whether id was resident; a neuron that is not
 * (or id >= d_ff) changes nothing. */
bool neuron_cache_delete(struct neuron_cache *c, uint32_t id);

/* Appends neuron id at row num_used (kept in place: the free row on top
 * of the stack) and returns that row, with pointer,
 * row_of and up bias set; its bytes are the caller's to fill (a flash read
 * into c->rows + row * row_stride). Returns NEURON_CACHE_NO_ROW and changes
 * nothing when the cache is full, id is already resident or id >= d_ff:
 * each is a caller's mistake, never a choice this storage makes. */
uint32_t neuron_cache_append(struct neuron_cache *c, uint32_t id);

/* The invariants, for tests: num_used <= capacity; every row in use
 * (rows [0, num_used), or kept in place those not free) holds a neuron
 * < d_ff whose row_of points back at it (so none is in two rows);
 * exactly num_used neurons have a row; each row's up bias is its neuron's.
 * 0, or -1 with err naming the first one broken. */
int neuron_cache_check(const struct neuron_cache *c, char *err, size_t errlen);

#endif
