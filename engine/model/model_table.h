/* model.json's tables of tensors checked as a whole, where model_load.c
 * reads them: the DRAM tensors ("dram": {"tensors": [...]}, in dram.bin)
 * and the FFN's matrices as stored ("ffn_matrices", in ffn_matrices.bin):
 * each entry an object with a unique "name", a whole "offset" aligned to
 * DRAM_ALIGN (64, as the writer places them) and whole "bytes", inside its
 * file; and no two entries' bytes overlapping. Each tensor's dtype and shape against the model are
 * checked where it is looked up (model_load.c). Returns 0, or -1 with the
 * reason in err naming model.json, the tensor and what is wrong. No threads. */
#ifndef FLASHBED_ENGINE_MODEL_TABLE_H
#define FLASHBED_ENGINE_MODEL_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* A file of tensors that a table lists, as messages name it. */
struct tensor_file {
    const char *file;    /* "dram.bin" */
    const char *section; /* model.json's key that lists it: "dram" */
    const void *base;    /* its bytes in memory (NULL: not read) */
    uint64_t bytes;
};

int model_table_check(const cJSON *tensors, const struct tensor_file *f, const char *path, char *err, size_t errlen);

#endif
