/* The transposed FFN file (ffn_t.bin, model_format.h): input sparsity's
 * copy of ffn.bin (issue 33, cache/transposed.h). Per layer l, d_model
 * channel bundles (channel j: up's column j [d_ff], then gate's column j
 * [d_ff] for a GLU) at chan_stride each, then d_ff down rows (neuron i's
 * down vector [d_model]) at down_stride each, both in the model's dtype
 * and padded to FFN_ALIGN so every row can be read with direct I/O.
 *
 *   ffn_transposed_write  writes ffn_t.bin from ffn.bin, one layer in
 *                         memory at a time (each bundle checked against
 *                         ffn.crc32c when the folder has it) and its
 *                         checksums (ffn_t.crc32c), each through a temporary renamed
 *                         into place, and records them in model.json (also
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
#define MODEL_FFN_T_CRC_FILE "ffn_t.crc32c" /* its read units' CRC-32C (issue 34) */

/* Where ffn_t.bin's rows lie for model m. */
struct ffn_t_layout {
    struct transposed_geometry g; /* chan.row_bytes, down.row_bytes: the strides */
    uint64_t layer_bytes;         /* d_model channel bundles and d_ff down rows */
    uint64_t bytes;               /* the whole file */
    char path[4200];
};

void ffn_t_layout_of(const struct model *m, struct ffn_t_layout *t);

/* m's two streams (its shape and dtype) at FFN_ALIGN: ffn_t.bin's
 * geometry. 0, or -1 with err. */
int model_transposed_geometry(const struct model *m, struct transposed_geometry *g, char *err, size_t errlen);

static inline uint64_t ffn_t_chan_offset(const struct ffn_t_layout *t, uint32_t layer, uint32_t channel)
{
    return layer * t->layer_bytes + channel * t->g.chan.row_bytes;
}

static inline uint64_t ffn_t_down_offset(const struct ffn_t_layout *t, uint32_t layer, uint32_t neuron)
{
    return layer * t->layer_bytes + t->g.chan.d_ff * t->g.chan.row_bytes + neuron * t->g.down.row_bytes;
}

/* ffn_t.bin's checksums (issue 34): one CRC-32C per read unit, in the
 * file's order (per layer its d_model channel bundles, then its d_ff rows
 * of down), over the unit's data bytes (not its padding), written as
 * ffn_t.crc32c (little-endian u32s) and named in the record's "checksums"
 * (algorithm, file, the file's own CRC-32C), as ffn.crc32c is in "ffn". */
static inline uint64_t ffn_t_unit_bytes(const struct cache_geometry *g)
{
    return g->unit_bytes;
}

static inline uint64_t ffn_t_units(const struct ffn_t_layout *t)
{
    return (uint64_t)t->g.chan.n_layers * (t->g.chan.d_ff + t->g.down.d_ff);
}

/* Unit (layer, row id of the down stream or channel id) in the checksums. */
static inline uint64_t ffn_t_unit_index(const struct ffn_t_layout *t, uint32_t layer, bool down, uint32_t id)
{
    return (uint64_t)layer * (t->g.chan.d_ff + t->g.down.d_ff) + (down ? t->g.chan.d_ff : 0) + id;
}

/* One transposed layer (layer_bytes at `at`) checksummed into crc[unit
 * index of its first unit...]. */
void ffn_t_layer_checksums(const struct ffn_t_layout *t, uint32_t layer, const uint8_t *at, uint32_t *crc);

/* m's ffn_t.bin checksums into *crc (a new array, ffn_t_units long; the
 * caller frees it), or *crc NULL when its record has none (an ffn_t.bin
 * written before them: read unchecked). A record naming another
 * algorithm or file, or a checksums file missing, short or damaged, is an
 * error naming it. */
int ffn_t_checksums_read(const struct model *m, const struct ffn_t_layout *t, uint32_t **crc, char *err,
                         size_t errlen);

/* Whether dir's model.json records checksums for its ffn_t.bin. */
bool ffn_t_has_checksums(const char *dir);

/* The message for a unit that does not match its checksum: the file, the
 * layer, the channel or row of down, its byte offset. Returns -1. */
int ffn_t_unit_damaged(const struct ffn_t_layout *t, uint32_t layer, bool down, uint32_t id, char *err,
                       size_t errlen);

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
