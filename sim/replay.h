/* Offline replay of an activation trace (traces/trace.h) against a DRAM
 * caching policy and a flash layout: how many bytes and reads each token
 * costs, how much DRAM the FFN cache holds, how many rows are inserted and
 * deleted (the memory-management work of the paper's Fig. 6).
 *
 * A library call, free of CLI concerns: the cost model (flashbed predict)
 * calls replay_run once per configuration and reads the per-token stats.
 *
 * Model: each (token, layer) needs a set of neurons (the trace's active or
 * predicted set). Needed rows already in DRAM are hits; the others are read
 * from flash (policies such as naive and hybrid read more). Every row read is
 * inserted into the layer's DRAM matrix; the policy then deletes rows to keep
 * what it wants for later tokens. A row is one neuron's weights: up column +
 * down row (+ gate row for GLU), rows_bytes = (2|3) rows of d_model weights of the header's type.
 * The policies, layouts and the request path are cache/'s (cache/cache.h),
 * the same objects the engine's flash FFN runs. A DRAM budget is split
 * evenly over layers (the paper preallocates one matrix per layer):
 * capacity-limited policies keep what fits, window:K shrinks for a layer
 * while it does not fit, hybrid keeps that many rows resident (without a
 * budget: half). Hybrid's resident rows are not counted as per-token reads
 * (preload_bytes); hot's pinned rows are read with the first token.
 *
 * Feasibility (a point of a budget study, `flashbed replay --dram-budget
 * 10%,25%,50%`): a replay under a budget of B bytes is INFEASIBLE when some
 * token needs more rows in one layer than the layer's share of the budget
 * holds, C = cache_capacity_rows(B) = B / row_bytes / n_layers: the rows a
 * token is computed from cannot all be in DRAM at once. This applies to
 * every policy that computes a token from its needed rows held in DRAM
 * (predictor, window:K, lru, lfu, hot, belady), those that ignore the
 * budget (predictor) included: the budget is the DRAM there is, whatever
 * the policy does with it. A budget below one row per layer (C = 0, a
 * budget of 0 given as a limit included) is infeasible for all of them.
 * naive and hybrid read whole layers (or their non-resident part) and
 * compute densely on rows streamed through: they need no room for a
 * token's set and are never infeasible (hybrid keeps C rows resident, 0
 * when C is 0, and then reads like naive). An infeasible replay still runs
 * and its numbers are what it costs when the rows that do not fit are read
 * and dropped after use (overflow): a point to show, not to compare.
 * Without a budget (dram_budget 0, budget_binds false) every replay is
 * feasible.
 *
 * DRAM peak (peak_rows, dram_peak_bytes): the rows the FFN cache holds
 * while a token is computed, summed over layers, as the paper's matrix
 * holds them (§3.3, Fig. 6: preallocated, written in place): the rows a
 * policy evicts to make room leave before the token's misses take their
 * slots, so a capacity-limited policy (lru, lfu, window under a budget)
 * never holds more than its share while a token needs no more than that;
 * rows dropped after use (the misses of predictor and hot, a window's rows
 * leaving after this token while there is room, rows a full layer cannot
 * keep) count while the token is computed; the rows naive and hybrid
 * stream through do not (a read buffer: the paper's Table 2 gives hybrid
 * its resident half and naive nothing). Some policies hold more than the
 * share for a feasible token by their design, not the order: hot (its
 * misses beside the pinned rows that fill the share), lfu and belady (a
 * needed row they drop after use rather than a row they keep: the least
 * frequent, the one needed again last). Such a row is
 * feasible with a TRANSIENT: transient_rows, the most rows one layer held
 * over its share, said beside "feasible" with its size.
 *
 * The transposed layout (input sparsity, cache/transposed.h) replays a trace
 * with channel sets as two caches of the same policy: the channel bundles
 * (needed: the token's kept channels, of d_model; always the actual sets)
 * and the rows of down (needed: the active, or predicted, sets). The budget
 * is split by cache_transposed_capacity; rows are packed (align 0), or with
 * row_stride padded to that alignment, each stream's stride as
 * cache_transposed_geometry pads it (aligned: FFN_ALIGN, the engine's
 * ffn_t.bin, whose run then reads what the replay counts); a channel
 * bundle is one read of its row, as bundled reads a neuron's bundle; a
 * token's counts are the two streams' sums, and it is infeasible when
 * either stream's set does not fit its share. The transposed layout needs
 * channel sets; a neuron layout (split, bundled, coalesce, friends) is
 * refused on a trace with them: input sparsity computes every neuron from
 * the kept channels' columns, so a neuron layout would read every bundle,
 * which its needed sets (the rows of down kept) do not say. */
