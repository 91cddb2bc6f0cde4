/* The flash-resident FFN: the paper's system inside the engine. The FFN file
 * (ffn.bin) stays on flash; per token and layer the neurons the token needs
 * are read with a pool of reader threads (io/flash_reader.h) into the
 * layer's neuron cache (engine/neuron_cache.h) and the FFN is computed on the
 * cache's compact rows. Baselines read more:
 *
 *   naive      every weight from flash every token: the whole layer's FFN
 *              into a staging buffer (computed on), and dram.bin streamed
 *              through a scratch buffer (the compute uses its resident copy,
 *              byte for byte the same)
 *   hybrid     the first R neurons of each layer resident, the rest read
 *              whole every token (R from the DRAM budget)
 *   predictor  the needed neurons only, nothing kept (split reads)
 *   window     + the last K tokens' neurons kept (split reads)
 *   all        + row-column bundles: one read per neuron, or coalesced runs
 *
 * "Needed" comes from the oracle (the true activations, from up-projection
 * rows held in DRAM for that purpose: a measuring device, not a deployable
 * predictor) or from a trace (which drives the reads of paper-scale shapes
 * with synthetic weights). Split reads fetch a bundle as two (three with a
 * gate) aligned pieces: the bytes are the same as one bundle read, the
 * reads are not — bundling's effect. */
#ifndef FLASHBED_ENGINE_FFN_FLASH_H
#define FLASHBED_ENGINE_FFN_FLASH_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/ffn.h"
#include "traces/trace.h"

enum flash_mode { FLASH_NAIVE, FLASH_HYBRID, FLASH_PREDICTOR, FLASH_WINDOW, FLASH_ALL };
enum active_source { ACTIVE_ORACLE, ACTIVE_TRACE };

const char *flash_mode_name(enum flash_mode m);
/* "naive", "hybrid", "predictor", "window", "all"; 0 or -1. */
int flash_mode_parse(const char *s, enum flash_mode *m);

struct ffn_flash_config {
    enum flash_mode mode;
    uint32_t window;             /* tokens kept, the current one included (window and all) */
    uint32_t coalesce;           /* all: merge reads across gaps of up to this many neurons */
    enum active_source active;
    const struct trace *trace;   /* ACTIVE_TRACE: must match the model's shape */
    bool use_predicted;          /* replay the trace's predicted sets, else its active sets */
    float threshold;             /* non-ReLU activations: |h| above this is active */
    uint32_t cache_rows;         /* neuron-cache rows per layer (0: d_ff) */
    const uint32_t *layer_rows;  /* [n_layers] rows per layer instead, or NULL */
    uint32_t hybrid_resident;    /* hybrid: neurons kept resident per layer */
    const char *io_engine;       /* psync or io_uring */
    unsigned io_threads, iodepth;
    bool direct;
    struct trace_writer *record; /* NULL, or gets each token's active sets */
};

/* What one token cost, summed over layers. */
struct ffn_flash_token {
    double io_ms;          /* waiting for reads */
    double mem_ms;         /* deletions, insertions and their bookkeeping */
    double ffn_ms;         /* computing the FFN on the rows */
    double predictor_ms;   /* finding the needed neurons (oracle up-projection) */
    uint64_t bytes_read, reads;
    uint64_t rows_inserted, rows_deleted;
    uint64_t cache_rows;   /* rows held after loading, all layers */
    uint64_t needed;       /* neurons the token needed, all layers */
    uint32_t window_shrinks; /* layers where the window was cut to fit the cache */
};

extern const struct ffn_ops ffn_flash;

/* ffn_flash.create reads its struct ffn_flash_config from f->config
 * (engine_init_with's ffn_config). */
/* Flags for the trace being recorded (TRACE_TOKEN_*), for the next token. */
void ffn_flash_next_token(struct ffn *f, unsigned trace_flags);
/* The last token's costs (since the previous call). */
void ffn_flash_take_token(struct ffn *f, struct ffn_flash_token *out);
/* The first failure (an I/O error, a token that does not fit the cache, a
 * trace write), or NULL: the run checks after every token and stops. */
const char *ffn_flash_error(const struct ffn *f);
/* Bytes the FFN implementation holds in DRAM: caches, staging, oracle rows. */
uint64_t ffn_flash_dram_bytes(const struct ffn *f, uint64_t *oracle_bytes);

#endif
