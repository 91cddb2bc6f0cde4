/* The flashbed model folder: the only format the engine reads.
 *
 *   model.json  metadata: the shape (same keys as configs/models/NAME.json, so
 *               model_shape_read() reads it), dtype, tokenizer, source hash,
 *               the table of DRAM tensors and the FFN file's layout
 *   dram.bin    DRAM-resident tensors (embeddings, attention, norms, biases,
 *               output), each at a 64-byte aligned offset
 *   ffn.bin     FFN weights by neuron bundle: for layer l, neuron i, at
 *               (l * d_ff + i) * bundle_stride: up row [d_model], gate row
 *               [d_model] (GLU only), down column [d_model] -- the paper's
 *               row-column bundle, so one read brings all neuron i needs.
 *               bundle_stride is bundle_bytes rounded up to FFN_ALIGN so
 *               every bundle can be read with direct I/O.
 *   ffn.crc32c  the FFN's checksums: CRC-32C (common/crc32c.h) of each
 *               bundle's bundle_bytes (not its padding), u32 little-endian,
 *               in ffn.bin's order (layer l, neuron i at l * d_ff + i); the
 *               engine checks each bundle it reads against it, `flashbed
 *               model verify` the whole folder. model.json's "ffn"
 *               "checksums" names the algorithm and holds this file's own
 *               CRC-32C; each DRAM tensor's entry its "crc32c". A folder
 *               written before them has neither and is read unchecked.
 *   ffn_t.bin   optional (flashbed model transpose DIR; run --active teal
 *               reads it): the same FFN by input channel, for input
 *               sparsity (cache/transposed.h). Per layer l, at
 *               l * layer_bytes: d_model channel bundles (channel j: up's
 *               column j [d_ff], then gate's column j [d_ff] for a GLU) of
 *               chan_stride bytes each, then d_ff down rows (neuron i's
 *               down vector [d_model], as in its bundle) of down_stride
 *               each; strides padded to FFN_ALIGN (cache_transposed_geometry
 *               with align FFN_ALIGN), padding zero, the model's dtype.
 *               model.json's "ffn_transposed" records the strides, dtype,
 *               size, ffn.bin's FNV-1a hash and provenance
 *               (engine/model/ffn_transposed.h), and its "checksums".
 *   ffn_t.crc32c  with ffn_t.bin: CRC-32C of each of its read units (per
 *               layer the channel bundles, then the rows of down; data
 *               bytes, not padding), little-endian u32s, named in
 *               "ffn_transposed" "checksums" with the file's own CRC-32C.
 *   ffn_matrices.bin  optional (an import that keeps a source's FFN as it
 *               stored it: a GGUF's blocks): each layer's FFN matrices
 *               whole, each in its own type: up and gate [d_ff, d_model],
 *               down [d_model, d_ff] (its rows along d_ff, as stored), at
 *               DRAM_ALIGN offsets; model.json's "ffn_matrices" lists them
 *               as "dram" lists its tensors (names layer_tensor_name's
 *               "ffn.up", "ffn.gate", "ffn.down"; dtype, shape, offset,
 *               bytes, crc32c). The dense FFN computes on them (three
 *               matvecs and ffn_act); ffn.bin's bundles hold the same
 *               weights in "dtype" for the flash paths.
 *   tokenizer.* the tokenizer, copied from the source
 *
 * Matrices are stored row-major [out, in] (y = W x) in the model's dtype;
 * norms and biases always in f32 (they are small and precision-sensitive).
 * A model.json with "tensor_dtypes": "per-tensor" (MODEL_TENSOR_DTYPES)
 * keeps each DRAM matrix in the type its table entry names, as a source
 * file stored it (a GGUF's blocks); "dtype" is then the FFN bundles'. */
#ifndef FLASHBED_ENGINE_MODEL_FORMAT_H
#define FLASHBED_ENGINE_MODEL_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "cache/unit_geometry.h"
#include "common/limits.h"
#include "common/model_shape.h"
#include "engine/model/dtype.h"

#define MODEL_FORMAT_NAME "flashbed-model"
#define MODEL_FORMAT_VERSION 1
#define MODEL_JSON "model.json"
#define MODEL_DRAM_FILE "dram.bin"
#define MODEL_FFN_FILE "ffn.bin"
#define MODEL_FFN_CRC_FILE "ffn.crc32c"
#define MODEL_CHECKSUM_ALGORITHM "crc32c"
#define MODEL_TENSOR_DTYPES "per-tensor" /* model.json's "tensor_dtypes" (above) */
#define MODEL_FFN_MATRICES_FILE "ffn_matrices.bin"
#define FFN_ALIGN FB_BUNDLE_ALIGN /* direct-I/O alignment of every bundle (common/limits.h) */
#define DRAM_ALIGN 64u   /* cache line: lets SIMD loads stay aligned */

