/* Tokenizers: text to token ids and back, with the model's BOS/EOS.
 * SentencePiece-style BPE (Llama, llama2.c's tokenizer.bin): a dummy-prefix
 * space, pieces looked up per UTF-8 character, unknown bytes to <0xXX>
 * tokens, then adjacent pairs merged by the highest piece score.
 * Byte-level BPE (GPT-2, OPT: tokenizer.json): GPT-2's pre-tokenizer splits
 * the text, each piece starts as its bytes, and listed pairs merge by rank.
 * From a GGUF file's tokenizer.ggml.* metadata (engine/tokenizer/tokenizer_gguf.h)
 * either kind is built as llama.cpp builds it: SentencePiece merging by
 * score over the text's characters, byte-level BPE with the named
 * pre-tokenizer, control and user-defined tokens matched whole, BOS/EOS
 * and the space prefix as the file says. */
#ifndef FLASHBED_ENGINE_TOKENIZER_H
#define FLASHBED_ENGINE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tokenizer_kind { TOKENIZER_SENTENCEPIECE_BPE, TOKENIZER_BYTE_BPE };

/* How byte-level BPE splits text before merging: LEGACY is the byte-class
 * approximation of GPT-2's regex that tokenizer.json models have always
 * used here; the others are llama.cpp's regexes for tokenizer.ggml.pre,
 * with Unicode's letter and number classes. */
enum tokenizer_pre {
    TOKENIZER_PRE_LEGACY,
    TOKENIZER_PRE_GPT2,    /* "gpt-2" (and GGUF's "default" splitter's core) */
    TOKENIZER_PRE_LLAMA3,  /* "llama-bpe", "llama3", "llama-v3" */
    TOKENIZER_PRE_QWEN2,   /* "qwen2" */
    TOKENIZER_PRE_SMOLLM,  /* "smollm": each digit alone, then GPT-2's */
    TOKENIZER_PRE_DEFAULT, /* "default": llama.cpp's fallback sequence */
};

/* GGUF's tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
enum tokenizer_token_type {
    TOKEN_TYPE_UNDEFINED = 0,
    TOKEN_TYPE_NORMAL = 1,
    TOKEN_TYPE_UNKNOWN = 2,
    TOKEN_TYPE_CONTROL = 3,
    TOKEN_TYPE_USER_DEFINED = 4,
    TOKEN_TYPE_UNUSED = 5,
    TOKEN_TYPE_BYTE = 6,
};

/* Pieces scored at or below this are never the result of a merge (as in
 * llama2.c, whose search starts from this score). */
#define TOKENIZER_NO_MERGE (-1e10f)

struct tokenizer {
    enum tokenizer_kind kind;
    int vocab_size;
    char **pieces;          /* (vocab,) NUL-terminated; "▁" already a space (GGUF's SentencePiece: kept) */
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
    /* what the vocabulary asks for: tokenizer_encode adds BOS (EOS) only
     * when its caller asks and these say so (llama2.c and tokenizer.json
     * files: BOS yes, EOS no) */
    bool add_bos, add_eos;
    bool add_space_prefix;  /* SentencePiece: a space before the text */
    bool ignore_merges;     /* byte-level: a word that is a token stays whole (Llama 3) */
    enum tokenizer_pre pre; /* byte-level only */
    bool gguf;              /* built by tokenizer_load_gguf */
    uint8_t *token_type;    /* (vocab,) enum tokenizer_token_type; NULL: all normal */
    int *special_ids;       /* control, user-defined and unknown tokens, longest text first */
    int n_special;
    char **display;         /* GGUF SentencePiece: each piece's text with "▁" as a space */
    uint32_t *display_len;
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

/* Encodes len bytes of text, BOS first when add_bos and the vocabulary
 * adds one (t->add_bos), EOS last when add_bos and t->add_eos: add_bos is
 * llama.cpp's add_special. Special tokens' text is not parsed (control
 * tokens are spelt out; user-defined ones always match whole, as in
 * llama.cpp). out must hold tokenizer_max_tokens(len) ids. Returns the
 * count. */
/* (SentencePiece writes a space as "▁", 3 bytes, each a byte token at
 * worst; then the space prefix, BOS and EOS.) */
static inline size_t tokenizer_max_tokens(size_t len) { return 3 * len + 5; }
size_t tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, bool add_bos,
                        int *out);
/* The same with llama.cpp's parse_special: control (and unknown) tokens'
 * text in the input becomes those tokens. For a GGUF-built tokenizer;
 * others ignore parse_special. */
size_t tokenizer_encode_special(const struct tokenizer *t, const char *text, size_t len, bool add_special,
                                bool parse_special, int *out);

/* The bytes token id stands for when it follows prev (SentencePiece drops
 * the dummy-prefix space after BOS when it adds one; <0xXX> tokens are one
 * raw byte; control tokens of a GGUF vocabulary are nothing). buf holds
 * the byte for byte tokens. */
const char *tokenizer_decode(const struct tokenizer *t, int prev, int id, size_t *len, char buf[2]);

#endif
