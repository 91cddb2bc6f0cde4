/* The streamer: one layer's units brought from flash, for any unit
 * geometry (cache/unit_geometry.h). Cut out of the flash FFN so that the
 * read pipeline is not the neuron's own; the unit that streams (the
 * neuron bundle's FFN, engine/ffn/ffn_flash.c) only chooses its units and
 * computes on the rows landed.
 *
 * What it owns, per layer step:
 *   decide   the policy's decision through cache/ (cache_request on the
 *            chosen units in s->needed): misses, rows read besides, rows
 *            deleted; the marks of what each row is this step
 *   caches   a unit cache per layer (engine/ffn/neuron_cache.h) with the
 *            rows the policy keeps, and on a device whose memory is not
 *            the host's their mirrors (neuron_cache_dev.h): deletions as
 *            batched row moves, rows appended uploaded once read
 *   read     the reader pool on the unit file (io/flash_reader.h): kept
 *            rows read straight into their cache rows (in-place landing),
 *            rows used once into a staging area a batch at a time, a read
 *            that also spans rows it does not keep through a bounce
 *            buffer; on a device through the pinned ring (flash_ring.h)
 *            into the mirror's or the device staging area's rows
 *   verify   each unit read whole (or all of its extents, split) against
 *            the unit file's checksums, once its batch has landed; a
 *            mismatch is read once more, a second one fails the token
 *   ahead    with read-ahead, the next layer's step decided and its reads
 *            in flight while this layer computes (struct streamer_step)
 *   counts   read_ms, io_ms, io_requests, bytes_read, reads, read and
 *            verify retries, rows verified, the cache's insertions,
 *            deletions and moves, the device's uploads: into *acc
 *
 * Its hooks (struct streamer_hooks, one call per group of rows or per
 * layer, never per row): compute the staged rows as a group, compute a
 * range of a layer's cache rows, say why a unit failed its checksum. A
 * unit's bias (one float per unit, uploaded beside it on a device) comes
 * per layer from layer_bias at open.
 *
 * The order of the sum (float sums: the order is the bits) is the unit's
 * (streamer_open_args.order): the neuron bundle's is every row its cache
 * holds, in cache order (compute_cached), then the staged groups and the
 * rows appended; input sparsity's (STREAMER_NEEDED_ORDER) only the needed
 * rows, those held in the needed order, then those read, batch by batch in
 * read order (compute_rows), its cache rows staying where they landed.
 * Where the units lie (a layer's pitch and first byte, the checksums'
 * table), whose reader it uses and when reads are counted are arguments
 * too: ffn_t.bin interleaves two streams per layer through one reader.
 *
 * Threading: one host thread calls it; the reader's threads only fill the
 * buffers it hands them. Errors: the first failure is kept in s->error
 * (streamer_fail); a failed read sets read_failed and the rows its step
 * appended leave the cache (in needed order those whose batch had not
 * completed and been checked); the run checks after every token. Open
 * returns 0, or -1 with err; streamer_close is safe after. */
#ifndef FLASHBED_ENGINE_FFN_STREAMER_H
#define FLASHBED_ENGINE_FFN_STREAMER_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "cache/unit_geometry.h"
#include "engine/ffn/flash_ring.h"
#include "engine/ffn/neuron_cache.h"
#include "engine/ffn/neuron_cache_dev.h"
#include "io/flash_reader.h"
#include "io/io_buffer.h"

struct ffn_flash_token;
struct io_fault;

/* The streamer's settings: the reader, the checks, read-ahead and the
 * staging areas. */
struct streamer_config {
    const char *io_engine;   /* psync, io_uring, or fault (psync with injected faults) */
    struct io_fault *fault;  /* fault's rules and counts (io/io_fault.h); NULL: none */
    unsigned io_threads, iodepth;
    bool direct;
    bool verify;             /* check each unit read against the unit file's checksums, when it has them */
    bool read_ahead;         /* on the host, with the sets known before the layer's input (a trace):
                              * a layer's reads are issued while the layer before it computes */
    uint32_t staging_rows;   /* rows read for one token only go through this many at a time */
    uint32_t bounce_rows;    /* a read spanning rows it does not keep lands here first */
};

/* The longest read the streamer hands its reader: longer ones are split. */
enum { STREAMER_MAX_READ = 1u << 20 };

/* Where a row read this token goes (mark[] bits, cleared after the step). */
enum { MARK_NEED = 1, MARK_MISS = 2, MARK_ONCE = 4, MARK_READ = 8 };

/* A unit read whole, where it landed: checked once its batch completes. */
struct landed_row {
    uint32_t layer, id;
    uint8_t *at;
};

/* A layer's decision, taken in its turn or before it (read-ahead: only a
 * step whose rows all land in their own cache rows goes ahead, since the
 * staging, bounce buffer and needed rows dropped are shared with the layer
 * computing; another is decided ahead and finished in its turn as without
 * read-ahead). The cache_step stays valid until the next decision. */
