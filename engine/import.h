/* Importers: a source model in, a flashbed model folder out (model_format.h). */
#ifndef FLASHBED_ENGINE_IMPORT_H
#define FLASHBED_ENGINE_IMPORT_H

#include "engine/dtype.h"

/* A llama2.c checkpoint (legacy format: 7 int32 header, f32 tensors) and
 * its tokenizer.bin. 0, or -1 with an error naming the file and tensor. */
int import_llama2c(const char *checkpoint, const char *tokenizer, const char *out_dir,
                   enum fb_dtype dtype);

#endif
