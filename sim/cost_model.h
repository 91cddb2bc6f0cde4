/* The inference cost model: per-token latency = I/O + memory management +
 * compute, for a model shape on a hardware profile under a policy, a flash
 * layout and a DRAM budget (the paper's §2-3 and App. C arithmetic).
 *
 * I/O      bytes read per token / flash throughput at that read size and the
 *          reader threads (naive and hybrid read sequentially: their best case)
 * memory   rows inserted and deleted per token x row size / DRAM copy
 *          bandwidth, + a fixed cost per row (the Fig. 6 structure)
 * compute  bytes of weights and KV cache touched per token / the backend's
 *          effective decode bandwidth (batch-1 decode is bandwidth-bound),
 *          or FLOPs / FLOP rate when that is larger
 *
 * Policies and layouts are cache/'s values (cache/policy_spec.h,
 * cache/layout_spec.h): naive and hybrid read the
 * whole (or the non-resident) model sequentially; every other policy reads
 * its per-token volumes at the layout's read size (split: the up, gate and
 * down pieces apart; any other layout: whole bundles, with the reads a
 * replay counted). Volumes stated as fractions of the FFN (the paper's way)
 * price predictor, window:K, split and bundled; lru, lfu, hot, belady,
 * friends and coalesce:G depend on a trace's exact sets and are priced only
 * from a replay of one (sim/trace_volumes.h).
 *
 * With fixed costs in the profile (calibrate measures them: hw_profile.h's
 * struct hw_fixed), every policy's reads are priced as the engine issues
 * them (sim/cost_engine.h: batches per layer, requests split at the
 * reader's largest read, rows padded on flash): per batch of R reads of
 * c bytes over T = min(R, io_threads) threads,
 *     batch_s + max(R c / X(c, T) + (tail(T) - 1) T s / X(s, T),
 *                   ceil(R / T) (read_s + c / read_bw))
 * (X the flash throughput above; the slowest thread's lag, a skew in time
 * measured on reads of s = HW_TAIL_READ_BYTES, whatever c is; the
 * reads one thread issues in turn, each its fixed cost and bytes), and
 * compute adds per parallel job of the team job_hot_s, or for a job
 * after a wait (a layer's reads, or the token's when its only job is the
 * lm_head's) the profile's cold job after that wait, less what the caller
 * hides of the late worker by taking its chunks (max(w/2, w - h), h the
 * job's work per thread), and token_s per token. Without them (an older profile, the paper's), naive
 * and hybrid stream sequentially as above and no fixed cost is priced.
 *
 * Verification (run --verify on, issue 34; cost_config.verify): every
 * bundle read whole from flash is checked against its CRC-32C, so memory
 * management adds its bytes / the profile's CRC rate (hw_profile.h:
 * crc_bw): rows_loaded x the bundle's bytes (unpadded, as the CRC covers
 * them) for the neuron policies, the FFN's non-resident rows for naive and
 * hybrid; split's reads of single vectors and the transposed layout are
 * not checked (0). A profile without a CRC rate leaves it unpriced
 * (verify_unpriced: 0 ms, said so) rather than guess one. The paper's
 * tables model the paper's engine, which checked nothing: verify off.
 *
 * With a device in the profile (calibrate --backend B), the FFN's rows are
 * also uploaded to it and the pass is launched and synchronised there:
 * struct cost_prediction's device terms (sim/device_terms.h).
 *
 * The transposed layout (input sparsity, the neuron source teal; issue 33)
 * is priced from its two streams' volumes (struct token_volumes' chan and
 * down): I/O is each stream's bytes at its own mean read size (a channel
 * bundle, vecs x d_ff weights; a row of down, d_model weights); memory
 * management each stream's copied rows at its row size and per-row cost;
 * the FFN's compute the weights its kept channels and rows touch:
 * vecs x kept channels x d_ff (up, and gate for a GLU, accumulated over
 * the kept channels) + kept rows x d_model (down), per layer; no predictor
 * (the source thresholds the input, it predicts nothing). Its reads are
 * priced by their bytes even on a profile with fixed costs (the engine's
 * batches of the transposed file are not modelled), and no device terms.
 * naive and hybrid stream the model as with any layout. */
