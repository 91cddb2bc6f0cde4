/* Fuzzes llama2.c checkpoints as `convert` reads them
 * (engine/import/import_llama2c.c): the 7 int32 header, its limits and the
 * tensors' extents against the file's size, then the conversion itself
 * into a model folder (removed after each input). Beside the checkpoint
 * lies a tokenizer.bin of exactly the vocabulary the header names, so a
 * header that passes goes on to the tensors; the tokenizer file itself is
 * fuzzed by fuzz_tokenizer_bin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/import/import.h"
#include "fuzz_util.h"

enum { MAX_VOCAB = 4096 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char ckpt[512], tok[512], out[512], err[1024];
    snprintf(ckpt, sizeof ckpt, "%s", fuzz_write("model.bin", data, size));
    int32_t vocab = 0;
    if (size >= 24)
        memcpy(&vocab, data + 20, 4);
    int64_t v = vocab < 0 ? -(int64_t)vocab : vocab;
    snprintf(tok, sizeof tok, "%s", fuzz_write_tokenizer_bin("tokenizer.bin", v >= 1 && v <= MAX_VOCAB ? (int)v : 1));
    snprintf(out, sizeof out, "%s", fuzz_path("out"));
    int rc = import_llama2c(ckpt, tok, out, DTYPE_F32, NULL, err, sizeof err);
    fuzz_note("import_llama2c", rc, err);
    if (rc == 0)
        fuzz_remove("out");
    return 0;
}
