/* A model folder's checksums (model_format.h: ffn.crc32c, each DRAM
 * tensor's "crc32c"; issue 34): read when the model opens, dram.bin
 * checked once at load, each FFN bundle checked where it is read from
 * flash. A folder written before flashbed recorded checksums has none: it
 * loads, and m->checked says it was not checked.
 *
 * Return convention: 0, or -1 with err naming the file, the tensor or the
 * bundle (layer, neuron) and its byte offset. Checking is a pure function
 * of the bytes: thread-safe. */
#ifndef FLASHBED_ENGINE_MODEL_MODEL_INTEGRITY_H
#define FLASHBED_ENGINE_MODEL_MODEL_INTEGRITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/crc32c.h"
#include "engine/model/model.h"
#include "engine/model/model_table.h"

/* model.json's "ffn" "checksums" into m->ffn_crc (read from ffn.crc32c,
 * checked against the file CRC model.json keeps), or none: m->ffn_crc
 * NULL, m->checked false. A "checksums" section that names another
 * algorithm, a missing or short file, or a file CRC that differs is an
 * error: the checksums cannot be trusted. */
int model_checksums_read(struct model *m, const cJSON *model_json, const char *json_path, char *err,
                         size_t errlen);

/* A checksums file (ffn.crc32c, ffn_t.crc32c): its n little-endian u32s
 * into a new array (the caller frees it), the file's own CRC-32C against
 * want (model.json's "file_crc32c"). NULL with err naming the file when it
 * is missing, short, long or damaged. */
uint32_t *model_crc_file_read(const char *path, size_t n, uint32_t want, char *err, size_t errlen);

/* Every tensor of f's table that has a "crc32c" against f's bytes (dram.bin,
 * ffn_matrices.bin): the first that differs is the error ("dram.bin:
 * tensor 'x' (bytes A to B): ..."). */
int model_tensors_verify(const struct model *m, const struct tensor_file *f, const cJSON *tensors, char *err,
                         size_t errlen);

/* Every FFN bundle of an in-memory ffn.bin (m->ffn) against m->ffn_crc. */
int model_ffn_verify_all(const struct model *m, char *err, size_t errlen);

/* Bundle (layer l, neuron i) as read, bundle_bytes of it, against its
 * checksum; true when the model has none. */
static inline bool model_bundle_intact(const struct model *m, uint32_t l, uint32_t i, const void *bundle)
{
    return !m->ffn_crc || crc32c(bundle, m->bundle_bytes) == m->ffn_crc[(uint64_t)l * m->shape.d_ff + i];
}

/* Three bundles as read (layer l[k], neuron i[k] at at[k]) checked side
 * by side (crc32c_x3): bit k of the result is set when bundle k matches
 * (all set when the model has no checksums). */
unsigned model_bundles_intact3(const struct model *m, const uint32_t l[3], const uint32_t i[3],
                               const void *const at[3]);

/* A bundle loaded outside the streamer's checked reads (read from ffn.bin
 * into the oracle's or the gate's rows, a sparsify file's fingerprint:
 * issue 47) against its checksum, as it is loaded: 0, or -1 with
 * model_bundle_damaged's message. 0 without checking when the model has no
 * checksums or was opened with MODEL_NO_VERIFY (--verify off), as the
 * streamer then reads unchecked too. */
int model_bundle_check(const struct model *m, uint32_t l, uint32_t i, const void *bundle, char *err, size_t errlen);

/* The message for a bundle that failed its check: ffn.bin's path, the
 * layer, the neuron and the bundle's byte offset in the file. Returns -1. */
int model_bundle_damaged(const struct model *m, uint32_t l, uint32_t i, char *err, size_t errlen);

#endif
