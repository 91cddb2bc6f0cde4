/* The flash FFN's private state (ffn_flash.h), shared by its two files:
 * ffn_flash_open.c sets it up and tears it down (the streamer that reads
 * the neuron bundles, naive's dram.bin reader, the selectors, the device's
 * compute and predictor), ffn_flash.c runs a layer's step: it chooses the
 * neurons, hands them to the streamer (engine/ffn/streamer.h: decide,
 * read, land) and computes on the rows landed (the streamer's hooks).
 * Not an interface: nothing outside engine/ffn/ffn_flash*.c includes it. */
#ifndef FLASHBED_ENGINE_FFN_FLASH_IMPL_H
#define FLASHBED_ENGINE_FFN_FLASH_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/ffn/ffn_flash.h"
#include "engine/ffn/ffn_flash_dev.h"
#include "engine/ffn/neuron_select.h"
#include "engine/ffn/predictor_dev.h"
#include "engine/ffn/streamer.h"
#include "io/flash_reader.h"
#include "io/io_buffer.h"

struct flash_ffn {
    struct ffn_flash_config cfg;
    char *err;                         /* create's error buffer (ffn.h), while it runs */
    size_t errlen;
    struct streamer s;                 /* ffn.bin's neuron bundles: decide, read, land; its error
                                        * is the FFN's first failure */
    struct flash_reader *dram_reader;  /* naive: dram.bin */
    struct flash_dev fdev;             /* on_device: the FFN computed there */
    struct predictor_dev pdev;         /* on_device with the predictor: computed there */
    bool dev_predict;
    uint8_t *scratch;
    struct io_buffer scratch_mem;
    uint64_t dram_file_bytes;
    struct unit_geometry unit;         /* ffn.bin's neuron bundle (model_unit_geometry) */
    struct neuron_select choose;       /* oracle, predictor, gate: what drives the reads */
    struct neuron_select truth;        /* the oracle beside another source (check, record) */
    bool have_choose, have_truth;
    float *z;                          /* [d_ff] staged rows' biases */
    float *tmp_out;                    /* [d_model] a partial FFN output */
    uint32_t *recorded;                /* [d_ff] the true active ones, when the choice is not them */
    struct flash_read dram_req;        /* naive's dram.bin slice, apart: the streamer's may be in flight */
    uint64_t scratch_bytes, oracle_bytes, predictor_bytes;
    unsigned next_flags;
    struct ffn_flash_token acc;
};

/* A source a deployment has (the predictor, the gate). */
static inline bool ffn_flash_deployable(const struct ffn_flash_config *cfg)
{
    return select_source(&cfg->select)->deployable;
}

/* The streamer's hooks for neuron bundles (ffn_flash.c). */
extern const struct streamer_hooks ffn_flash_hooks;

/* ffn_ops.create and .destroy (ffn_flash_open.c). */
int ffn_flash_create(struct ffn *f, char *err, size_t errlen);
void ffn_flash_destroy(struct ffn *f);

#endif