struct streamer_step {
    int layer;            /* -1: none decided */
    struct cache_step st;
    uint32_t n_needed, n_late, first_new;
    uint64_t shrinks;     /* the policy's window shrinks before the decision */
    bool went_ahead;      /* memory management done and reads handed over (marks cleared) */
    struct landed_row *landed; /* [units]: its rows in flight, checked when they have landed */
    uint32_t n_landed;
    bool in_flight;       /* a batch of its reads was submitted */
    struct flash_reader_stats before;
};

/* The order a layer's rows are computed in (the module comment). */
enum streamer_order {
    STREAMER_CACHE_ORDER,  /* every row held, in cache order; a deletion moves the last row into the hole */
    STREAMER_NEEDED_ORDER, /* the needed rows held, in needed order, then each batch read, in read order;
                            * rows kept in place (neuron_cache_keep_in_place); a batch ends as the
                            * staging fills; the host only */
};

struct streamer_hooks {
    void *ctx;
    /* The staged rows, ids[0..n), computed as one group into out: on the
     * host at s->staging, on a device at the device staging area. */
    void (*compute_staged)(void *ctx, int layer, const uint32_t *ids, uint32_t n, const float *x, float *out);
    /* Rows [first, first + n) of layer's cache computed into out. */
    void (*compute_cached)(void *ctx, int layer, uint32_t first, uint32_t n, const float *x, float *out);
    /* STREAMER_NEEDED_ORDER: units ids[0..n), at rows[0..n) (host memory), computed in that order into out. */
    void (*compute_rows)(void *ctx, int layer, const uint32_t *ids, const uint8_t *const *rows, uint32_t n,
                         const float *x, float *out);
    /* Why unit id of layer failed its check twice (names file, layer, unit, offset). */
    void (*damaged)(void *ctx, uint32_t layer, uint32_t id, char *why, size_t len);
    /* At open: layer's bias per unit (uploaded beside a row on a device), or NULL. */
    const float *(*layer_bias)(void *ctx, uint32_t layer);
};

/* What the streamer is opened on. */
struct streamer_open_args {
    const char *path;              /* the unit file */
    const char *unit_word;         /* a unit as a failed read names it ("neuron") */
    struct unit_geometry unit;     /* the unit's geometry (its stride a multiple of the alignment) */
    struct cache_config decide;    /* policy, layout, capacity, the trace or profile */
    const uint32_t *layer_rows;    /* [n_layers] cache rows per layer, or NULL: default_rows each */
    uint32_t default_rows;
    const uint32_t *crc;           /* each unit's CRC-32C (crc_at), or NULL: unchecked */
    bool on_device;                /* the caches live on the device (streamer_open_device) */
    enum streamer_order order;
    /* Where the units lie: unit id of layer l at base + l * layer_pitch + id * stride of the file
     * (layer_pitch 0: units * stride), its checksum crc[crc_base + l * crc_pitch + id] (0: units). */
    uint64_t base, layer_pitch, crc_base, crc_pitch;
    struct flash_reader *reader;   /* a reader of path to share (the caller closes it), or NULL: its own */
    /* Non-NULL: reads are counted as their batch completes (a failed batch's are not), into acc's
     * reads and these (the requests and their bytes); NULL: as the step decides them. */
    uint64_t *done_reads, *done_bytes;
    const char *no_preload;        /* non-NULL: a policy that starts with rows is refused, as what does
                                    * not load them ("input sparsity on flash") */
    bool one_mapping;              /* on the host, every layer's cache rows in one read buffer (caches of
                                    * a few rows each: not a 2 MiB huge page per layer); else one each */
};

struct streamer {
    struct streamer_config cfg;
    struct streamer_hooks hooks;
    struct ffn_flash_token *acc;       /* the counts it adds to */
    struct unit_geometry unit;
    const char *unit_word;
    uint64_t stride, align;
    const uint32_t *crc;
    uint64_t base, layer_pitch, crc_base, crc_pitch; /* streamer_open_args */
    enum streamer_order order;
    uint64_t *done_reads, *done_bytes;
    const char *no_preload;
    const float **bias;                /* [n_layers] */
    struct flash_reader *reader;
    bool owns_reader;
    struct cache decide;               /* the policy and layout: cache/cache.h */
    struct neuron_cache *caches;       /* [n_layers] storage of the rows kept */
    struct io_buffer store_mem;        /* one_mapping: the caches' rows */
    struct neuron_cache_dev *mirrors;  /* [n_layers]: zeroed (no-ops) on the host */
    struct flash_ring ring;            /* on_device: where rows land; its covered is the latest event
                                        * waited for, for every wait here */
    const struct backend_ops *dev_ops; /* on_device */
    struct backend *dev_be;
    struct dev_ref stage_rows, stage_bias; /* on_device: the device staging area's row 0 */
    bool on_device, dev_failed, ahead, verify, read_failed;
    uint8_t *staging, *bounce;
    struct io_buffer staging_mem, bounce_mem;
    uint32_t staging_rows, bounce_rows;
    uint32_t *needed;                  /* [units] the units this layer needs (the chooser fills it) */
    uint32_t *late;                    /* [units] needed rows the policy dropped: leave after compute */
    uint32_t *staged;                  /* [staging_rows] the unit in each staging row */
    uint8_t *mark;                     /* [units] MARK_* of the rows in this step */
    struct flash_read *reqs;           /* [3 * units + 1] */
    struct streamer_step steps[2];     /* layer L's decision in steps[L % 2] */
    struct bounce_copy { uint32_t id; uint64_t from; uint8_t *to; } *copies; /* [bounce_rows] */
    uint32_t n_reqs, n_staged, n_copies, bounce_used;
    uint32_t last_id;                  /* the row last read in place, when one row */
    uint8_t *last_home;                /* where it went (NULL: none) */
    struct landed_row *landed;         /* [3 * units + 1]: rows read whole since the last batch completed */
    uint32_t n_landed;
    /* STREAMER_NEEDED_ORDER: the rows to compute next (held, or the batch's in read order), and the
     * kept rows of the step whose batch completed (the others leave if a read fails) */
    uint32_t *sum_ids;                 /* [units] */
    const uint8_t **sum_rows;          /* [units] */
    uint32_t n_sum, n_sum_kept, kept_done;
    uint64_t staging_bytes, bounce_bytes, cache_bytes, device_bytes;
    int64_t token;
    char error[512];                   /* the first failure */
};

