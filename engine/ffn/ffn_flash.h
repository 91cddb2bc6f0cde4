/* The flash-resident FFN: the paper's system inside the engine. The FFN file
 * (ffn.bin) stays on flash; per token and layer the neurons the token needs
 * are read with a pool of reader threads (io/flash_reader.h) and the FFN is
 * computed on compact rows. Which rows stay in DRAM and how rows become
 * reads is asked of cache/ (cache/cache.h): the same policy and layout
 * objects, and the same request path, that the offline replay drives, so
 * a run reads exactly what `flashbed replay` counts for it. Steps 2 to 5's
 * reading is the streamer's (engine/ffn/streamer.h, for any unit
 * geometry); this FFN chooses the neurons and computes on the rows it
 * lands. One layer step:
 *
 *   1. which neurons: the oracle's up-projection, or the trace's set
 *   2. the decision: cache_request (misses, rows read besides, rows deleted)
 *   3. rows the policy dropped and this token does not need leave the
 *      layer's neuron cache (engine/ffn/neuron_cache.h, the paper's Fig. 6)
 *   4. compute over the rows held; then the needed rows it dropped leave
 *   5. rows it keeps are appended and read straight into place; rows used
 *      once (naive's and hybrid's streamed part, a predictor's rows, what a
 *      full cache cannot keep) are read into a staging area, a batch at a
 *      time, and computed there; a read that also covers rows it does not
 *      keep (coalescing) lands in a bounce buffer and is copied out
 *
 * Modes of the CLI are presets of a policy and a layout: naive (+ dram.bin
 * streamed every token), hybrid, predictor, window, all. "Needed" comes from
 * the oracle (the true activations, from up-projection rows held in DRAM for
 * that purpose: a measuring device, not a deployable predictor), from a
 * trace (which drives the reads of paper-scale shapes with synthetic
 * weights), or, as a deployment would, from the model's activation
 * predictor or a GLU FFN's gate projection (engine/ffn/neuron_select.h). The
 * predictor's weights and the gate's rows are held in DRAM and counted as
 * the engine's (a budget must hold them); the oracle's rows are reported
 * apart. With check, the true activations are computed beside a predictor,
 * gate or trace, and what the choice missed and added is counted per
 * token. Everything is allocated by create; nothing per token.
 *
 * On the engine's backend: on cpu the host path above, in place. On a
 * backend whose memory is not the host's (sim, opencl, cuda) the same
 * decisions are taken on the host, the layer's cache rows and biases are
 * mirrored in device memory (neuron_cache_dev.h: step 3's deletions as
 * batched row moves, step 5's rows uploaded into place once read) and the
 * FFN is computed there (ffn_flash_dev.h: once-used rows on a device
 * staging area); x is brought to the host only when a host-side chooser
 * reads it (the oracle, the gate, check, a record): the predictor is
 * computed on the device too (predictor_dev.h), only its logits come
 * down. Rows read from flash land in a pinned staging ring
 * (flash_ring.h) and go up straight into their cache or staging rows; the
 * host keeps the caches' bookkeeping only, not their rows. While a batch
 * of reads is in flight the host waits for the device first, so the
 * reads' remaining wait is the exposed I/O (io_ms: what the token paid for
 * its reads; read_ms is their whole time); the device meanwhile ran the
 * uploads and compute enqueued before, counted as compute. */
#ifndef FLASHBED_ENGINE_FFN_FLASH_H
#define FLASHBED_ENGINE_FFN_FLASH_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/layout_spec.h"
#include "cache/policy_spec.h"
#include "engine/ffn/ffn.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/streamer.h"
#include "engine/predictor/predictor.h"
#include "traces/trace.h"

/* which neurons: a neuron source as a value, engine/ffn/neuron_select.h's struct select_config */

/* The longest read the flash FFN hands its reader: longer ones are split. */
enum { FFN_FLASH_MAX_READ = STREAMER_MAX_READ };