#ifndef FLASHBED_SIM_REPLAY_H
#define FLASHBED_SIM_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/layout.h"
#include "cache/layout_spec.h"
#include "cache/policy_spec.h"
#include "cache/transposed.h"
#include "traces/trace.h"

/* What to replay. policy: naive, hybrid, predictor, window:K (K >= 1 tokens,
 * the current one included: the paper's k = 4 is window:5), lru, lfu, hot,
 * belady, as a value (cache/policy_spec.h; not window:auto). layout: split,
 * bundled, friends, coalesce:G (bundled rows merged into one read across
 * gaps of up to G unneeded rows), as a value (cache/layout_spec.h). */
struct replay_spec {
    struct policy_spec policy;
    struct layout_spec layout;
    uint64_t dram_budget;    /* bytes of FFN cache (0: none), for lru, lfu, hot, belady, and window and hybrid when given */
    bool use_predicted;      /* replay predicted sets (trace must have them), else active */
    bool budget_binds;       /* dram_budget is a limit even when it is 0 (a budget study's point):
                              * window and hybrid keep within it, feasibility is judged */
    uint64_t row_stride;     /* bytes a row takes in the cache and in a bundled read (0: the trace's
                              * packed row, replay_row_bytes); the engine's padded stride
                              * (replay_row_stride "aligned") holds and reads what a run does.
                              * Layout transposed: the alignment both streams' rows are padded to
                              * (0: packed) */
    uint64_t read_align;     /* a split (per-vector) read widens to blocks of this many bytes, as
                              * direct I/O reads it (run.json's summary.read_align); 0: exactly */
};

/* One token, summed over layers. */
struct replay_token {
    uint64_t bytes, reads;         /* flash traffic */
    uint64_t needed, hits;         /* needed rows, of which already in DRAM */
    uint64_t inserted, deleted;    /* rows written into / removed from the DRAM matrices */
    uint64_t peak_rows;            /* rows in DRAM while this token is computed (DRAM peak, above) */
    uint64_t kept_rows;            /* rows kept for the next token */
    uint64_t overflow;             /* needed rows a keeping policy could not keep (layer full) */
    uint64_t peak_bytes, kept_bytes; /* peak_rows and kept_rows in bytes (the transposed layout's two
                                      * streams have rows of two sizes) */
};

/* One stream of the transposed layout (cache/transposed.h): the channel
 * bundles (rows = d_model, needed = the trace's channel sets) or the rows
 * of down (rows = d_ff, needed = its active or predicted sets). */
struct replay_stream {
    uint32_t rows;                 /* rows per layer */
    uint64_t row_bytes;
    uint64_t capacity_rows;        /* per layer, the policy's (0: it ignores the budget) */
    uint64_t budget_rows;          /* per layer: cache_transposed_capacity's share of the budget */
    uint64_t max_needed_rows;      /* most rows one token needed in one layer */
    uint64_t transient_rows;       /* most rows one layer held over budget_rows while a token was computed */
    uint64_t preload_bytes;
    struct replay_token total;     /* sums over tokens (peak and kept not meaningful here) */
    struct replay_token *per_token;/* [n_tokens]: the stream's own counts per token (freed with the result) */
    double bytes_per_token, reads_per_token, hit_ratio;
};

