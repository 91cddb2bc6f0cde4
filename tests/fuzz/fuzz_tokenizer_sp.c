/* Fuzzes tokenizer.json of the SentencePiece kind (Llama, Persimmon:
 * BPE with byte_fallback, "▁" for spaces), which `convert` rewrites as a
 * llama2.c tokenizer.bin (engine/import/import_hf_tokenizer.c,
 * hf_convert_sp_tokenizer); the result is then loaded and used as the
 * engine would. The vocabulary size comes from config.json: the harness
 * uses the number of vocab entries (and one more, which must be refused:
 * an id without a piece). */
#include <stdio.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine/import/import_hf_arch.h"
#include "engine/tokenizer/tokenizer.h"
#include "fuzz_tokenizer_use.h"
#include "fuzz_util.h"

enum { MAX_VOCAB = 1 << 16 };

static int vocab_entries(const uint8_t *data, size_t size)
{
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(model, "vocab"));
    cJSON_Delete(root);
    return n < 1 ? 1 : n > MAX_VOCAB ? MAX_VOCAB : n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *json = fuzz_write("tokenizer.json", data, size);
    char bin[512];
    snprintf(bin, sizeof bin, "%s", fuzz_path("tokenizer.bin"));
    int n = vocab_entries(data, size);
    for (int vocab = n; vocab <= n + 1; vocab++) {
        struct model_shape s = {.vocab_size = (uint32_t)vocab};
        char err[512];
        unlink(bin);
        int rc = hf_convert_sp_tokenizer(json, &s, bin, err, sizeof err);
        fuzz_note("hf_convert_sp_tokenizer", rc, err);
        if (rc != 0)
            continue;
        struct tokenizer t;
        if (tokenizer_load_llama2c(&t, bin, vocab, err, sizeof err) == 0) {
            fuzz_use_tokenizer(&t, data, size);
            tokenizer_free(&t);
        }
    }
    return 0;
}