#ifndef FLASHBED_SIM_COST_MODEL_H
#define FLASHBED_SIM_COST_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "cache/layout.h"
#include "cache/layout_spec.h"
#include "cache/policy.h"
#include "cache/policy_spec.h"
#include "common/model_shape.h"
#include "sim/hw_profile.h"

/* One stream of the transposed layout (input sparsity, cache/transposed.h)
 * per token, summed over layers, in its rows: channel bundles (vecs x d_ff
 * weights each) or rows of down (d_model weights). */
struct stream_volumes {
    double rows_loaded;     /* read from flash */
    double reads;           /* flash reads (0: one per row) */
    double read_bytes;      /* at the cost model's dtype (0: rows_loaded rows) */
    double rows_inserted, rows_deleted;
    double cache_rows;      /* rows held in DRAM */
    double computed;        /* rows computed on: the kept channels, or the kept rows of down */
};

/* FFN traffic per token, summed over layers, in neurons. */
struct token_volumes {
    double neurons_loaded;  /* read from flash */
    double rows_inserted;   /* placed into the DRAM cache */
    double rows_deleted;    /* removed from it (overwritten by the last row) */
    double cache_rows;      /* rows held, and computed on */
    double reads;           /* flash reads, when known from a replay (0: derive from layout) */
    double read_bytes;      /* bytes read, when known from a replay (0: derive) */
    bool replayed;          /* from a replay of a trace's exact sets (sim/trace_volumes.h) */
    char source[240];       /* where these numbers come from */
    /* the transposed layout: its two streams instead of the neuron fields above */
    bool transposed;
    struct stream_volumes chan, down;
};

struct cost_config {
    const struct model_shape *shape;
    struct hw_profile *hw;
    char dtype[8];              /* weights on flash and in DRAM: f32, f16, bf16 */
    char baseline_io_dtype[8];  /* naive/hybrid bytes at this dtype ("" = dtype) */
    struct policy_spec policy;  /* a cache/ policy: naive, hybrid, predictor, window:K (the last
                                 * K tokens, this one included; not auto), lru, lfu, hot, belady */
    struct layout_spec layout;  /* a cache/ layout: split, bundled, friends, coalesce:G */
    double dram_share;          /* hybrid: share of the model kept resident */
    unsigned io_threads;
    double context_tokens;      /* mean KV-cache length over the decode */
    double predictor_fraction;  /* predictor parameters / model parameters (the paper's figure) */
    double predictor_rank;      /* > 0: instead, a rank-r predictor per layer (cost_predictor_params) */
    char predictor_source[240]; /* where the predictor's size comes from ("": none priced) */
    struct token_volumes vol;   /* for every policy but naive and hybrid */
    char io_engine[16];         /* the engine's reads: psync or io_uring ("": psync) */
    bool verify;                /* run --verify on: bundles read whole are checked (priced in mem_ms) */
};

struct cost_prediction {
    double io_ms, mem_ms, compute_ms;
    double attention_ms, predictor_ms, ffn_ms, other_ms; /* compute, split */
    double serial_ms;           /* io + mem + compute, as Table 3 sums */
    double overlapped_ms;       /* max(io, compute) + mem: reads hidden behind compute */
    double bytes_per_token, reads_per_token, chunk_bytes, throughput;
    bool throughput_interpolated;
    double rows_inserted, rows_deleted, cache_rows;
    double model_bytes;         /* all weights at dtype */
    double dram_embeddings, dram_attention, dram_predictor, dram_ffn, dram_total;
    /* A profile with a device (hw_profile.h: device.present): the flash FFN
     * on it, its movement terms (sim/device_terms.h) per token, estimated
     * from the volumes (the whole-layer policies' and the predictor's rows
     * staged in one group per layer, a caching policy's appended in one,
     * its deletions moved in one batch), and their times, apart from the
     * totals above; device_total_ms adds them to serial_ms. */
    bool device;
    double dev_bytes_up, dev_bytes_down, dev_row_moves, dev_launches, dev_syncs;
    double dev_uploads, dev_downloads; /* the copies the bytes go in (their mean size sets the rate) */
    double h2d_ms, d2h_ms, launch_ms, sync_ms, device_total_ms;
    /* Verification (cost_config.verify): the bytes of bundles checked per
     * token and their time at the profile's CRC rate, inside mem_ms;
     * verify_unpriced when verification is on and the profile has no CRC
     * rate (verify_ms 0 then). */
    bool verify;                /* cost_config.verify */
    double verify_bytes, verify_ms;
    bool verify_unpriced;
    /* A profile with fixed costs (hw_profile.h: struct hw_fixed): the
     * reads priced as the engine issues them (sim/cost_engine.h), and
     * the fixed costs inside io_ms and compute_ms: io_batches batches of
     * reads a token, each batch_s (io_batch_ms), and what the slowest
     * reader thread or the reads' own latency add beyond the bytes
     * (io_tail_ms); team_jobs parallel jobs, team_cold_jobs of them cold
     * (jobs_ms), and the token's own (token_fixed_ms). */
    bool fixed;
    double io_batches, io_batch_ms, io_tail_ms;
    double team_jobs, team_cold_jobs, jobs_ms, token_fixed_ms;
};

