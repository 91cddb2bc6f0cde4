/* Importers: a source model in, a flashbed model folder out (model_format.h). */
#ifndef FLASHBED_ENGINE_IMPORT_H
#define FLASHBED_ENGINE_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/progress.h"
#include "engine/model/dtype.h"

/* Both return 0, or -1 with the reason in err (naming the file and the
 * tensor) and nothing left behind in out_dir; progress (may be NULL) hears
 * of each layer converted. */

/* A llama2.c checkpoint (legacy format: 7 int32 header, f32 tensors) and
 * its tokenizer.bin (required: NULL is refused). */
int import_llama2c(const char *checkpoint, const char *tokenizer, const char *out_dir,
                   enum fb_dtype dtype, const struct progress_report *progress, char *err, size_t errlen);

/* The weights' dtype of a Hugging Face conversion. */
struct import_dtype {
    bool keep;          /* in: the checkpoint's own, its matrices' when it mixes (st_matrix_dtype) */
    enum fb_dtype dtype; /* in: the one asked for unless keep; out: the one written */
    char held[64];      /* out: what the checkpoint holds ("matrices bf16, vectors f32") */
};

/* A Hugging Face folder (config.json, model.safetensors or a sharded
 * model.safetensors.index.json, tokenizer.json or SentencePiece's
 * tokenizer.model) of an architecture import_hf_archs lists
 * (engine/import/import_hf_arch.h and one import_hf_<arch>.c each); a
 * folder of pytorch_model.bin or without a tokenizer is refused saying
 * what to do (import_hf_folder.c). model.json's "source" says which dtype
 * was written and why ("dtype", "dtype_from", "checkpoint_dtypes"); dtype
 * NULL keeps the checkpoint's. tokenizer:
 * a llama2.c tokenizer.bin to use instead of tokenizer.json, or NULL. */
int import_hf(const char *dir, const char *tokenizer, const char *out_dir, struct import_dtype *dtype,
              const struct progress_report *progress, char *err, size_t errlen);

/* A GGUF file (common/gguf.h; versions 2 and 3) of architecture llama,
 * qwen2, qwen3, phi3 or gemma3 (engine/import/import_gguf_arch.h; the
 * others refused by name). Every metadata key that changes the
 * computation is honoured or refused (import_gguf_meta.c), every tensor
 * read or refused. dtype NULL or keep: each matrix kept in its GGUF type
 * (model.json "tensor_dtypes": "per-tensor", the FFN's matrices in
 * ffn_matrices.bin too) and ffn.bin's bundles decoded to f16 (dtype->dtype
 * says so); else everything decoded into dtype->dtype (f32, f16 or bf16).
 * dtype->held says which types the file holds. tokenizer: a llama2.c
 * tokenizer.bin to use instead of the GGUF's, or NULL. */
int import_gguf(const char *path, const char *tokenizer, const char *out_dir, struct import_dtype *dtype,
                const struct progress_report *progress, char *err, size_t errlen);

/* A lone file that is one part of a Hugging Face folder (a .safetensors
 * file, config.json, tokenizer.json or tokenizer.model) or a PyTorch
 * checkpoint (pytorch_model*.bin, .pt, .pth), given where convert takes a
 * folder, a GGUF file or a llama2.c checkpoint: -1 with what convert
 * expects and the shortest way there (its folder, when that has
 * config.json); 0 for any other file. */
int import_lone_file_check(const char *path, char *err, size_t errlen);

/* The architectures the importers accept, from the tables that dispatch
 * them (convert --help and the importers' refusals list these, so neither
 * can fall behind): a Hugging Face folder's config.json model_type values,
 * ", "-separated, each with what it is in parentheses when about; a GGUF
 * file's general.architecture values. Cut to len. */
void import_hf_archs(char *buf, size_t len, bool about);
void import_gguf_archs(char *buf, size_t len);

#endif