/* ffn.bin's unit: the neuron bundle of shape s in type t (up, gate for a
 * GLU, down), its stride padded to FFN_ALIGN. 0, or -1 with err
 * (unit_geometry_make's refusals). */
int ffn_unit_geometry(const struct model_shape *s, enum fb_dtype t, struct unit_geometry *g, char *err,
                      size_t errlen);
/* Bytes of one neuron bundle before padding, and its padded stride: the
 * geometry's bytes and stride (0 for a shape that makes none). */
uint64_t ffn_bundle_bytes(const struct model_shape *s, enum fb_dtype t);
uint64_t ffn_bundle_stride(const struct model_shape *s, enum fb_dtype t);
/* Offsets inside a bundle, in elements of the dtype. */
static inline uint64_t ffn_bundle_up(void) { return 0; }
static inline uint64_t ffn_bundle_gate(const struct model_shape *s) { return s->d_model; }
static inline uint64_t ffn_bundle_down(const struct model_shape *s)
{
    return (uint64_t)s->d_model * (s->ffn_kind == FFN_GLU ? 2 : 1);
}

/* The shape's keys as JSON (the inverse of model_shape_load). */
void model_shape_to_json(const struct model_shape *s, cJSON *o);

/* Writes a model folder. Tensors go to a temporary folder "<dir>.tmp.<pid>"
 * renamed into place by model_writer_finish, so a failed conversion leaves
 * nothing behind. Layers' FFNs must be added in order 0..n_layers-1. Every
 * call returns 0, or -1 with the reason in the err buffer given to
 * model_writer_begin (which must outlive the writer). */
struct model_writer {
    char dir[4096], tmp[4200]; /* messages name dir, the user's path, not tmp */
    int cleanup;               /* tmp's handle in common/cleanup.h, -1 when none */
    struct model_shape shape;
    enum fb_dtype dtype;
    FILE *dram, *ffn;
    uint64_t dram_off;
    int ffn_layers_written;
    cJSON *tensors;
    bool tensor_dtypes;  /* a matrix was written in a type of its own (model_writer_matrix_stored) */
    FILE *mats;          /* ffn_matrices.bin, opened by the first model_writer_ffn_matrix_stored */
    uint64_t mats_off;
    cJSON *mat_tensors;  /* its table */
    uint32_t *ffn_crc;   /* [n_layers * d_ff]: each bundle's CRC-32C, written as ffn.crc32c */
    void *scratch;       /* one bundle / one converted row */
    float *column;       /* one down column gathered to f32 */
    char *err;           /* the caller's buffer for failures */
    size_t errlen;
};

int model_writer_begin(struct model_writer *w, const char *dir, const struct model_shape *s,
                       enum fb_dtype t, char *err, size_t errlen);
/* A DRAM tensor from f32 data; matrices are stored in the model dtype,
 * vectors (ndim 1) in f32. */
int model_writer_tensor(struct model_writer *w, const char *name, const float *data, int ndim,
                        const uint64_t *dims);
/* A DRAM matrix [dims[0], dims[1]] kept in type t as the source stores
 * it (data: its dims[0] rows of wtype_row_bytes(t, dims[1]) bytes); the
 * model becomes per-tensor (MODEL_TENSOR_DTYPES). Rows must be whole blocks. */
int model_writer_matrix_stored(struct model_writer *w, const char *name, enum fb_dtype t, const void *data,
                               const uint64_t dims[2]);
/* One of layer's FFN matrices kept as the source stores it, into
 * ffn_matrices.bin (model_format.h): part "up" or "gate" [d_ff, d_model],
 * "down" [d_model, d_ff], in type t (rows whole blocks). The bundles are
 * still written (model_writer_ffn_layer) for the flash paths. */
int model_writer_ffn_matrix_stored(struct model_writer *w, int layer, const char *part, enum fb_dtype t,
                                   const void *data);
/* One layer's FFN from f32 matrices as the source stores them:
 * up and gate [d_ff, d_model] (gate NULL unless GLU), down [d_model, d_ff]. */
int model_writer_ffn_layer(struct model_writer *w, int layer, const float *up, const float *gate,
                           const float *down);
/* Copies a file (the tokenizer) into the folder under name. */
int model_writer_copy_file(struct model_writer *w, const char *src, const char *name);
/* Writes model.json (meta: extra keys such as tokenizer, source) and renames
 * the folder into place. Takes ownership of meta. */
int model_writer_finish(struct model_writer *w, cJSON *meta);
void model_writer_abort(struct model_writer *w);

/* A 64-bit FNV-1a hash of a file, as hex, to tie a model to its source. */
int file_fnv1a64(const char *path, char hex[17]);

#endif
