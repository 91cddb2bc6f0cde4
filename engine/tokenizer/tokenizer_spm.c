/* tokenizer_load_spm (engine/tokenizer/tokenizer_spm.h): a tokenizer.model
 * read by tokenizer_spm_read.c becomes the SentencePiece BPE tokenizer that
 * llama2.c's tokenizer.bin builds, with the file's own settings. */
#include "engine/tokenizer/tokenizer_spm.h"

#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/tokenizer/tokenizer_internal.h"

/* Why this tokenizer cannot encode as the file says, or NULL. */
static const char *unsupported(const struct spm_model *m)
{
    if (m->model_type != SPM_MODEL_BPE)
        return m->model_type == SPM_MODEL_UNIGRAM
                   ? "trainer_spec.model_type is UNIGRAM (T5's kind); flashbed's SentencePiece tokenizer is BPE "
                     "(Llama's, Mistral's): convert with the model's tokenizer.json instead"
                   : "trainer_spec.model_type is not BPE; flashbed's SentencePiece tokenizer is BPE";
    if (!m->byte_fallback)
        return "trainer_spec.byte_fallback is false; flashbed's SentencePiece tokenizer spells unknown "
               "characters as <0xXX> byte pieces";
    if (m->charsmap_bytes > 0)
        return "normalizer_spec has a precompiled_charsmap (it rewrites text before encoding); flashbed reads "
               "identity normalizers only (Llama's, Mistral's)";
    if (m->remove_extra_whitespaces)
        return "normalizer_spec.remove_extra_whitespaces is true; flashbed keeps whitespace as written "
               "(Llama's, Mistral's)";
    if (!m->escape_whitespaces)
        return "normalizer_spec.escape_whitespaces is false; flashbed reads spaces as \"\xe2\x96\x81\"";
    for (uint32_t i = 0; i < m->n_pieces; i++)
        if (m->types[i] == SPM_PIECE_USER_DEFINED)
            return "it has user-defined pieces, which flashbed's SentencePiece tokenizer does not match whole";
    return NULL;
}

/* p with each "▁" (U+2581) a space, as llama2.c spells pieces. */
static char *spaced(const char *p, uint32_t len, uint32_t *out_len)
{
    char *s = malloc((size_t)len + 1), *q = s;
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < len; i++) {
        if (i + 2 < len && !memcmp(p + i, "\xe2\x96\x81", 3)) {
            *q++ = ' ';
            i += 2;
        } else {
            *q++ = p[i];
        }
    }
    *q = '\0';
    *out_len = (uint32_t)(q - s);
    return s;
}

/* Normal pieces merge by their score; the others are never a merge's result. */
static int fill(struct tokenizer *t, const struct spm_model *m)
{
    t->vocab_size = (int)m->n_pieces;
    t->pieces = calloc(m->n_pieces, sizeof *t->pieces);
    t->piece_len = calloc(m->n_pieces, sizeof *t->piece_len);
    t->scores = calloc(m->n_pieces, sizeof *t->scores);
    if (!t->pieces || !t->piece_len || !t->scores)
        return -1;
    for (uint32_t i = 0; i < m->n_pieces; i++) {
        if (!(t->pieces[i] = spaced(m->pieces[i], m->piece_len[i], &t->piece_len[i])))
            return -1;
        t->scores[i] = m->types[i] == SPM_PIECE_NORMAL ? m->scores[i] : TOKENIZER_NO_MERGE;
        if (t->piece_len[i] > t->max_piece_len)
            t->max_piece_len = t->piece_len[i];
    }
    return 0;
}

int tokenizer_load_spm(struct tokenizer *t, const char *path, int vocab_size, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    struct spm_model m;
    if (spm_model_read(path, &m, err, errlen) != 0)
        return -1;
    const char *why = unsupported(&m);
    int rc = -1;
    if (why)
        err_set(err, errlen, "%s: %s", path, why);
    else if ((int64_t)m.n_pieces != vocab_size)
        err_set(err, errlen, "%s: %u pieces, but the model's vocabulary has %d tokens", path, m.n_pieces, vocab_size);
    else if (m.bos_id >= vocab_size || m.eos_id >= vocab_size)
        err_set(err, errlen, "%s: trainer_spec's bos_id %lld or eos_id %lld is outside the %d pieces", path,
                (long long)m.bos_id, (long long)m.eos_id, vocab_size);
    else if (fill(t, &m) != 0 || tokenizer_build_index(t) != 0)
        err_set(err, errlen, "%s: out of memory for %u pieces", path, m.n_pieces);
    else
        rc = 0;
    if (rc == 0) {
        t->kind = TOKENIZER_SENTENCEPIECE_BPE;
        tokenizer_legacy_defaults(t);
        t->bos_id = (int)m.bos_id;
        t->eos_id = (int)m.eos_id;
        t->add_bos = m.bos_id >= 0;
        t->add_space_prefix = m.add_dummy_prefix;
    }
    spm_model_free(&m);
    if (rc != 0)
        tokenizer_free(t);
    return rc;
}
