/* The tokenizer a GGUF file carries in its tokenizer.* metadata, read as
 * llama.cpp reads it (src/llama-vocab.cpp), and a small GGUF holding only
 * that metadata for a model folder.
 *
 * Contract:
 * - tokenizer_load_gguf: tokenizer.ggml.model "llama" is SentencePiece
 *   (tokens, scores, token_type; <0xXX> byte tokens; add_space_prefix,
 *   true unless the file says false), "gpt2" byte-level BPE (tokens in
 *   GPT-2's byte alphabet, merges "a b", the pre-tokenizer named by
 *   tokenizer.ggml.pre: llama-bpe/llama3/llama-v3, qwen2, smollm, gpt-2,
 *   default; absent is "default" as in llama.cpp). Any other model or
 *   pre-tokenizer is refused by name. add_bos_token/add_eos_token as the
 *   file says, else llama.cpp's default for the model and pre-tokenizer.
 * - Refused with one line naming the file and the key: a token count
 *   other than vocab_size, an array of the wrong element type or length,
 *   bos/eos ids outside the vocabulary, a merge whose parts or result are
 *   not tokens, a duplicate token. Nothing stays allocated after -1.
 * - tokenizer_gguf_write writes dst_path as a GGUF v3 file with no
 *   tensors whose key/value pairs are the source's general.architecture
 *   (when it has one) and every tokenizer.* pair, values copied byte for
 *   byte, in the source's order: tokenizer_load_gguf on it builds the same
 *   tokenizer. Written to a temporary and renamed into place; on failure
 *   nothing is left at dst_path. */
#ifndef FLASHBED_ENGINE_TOKENIZER_GGUF_H
#define FLASHBED_ENGINE_TOKENIZER_GGUF_H

#include <stddef.h>

#include "common/gguf.h"
#include "engine/tokenizer/tokenizer.h"

int tokenizer_load_gguf(struct tokenizer *t, const struct gguf_file *f, int vocab_size, char *err, size_t errlen);
int tokenizer_gguf_write(const struct gguf_file *src, const char *dst_path, char *err, size_t errlen);

#endif
