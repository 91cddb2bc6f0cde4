/* SentencePiece's tokenizer.model (engine/tokenizer/tokenizer_spm.h):
 * - a BPE model trained as Llama 2's was (tests/data/spm/, made by
 *   tools/make_spm_fixture.py) encodes every fixed text to the ids
 *   sentencepiece itself gave, read directly and through the tokenizer.bin
 *   a model folder gets from it (hf_convert_spm_tokenizer);
 * - its fields read as stored;
 * - with the shared data's Llama 2 vocabulary (tokenizer.bin), the same
 *   32000 pieces, scores and types written as a ModelProto encode a text
 *   to the ids the tokenizer.bin route gives;
 * - input that is not a ModelProto, or a model the tokenizer cannot
 *   follow, is refused in one line naming the file and what is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "common/model_shape.h"
#include "engine/import/import_hf_arch.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_spm.h"

static char fixture[1024], scratch[1024];

/* Whether t encodes text (no BOS) to exactly ids. */
static int encodes_to(const struct tokenizer *t, const char *text, const cJSON *ids)
{
    size_t len = strlen(text);
    int *out = malloc(tokenizer_max_tokens(len) * sizeof *out);
    size_t n = tokenizer_encode(t, text, len, false, out);
    int same = n == (size_t)cJSON_GetArraySize(ids);
    for (size_t i = 0; same && i < n; i++)
        same = out[i] == cJSON_GetArrayItem(ids, (int)i)->valueint;
    if (!same) {
        fprintf(stderr, "'%s': got", text);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %d", out[i]);
        fprintf(stderr, "\n");
    }
    free(out);
    return same;
}

static cJSON *expected(void)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/expected.json", TEST_DATA_DIR "/spm");
    FILE *f = fopen(path, "rb");
    static char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return cJSON_Parse(buf);
}

static void test_fields(void)
{
    struct spm_model m;
    char err[512] = "";
    CHECK(spm_model_read(fixture, &m, err, sizeof err) == 0);
    CHECK_U64(m.n_pieces, 1000);
    CHECK_U64(m.model_type, SPM_MODEL_BPE);
    CHECK(m.byte_fallback && m.add_dummy_prefix && !m.remove_extra_whitespaces && m.escape_whitespaces);
    CHECK_STR(m.normalizer, "identity");
    CHECK_U64(m.charsmap_bytes, 0);
    CHECK(m.unk_id == 0 && m.bos_id == 1 && m.eos_id == 2 && m.pad_id == -1);
    CHECK(m.n_pieces == 1000 && m.types[0] == SPM_PIECE_UNKNOWN && m.types[1] == SPM_PIECE_CONTROL &&
          m.types[2] == SPM_PIECE_CONTROL && m.types[3] == SPM_PIECE_BYTE && m.types[258] == SPM_PIECE_BYTE &&
          m.types[259] == SPM_PIECE_NORMAL);
    CHECK(m.n_pieces == 1000 && !strcmp(m.pieces[1], "<s>") && !strcmp(m.pieces[3], "<0x00>"));
    CHECK(m.n_pieces == 1000 && m.scores[260] == -1.0f);
    spm_model_free(&m);
}

/* The fixture's texts, read directly and through a model folder's tokenizer.bin. */
static void test_sentencepiece_ids(void)
{
    cJSON *ref = expected();
    CHECK(ref != NULL);
    int vocab = cJSON_GetObjectItem(ref, "vocab_size")->valueint;
    struct tokenizer direct, bin;
    char err[512] = "";
    CHECK(tokenizer_load_spm(&direct, fixture, vocab, err, sizeof err) == 0);
    struct model_shape s = {.vocab_size = (uint32_t)vocab};
    char out[1100];
    snprintf(out, sizeof out, "%s/tokenizer.bin", scratch);
    CHECK(hf_convert_spm_tokenizer(fixture, &s, out, err, sizeof err) == 0);
    CHECK(tokenizer_load_llama2c(&bin, out, vocab, err, sizeof err) == 0);
    CHECK(direct.bos_id == 1 && direct.eos_id == 2 && direct.add_space_prefix);
    const cJSON *c;
    int cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(ref, "cases"))
    {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const cJSON *ids = cJSON_GetObjectItem(c, "ids");
        CHECK(encodes_to(&direct, text, ids));
        CHECK(encodes_to(&bin, text, ids));
        cases++;
    }
    CHECK_U64(cases, 8);
    tokenizer_free(&direct);
    tokenizer_free(&bin);
    cJSON_Delete(ref);
}

static void put(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(bytes, 1, n, f);
        fclose(f);
    }
}

/* err after reading bytes as a tokenizer.model, with want in it and the file named. */
static void refused(const char *what, const void *bytes, size_t n, const char *want)
{
    char path[1100], err[512] = "";
    snprintf(path, sizeof path, "%s/%s.model", scratch, what);
    put(path, bytes, n);
    struct tokenizer t;
    int rc = tokenizer_load_spm(&t, path, 1, err, sizeof err);
    CHECK(rc == -1);
    CHECK(strstr(err, path) == err);
    if (!strstr(err, want)) {
        fprintf(stderr, "%s: '%s' lacks '%s'\n", what, err, want);
        CHECK(0);
    }
}

