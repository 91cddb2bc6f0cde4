/* llama.cpp's pre-tokenizers (engine/tokenizer/pretokenize.c) and the
 * Unicode classes and UTF-8 reading under them
 * (engine/tokenizer/unicode_classes.h). Ground truth: tests/data/pretokenize/
 * splits.json, llama.cpp's regex lists run on Python's regex module over
 * crafted texts (digit runs of 1..7, contractions in both cases, newlines
 * with spaces around, non-ASCII letters, symbols, emoji, "\r\n", trailing
 * spaces, invalid UTF-8), every word compared byte for byte; then the
 * classes and the decoder at their edges. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "common/json_file.h"
#include "engine/tokenizer/tokenizer_internal.h"
#include "engine/tokenizer/unicode_classes.h"

#ifndef TEST_DATA_DIR
#error TEST_DATA_DIR must be defined
#endif

static int pre_of(const char *name, enum tokenizer_pre *pre)
{
    static const struct {
        const char *name;
        enum tokenizer_pre pre;
    } names[] = {{"gpt-2", TOKENIZER_PRE_GPT2},
                 {"llama-bpe", TOKENIZER_PRE_LLAMA3},
                 {"qwen2", TOKENIZER_PRE_QWEN2},
                 {"smollm", TOKENIZER_PRE_SMOLLM},
                 {"default", TOKENIZER_PRE_DEFAULT}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i].name, name)) {
            *pre = names[i].pre;
            return 0;
        }
    return -1;
}

static size_t from_hex(const char *hex, char *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (char)v;
    }
    return n;
}

static void to_hex(const char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)b[i]);
    out[2 * n] = '\0';
}

/* One case: the words flashbed splits, against the fixture's. */
static int same_split(enum tokenizer_pre pre, const char *text, size_t len, const cJSON *want)
{
    uint32_t *cps = malloc((len + 1) * sizeof *cps);
    size_t *ends = malloc((len + 1) * sizeof *ends), *scratch = malloc((len + 1) * sizeof *scratch);
    char word[256], hex[520];
    size_t n = unicode_decode_utf8(text, len, cps);
    size_t nw = tokenizer_pretokenize(pre, cps, n, ends, scratch);
    int same = (int)nw == cJSON_GetArraySize(want);
    for (size_t k = 0, b = 0; same && k < nw; b = ends[k++]) {
        size_t wl = 0;
        for (size_t i = b; i < ends[k] && wl < sizeof word - 4; i++)
            wl += unicode_encode_utf8(cps[i], word + wl);
        to_hex(word, wl, hex);
        same = !strcmp(hex, cJSON_GetArrayItem(want, (int)k)->valuestring);
        if (!same)
            fprintf(stderr, "  word %zu: %s, want %s\n", k, hex, cJSON_GetArrayItem(want, (int)k)->valuestring);
    }
    if ((int)nw != cJSON_GetArraySize(want))
        fprintf(stderr, "  %zu words, want %d\n", nw, cJSON_GetArraySize(want));
    free(cps);
    free(ends);
    free(scratch);
    return same;
}

static void check_fixture(void)
{
    cJSON *root = read_json_file(TEST_DATA_DIR "/pretokenize/splits.json");
    CHECK(root != NULL);
    if (!root)
        return;
    const cJSON *cases = cJSON_GetObjectItem(root, "cases"), *c;
    int n = 0, exact = 0;
    cJSON_ArrayForEach(c, cases)
    {
        enum tokenizer_pre pre = TOKENIZER_PRE_GPT2;
        const char *name = cJSON_GetObjectItem(c, "pre")->valuestring;
        CHECK(pre_of(name, &pre) == 0);
        const char *hex = cJSON_GetObjectItem(c, "text_hex")->valuestring;
        char text[512];
        size_t len = from_hex(hex, text);
        int same = same_split(pre, text, len, cJSON_GetObjectItem(c, "words_hex"));
        if (!same)
            fprintf(stderr, "%s on %s: split differs\n", name, hex);
        n++;
        exact += same;
    }
    printf("pre-tokenizer splits equal to the reference: %d of %d\n", exact, n);
    CHECK_U64(exact, n);
    CHECK(n >= 150);
    cJSON_Delete(root);
}