struct replay_result {
    struct policy_spec pol;        /* the policy replayed */
    char policy[POLICY_NAME_MAX];  /* its name (cache_policy_name), as reports write it */
    struct layout_spec lay;        /* the layout replayed */
    char layout[LAYOUT_NAME_MAX];  /* its name (cache_layout_name), as reports write it */
    bool use_predicted;
    uint64_t n_tokens;
    uint32_t n_layers, d_ff;
    uint64_t row_bytes;
    uint64_t capacity_rows;        /* per layer; 0 for policies that ignore the budget */
    uint64_t preload_bytes;
    struct replay_token *per_token;/* [n_tokens] */
    struct read_size_hist read_sizes;
    struct replay_token total;     /* sums; peak_rows/kept_rows hold maxima */
    double bytes_per_token, reads_per_token, hit_ratio;
    double rows_inserted_per_token, rows_deleted_per_token;
    uint64_t dram_peak_bytes;      /* most DRAM the FFN cache held while a token was computed (above) */
    double dram_mean_bytes;        /* mean of that over tokens */
    double dram_kept_mean_bytes;   /* mean held between tokens */
    uint64_t events;               /* neuron-events replayed: sum of needed set sizes */
    double seconds, events_per_second;
    uint64_t friends_tokens;       /* friends layout: tokens the co-activation counts used */
    uint64_t window_shrinks;       /* window with a budget: tokens dropped early, all layers */
    /* the budget and whether the replay fits in it (feasibility, above) */
    bool budget_given;             /* spec.dram_budget > 0 or spec.budget_binds */
    uint64_t dram_budget;          /* spec.dram_budget */
    uint64_t budget_rows;          /* rows per layer the budget holds, whatever the policy */
    uint64_t max_needed_rows;      /* most rows one token needed in one layer */
    bool feasible;
    char infeasible[160];          /* why not ("" when feasible); no commas (a CSV field) */
    uint64_t transient_rows;       /* feasible with a transient (above): the most rows one layer held
                                    * over its share while a token was computed; 0: none */
    uint64_t transient_bytes;      /* those rows in bytes (the transposed layout: the larger stream's) */
    /* the transposed layout: its two streams; the fields above are their sums,
     * row_bytes the channel bundle's, capacity/budget/max_needed rows the
     * channel stream's (each stream's own are here) */
    bool transposed;
    struct replay_stream chan, down;
};

/* The row stride replay counts with, from its text: "packed" (0: the
 * trace's row as it is, replay_row_bytes: the paper's accounting),
 * "aligned" (rounded up to FB_BUNDLE_ALIGN, as flashbed's model folder
 * stores bundles and a run caches them: run.json's summary.row_stride), or
 * bytes (at least the packed row). A trace with channel sets (layout
 * transposed, two streams of two row sizes): the alignment each stream's
 * row is padded to, "aligned" FB_BUNDLE_ALIGN (ffn_t.bin's), or a power of
 * two in bytes. 0, or -1 with err. */
int replay_row_stride(const struct trace_meta *m, const char *text, uint64_t *out, char *err, size_t errlen);
/* The direct-I/O block a split read widens to, from text ("0": none, or
 * bytes): a power of two that divides row_bytes, the stride it is read at
 * (ffn.bin's stride is a multiple of the alignment it is read with).
 * 0, or -1 with err. */
int replay_read_align(uint64_t row_bytes, const char *text, uint64_t *out, char *err, size_t errlen);

/* Whether layout can replay a trace of m (its sets, the stride and the
 * alignment), as replay_run checks it: transposed needs channel sets and a
 * read alignment dividing its rows' (row_stride), a neuron layout refuses
 * channel sets. 0, or -1 with err. */
int replay_check_layout(const struct trace_meta *m, const struct layout_spec *layout, uint64_t row_stride,
                        uint64_t read_align, char *err, size_t errlen);

/* Bytes of one FFN row (neuron) of this trace's shape. */
uint64_t replay_row_bytes(const struct trace_meta *m);
/* The FFN's bytes on flash at row_stride (replay_row_stride's value): what
 * a budget's percentage is of. */
uint64_t replay_ffn_bytes(const struct trace_meta *m, uint64_t row_stride);
/* The transposed layout's two streams for a trace of m: rows padded to
 * row_align (0: packed), split reads widened to read_align. 0, or -1 with
 * err. */
int replay_transposed_geometry(const struct trace_meta *m, uint64_t row_align, uint64_t read_align,
                               struct transposed_geometry *g, char *err, size_t errlen);
/* The numbers a unit geometry is built from, as the trace's header gives
 * them, and the trace's units of kind at align (0: packed). 0, or -1 with
 * err. */
struct unit_dims replay_unit_dims(const struct trace_meta *m);
int replay_unit_geometry(const struct trace_meta *m, enum unit_kind kind, uint64_t align, struct unit_geometry *g,
                         char *err, size_t errlen);

/* Replays tr under spec into res (freed with replay_result_free). 0, or -1
 * with err (bad spec, predicted sets missing, memory). tr is only read and
 * there is no global state: several replays of one trace may run in
 * parallel threads. */
int replay_run(const struct trace *tr, const struct replay_spec *spec, struct replay_result *res,
               char *err, size_t errlen);
void replay_result_free(struct replay_result *res);

/* The p-th percentile read size at bucket resolution: the lower bound 2^b of
 * the bucket holding it (exact for power-of-two sizes); 0 without reads. */
uint64_t read_size_hist_percentile(const struct read_size_hist *h, double p);

#endif
