/* Fuzzes llama2.c's tokenizer.bin reader (engine/tokenizer/tokenizer.c,
 * tokenizer_load_llama2c): int32 max_len, then per token a float score,
 * an int32 length and the bytes. The vocabulary size comes from a
 * model's header, not the file: the harness counts the records that fit
 * and loads with that count and the ones beside it (a file with a token
 * too many or too few), then uses what loaded. */
#include <string.h>

#include "engine/tokenizer/tokenizer.h"
#include "fuzz_tokenizer_use.h"
#include "fuzz_util.h"

enum { MAX_VOCAB = 1 << 16 };

/* Records of (score, len, bytes) that fit in the input after max_len. */
static int count_records(const uint8_t *data, size_t size)
{
    size_t at = 4;
    int n = 0;
    while (n < MAX_VOCAB && at + 8 <= size) {
        int32_t len;
        memcpy(&len, data + at + 4, 4);
        if (len < 0 || (size_t)len > size - at - 8)
            break;
        at += 8 + (size_t)len;
        n++;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("tokenizer.bin", data, size);
    int n = count_records(data, size);
    for (int vocab = n > 1 ? n - 1 : 1; vocab <= n + 1; vocab++) {
        struct tokenizer t;
        char err[512];
        int rc = tokenizer_load_llama2c(&t, path, vocab, err, sizeof err);
        fuzz_note("tokenizer_load_llama2c", rc, err);
        if (rc == 0) {
            fuzz_use_tokenizer(&t, data, size);
            tokenizer_free(&t);
        }
    }
    return 0;
}