/* Opens the reader, the decisions, the caches (with the rows the policy
 * starts with, on the host) and the step's buffers. */
int streamer_open(struct streamer *s, const struct streamer_config *cfg, const struct streamer_open_args *a,
                  const struct streamer_hooks *hooks, struct ffn_flash_token *acc, char *err, size_t errlen);
/* On a device: the ring, and each cache's mirror with the rows the policy
 * starts with read through it; stage_rows/_bias: the device staging area
 * of staging_rows rows (bias buf NULL: none). */
int streamer_open_device(struct streamer *s, const struct backend_ops *ops, struct backend *be,
                         struct dev_ref stage_rows, struct dev_ref stage_bias, char *err, size_t errlen);
void streamer_close(struct streamer *s);
/* A reader of path with cfg's settings (streamer_open_args.reader: one
 * file's reader shared by streamers). */
struct flash_reader *streamer_config_reader(const struct streamer_config *cfg, const char *path, char *err,
                                           size_t errlen);
/* Another reader with the streamer's settings (naive's dram.bin). */
struct flash_reader *streamer_open_reader(const struct streamer *s, const char *path, char *err, size_t errlen);

/* The first failure, kept. */
void streamer_fail(struct streamer *s, const char *what);
/* A device failure: the host decisions go on, the token fails. */
void streamer_fail_dev(struct streamer *s, const char *why);
/* rc != 0: the backend's error as the failure. */
void streamer_dev_check(struct streamer *s, int rc);

/* Issues reqs[0..n) on r and waits; bytes as the reader issued them (a
 * device is waited for first: its wait is compute, not I/O). */
int streamer_read_batch(struct streamer *s, struct flash_reader *r, const struct flash_read *reqs, size_t n,
                        uint64_t *bytes);

/* A token begins (layer 0): a failed token's rows left the caches. */
void streamer_begin_token(struct streamer *s);
/* Whether layers' steps may be decided before their turn. */
static inline bool streamer_reads_ahead(const struct streamer *s)
{
    return s->ahead;
}
/* Layer's step decided on s->needed[0..n_needed) (gone ahead when it can). */
struct streamer_step *streamer_decide(struct streamer *s, int layer, uint32_t n_needed);
/* A step in its turn: memory management, reads and compute (rows held,
 * staged groups, rows appended); truth (check) counted against what it
 * computes. x and out may be NULL on a device. */
void streamer_forward(struct streamer *s, const struct streamer_step *st, const uint32_t *truth, uint32_t n_truth,
                      const float *x, float *out, uint32_t d_model);
/* A step gone ahead, in its turn: the wait for its reads, the checks, the
 * truth's counts; then (streamer_compute_ahead) its rows computed. */
void streamer_finish_ahead(struct streamer *s, const struct streamer_step *st, const uint32_t *truth,
                           uint32_t n_truth);
void streamer_compute_ahead(struct streamer *s, const struct streamer_step *st, const float *x, float *out,
                            uint32_t d_model);
/* On a device after the pass's sync: the ring's and mirrors' counts. */
void streamer_take_device(struct streamer *s);

/* Rows held in every layer's cache. */
uint64_t streamer_resident_rows(const struct streamer *s);

/* Unit id of layer on flash. */
static inline uint64_t streamer_unit_offset(const struct streamer *s, int layer, uint32_t id)
{
    return s->base + (uint64_t)layer * s->layer_pitch + (uint64_t)id * s->stride;
}

/* Unit id of layer's checksum. */
static inline uint32_t streamer_unit_crc(const struct streamer *s, uint32_t layer, uint32_t id)
{
    return s->crc[s->crc_base + (uint64_t)layer * s->crc_pitch + id];
}

#endif
