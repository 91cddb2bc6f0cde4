/* Reading safetensors (a JSON header of names, dtypes, shapes and byte
 * ranges, then the raw tensors), one file or a sharded set listed in
 * model.safetensors.index.json. Files are mapped, never read whole. */
#ifndef FLASHBED_ENGINE_SAFETENSORS_H
#define FLASHBED_ENGINE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "engine/model/dtype.h"

struct st_file {
    char path[4200];
    const unsigned char *map;
    size_t size;
    size_t data_start; /* 8 + header length */
    cJSON *header;
};

struct st_set {
    struct st_file *files;
    int n_files;
    cJSON *weight_map; /* index's name -> file, or NULL for one file */
};

/* Opens dir/model.safetensors, or the shards of dir/model.safetensors.index.json.
 * Every header is checked (offsets inside the file, sizes matching dtype and
 * shape). 0, or -1 with the reason in err naming the file and tensor
 * (nothing left open). */
int st_open(struct st_set *s, const char *dir, char *err, size_t errlen);
void st_close(struct st_set *s);
/* Opens one safetensors file by path (predictor.safetensors), checked as st_open does. */
int st_open_file(struct st_set *s, const char *path, char *err, size_t errlen);

/* One tensor to write: f32 data converted to dtype (F32, F16 or BF16) on the way. */
struct st_tensor {
    const char *name;
    enum fb_dtype dtype;
    int ndim;
    uint64_t dims[2];
    const float *data;
};
/* Writes the 8-byte header length, the header (the tensors' names, dtypes,
 * shapes and byte ranges in order, then metadata when not NULL) and its
 * padding to 8 bytes: what a writer streaming its own tensor bytes after it
 * needs (t[i].data is not read). 0, or -1 (a write failed, or out of memory). */
int st_write_header(FILE *f, const struct st_tensor *t, int n, const cJSON *metadata);
/* Writes the tensors, in order, as a safetensors file at path through a
 * temporary (common/atomic_file.h); metadata: string pairs for
 * __metadata__, or NULL. 0, or -1 with err naming the file. */
int st_write(const char *path, const struct st_tensor *t, int n, const cJSON *metadata, char *err, size_t errlen);

/* The tensor as f32 (converted from F32, F16 or BF16) in a new buffer of
 * n elements, with its shape checked: dims[0..ndim). NULL with the reason
 * in err when missing, of another shape, or holding a NaN or infinity. */
float *st_read_f32(const struct st_set *s, const char *name, int ndim, const uint64_t *dims, char *err,
                   size_t errlen);
/* Which dtypes the set's tensors are stored in, as bit masks of
 * 1u << enum fb_dtype: matrices (2 or more dims) and vectors apart, since
 * checkpoints keep norms in f32 beside bf16 or f16 matrices. */
struct st_dtypes {
    unsigned matrices, vectors;
};
struct st_dtypes st_dtype_census(const struct st_set *s);
/* The one dtype that holds every matrix of the census exactly: their own
 * when they share one, else f32 (f16 and bf16 both widen to it exactly). */
enum fb_dtype st_matrix_dtype(struct st_dtypes d);
/* "bf16" or "f16+bf16" for a mask (empty: "none"), into buf. */
const char *st_dtype_mask_name(unsigned mask, char *buf, size_t len);

/* Whether the set holds a tensor called name. */
int st_has(const struct st_set *s, const char *name);

#endif
