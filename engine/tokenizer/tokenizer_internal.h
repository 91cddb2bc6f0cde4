/* What engine/tokenizer/'s files share and nothing else reads: the BPE
 * merge loop over symbols, the piece index, the merge-pair table, GPT-2's
 * byte alphabet and the pre-tokenizers (engine/tokenizer/pretokenize.c).
 * Contract: as tokenizer.h says of the whole; these are its parts. */
#ifndef FLASHBED_ENGINE_TOKENIZER_INTERNAL_H
#define FLASHBED_ENGINE_TOKENIZER_INTERNAL_H

#include "engine/tokenizer/tokenizer.h"

/* One BPE symbol (a token id in a linked list) and a merge candidate. */
struct sym {
    int id, prev, next;
};
struct merge {
    float score;
    int left, right; /* symbol slots; their ids when pushed */
    int left_id, right_id, merged_id;
};

/* A max-heap of merge candidates: the highest score first, the leftmost
 * (lowest left) on ties. */
void tokenizer_heap_push(struct merge *h, size_t *n, struct merge m);
struct merge tokenizer_heap_pop(struct merge *h, size_t *n);

/* BPE over the symbols s[0..ns) (their ids set): merges by priority until
 * none applies, then appends the ids to out. h holds 3 * ns + 1 merges,
 * buf 2 * max_piece_len + 8 bytes. Returns the count. */
size_t tokenizer_bpe(const struct tokenizer *t, struct sym *s, int ns, struct merge *h, char *buf, int *out);

/* The piece index over t->pieces (and byte_ids from <0xXX> pieces). */
int tokenizer_build_index(struct tokenizer *t);

/* The merge table: room for n merges; a, b -> merged at rank (the first
 * rank of a repeated pair stays). */
int tokenizer_alloc_pairs(struct tokenizer *t, size_t n_merges);
void tokenizer_add_pair(struct tokenizer *t, int a, int b, int merged, int rank);
uint64_t tokenizer_pair_key(int a, int b);
uint32_t tokenizer_pair_hash(uint64_t k);

/* GPT-2's byte alphabet: the code point that spells byte b; the bytes a
 * string of such code points spells (-1 when one is not a byte's). */
void tokenizer_byte_code_points(int cp_of[256]);
int tokenizer_key_to_bytes(const char *key, const int byte_of[512], char *out, size_t *len);

/* Defaults for vocabularies whose files say nothing of BOS, EOS, prefix. */
void tokenizer_legacy_defaults(struct tokenizer *t);

/* Where the pre-token starting at text[i] ends (i < len): the byte-class
 * approximation of GPT-2's splitter that tokenizer.json models use. */
size_t tokenizer_pretoken_end_legacy(const char *text, size_t len, size_t i);
/* llama.cpp's split of the code points cps[0..n) (unicode_decode_utf8's)
 * by the named pre-tokenizer (engine/tokenizer/pretokenize.c): ends[k] is
 * where word k ends (a code-point index, increasing, the last n). ends and
 * scratch hold n entries. Returns the word count (0 when n is 0). */
size_t tokenizer_pretokenize(enum tokenizer_pre pre, const uint32_t *cps, size_t n, size_t *ends, size_t *scratch);

/* The text cut at special tokens (llama.cpp's tokenizer_st_partition):
 * each special token of t->special_ids in turn, the longest first, cut
 * out wherever it occurs whole inside text not cut yet; control and
 * unknown tokens only when parse_special. *out (the caller frees it)
 * holds the stretches in order: token >= 0 a special token, -1 text. */
struct tokenizer_fragment {
    size_t off, len;
    int token;
};
size_t tokenizer_partition(const struct tokenizer *t, const char *text, size_t len, bool parse_special,
                           struct tokenizer_fragment **out);

#endif
