/* SentencePiece-style BPE on the Llama 2 vocabulary: token ids equal those
 * of the reference llama2.c encoder for fixed strings (ids recorded from it),
 * and decoding gives the text back. Skips (77) without the shared data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/tokenizer/tokenizer.h"

struct known {
    const char *text;
    int ids[16];
    int n;
};

/* from llama2.c run.c's bpe_encode (dummy prefix, byte fallback), no BOS */
static const struct known cases[] = {
    {"Hello world", {15043, 3186}, 2},
    {"Once upon a time, there was a little girl named Lily.",
     {9038, 2501, 263, 931, 29892, 727, 471, 263, 2217, 7826, 4257, 365, 2354, 29889}, 14},
    {"The quick brown fox jumps over the lazy dog.",
     {450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29889}, 12},
    {"na\xc3\xafve caf\xc3\xa9 \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x99\x82",
     {1055, 30085, 345, 274, 28059, 29871, 30591, 30675, 29871, 243, 162, 156, 133}, 13},
    {"  leading spaces and\ttab", {259, 8236, 8162, 322, 12, 3891}, 6},
    {"x", {921}, 1},
};

static void check_roundtrip(const struct tokenizer *t, const char *text)
{
    size_t len = strlen(text);
    int *ids = malloc(tokenizer_max_tokens(len) * sizeof *ids);
    size_t n = tokenizer_encode(t, text, len, true, ids);
    char *out = calloc(1, 4 * len + 16);
    size_t pos = 0;
    for (size_t i = 1; i < n; i++) {
        char b[2];
        size_t l;
        const char *p = tokenizer_decode(t, ids[i - 1], ids[i], &l, b);
        memcpy(out + pos, p, l);
        pos += l;
    }
    CHECK_STR(out, text);
    free(out);
    free(ids);
}

int main(void)
{
    const char *data = getenv("FLASHBED_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizers/llama2-tokenizer.bin", data && *data ? data : FLASHBED_DATA_DEFAULT);
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("skipped: %s not found (set FLASHBED_DATA)\n", path);
        return 77;
    }
    fclose(f);
    struct tokenizer t;
    char err[512];
    CHECK(tokenizer_load_llama2c(&t, path, 32000, err, sizeof err) == 0);
    CHECK_U64(t.bos_id, 1);
    CHECK_U64(t.byte_ids[0x0A], 13);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int ids[64];
        size_t n = tokenizer_encode(&t, cases[c].text, strlen(cases[c].text), true, ids);
        CHECK_U64(n, (size_t)cases[c].n + 1);
        CHECK_U64(ids[0], 1);
        for (int i = 0; i < cases[c].n && i + 1 < (int)n; i++)
            if (ids[i + 1] != cases[c].ids[i]) {
                CHECK_U64(ids[i + 1], cases[c].ids[i]);
                break;
            }
        check_roundtrip(&t, cases[c].text);
    }
    check_roundtrip(&t, "Multi\nline\n\ntext with \"quotes\", digits 12345 and symbols #$%&*.");
    int ids[4];
    CHECK_U64(tokenizer_encode(&t, "", 0, true, ids), 1);
    /* a vocabulary size the file does not hold is an error naming the file */
    tokenizer_free(&t);
    CHECK(tokenizer_load_llama2c(&t, path, 32001, err, sizeof err) == -1);
    CHECK(strstr(err, "llama2-tokenizer.bin: truncated") != NULL);
    CHECK(tokenizer_load_llama2c(&t, path, 31999, err, sizeof err) == -1);
    CHECK(strstr(err, "more than") != NULL);
    return check_report("test_tokenizer");
}
