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
 *          or FLOPs / FLOP rate when that is larger */
#ifndef FLASHBED_SIM_COST_MODEL_H
#define FLASHBED_SIM_COST_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/model_shape.h"
#include "sim/hw_profile.h"

enum cost_policy { POLICY_NAIVE, POLICY_HYBRID, POLICY_PREDICTOR, POLICY_WINDOW };
enum cost_layout { LAYOUT_SPLIT, LAYOUT_BUNDLED };

/* FFN traffic per token, summed over layers, in neurons. */
struct token_volumes {
    double neurons_loaded;  /* read from flash */
    double rows_inserted;   /* placed into the DRAM cache */
    double rows_deleted;    /* removed from it (overwritten by the last row) */
    double cache_rows;      /* rows held, and computed on */
    double reads;           /* flash reads, when known from a replay (0: derive from layout) */
    double read_bytes;      /* bytes read, when known from a replay (0: derive) */
    char source[240];       /* where these numbers come from */
};

struct cost_config {
    const struct model_shape *shape;
    struct hw_profile *hw;
    char dtype[8];              /* weights on flash and in DRAM: f32, f16, bf16 */
    char baseline_io_dtype[8];  /* naive/hybrid bytes at this dtype ("" = dtype) */
    enum cost_policy policy;
    unsigned window_k;          /* window:K holds the last K tokens, this one included */
    enum cost_layout layout;
    double dram_share;          /* hybrid: share of the model kept resident */
    unsigned io_threads;
    double context_tokens;      /* mean KV-cache length over the decode */
    double predictor_fraction;  /* predictor parameters / model parameters */
    struct token_volumes vol;   /* for predictor and window policies */
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
};

int dtype_bytes(const char *dtype); /* 4, 2, or 0 when unknown */

const char *policy_name(enum cost_policy p);
/* "naive", "hybrid", "predictor", "window:K" -> policy and K. 0 or -1.
 * window:K keeps the neurons of the last K tokens, the current one
 * included, so window:1 is the predictor alone and the paper's k = 4 is window:5. */
int parse_policy(const char *text, enum cost_policy *p, unsigned *k);
int parse_layout(const char *text, enum cost_layout *l);

/* Volumes per token from fractions of all FFN neurons (the paper's way of
 * stating them): predictor loads `loaded` and keeps nothing; the window
 * loads `loaded`, evicts as many, and holds `resident`. */
void volumes_from_fractions(const struct model_shape *s, enum cost_policy p, double loaded,
                            double resident, struct token_volumes *v);

/* Turns a profile's derive_from rules (paper rows) into rates. Loads the
 * model shapes the rules name. 0, or -1 with a reason. */
int cost_resolve_profile(struct hw_profile *hw, char *err, size_t errlen);

int cost_predict(const struct cost_config *c, struct cost_prediction *out, char *err, size_t errlen);

#endif
