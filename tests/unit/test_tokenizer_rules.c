/* The tokenizer files' rules, one crafted file per rule where it is read:
 * tokenizer.json (a BPE model's vocab ids whole and inside the model's
 * vocabulary; each merge "a b" of exactly two parts or ["a", "b"], with a,
 * b and ab in the vocab, as the tokenizers library's BPE builder refuses
 * a merge token out of the vocabulary) through both readers, the
 * byte-level loader and the SentencePiece converter; and llama2.c's
 * tokenizer.bin (max token length 1..4096, per token a finite score and a
 * length 0..max, the model's vocabulary of at least 3 and nothing after).
 * Each refused naming the file and what is wrong; the well-formed files
 * load and encode. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "test_files.h"
#include "common/model_shape.h"
#include "engine/import/import_hf_arch.h"
#include "engine/tokenizer/tokenizer.h"

static char dir[200], json[300], bin[300];

static void message_has(const char *what, const char *why, const char *want)
{
    check_count++;
    if (!strstr(why, want)) {
        check_failures++;
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, why, want);
    }
}

#define BL_VOCAB "\"a\":0,\"b\":1,\"ab\":2,\"c\":3"

/* A byte-level tokenizer.json of model.vocab and model.merges as given, vocabulary 4. */
static int bytelevel(const char *vocab, const char *merges, char *why, size_t len)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"model\":{\"type\":\"BPE\",\"vocab\":{%s},\"merges\":[%s]}}", vocab, merges);
    test_write_text(json, text);
    struct tokenizer t;
    int rc = tokenizer_load_hf_bytelevel(&t, json, 4, why, len);
    if (rc == 0)
        tokenizer_free(&t);
    return rc;
}

static void bytelevel_refused(const char *what, const char *vocab, const char *merges, const char *want)
{
    char why[512] = "";
    CHECK(bytelevel(vocab, merges, why, sizeof why) == -1);
    CHECK(strstr(why, "tokenizer.json") != NULL);
    message_has(what, why, want);
}

static void test_bytelevel(void)
{
    char why[512];
    CHECK(bytelevel(BL_VOCAB, "\"a b\"", why, sizeof why) == 0);
    CHECK(bytelevel(BL_VOCAB, "[\"a\",\"b\"]", why, sizeof why) == 0);
    bytelevel_refused("id past the vocabulary", "\"a\":0,\"b\":4", "", "vocab entry 'b' has an id outside 0..3");
    bytelevel_refused("fractional id", "\"a\":0.5", "", "vocab entry 'a' has an id outside 0..3 or not a whole number");
    bytelevel_refused("half out of the vocab", BL_VOCAB, "\"a b\",\"a d\"",
                      "merge 1 (a + d) needs 'd', which model.vocab lacks");
    bytelevel_refused("merged piece out of the vocab", BL_VOCAB, "\"a c\"",
                      "merge 0 (a + c) needs 'ac', which model.vocab lacks");
    bytelevel_refused("three parts", BL_VOCAB, "\"a b c\"", "merge 0 is not \"a b\" or [\"a\", \"b\"]");
    bytelevel_refused("a number", BL_VOCAB, "\"a b\",7", "merge 1 is not");
    bytelevel_refused("a triple", BL_VOCAB, "[\"a\",\"b\",\"c\"]", "merge 0 is not");
}

/* A SentencePiece tokenizer.json (byte fallback) converted to tokenizer.bin. */
static int sentencepiece(const char *merges, char *why, size_t len)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"vocab\":{\"<unk>\":0,\"<s>\":1,\"</s>\":2,"
             "\"a\":3,\"b\":4,\"ab\":5},\"merges\":[%s]}}",
             merges);
    test_write_text(json, text);
    struct model_shape s;
    memset(&s, 0, sizeof s);
    s.vocab_size = 6;
    return hf_convert_sp_tokenizer(json, &s, bin, why, len);
}

