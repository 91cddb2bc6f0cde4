/* What the engine really issues per token, as the cost model counts it:
 * its batches of flash reads (how many, how many reads each, how large)
 * and its parallel jobs over the compute team (how many, how many after a
 * wait). The cost model prices these counts with the profile's fixed
 * costs (sim/hw_profile.h: struct hw_fixed); the counts mirror the
 * engine's code, named at each rule, so a change there is a change here:
 *
 * Reads (engine/ffn/streamer_read.c, io/flash_reader.c). A row on flash is its
 * bundle padded to FB_BUNDLE_ALIGN (model_format.h's bundle_stride). The
 * reader splits a request longer than ENGINE_MAX_READ into reads of that
 * size (engine/ffn/streamer.h's STREAMER_MAX_READ) and spreads them over its threads.
 *   naive   per layer: its slice of dram.bin (the weights but the FFN's
 *           rows, 1/L of the file, aligned up), through a scratch buffer
 *           of at most ENGINE_STREAM_SCRATCH (ffn_flash_stream_scratch):
 *           one batch per buffer-full; then the layer's d_ff rows as one
 *           request (its staging holds the whole layer): one batch
 *   hybrid  per layer: the d_ff - R rows it does not hold, one request,
 *           one batch; R as run's plan sizes it (hybrid_capacity in
 *           engine/run/run_plan.c): the budget, less dram.bin and the KV
 *           cache, less one layer's staging, over (L - 1) rows a layer
 *   other   per layer: one batch of the volumes' reads (reads / L each)
 *
 * Jobs (engine/forward/forward.c, engine/compute/cpu_kernels.c): a kernel
 * wakes the team when its multiply-adds reach min_parallel_work (attention
 * at half that), else one thread works alone. Per layer: the q, k, v and o
 * matrix-vector products; attention over the context; the FFN's two jobs
 * (groups, then their sum) per ck_ffn_rows call (naive: one over its
 * staged layer; hybrid: its held rows, then the streamed rest; a caching
 * policy: the rows held, then the rows read; the predictor alone: the
 * rows read); a predictor's two products. Per token: the lm_head's
 * product. A job is cold when it follows a batch of reads (the team slept
 * through it): the first FFN job after the layer's reads; and the token's
 * first job when no layer wakes the team at all (it slept since the last
 * token). */
#ifndef FLASHBED_SIM_COST_ENGINE_H
#define FLASHBED_SIM_COST_ENGINE_H

#include <stdbool.h>

#include "common/model_shape.h"
#include "common/wtype.h"

#define ENGINE_MAX_READ (1u << 20)         /* engine/ffn/streamer.h: STREAMER_MAX_READ */
#define ENGINE_STREAM_SCRATCH (64u << 20)  /* engine/ffn/ffn_flash.h: FFN_FLASH_STREAM_SCRATCH */

/* n alike batches per token, each of `reads` reads of `bytes` in all. */
struct io_batch_kind {
    double n, reads, bytes;
};

struct engine_reads {
    struct io_batch_kind kind[2];
    int n_kinds;
};

/* The engine's view of a priced configuration. */
struct engine_view {
    const struct model_shape *shape;
    enum fb_dtype type;     /* the weights' type (common/wtype.h): prices them */
    bool whole;             /* reads whole layers (naive, hybrid) */
    bool streams_all;       /* naive: also dram.bin */
    bool keeps;             /* keeps rows between tokens (a cache) */
    bool predictor;         /* a predictor chooses the rows */
    double predictor_rank;  /* its rank (0: from a share of the model, counted as rank 0: no jobs) */
    double share;           /* hybrid: the budget as a share of the model on disk */
    double context;         /* mean KV length */
    double reads, read_bytes;      /* the volumes' reads and bytes per token (not whole) */
    double rows_held, rows_loaded; /* per token, all layers (not whole) */
    double min_parallel;    /* the team's threshold */
};

/* One weight's share of its block in type t (block_bytes / block_elems:
 * 4, 2 for the float types, 18/32 for Q4_0), from the weight-type table;
 * for aggregates over many rows (a whole model's matrices, a job's work),
 * never a single element. 0 outside the table. */
double engine_weight_bytes(enum fb_dtype t);

/* Bytes of one row on flash: its neuron bundle (unit geometry, each part
 * wtype_row_bytes) padded to FB_BUNDLE_ALIGN; 0 when t's blocks do not
 * tile a part. */
double engine_row_stride(const struct model_shape *s, enum fb_dtype t);

/* Bytes of dram.bin: every weight but the FFN's rows. */
double engine_dram_bytes(const struct model_shape *s, enum fb_dtype t);

/* hybrid's resident rows per layer (see above). */
double engine_hybrid_rows(const struct engine_view *v);

/* The token's batches of reads. */
void engine_reads_of(const struct engine_view *v, struct engine_reads *out);

/* n alike parallel jobs a token, each over `bytes` of weights (its work),
 * after a wait (cold) or not: a layer's reads (JOB_AFTER_LAYER) or the
 * token's (JOB_AFTER_TOKEN). */
enum { JOB_HOT, JOB_AFTER_LAYER, JOB_AFTER_TOKEN };
struct job_kind {
    double n, bytes;
    int after;
};

/* q and o, k and v, attention, the FFN's two calls (groups and sum each),
 * the predictor's two, the lm_head */
enum { ENGINE_JOB_KINDS = 10 };

struct engine_jobs {
    struct job_kind kind[ENGINE_JOB_KINDS];
    int n_kinds;
    double jobs, cold; /* all of them, and the cold ones */
};

/* The token's parallel jobs. */
void engine_jobs_of(const struct engine_view *v, struct engine_jobs *out);

#endif
