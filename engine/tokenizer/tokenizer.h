/* Tokenizers: text to token ids and back, with the model's BOS/EOS.
 * SentencePiece-style BPE (Llama, llama2.c's tokenizer.bin): a dummy-prefix
 * space, pieces looked up per UTF-8 character, unknown bytes to <0xXX>
 * tokens, then adjacent pairs merged by the highest piece score.
 * Byte-level BPE (GPT-2, OPT: tokenizer.json): GPT-2's pre-tokenizer splits
 * the text, each piece starts as its bytes, and listed pairs merge by rank. */
#ifndef FLASHBED_ENGINE_TOKENIZER_H
#define FLASHBED_ENGINE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tokenizer_kind { TOKENIZER_SENTENCEPIECE_BPE, TOKENIZER_BYTE_BPE };

/* Pieces scored at or below this are never the result of a merge (as in
 * llama2.c, whose search starts from this score). */
#define TOKENIZER_NO_MERGE (-1e10f)

struct tokenizer {
    enum tokenizer_kind kind;
    int vocab_size;
    char **pieces;          /* (vocab,) NUL-terminated; "▁" already a space */
    uint32_t *piece_len;    /* (vocab,) */
    float *scores;          /* (vocab,) merge priority */
    uint32_t max_piece_len;
    int32_t *index;         /* open-addressing hash of pieces, -1 = empty */
    uint32_t index_mask;
    int byte_ids[256];      /* <0xXX> (byte-level: the one-byte) token of each byte, -1 when absent */
    int bos_id, eos_id;
    /* byte-level BPE: merge pairs (left << 32 | right) -> rank and result */
    uint64_t *pair_keys;
    int32_t *pair_rank;     /* -1 = empty slot */
    int32_t *pair_merged;
    uint32_t pair_mask;
};

/* llama2.c format: int32 max_len, then per token float score, int32 len,
 * bytes. vocab_size tokens are read; the file must hold exactly those, and at
 * least 3 (BOS is id 1, EOS id 2). */
int tokenizer_load_llama2c(struct tokenizer *t, const char *path, int vocab_size, char *err,
                           size_t errlen);
/* tokenizer.json of the byte-level kind (model.vocab keys in GPT-2's byte
 * alphabet, model.merges as "a b" or ["a", "b"]). */
int tokenizer_load_hf_bytelevel(struct tokenizer *t, const char *path, int vocab_size, char *err,
                                size_t errlen);
void tokenizer_free(struct tokenizer *t);

/* Id of the exact piece, or -1. */
int tokenizer_lookup(const struct tokenizer *t, const char *s, size_t len);

/* Encodes len bytes of text, BOS first when add_bos. out must hold
 * tokenizer_max_tokens(len) ids. Returns the count. */
static inline size_t tokenizer_max_tokens(size_t len) { return len + 2; }
size_t tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, bool add_bos,
                        int *out);

/* The bytes token id stands for when it follows prev (SentencePiece drops
 * the dummy-prefix space after BOS; <0xXX> tokens are one raw byte). buf
 * holds the byte for byte tokens. */
const char *tokenizer_decode(const struct tokenizer *t, int prev, int id, size_t *len, char buf[2]);

#endif
