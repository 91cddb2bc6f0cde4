/* The FFN cache's decisions, one object for the offline replay
 * (sim/replay.c) and the engine's flash FFN (engine/ffn/ffn_flash.c): a policy
 * (cache/policy.h) and a flash layout (cache/layout.h), each given as a
 * value (cache/policy_spec.h, cache/layout_spec.h), one rule
 * that turns a byte budget into per-layer capacities, and ONE request path
 * per (token, layer):
 *
 *   needed rows already resident are hits; the misses, plus any rows the
 *   policy reads besides (naive, hybrid), go through the layout into reads;
 *   the misses are inserted; the policy then deletes what it does not keep.
 *
 * The caller does the I/O (or only counts it): a request returns what was
 * decided as lists of neuron ids. No I/O, no timing, no printing; 0 or -1
 * with a message in err. Not thread-safe: one object per replay or run;
 * layers are independent, so requests may go layer-major or token-major. */
#ifndef FLASHBED_CACHE_CACHE_H
#define FLASHBED_CACHE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/layout.h"
#include "cache/layout_spec.h"
#include "cache/policy.h"
#include "cache/policy_spec.h"
#include "cache/unit_geometry.h"
#include "traces/trace.h"

/* Policies and layouts are parsed into values by cache_policy_parse and
 * cache_layout_parse (cache/policy_spec.h, cache/layout_spec.h). */

/* The policy of this bare name ("window": no argument); NULL when none has
 * it. For tables that name an entry; a caller asks a policy's properties,
 * not its name. */
const struct policy_ops *cache_policy_named(const char *name);

/* The one sizing rule: a byte budget for the FFN caches is split evenly
 * over the layers (the paper preallocates one matrix per layer), in rows of
 * row_bytes, at most d_ff per layer. */
uint64_t cache_capacity_rows(uint64_t budget_bytes, uint64_t row_bytes, uint32_t n_layers, uint32_t d_ff);

/* The sizing rule of caches that share one budget, one per unit (input
 * sparsity's channel bundles and rows of down, cache/transposed.h): the
 * budget is split between them in proportion to their sizes on flash (a
 * layer's units at their stride), so each keeps the same share of its
 * units, the last taking what the others' shares leave; each part then
 * goes through cache_capacity_rows. A single cache takes the whole budget.
 * rows[i]: unit u[i]'s capacity per layer. */
void cache_shared_capacity(uint64_t budget_bytes, const struct unit_geometry *u, uint32_t n, uint64_t *rows);

/* The shape of what is cached and read: a unit geometry (unit_geometry.h)
 * as the cache and its layouts see it, made by cache_geometry_of_unit. */
struct cache_geometry {
    uint32_t n_layers, d_ff;  /* d_ff: the units (rows) of one layer */
    uint32_t vecs_per_row;    /* the unit's parts: 2 (up, down) or 3 (up, gate, down) of a bundle */
    uint64_t unit_bytes;      /* one unit's data: its parts back to back */
    uint64_t row_bytes;       /* one unit on flash: its stride (the engine's aligned stride) */
    uint64_t read_align;      /* direct I/O's block, to which a per-vector (split) read widens;
                               * 0: a vector is read exactly (packed replay) */
    struct unit_extent vec[UNIT_MAX_EXTENTS]; /* the parts (extents): where each lies, its bytes */
};

/* u's rows: its units per layer at its stride, its extents the vectors a
 * split read reads one by one; read_align as above. */
void cache_geometry_of_unit(const struct unit_geometry *u, uint64_t read_align, struct cache_geometry *g);

struct cache_config {
    struct policy_spec policy;    /* window:auto resolved: a K */
    struct layout_spec layout;
    uint64_t capacity_rows;       /* per layer; 0: none (policies that need no budget) */
    const struct trace *known;    /* the sets to come: hot, belady, friends need it */
    bool known_predicted;
    bool capacity_binds;          /* capacity_rows holds even when it is 0 (a budget below one row
                                   * per layer): window keeps nothing, hybrid nothing resident */
};

struct cache {
    struct policy p;
    struct layout lo;
    uint32_t *misses, *extra, *rows, *deleted;  /* [d_ff] each: the last request's lists */
    uint8_t *is_miss;                           /* [d_ff], zero between requests */
    struct layout_read *reads;                  /* [3 * d_ff]: the last request's reads */
    uint32_t *preload;                          /* [d_ff] scratch for preload lists */
};

/* The outcome of one request; the arrays belong to the cache and hold until
 * its next request. */
struct cache_step {
    uint32_t needed, hits;
    const uint32_t *misses;   /* needed, not resident: read, inserted */
    uint32_t n_misses;
    const uint32_t *extra;    /* read besides the misses, used for this token only */
    uint32_t n_extra;
    const uint32_t *rows;     /* misses + extra (+ a first token's counted preload), ascending */
    uint32_t n_rows;
    const uint32_t *deleted;  /* deleted by the policy after the token (misses among them
                               * were used once and dropped); extra rows not included */
    uint32_t n_deleted;
    uint32_t overflow;        /* needed rows a keeping policy could not keep (layer full) */
    uint32_t preloaded_read;  /* rows of the counted preload among rows (first token) */
    const struct layout_read *reads; /* the layout's reads of rows, when listed */
    uint32_t n_reads;
    uint64_t bytes, n_flash_reads;   /* what the layout counts for rows */
    uint32_t resident_after;  /* rows the layer keeps for the next token */
};

/* Sets the cache up; every row starts on flash except what the policy
 * preloads (hybrid's resident part, hot's pinned rows). 0, or -1 with err
 * (no policy or K unresolved, no layout, hot/belady/friends
 * without known sets, memory). */
int cache_open(struct cache *c, const struct cache_config *cfg, const struct cache_geometry *g, char *err,
               size_t errlen);
void cache_close(struct cache *c);

/* Rows of layer l the policy preloaded (ascending) into out [d_ff]; returns how many. */
uint32_t cache_preloaded_rows(const struct cache *c, uint32_t l, uint32_t *out);

/* Token t of layer l needs need[0..n) (ascending, distinct, < d_ff). Tokens
 * of one layer come in order from 0. list_reads: also list the layout's
 * reads (layouts with lists_reads); sizes: a histogram to add the reads to,
 * or NULL. */
void cache_request(struct cache *c, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n, bool list_reads,
                   struct read_size_hist *sizes, struct cache_step *step);

#endif
