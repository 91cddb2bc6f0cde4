/* Byte-level BPE (GPT-2/OPT tokenizer.json): a small tokenizer.json written
 * here in GPT-2's byte alphabet, with hand-derived encodings: the
 * pre-tokenizer's splits (contractions, " word", digits, punctuation runs,
 * whitespace runs), merges applied lowest rank first within each piece,
 * and lossless decoding of any bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "engine/tokenizer/tokenizer.h"

/* GPT-2's alphabet, written independently of the engine's: printable
 * Latin-1 bytes stand for themselves, the others for U+0100 onwards. */
static void spell(const unsigned char *bytes, size_t n, char *out)
{
    int next = 256, cp_of[256];
    for (int b = 0; b < 256; b++)
        cp_of[b] = ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) ? b : next++;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int cp = cp_of[bytes[i]];
        if (cp < 0x80)
            out[o++] = (char)cp;
        else {
            out[o++] = (char)(0xC0 | (cp >> 6));
            out[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    out[o] = '\0';
}

/* merges, in rank order; the merged tokens get ids 256, 257, ... */
static const char *const merges[][2] = {
    {"h", "e"}, {" ", "t"}, {" t", "he"}, {"c", "a"}, {" ", "c"}, {"'", "s"}, {"1", "2"}, {"!", "!"},
};
enum { N_MERGES = sizeof merges / sizeof merges[0], VOCAB = 256 + N_MERGES + 1 };

static void write_tokenizer(const char *path)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    cJSON *m = cJSON_AddArrayToObject(model, "merges");
    char a[64], b[64], line[140];
    for (int i = 0; i < 256; i++) {
        unsigned char byte = (unsigned char)i;
        spell(&byte, 1, a);
        cJSON_AddNumberToObject(vocab, a, i);
    }
    for (int i = 0; i < N_MERGES; i++) {
        spell((const unsigned char *)merges[i][0], strlen(merges[i][0]), a);
        spell((const unsigned char *)merges[i][1], strlen(merges[i][1]), b);
        snprintf(line, sizeof line, "%s %s", a, b);
        cJSON_AddItemToArray(m, cJSON_CreateString(line));
        snprintf(line, sizeof line, "%s%s", a, b);
        cJSON_AddNumberToObject(vocab, line, 256 + i);
    }
    cJSON_AddNumberToObject(vocab, "</s>", VOCAB - 1);
    char *text = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(root);
}

struct known {
    const char *text;
    int ids[16];
    int n;
};

static const struct known cases[] = {
    /* "the" -> t he; " cat" -> Ġ ca t (c a before Ġ c); " the" -> Ġthe */
    {"the cat the", {'t', 256, ' ', 259, 't', 258}, 6},
    /* contraction, " 12" -> Ġ 12, "!!" then "!" */
    {"it's 12!!!", {'i', 't', 261, ' ', 262, 263, '!'}, 7},
    /* whitespace runs: the last space joins the word; newlines stand alone */
    {"a  b\n\nc ", {'a', ' ', ' ', 'b', '\n', '\n', 'c', ' '}, 8},
    /* no merge across pre-tokens: "h" and "e" in different pieces */
    {"h-e", {'h', '-', 'e'}, 3},
};

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-bpe-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    char path[600];
    snprintf(path, sizeof path, "%s/tokenizer.json", tmp);
    write_tokenizer(path);
    struct tokenizer t;
    char err[512];
    CHECK(tokenizer_load_hf_bytelevel(&t, path, VOCAB, err, sizeof err) == 0);
    t.bos_id = VOCAB - 1;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int ids[64];
        size_t n = tokenizer_encode(&t, cases[c].text, strlen(cases[c].text), false, ids);
        CHECK_U64(n, cases[c].n);
        for (int i = 0; i < cases[c].n && i < (int)n; i++)
            if (ids[i] != cases[c].ids[i]) {
                fprintf(stderr, "case \"%s\" token %d:\n", cases[c].text, i);
                CHECK_U64(ids[i], cases[c].ids[i]);
                break;
            }
    }
    /* any bytes survive encode + decode */
    const char *texts[] = {"the cat's 123!! caf\xc3\xa9 \xf0\x9f\x99\x82\n\ttab", "\x01\x02\xff raw", "  "};
    for (int k = 0; k < 3; k++) {
        int ids[128];
        size_t n = tokenizer_encode(&t, texts[k], strlen(texts[k]), true, ids);
        CHECK_U64(ids[0], VOCAB - 1);
        char out[256];
        size_t o = 0;
        for (size_t i = 1; i < n; i++) {
            char b[2];
            size_t l;
            const char *p = tokenizer_decode(&t, ids[i - 1], ids[i], &l, b);
            memcpy(out + o, p, l);
            o += l;
        }
        out[o] = '\0';
        CHECK_STR(out, texts[k]);
    }
    tokenizer_free(&t);
    /* a vocabulary id past the model's is an error naming the file */
    CHECK(tokenizer_load_hf_bytelevel(&t, path, 200, err, sizeof err) == -1);
    CHECK(strstr(err, "tokenizer.json: vocab entry") != NULL);
    unlink(path);
    CHECK(rmdir(tmp) == 0);
    return check_report("test_bytelevel_bpe");
}