static void test_sentencepiece(void)
{
    char why[512] = "";
    int rc = sentencepiece("\"a b\"", why, sizeof why);
    if (rc)
        fprintf(stderr, "sentencepiece: %s\n", why);
    CHECK(rc == 0);
    struct tokenizer t;
    CHECK(rc == 0 && tokenizer_load_llama2c(&t, bin, 6, why, sizeof why) == 0);
    if (rc == 0) {
        CHECK(t.scores[5] == 0.0f); /* "ab": merge rank 0 */
        tokenizer_free(&t);
    }
    CHECK(sentencepiece("\"a b\",\"b c\"", why, sizeof why) == -1);
    message_has("SentencePiece half out of the vocab", why, "merge 1 (b + c) needs 'c', which model.vocab lacks");
    CHECK(sentencepiece("\"b a\"", why, sizeof why) == -1);
    message_has("SentencePiece merged piece out of the vocab", why, "merge 0 (b + a) needs 'ba'");
    CHECK(sentencepiece("\"a b b\"", why, sizeof why) == -1);
    message_has("SentencePiece three parts", why, "merge 0 is not \"a b\" or");
}

/* tokenizer.bin: max length, then records of (score, length, bytes). */
struct rec {
    float score;
    int32_t len;
    const char *text;
};

static int write_bin(int32_t max_len, const struct rec *r, int n, int extra_byte)
{
    FILE *f = fopen(bin, "wb");
    CHECK(f != NULL);
    if (!f)
        return -1;
    fwrite(&max_len, 4, 1, f);
    for (int i = 0; i < n; i++) {
        fwrite(&r[i].score, 4, 1, f);
        fwrite(&r[i].len, 4, 1, f);
        fwrite(r[i].text, 1, strlen(r[i].text), f);
    }
    if (extra_byte)
        fputc(0, f);
    fclose(f);
    return 0;
}

static void bin_refused(const char *what, int32_t max_len, const struct rec *r, int n, int extra, int vocab,
                        const char *want)
{
    char why[512] = "";
    write_bin(max_len, r, n, extra);
    struct tokenizer t;
    int rc = tokenizer_load_llama2c(&t, bin, vocab, why, sizeof why);
    CHECK(rc == -1);
    if (rc == 0)
        tokenizer_free(&t);
    CHECK(strstr(why, "tokenizer.bin") != NULL);
    message_has(what, why, want);
}

static void test_bin(void)
{
    const struct rec ok[3] = {{0, 5, "<unk>"}, {0, 3, "<s>"}, {0, 4, "</s>"}};
    char why[512];
    struct tokenizer t;
    write_bin(5, ok, 3, 0);
    CHECK(tokenizer_load_llama2c(&t, bin, 3, why, sizeof why) == 0);
    tokenizer_free(&t);
    bin_refused("max length 0", 0, ok, 3, 0, 3, "not a llama2.c tokenizer (bad max token length)");
    bin_refused("max length 5000", 5000, ok, 3, 0, 3, "not a llama2.c tokenizer (bad max token length)");
    bin_refused("vocabulary of 2", 5, ok, 2, 0, 2, "a vocabulary of 2 tokens has no room for <s> (1) and </s> (2)");
    const struct rec nan_score[3] = {{0, 5, "<unk>"}, {NAN, 3, "<s>"}, {0, 4, "</s>"}};
    bin_refused("NaN score", 5, nan_score, 3, 0, 3, "token 1 has a non-finite score");
    const struct rec too_long[3] = {{0, 5, "<unk>"}, {0, 3, "<s>"}, {0, 6, "</s>xx"}};
    bin_refused("piece past max length", 5, too_long, 3, 0, 3, "token 2 has length 6 (max 5)");
    const struct rec negative[3] = {{0, 5, "<unk>"}, {0, -1, ""}, {0, 4, "</s>"}};
    bin_refused("negative length", 5, negative, 3, 0, 3, "token 1 has length -1 (max 5)");
    bin_refused("bytes after the vocabulary", 5, ok, 3, 1, 3, "holds more than the model's 3 tokens");
    bin_refused("vocabulary the file cannot hold", 5, ok, 3, 0, 10, "cannot hold the model's 10 tokens");
    const struct rec cut[3] = {{0, 5, "<unk>"}, {0, 3, "<s>"}, {0, 40, "</s>"}};
    bin_refused("piece cut", 50, cut, 3, 0, 3, "truncated in token 2 of 3");
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/flashbed-tok-rules-%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(json, sizeof json, "%s/tokenizer.json", dir);
    snprintf(bin, sizeof bin, "%s/tokenizer.bin", dir);
    test_bytelevel();
    test_sentencepiece();
    test_bin();
    unlink(json);
    unlink(bin);
    rmdir(dir);
    return check_report("test_tokenizer_rules");
}