/* naive's dram.bin streaming buffer: run_plan counts it against the budget. */
enum { FFN_FLASH_STREAM_SCRATCH = 64u << 20 };

/* The buffer naive streams dram.bin through: one layer's slice of the file
 * (what it reads per layer), aligned up, at most FFN_FLASH_STREAM_SCRATCH:
 * a small model's slice is far smaller than 64 MiB. */
static inline uint64_t ffn_flash_stream_scratch(uint64_t dram_bytes, uint32_t n_layers, uint64_t align)
{
    uint64_t per = (dram_bytes + n_layers - 1) / n_layers;
    per = (per + align - 1) / align * align;
    if (per == 0)
        per = align;
    return per < FFN_FLASH_STREAM_SCRATCH ? per : FFN_FLASH_STREAM_SCRATCH;
}

/* The neuron bundle's own settings: the true activations it computes
 * beside (or as) its choice, and naive's dram.bin. */
struct ffn_flash_neuron {
    float threshold;             /* the true activations of SiLU and GELU FFNs (the oracle's choice,
                                  * check's and what is recorded): |act(gate·x)·(up·x)|, or |act(up·x + b)|
                                  * without a gate, above this; the ReLU family ignores it */
    bool check;                  /* a source not the truth: also compute the true activations (the oracle's
                                  * rows in DRAM) and count missed and extra neurons per token */
    bool stream_dram;            /* naive: also stream dram.bin every token, through a
                                  * scratch buffer (ffn_flash_stream_scratch) */
};

/* A second stream's cache and staging: input sparsity's rows of down
 * (engine/ffn/ffn_transposed.h; capacity_rows and stream.staging_rows are
 * then the channel stream's). */
struct ffn_flash_down {
    uint64_t capacity_rows;
    uint32_t staging_rows;
};

struct ffn_flash_config {
    /* the decision (cache/): which rows stay and how rows become reads */
    struct policy_spec policy;   /* which rows stay (window:auto resolved: the plan's) */
    struct layout_spec layout;   /* how rows become reads (cache/layout_spec.h) */
    uint64_t capacity_rows;      /* the policy's rows per layer (cache_capacity_rows); 0: none */
    const uint32_t *layer_rows;  /* [n_layers] rows of storage per layer, or NULL: derived */
    const struct trace *profile; /* a computed source: the sets a policy that needs them ranks (hot's
                                  * warm-up profile, engine/run/warmup.h: active sets); NULL: none */
    struct streamer_config stream; /* the reader, the checks against ffn.crc32c (model_integrity.h;
                                  * off: --verify off), read-ahead (ffn_flash_reads_ahead), the staging
                                  * and bounce rows: engine/ffn/streamer.h */
    struct select_config select; /* the source that chooses the units, with its arguments (a predictor
                                  * of the model's shape, the gate's thresholds, teal's, the trace's
                                  * sets); the oracle's threshold is neuron.threshold */
    struct ffn_flash_neuron neuron;
    struct ffn_flash_down down;  /* teal under the transposed layout */
    const struct trace_sink *record; /* NULL, or gets each token's sets: the true active ones (the oracle's,
                                  * or computed beside any other source) and, under a predictor or the
                                  * gate, the chosen ones as predicted sets; without check a
                                  * predictor's or the gate's choice stands for both; the transposed
                                  * FFN (teal): the kept channels (channels) and kept rows of down */
};
/* Whether layers' reads go ahead (cfg->stream.read_ahead): on the host, where a
 * trace gives the sets before a layer's input, under a policy that keeps
 * what it reads (naive and hybrid compute their rows from the staging
 * area, which the layer computing holds). Each layer still goes ahead only
 * when all its rows land in their cache rows (engine/ffn/streamer.h: struct streamer_step). */
static inline bool ffn_flash_reads_ahead(const struct ffn_flash_config *cfg, bool on_device)
{
    return cfg->stream.read_ahead && !on_device && cfg->policy.ops && !cfg->policy.ops->extra_reads &&
           select_source(&cfg->select)->replays;
}

