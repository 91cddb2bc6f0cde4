/* model.json's table of DRAM tensors ("dram": {"tensors": [...]}) checked
 * as a whole, where model_load.c reads it: each entry an object with a
 * unique "name", a whole "offset" aligned to DRAM_ALIGN (64, as the writer
 * places them) and whole "bytes", inside dram.bin; and no two entries'
 * bytes overlapping. Each tensor's dtype and shape against the model are
 * checked where it is looked up (model_load.c). Returns 0, or -1 with the
 * reason in err naming model.json, the tensor and what is wrong. No threads. */
#ifndef FLASHBED_ENGINE_MODEL_TABLE_H
#define FLASHBED_ENGINE_MODEL_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

int model_table_check(const cJSON *tensors, uint64_t dram_bytes, const char *path, char *err, size_t errlen);

#endif
