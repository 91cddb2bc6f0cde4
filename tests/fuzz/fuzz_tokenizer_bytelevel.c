/* Fuzzes tokenizer.json of the byte-level BPE kind (GPT-2, OPT, Falcon,
 * Phi: engine/tokenizer/tokenizer.c, tokenizer_load_hf_bytelevel): model.vocab in
 * GPT-2's byte alphabet, model.merges as "a b" or ["a", "b"],
 * added_tokens. The vocabulary size comes from config.json, not the file:
 * the harness loads with the number of vocab entries and added tokens
 * (and one more, an id the tokenizer never produces), then uses it. */
#include <cjson/cJSON.h>

#include "engine/tokenizer/tokenizer.h"
#include "fuzz_tokenizer_use.h"
#include "fuzz_util.h"

enum { MAX_VOCAB = 1 << 16 };

static int vocab_entries(const uint8_t *data, size_t size)
{
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(model, "vocab")) +
            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "added_tokens"));
    cJSON_Delete(root);
    return n < 1 ? 1 : n > MAX_VOCAB ? MAX_VOCAB : n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("tokenizer.json", data, size);
    int n = vocab_entries(data, size);
    for (int vocab = n; vocab <= n + 1; vocab++) {
        struct tokenizer t;
        char err[512];
        int rc = tokenizer_load_hf_bytelevel(&t, path, vocab, err, sizeof err);
        fuzz_note("tokenizer_load_hf_bytelevel", rc, err);
        if (rc == 0) {
            fuzz_use_tokenizer(&t, data, size);
            tokenizer_free(&t);
        }
    }
    return 0;
}