/* What a token's pass says of its numbers, for the stops of a run
 * (engine/run/run_stop.h): an oracle that found no neuron active in any layer (NaN
 * pre-activations are never active), a hidden state that turned NaN or
 * infinite. */
struct ffn_flash_sanity {
    uint32_t layers_chosen;  /* layers whose needed set the oracle computed (not naive's and hybrid's
                              * whole reads; not a predictor's, the gate's or teal's guesses, which
                              * may rightly choose none, nor a replayed trace's sets) */
    uint32_t layers_empty;   /* of those, the layers that needed no neuron */
    uint32_t nonfinite;      /* layers whose FFN input or output, on the host, held NaN or infinity */
    uint32_t first_nonfinite; /* the first of them (with nonfinite) */
    bool first_in_input;     /* it was that layer's FFN input (else its output) */
};

/* What one token cost, summed over layers. */
struct ffn_flash_token {
    double io_ms;          /* waiting for reads; on a device, only after the device had finished all it was
                            * given before them (the exposed I/O; the wait for the device is compute) */
    double mem_ms;         /* the policy's decisions, deletions, insertions, copies */
    double ffn_ms;         /* computing the FFN on the rows */
    double predictor_ms;   /* finding the needed neurons (the oracle's up-projection, the predictor, the gate) */
    double check_ms;       /* computing the true activations beside another source (check, record) */
    double read_ms;        /* the reads' own time: from each batch's hand-off to the reader threads to its
                            * last completion (io/flash_reader.h), whatever the host did meanwhile; on a
                            * device what of it io_ms does not hold overlapped the device's work */
    double h2d_ms;         /* the device's time in this token's uploads (backend event timing); 0 on cpu */
    uint64_t layers_ahead;        /* read-ahead: layers whose step was done, and reads issued, before
                                   * their turn (while the layer before computed) */
    uint64_t bytes_read, reads;   /* FFN reads as the layout plans them (replay counts the same) */
    uint64_t io_requests;         /* reads handed to the I/O engine (long ones split) that completed */
    uint64_t rows_verified;       /* bundles checked against ffn.crc32c as they were read (--verify on): read
                                   * whole, or (split) once a batch has landed all of a row's vectors;
                                   * the transposed FFN: channel bundles and rows of down (ffn_t.crc32c) */
    uint64_t verify_retries;      /* of those, read again once because the check failed; a second mismatch
                                   * stops the run as a failed read does, naming layer, neuron and offset */
    double verify_ms;             /* computing the checksums (part of mem_ms) */
    uint64_t read_retries;        /* of those, read again after a failed or short try (flash_reader.h);
                                   * a second failure stops the run, naming file, offset, layer and
                                   * neuron, and the rows its step appended leave the cache */
    uint64_t dram_bytes_read;     /* naive: dram.bin streamed */
    uint64_t rows_inserted, rows_deleted;
    uint64_t row_moves;    /* deletions that moved the last row into the hole (Fig. 6), all layers */
    uint64_t h2d_bytes;    /* uploaded to a device whose memory is not the host's (0 on cpu): rows
                            * appended and staged (row_stride bytes each, and 4 for an up bias),
                            * and the row moves lists (8 bytes a move) */
    /* on such a device, what the queue was given (sim/device_terms.h prices them): */
    uint64_t staged_groups; /* groups of rows used once computed on the device staging area */
    uint64_t append_groups; /* layers whose appended rows were computed as a group */
    uint64_t move_batches;  /* batched row moves */
    uint64_t upload_runs;   /* the staging ring's uploads of rows (each with its biases' upload) */
    uint64_t ring_waits;    /* waits for a ring slot's previous uploads before reusing it */
    uint64_t read_waits;    /* waits for the device while a batch of reads was in flight */
    uint64_t step_waits;    /* waits for a cached layer's previous step (not covered by a later wait) */
    uint64_t cache_rows;   /* rows held after loading, all layers */
    uint64_t needed;       /* neurons the token needed, all layers */
    uint64_t overflow_rows; /* needed rows the cache could not keep: read, used, dropped */
    uint32_t window_shrinks; /* window: tokens dropped early to fit the cache, all layers */
    /* check: against the true activations, all layers */
    uint64_t active;       /* neurons truly active */
    uint64_t missed;       /* active but not computed: neither chosen nor held in the cache */
    uint64_t extra;        /* chosen but not active */
    /* the transposed layout (input sparsity): each stream's reads as its cache decided, and the
     * channels kept (bytes_read, reads and needed are the two streams' sums) */
    uint64_t chan_bytes, chan_reads, down_bytes, down_reads, kept_channels;
    struct ffn_flash_sanity sanity;
};