static void check_classes(void)
{
    CHECK(unicode_class_of('a') == UC_LETTER && unicode_class_of('Z') == UC_LETTER);
    CHECK(unicode_class_of('7') == UC_NUMBER && unicode_class_of(0xBD) == UC_NUMBER); /* ½ */
    CHECK(unicode_class_of('!') == UC_PUNCT && unicode_class_of('_') == UC_PUNCT);
    CHECK(unicode_class_of('$') == UC_OTHER && unicode_class_of('`') == UC_OTHER); /* symbols */
    CHECK(unicode_class_of(0xE9) == UC_LETTER && unicode_class_of(0xDF) == UC_LETTER); /* é ß */
    CHECK(unicode_class_of(0x4E2D) == UC_LETTER);                                       /* 中 */
    CHECK(unicode_class_of(0x2605) == UC_OTHER && unicode_class_of(0x1F600) == UC_OTHER); /* ★ 😀 */
    CHECK(unicode_class_of(0x0301) == UC_OTHER); /* a combining accent (M) */
    CHECK(unicode_class_of(0x2EBF0) == UC_LETTER); /* CJK extension I: Unicode 15.1 */
    CHECK(unicode_class_of(0x0378) == UC_OTHER);   /* unassigned */
    CHECK(unicode_class_of(0x10FFFF) == UC_OTHER && unicode_class_of(0x1FFFFF) == UC_OTHER);
    CHECK(unicode_is_space(' ') && unicode_is_space('\r') && unicode_is_space(0x85) && unicode_is_space(0x3000));
    CHECK(!unicode_is_space(0x1C) && !unicode_is_space(0x200B) && !unicode_is_space(0x180E));
    CHECK_U64(unicode_white_space_count, 25);
}

static void check_decoder(void)
{
    uint32_t cps[8];
    char out[4];
    /* a 2-byte sequence cut by the length is one U+FFFD, its tail another */
    CHECK_U64(unicode_decode_utf8("\xc3\xa9", 1, cps), 1);
    CHECK_U64(cps[0], UNICODE_REPLACEMENT);
    CHECK_U64(unicode_decode_utf8("\xc3\xa9", 2, cps), 1);
    CHECK_U64(cps[0], 0xE9);
    CHECK_U64(unicode_decode_utf8("\xe4\xb8x", 3, cps), 3); /* FFFD FFFD x */
    CHECK(cps[0] == UNICODE_REPLACEMENT && cps[1] == UNICODE_REPLACEMENT && cps[2] == 'x');
    CHECK_U64(unicode_decode_utf8("\xc0\xaf", 2, cps), 1); /* overlong '/': read as llama.cpp reads it */
    CHECK_U64(cps[0], '/');
    CHECK_U64(unicode_decode_utf8("\xf8\x80", 2, cps), 2);
    CHECK(cps[0] == UNICODE_REPLACEMENT && cps[1] == UNICODE_REPLACEMENT);
    CHECK_U64(unicode_decode_utf8("\xf4\x90\x80\x80", 4, cps), 1);
    CHECK_U64(cps[0], 0x110000);
    CHECK_U64(unicode_encode_utf8(0x110000, out), 3); /* written as U+FFFD */
    CHECK(!memcmp(out, "\xef\xbf\xbd", 3));
    CHECK_U64(unicode_encode_utf8(0x1F600, out), 4);
    CHECK(!memcmp(out, "\xf0\x9f\x98\x80", 4));
    size_t ends[2], scratch[2];
    CHECK_U64(tokenizer_pretokenize(TOKENIZER_PRE_LLAMA3, cps, 0, ends, scratch), 0);
}

int main(void)
{
    check_fixture();
    check_classes();
    check_decoder();
    return check_report("test_pretokenize");
}