static void test_bad_input(void)
{
    refused("empty", "", 0, "no pieces");
    refused("json", "{\"model\": {}}", 13, "a group or an unknown wire type");
    refused("huge-length", "\x0a\xff\xff\xff\xff\x0f", 6, "a length past the end of its message");
    refused("long-varint", "\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, "a number longer than 10 bytes");
    refused("cut-piece", "\x0a\x05\x0a\x01", 4, "a length past the end");
    refused("piece-as-number", "\x08\x01", 2, "field 1 of wire type 0, not 2");
    refused("cut-float", "\x0a\x07\x0a\x01\x61\x15\x00\x00\x00", 9, "a float cut off");
    refused("bad-type", "\x0a\x05\x0a\x01\x61\x18\x09", 7, "a piece type outside 1..6");
    /* one piece "a" (score 0, normal), and a trainer_spec saying UNIGRAM */
    refused("unigram", "\x0a\x03\x0a\x01\x61\x12\x02\x18\x01", 9, "model_type is UNIGRAM");
    refused("no-fallback", "\x0a\x03\x0a\x01\x61\x12\x02\x18\x02\x1a\x02\x20\x00", 13, "byte_fallback is false");
    /* BPE with byte fallback, whitespace kept: only the count is wrong */
    refused("count", "\x0a\x03\x0a\x01\x61\x12\x05\x18\x02\x98\x02\x01\x1a\x02\x20\x00\x0a\x03\x0a\x01\x62", 21,
            "2 pieces, but the model's vocabulary has 1 tokens");
    /* the fixture cut short */
    FILE *f = fopen(fixture, "rb");
    static char buf[20000];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    refused("truncated", buf, n / 2, "not a SentencePiece model (tokenizer.model)");
}

/* The 32000 pieces of llama2.c's Llama 2 tokenizer.bin written as a
 * ModelProto (pieces "▁" for a space, types as Llama 2's file has them:
 * 0 unknown, 1-2 control, 3-258 bytes), with Llama's trainer and
 * normalizer settings; both routes encode a text alike. */
static void write_varint(FILE *f, uint64_t v)
{
    do {
        fputc((int)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)), f);
        v >>= 7;
    } while (v);
}

static void write_llama2_proto(const struct tokenizer *t, const char *path)
{
    FILE *f = fopen(path, "wb");
    for (int i = 0; f && i < t->vocab_size; i++) {
        char piece[1024];
        size_t n = 0;
        const char *p = i == 1 ? "<s>" : i == 2 ? "</s>" : t->pieces[i];
        for (; *p && n + 3 < sizeof piece; p++)
            n += *p == ' ' ? (memcpy(piece + n, "\xe2\x96\x81", 3), 3) : (piece[n] = *p, 1);
        int type = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
        fputc(0x0a, f);
        write_varint(f, 1 + (n > 127 ? 2 : 1) + n + 5 + 2);
        fputc(0x0a, f);
        write_varint(f, n);
        fwrite(piece, 1, n, f);
        fputc(0x15, f);
        fwrite(&t->scores[i], 4, 1, f);
        fputc(0x18, f);
        fputc(type, f);
    }
    if (f) { /* trainer_spec: BPE, byte_fallback; normalizer_spec: identity, whitespace kept */
        fwrite("\x12\x05\x18\x02\x98\x02\x01\x1a\x0c\x0a\x08identity\x20\x00", 1, 21, f);
        fclose(f);
    }
}

static void test_llama2_routes(void)
{
    const char *data = getenv("FLASHBED_DATA");
    char bin[1100], model[1100], err[512] = "";
    snprintf(bin, sizeof bin, "%s/tokenizers/llama2-tokenizer.bin", data && *data ? data : FLASHBED_DATA_DEFAULT);
    struct tokenizer a, b;
    if (tokenizer_load_llama2c(&a, bin, 32000, err, sizeof err) != 0) {
        printf("skipped the Llama 2 comparison: %s\n", err);
        return;
    }
    snprintf(model, sizeof model, "%s/llama2.model", scratch);
    write_llama2_proto(&a, model);
    CHECK(tokenizer_load_spm(&b, model, 32000, err, sizeof err) == 0);
    const char *text = "Once upon a time, in a naïve café, 12345 tokens —\nand  two spaces 🙂.";
    int ia[256], ib[256];
    size_t na = tokenizer_encode(&a, text, strlen(text), true, ia);
    size_t nb = b.vocab_size ? tokenizer_encode(&b, text, strlen(text), true, ib) : 0;
    CHECK_U64(nb, na);
    CHECK(na == nb && memcmp(ia, ib, na * sizeof *ia) == 0);
    CHECK(na > 20 && ia[0] == 1);
    tokenizer_free(&a);
    if (b.vocab_size)
        tokenizer_free(&b);
}

int main(void)
{
    snprintf(fixture, sizeof fixture, "%s/spm/tokenizer.model", TEST_DATA_DIR);
    snprintf(scratch, sizeof scratch, "%s", TEST_SCRATCH_DIR);
    test_fields();
    test_sentencepiece_ids();
    test_bad_input();
    test_llama2_routes();
    return check_report("test_tokenizer_spm");
}
