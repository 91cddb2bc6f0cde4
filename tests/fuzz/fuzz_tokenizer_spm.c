/* Fuzzes SentencePiece's tokenizer.model reader (engine/tokenizer/
 * tokenizer_spm_read.c, spm_model_read: protocol buffers' wire format,
 * ModelProto's pieces, trainer_spec, normalizer_spec) and the tokenizer
 * built from it (tokenizer_spm.c, tokenizer_load_spm). The vocabulary size
 * comes from a model's config, not the file: the harness loads with the
 * piece count the reader found, then uses what loaded. */
#include "engine/tokenizer/tokenizer_spm.h"
#include "fuzz_tokenizer_use.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("tokenizer.model", data, size);
    struct spm_model m;
    char err[512];
    int rc = spm_model_read(path, &m, err, sizeof err);
    fuzz_note("spm_model_read", rc, err);
    if (rc != 0)
        return 0;
    int vocab = (int)m.n_pieces;
    spm_model_free(&m);
    struct tokenizer t;
    rc = tokenizer_load_spm(&t, path, vocab, err, sizeof err);
    fuzz_note("tokenizer_load_spm", rc, err);
    if (rc == 0) {
        fuzz_use_tokenizer(&t, data, size);
        tokenizer_free(&t);
    }
    return 0;
}
