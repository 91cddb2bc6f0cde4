/* The end-of-generation (EOG) tokens of a GGUF vocabulary, as llama.cpp
 * determines them (src/llama-vocab.cpp, llama_vocab::impl::load, at the
 * pinned llama-cpp-python 0.3.36): generation stops at any of them, not
 * only at tokenizer.ggml.eos_token_id (Gemma 3's chat turns end with
 * <end_of_turn>, SmolLM2's with <|im_end|>).
 *
 * Contract:
 * - The set is: every token whose text (the GGUF's tokens array, byte for
 *   byte) is one of llama.cpp's end-of-generation texts (<|eot_id|>,
 *   <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, </s>, <eos>, ...:
 *   the list in tokenizer_eog.c); the fill-in-the-middle pad, repo and
 *   file-separator tokens (the ids tokenizer.ggml.fim_pad/fim_rep/
 *   fim_sep_token_id name, or where a key is absent the token with one of
 *   llama.cpp's texts for it: <|fim_pad|>, <reponame>, <|file_sep|>, ...;
 *   where several texts of one list are present, llama.cpp takes the one
 *   its hash map meets first, this the lowest id); and the ids eos (the
 *   caller's, as the model has it) and tokenizer.ggml.eot_token_id and
 *   eom_token_id name. Then llama.cpp's two exceptions: <|end|> is not
 *   EOG beside <|return|> and <|call|> (or <|calls|> and <|flush|>), and
 *   </s> is not beside <|tool_response> or <|plamo:eos|>.
 * - ids ascending, each once, at most max: more is refused (-1, err
 *   naming the file and the count). A key naming an id outside the
 *   vocabulary, or a tokens array that is not strings or not vocab long,
 *   is refused naming the file and the key. */
#ifndef FLASHBED_ENGINE_TOKENIZER_EOG_H
#define FLASHBED_ENGINE_TOKENIZER_EOG_H

#include <stddef.h>
#include <stdint.h>

#include "common/gguf.h"

/* The special ids a vocabulary's metadata names, -1 where absent. */
struct eog_keys {
    int eos, eot, eom, fim_pad, fim_rep, fim_sep;
};

/* The rule above over vocab texts (text[i] of len[i] bytes, not
 * NUL-terminated): the EOG ids into out (ascending), their count in *n;
 * 0, or -1 when there are more than max (*n then says how many). */
int tokenizer_eog_of_texts(const char *const *text, const uint64_t *len, int vocab, const struct eog_keys *k,
                           int *out, int max, int *n);

/* The same for GGUF file f's vocabulary of vocab tokens, eos the model's
 * end-of-sequence id (-1: none): 0, or -1 with err. */
int tokenizer_gguf_eog(const struct gguf_file *f, int vocab, int eos, int *out, int max, int *n, char *err,
                       size_t errlen);

#endif
