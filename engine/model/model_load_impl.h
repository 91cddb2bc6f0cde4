/* What model_load.c shares with the files that open the rest of a model
 * folder (model_matrices.c): a whole file read into memory, and a tensor
 * looked up in one of model.json's tables and checked. Both return NULL
 * with the reason in err (naming the file or model.json and the tensor). */
#ifndef FLASHBED_ENGINE_MODEL_LOAD_IMPL_H
#define FLASHBED_ENGINE_MODEL_LOAD_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine/model/model.h"
#include "engine/model/model_table.h"

/* A whole file of expect bytes into 2 MiB-aligned memory (huge pages
 * where the kernel gives them: fewer TLB misses when every token streams
 * it); the caller frees it. A file of another size is refused. */
void *model_read_whole(const char *path, size_t expect, size_t *len, char *err, size_t errlen);

/* One table of tensors and the file it lists. */
struct table {
    const cJSON *tensors;
    const char *json_path;
    const struct model *m;
    struct tensor_file file;
    bool own_types; /* every matrix of this table has the type its entry names (ffn_matrices) */
    char *err;      /* where a lookup says what is wrong */
    size_t errlen;
};

/* The tensor called name in tb, checked for dtype, shape and bounds: *type
 * is the type it must have; a matrix of a per-tensor model (struct model's
 * tensor_dtypes) or of an own_types table takes the one its entry names
 * (its rows a whole number of blocks), written back. */
const void *tensor_of(const struct table *tb, const char *name, enum fb_dtype *type, int ndim, uint64_t d0,
                      uint64_t d1);

/* model.json's "ffn_matrices" (model_format.h), when it has one: the file
 * read (unless the FFN stays on flash and flags lack MODEL_LOAD_MATRICES:
 * then only its size is checked), its table checked, each layer's matrices
 * found, their checksums checked (unless MODEL_NO_VERIFY). 0, or -1 with err. */
int model_matrices_open(struct model *m, const cJSON *model_json, unsigned flags, const char *json_path, char *err,
                        size_t errlen);

#endif
