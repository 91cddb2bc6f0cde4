/* SentencePiece's own model file, tokenizer.model (a serialized
 * sentencepiece.ModelProto, protocol buffers' wire format), as Llama 2's
 * and Mistral's repositories ship it instead of (or beside) tokenizer.json.
 *
 * Contract:
 * - spm_model_read reads the fields flashbed needs and skips the rest:
 *   ModelProto.pieces (1: each SentencePiece's piece 1, score 2, type 3),
 *   trainer_spec (2: model_type 3, byte_fallback 35, unk/bos/eos/pad_id
 *   40..43) and normalizer_spec (3: name 1, precompiled_charsmap 2,
 *   add_dummy_prefix 3, remove_extra_whitespaces 4, escape_whitespaces 5),
 *   each absent field at the proto's default. Input that is not the wire
 *   format (a length past the end, a varint over 10 bytes, a group, a known
 *   field of the wrong wire type, a file over SPM_MAX_FILE bytes, no pieces)
 *   is refused in one line naming the file, the byte offset and what is
 *   wrong. Memory is bounded by the file's size: the piece count is read
 *   first and each piece holds at most the bytes it takes in the file.
 *   Nothing stays allocated after -1.
 * - tokenizer_load_spm builds flashbed's SentencePiece BPE tokenizer
 *   (tokenizer.h, the one llama2.c's tokenizer.bin and GGUF's "llama"
 *   vocabularies use) from such a file: pieces with "▁" as a space, normal
 *   pieces merging by their score, control, unknown, unused and byte
 *   pieces never the result of a merge, bos/eos from trainer_spec, the
 *   space prefix as normalizer_spec's add_dummy_prefix says. What that
 *   tokenizer does not do is refused by field: a model other than BPE
 *   (unigram: T5, ...), no byte fallback, a normalizer that rewrites text
 *   (a precompiled_charsmap, remove_extra_whitespaces), whitespace not
 *   escaped as "▁", user-defined pieces, and a piece count other than
 *   vocab_size (the model's). */
#ifndef FLASHBED_ENGINE_TOKENIZER_SPM_H
#define FLASHBED_ENGINE_TOKENIZER_SPM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/tokenizer/tokenizer.h"

/* Larger than any real vocabulary's file (Llama 2's: 500 KB; Gemma's
 * 256k pieces: 4 MB): a bound on what one read allocates. */
#define SPM_MAX_FILE (256u << 20)

/* sentencepiece.ModelProto.SentencePiece.Type */
enum spm_piece_type {
    SPM_PIECE_NORMAL = 1,
    SPM_PIECE_UNKNOWN = 2,
    SPM_PIECE_CONTROL = 3,
    SPM_PIECE_USER_DEFINED = 4,
    SPM_PIECE_UNUSED = 5,
    SPM_PIECE_BYTE = 6,
};

/* sentencepiece.TrainerSpec.ModelType */
enum spm_model_type { SPM_MODEL_UNIGRAM = 1, SPM_MODEL_BPE = 2, SPM_MODEL_WORD = 3, SPM_MODEL_CHAR = 4 };

struct spm_model {
    uint32_t n_pieces;
    char **pieces;          /* (n_pieces,) as stored ("▁" for a space), NUL-terminated */
    uint32_t *piece_len;    /* (n_pieces,) bytes */
    float *scores;          /* (n_pieces,) */
    uint8_t *types;         /* (n_pieces,) enum spm_piece_type as stored */
    int64_t model_type;     /* enum spm_model_type as stored */
    bool byte_fallback;
    int64_t unk_id, bos_id, eos_id, pad_id; /* -1: none */
    char normalizer[64];    /* normalizer_spec.name, cut */
    uint64_t charsmap_bytes; /* normalizer_spec.precompiled_charsmap's length */
    bool add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces;
};

int spm_model_read(const char *path, struct spm_model *m, char *err, size_t errlen);
void spm_model_free(struct spm_model *m);

int tokenizer_load_spm(struct tokenizer *t, const char *path, int vocab_size, char *err, size_t errlen);

#endif
