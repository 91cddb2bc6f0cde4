/* Importers: a source model in, a flashbed model folder out (model_format.h). */
#ifndef FLASHBED_ENGINE_IMPORT_H
#define FLASHBED_ENGINE_IMPORT_H

#include "engine/dtype.h"

/* A llama2.c checkpoint (legacy format: 7 int32 header, f32 tensors) and
 * its tokenizer.bin. 0, or -1 with an error naming the file and tensor. */
int import_llama2c(const char *checkpoint, const char *tokenizer, const char *out_dir,
                   enum fb_dtype dtype);

/* A Hugging Face folder (config.json, model.safetensors or a sharded
 * model.safetensors.index.json, tokenizer.json): Llama and OPT. tokenizer:
 * a llama2.c tokenizer.bin to use instead of tokenizer.json, or NULL. */
int import_hf(const char *dir, const char *tokenizer, const char *out_dir, enum fb_dtype dtype);

#endif