extern const struct ffn_ops ffn_flash;

/* ffn_flash.create reads its struct ffn_flash_config from f->config
 * (engine_init_with's ffn_config). The accessors below also answer for the
 * transposed flash FFN of input sparsity (engine/ffn/ffn_transposed.h),
 * which takes the same configuration. */
/* Flags for the trace being recorded (TRACE_TOKEN_*), for the next token. */
void ffn_flash_next_token(struct ffn *f, unsigned trace_flags);
/* The last token's costs (since the previous call). */
void ffn_flash_take_token(struct ffn *f, struct ffn_flash_token *out);
/* The current token's sanity so far (all its layers once its pass has
 * run), before ffn_flash_take_token takes it with its costs. */
struct ffn_flash_sanity ffn_flash_sanity_of(const struct ffn *f);
/* The first failure (an I/O error, a token that does not fit the cache, a
 * trace write), or NULL: the run checks after every token and stops. */
const char *ffn_flash_error(const struct ffn *f);
/* Rows of storage the flash FFN gives each layer for a configuration when
 * cfg->layer_rows is NULL: the policy's capacity, hybrid's resident part,
 * a window without a budget the whole layer, nothing for naive and predictor. */
uint32_t ffn_flash_default_rows(const struct ffn_flash_config *cfg, uint32_t d_ff);
/* Bytes the FFN implementation holds in DRAM: caches, staging (on a
 * device the pinned ring, FLASH_RING_SLOTS x staging rows, and no cache
 * rows), and what chooses the neurons (the predictor's weights, the
 * gate's rows); the oracle's rows (the oracle's own, or check's) apart in
 * *oracle_bytes. */
uint64_t ffn_flash_dram_bytes(const struct ffn *f, uint64_t *oracle_bytes);
/* On a device whose memory is not the host's: the bytes the FFN holds
 * there (the caches' rows, biases and move lists, the staging area), and
 * whether the ring is pinned (else ordinary memory: slower uploads).
 * 0 and true on cpu. */
uint64_t ffn_flash_device_bytes(const struct ffn *f, bool *pinned);
/* The direct-I/O alignment ffn.bin is read at: a per-vector (split) read
 * widens to its blocks (cache/layout.h: layout_vector_span). */
uint64_t ffn_flash_read_align(const struct ffn *f);
/* What choosing the neurons holds in DRAM and costs in multiply-adds per
 * token for cfg on model m, known before create (a budget counts the
 * bytes): a predictor's weights, the gate's rows; 0 for the oracle (a
 * measuring device) and a trace. */
uint64_t ffn_flash_predictor_bytes(const struct model *m, const struct ffn_flash_config *cfg);
/* Under the oracle on a SiLU or GELU FFN: the threshold at or below which
 * a share of the |act(gate·x)·(up·x)| (|act(up·x + b)|) values of the run's
 * first tokens fell (engine/ffn/value_sample.h; sorts the sample), their
 * count in *values; -1 and 0 for any other source or FFN. */
float ffn_flash_threshold_cut(struct ffn *f, double share, uint64_t *values);
uint64_t ffn_flash_predictor_madds(const struct model *m, const struct ffn_flash_config *cfg);

#endif
