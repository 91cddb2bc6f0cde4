/* The flash FFN's private state (ffn_flash.h), shared by its two files:
 * ffn_flash_open.c sets it up and tears it down (readers, the policy's
 * decisions, the caches and what they start with, the selectors, the
 * device's mirrors, ring and predictor), ffn_flash.c runs a layer's step.
 * Not an interface: nothing outside engine/ffn/ffn_flash*.c includes it. */
#ifndef FLASHBED_ENGINE_FFN_FLASH_IMPL_H
#define FLASHBED_ENGINE_FFN_FLASH_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/ffn/ffn_flash_dev.h"
#include "engine/ffn/flash_ring.h"
#include "engine/ffn/neuron_cache.h"
#include "engine/ffn/neuron_cache_dev.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/predictor_dev.h"
#include "io/flash_reader.h"
#include "io/io_buffer.h"

enum { MAX_READ = FFN_FLASH_MAX_READ };

/* Where a row read this token goes (mark[] bits, cleared after the step). */
enum { MARK_NEED = 1, MARK_MISS = 2, MARK_ONCE = 4, MARK_READ = 8 };

/* A layer's decision taken before its turn (read-ahead): the next layer's
 * step decided, and its reads handed to the reader, while this layer
 * computes. Only a step whose rows all land in their own cache rows goes
 * ahead (no staging, bounce buffer or needed row dropped: those are
 * shared with the layer computing); another is decided ahead and finished
 * in its turn as without read-ahead. The cache_step stays valid until the
 * next decision, which comes after the layer's turn. */
/* A bundle read whole, where it landed: checked against its checksum once
 * its batch completes (--verify). */
struct landed_row {
    uint32_t layer, id;
    uint8_t *at;
};

struct flash_step {
    int layer;            /* -1: none decided ahead */
    struct cache_step st;
    uint32_t n_needed, n_late, first_new;
    uint64_t shrinks;     /* the policy's window shrinks before the decision */
    bool went_ahead;      /* memory management done and reads handed over (marks cleared) */
    struct landed_row *landed; /* [d_ff]: its rows in flight, checked when they have landed */
    uint32_t n_landed;
    bool in_flight;       /* a batch of its reads was submitted */
    struct flash_reader_stats before;
};

struct flash_ffn {
    struct ffn_flash_config cfg;
    char *err;                         /* create's error buffer (ffn.h), while it runs */
    size_t errlen;
    struct flash_reader *reader;       /* ffn.bin */
    struct flash_reader *dram_reader;  /* naive: dram.bin */
    struct cache decide;               /* the policy and layout: cache/cache.h */
    struct neuron_cache *caches;       /* [n_layers] storage of the rows kept */
    /* A backend whose memory is not the host's (on_device): each cache's
     * rows mirrored in device memory and the FFN computed there; zeroed
     * mirrors (no-ops) otherwise. */
    struct neuron_cache_dev *mirrors;  /* [n_layers] */
    struct flash_dev fdev;
    struct flash_ring ring;            /* on_device: where rows read from flash land (pinned); its
                                        * covered is the latest event waited for, for every wait here */
    struct predictor_dev pdev;         /* on_device with the predictor: computed there */
    bool on_device, dev_failed, dev_predict;
    uint8_t *staging, *bounce, *scratch;
    struct io_buffer staging_mem, bounce_mem, scratch_mem;
    uint32_t staging_rows, bounce_rows;
    uint64_t dram_file_bytes, align, stride; /* stride: unit.stride */
    struct unit_geometry unit;         /* ffn.bin's neuron bundle (model_unit_geometry) */
    struct neuron_select choose;       /* oracle, predictor, gate: what drives the reads */
    struct neuron_select truth;        /* the oracle beside another source (check, record) */
    bool have_choose, have_truth;
    float *z;                          /* [d_ff] staged rows' biases */
    float *tmp_out;                    /* [d_model] a partial FFN output */
    uint32_t *needed;                  /* [d_ff] the neurons this layer needs */
    uint32_t *recorded;                /* [d_ff] the true active ones, when the choice is not them */
    uint32_t *late;                    /* [d_ff] needed rows the policy dropped: leave after compute */
    uint32_t *staged;                  /* [staging_rows] the neuron in each staging row */
    uint8_t *mark;                     /* [d_ff] MARK_* of the rows in this step */
    struct flash_read *reqs;           /* [3 * d_ff + 1] */
    struct flash_read dram_req;        /* naive's dram.bin slice, apart: reqs may be in flight */
    struct flash_step steps[2];        /* layer L's decision in steps[L % 2]: the next layer's decided
                                        * ahead while this one's is still in use (read-ahead) */
    struct bounce_copy { uint32_t id; uint64_t from; uint8_t *to; } *copies; /* [bounce_rows] */
    uint32_t n_reqs, n_staged, n_copies, bounce_used;
    uint32_t last_id;                  /* the row last read in place, when one row */
    uint8_t *last_home;                /* where it went (NULL: none) */
    uint64_t staging_bytes, bounce_bytes, scratch_bytes, cache_bytes, oracle_bytes, predictor_bytes;
    uint64_t device_bytes;             /* on_device: the mirrors' rows and biases, the device staging area */
    int64_t token;                     /* index of the token being computed */
    unsigned next_flags;
    struct ffn_flash_token acc;
    char error[512];                   /* the first failure; the run stops on it */
    bool read_failed;                  /* a batch of ffn.bin's reads failed (error says where) */
    bool verify;                       /* cfg.verify and the model has checksums */
    struct landed_row *landed;         /* [3 * d_ff + 1]: rows read whole since the last batch completed */
    uint32_t n_landed;
};

/* Neuron's bundle in ffn.bin (model_format.h: layer-major). */
static inline uint64_t ffn_flash_bundle_offset(const struct model *m, int layer, uint32_t neuron)
{
    return ((uint64_t)layer * m->shape.d_ff + neuron) * m->bundle_stride;
}

/* A source a deployment has (the predictor, the gate). */
static inline bool ffn_flash_deployable(const struct ffn_flash_config *cfg)
{
    return select_source(&cfg->select)->deployable;
}

/* ffn_ops.create and .destroy (ffn_flash_open.c). */
int ffn_flash_create(struct ffn *f, char *err, size_t errlen);
void ffn_flash_destroy(struct ffn *f);

#endif
