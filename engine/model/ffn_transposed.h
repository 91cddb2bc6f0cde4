/* The transposed FFN file (ffn_t.bin, model_format.h): input sparsity's
 * copy of ffn.bin (issue 33, cache/transposed.h). Per layer l, d_model
 * channel bundles (channel j: up's column j [d_ff], then gate's column j
 * [d_ff] for a GLU) at chan_stride each, then d_ff down rows (neuron i's
 * down vector [d_model]) at down_stride each, both in the model's dtype
 * and padded to FFN_ALIGN so every row can be read with direct I/O.
 *
 *   ffn_transposed_write  writes ffn_t.bin from ffn.bin, one layer in
 *                         memory at a time (each bundle checked against
 *                         ffn.crc32c when the folder has it), through a temporary renamed
 *                         into place, and records it in model.json (also
 *                         through a temporary): nothing partial on a
 *                         failure or a Ctrl-C (common/cleanup.h);
 *   ffn_transposed_open   checks model.json's record against the model's
 *                         shape, dtype and the file's size, for a reader.
 *
 * The strides are cache_transposed_geometry's (align FFN_ALIGN), the one
 * geometry the engine, the replay and the cost model share. 0, or -1 with
 * one line of why in err naming the file. Not thread-safe (one writer per
 * model folder); no printing: progress goes through the callback. */
#ifndef FLASHBED_ENGINE_MODEL_FFN_TRANSPOSED_H
#define FLASHBED_ENGINE_MODEL_FFN_TRANSPOSED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/transposed.h"
#include "common/progress.h"
#include "engine/model/model.h"

#define MODEL_FFN_T_FILE "ffn_t.bin"
#define MODEL_FFN_T_KEY "ffn_transposed" /* model.json's record of it */

/* Where ffn_t.bin's rows lie for model m. */
struct ffn_t_layout {
    struct transposed_geometry g; /* chan.row_bytes, down.row_bytes: the strides */
    uint64_t layer_bytes;         /* d_model channel bundles and d_ff down rows */
    uint64_t bytes;               /* the whole file */
    char path[4200];
};

void ffn_t_layout_of(const struct model *m, struct ffn_t_layout *t);

static inline uint64_t ffn_t_chan_offset(const struct ffn_t_layout *t, uint32_t layer, uint32_t channel)
{
    return layer * t->layer_bytes + channel * t->g.chan.row_bytes;
}

static inline uint64_t ffn_t_down_offset(const struct ffn_t_layout *t, uint32_t layer, uint32_t neuron)
{
    return layer * t->layer_bytes + t->g.chan.d_ff * t->g.chan.row_bytes + neuron * t->g.down.row_bytes;
}

/* Whether dir's model.json records a transposed file or the file exists. */
bool ffn_transposed_present(const char *dir);

/* Writes dir's ffn_t.bin from its ffn.bin (m opened with
 * MODEL_FFN_ON_FLASH) and records it in model.json. An existing one is
 * refused unless force. */
int ffn_transposed_write(const struct model *m, bool force, const struct progress_report *report, char *err,
                         size_t errlen);

/* m's ffn_t.bin checked against its record and its size, into *t. A
 * missing one is refused naming `flashbed model transpose DIR`. */
int ffn_transposed_open(const struct model *m, struct ffn_t_layout *t, char *err, size_t errlen);

#endif