/* Bytes of weights of the type named dtype (wtype_parse's spellings),
 * from the weight-type table (common/wtype.h); 0 for a name that is no
 * type. cost_row_bytes: a row of n weights (wtype_row_bytes), for whole
 * rows and matrices. cost_weight_bytes: one weight's share of its block,
 * block_bytes / block_elems, a fraction for a block type (Q4_0: 18/32),
 * which is why it is a double: the cost model prices aggregates with it
 * (parameter counts over whole models, bytes rescaled from a trace's
 * width), never a single element. */
uint64_t cost_row_bytes(const char *dtype, uint64_t n);
double cost_weight_bytes(const char *dtype);

/* A prediction's relative error against a reference (measured, or the
 * paper's): (predicted - reference) / reference, 0 when the reference is 0. */
double cost_rel_err(double predicted, double reference);

/* Parameters of a rank-r activation predictor on every layer
 * (engine/predictor/predictor.h): A r x d_model, B d_ff x r and a bias of d_ff. Its
 * multiply-adds per token are the same count less the biases. The cost
 * model holds it in DRAM at the weights' dtype and computes it like any
 * weights: bytes / decode bandwidth, or 2 FLOPs per parameter / FLOP rate. */
double cost_predictor_params(const struct model_shape *s, double rank);

/* Whether a policy or layout (its ops) is priced only from a replay of a
 * trace's exact sets: lru, lfu, hot, belady; friends, coalesce:G. */
bool cost_policy_needs_trace(const struct policy_ops *p);
bool cost_layout_needs_trace(const struct layout_ops *l);

/* Checks a policy and a layout for cost_predict: there is one, and, when no
 * trace is replayed, it is priceable without one. The error names the
 * policy or layout. 0, or -1 with err. */
int cost_check_policy(const struct policy_spec *policy, bool have_trace, char *err, size_t errlen);
int cost_check_layout(const struct layout_spec *layout, bool have_trace, char *err, size_t errlen);

/* Volumes per token from fractions of all FFN neurons (the paper's way of
 * stating them): the predictor (or any policy but the window) loads
 * `loaded` and keeps nothing; policy_window loads `loaded`, evicts as many,
 * and holds `resident`. */
void volumes_from_fractions(const struct model_shape *s, const struct policy_ops *p, double loaded,
                            double resident, struct token_volumes *v);

/* The transposed layout's volumes from densities (no trace): every token
 * reads its kept channels' bundles (channel_density of d_model per layer)
 * and its kept rows of down (down_density of d_ff), keeps none of them, and
 * computes on exactly them. */
void volumes_transposed_from_densities(const struct model_shape *s, double channel_density, double down_density,
                                       struct token_volumes *v);

/* Turns a profile's derive_from rules (paper rows) into rates. Loads the
 * model shapes the rules name (from set's configs folder). 0, or -1 with a
 * reason. */
int cost_resolve_profile(struct hw_profile *hw, const struct fb_settings *set, char *err, size_t errlen);

/* Prices c. 0, or -1 with err (an unknown dtype, no policy or layout; a
 * policy or layout that needs a trace without replayed volumes; a profile
 * lacking a rate). */
int cost_predict(const struct cost_config *c, struct cost_prediction *out, char *err, size_t errlen);

#endif
