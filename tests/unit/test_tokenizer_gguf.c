/* The tokenizer from a GGUF's metadata (engine/tokenizer/tokenizer_gguf.h)
 * against llama.cpp's own ids: the tiny fixtures of tests/data/gguf/
 * (llama, qwen2, qwen3: byte-level BPE; phi3, gemma3: SentencePiece),
 * reference.json's tokenize_text with the vocabulary's BOS and without;
 * the real SmolLM2 from the shared data and Gemma 3 270M from .models/
 * (each skipped, saying so, when absent): llama.cpp's ids for a fixed text.
 * Then the tokenizer-only GGUF written, reopened and the same ids again,
 * decoding back to the text, and the refusals. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "common/gguf.h"
#include "common/json_file.h"
#include "engine/tokenizer/tokenizer_gguf.h"

#ifndef TEST_DATA_DIR
#error TEST_DATA_DIR must be defined
#endif

static int n_exact, n_compared;

/* text encoded, compared with the JSON array want. */
static void expect_ids(const struct tokenizer *t, const char *what, const char *text, bool add_special,
                       const cJSON *want)
{
    size_t len = strlen(text);
    int *ids = malloc(tokenizer_max_tokens(len) * sizeof *ids);
    size_t n = tokenizer_encode(t, text, len, add_special, ids);
    int nw = cJSON_GetArraySize(want);
    size_t first_diff = 0;
    while (first_diff < n && (int)first_diff < nw &&
           ids[first_diff] == (int)cJSON_GetArrayItem(want, (int)first_diff)->valuedouble)
        first_diff++;
    bool same = n == (size_t)nw && first_diff == n;
    n_compared++;
    n_exact += same;
    if (!same)
        fprintf(stderr, "%s: %zu ids, llama.cpp %d; first difference at %zu (%d, llama.cpp %d)\n", what, n, nw,
                first_diff, first_diff < n ? ids[first_diff] : -1,
                (int)first_diff < nw ? (int)cJSON_GetArrayItem(want, (int)first_diff)->valuedouble : -1);
    CHECK(same);
    free(ids);
}

/* Decoding the ids without BOS gives the text back. */
static void expect_round_trip(const struct tokenizer *t, const char *what, const char *text)
{
    size_t len = strlen(text);
    int *ids = malloc(tokenizer_max_tokens(len) * sizeof *ids);
    size_t n = tokenizer_encode(t, text, len, false, ids);
    char *back = malloc(4 * len + 64), b[2];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 3 * len + 32; i++) {
        size_t l;
        const char *p = tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], &l, b);
        memcpy(back + k, p, l);
        k += l;
    }
    back[k] = '\0';
    const char *want = text;
    if (t->kind == TOKENIZER_SENTENCEPIECE_BPE && t->add_space_prefix && back[0] == ' ')
        memmove(back, back + 1, k--); /* the prefix space */
    if (strcmp(back, want))
        fprintf(stderr, "%s: decodes to \"%s\"\n", what, back);
    CHECK_STR(back, want);
    free(ids);
    free(back);
}

static cJSON *read_json(const char *path)
{
    char *text = read_text_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

/* The vocabulary's size: its token count (the tests' model has as many). */
static int token_count(const struct gguf_file *f)
{
    struct gguf_value v;
    char err[256];
    return gguf_get_array(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &v, err, sizeof err) ? -1 : (int)v.count;
}

/* The tokenizer of path, written tokenizer-only to a temporary GGUF and
 * loaded from that too: both must give want's ids. */
static void check_file(const char *path, const char *name, const char *text, const cJSON *with,
                       const cJSON *without)
{
    struct gguf_file f;
    struct tokenizer t;
    char err[512], what[160], tmp[] = "/tmp/fb_tokgguf_XXXXXX";
    CHECK(gguf_open(&f, path, err, sizeof err) == 0);
    int vocab = token_count(&f);
    int rc = tokenizer_load_gguf(&t, &f, vocab, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s: %s\n", name, err);
    CHECK(rc == 0);
    int fd = mkstemp(tmp);
    close(fd);
    CHECK(tokenizer_gguf_write(&f, tmp, err, sizeof err) == 0);
    gguf_close(&f);
    if (rc)
        return;
    snprintf(what, sizeof what, "%s with BOS", name);
    expect_ids(&t, what, text, true, with);
    snprintf(what, sizeof what, "%s without", name);
    expect_ids(&t, what, text, false, without);
    expect_round_trip(&t, name, text);
    struct gguf_file g;
    struct tokenizer u;
    CHECK(gguf_open(&g, tmp, err, sizeof err) == 0);
    CHECK_U64(g.n_tensors, 0);
    CHECK(tokenizer_load_gguf(&u, &g, vocab, err, sizeof err) == 0);
    snprintf(what, sizeof what, "%s rewritten, with BOS", name);
    expect_ids(&u, what, text, true, with);
    snprintf(what, sizeof what, "%s rewritten, without", name);
    expect_ids(&u, what, text, false, without);
    CHECK(u.kind == t.kind && u.add_bos == t.add_bos && u.bos_id == t.bos_id && u.eos_id == t.eos_id);
    gguf_close(&g);
    tokenizer_free(&u);
    tokenizer_free(&t);
    unlink(tmp);
}

static void check_fixture(const char *arch)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/gguf/%s/F32", TEST_DATA_DIR, arch);
    snprintf(path, sizeof path, "%s/reference.json", dir);
    cJSON *ref = read_json(path);
    CHECK(ref != NULL);
    if (!ref)
        return;
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(ref, "tokenize_text");
    check_file(path, arch, text->valuestring, cJSON_GetObjectItemCaseSensitive(ref, "tokenize_ids"),
               cJSON_GetObjectItemCaseSensitive(ref, "tokenize_ids_no_special"));
    cJSON_Delete(ref);
}

/* A real model's file against real/NAME.json's tokenize entry; skipped,
 * saying so, when the file is not there. */
static void check_real(const char *gguf, const char *name)
{
    if (access(gguf, R_OK) != 0) {
        printf("skipped %s: %s is not here\n", name, gguf);
        return;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/gguf/real/%s.json", TEST_DATA_DIR, name);
    cJSON *ref = read_json(path);
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(ref, "tokenize");
    CHECK(tok != NULL);
    if (tok)
        check_file(gguf, name, cJSON_GetObjectItemCaseSensitive(tok, "text")->valuestring,
                   cJSON_GetObjectItemCaseSensitive(tok, "ids"), cJSON_GetObjectItemCaseSensitive(tok, "ids_no_bos"));
    cJSON_Delete(ref);
}

/* A vocabulary size other than the file's token count is refused naming
 * the file and the key; so is a writer asked for a file with no tokenizer
 * (a written tokenizer-only GGUF has none of the model's other keys). */
static void check_refusals(void)
{
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/gguf/llama/F32/model.gguf", TEST_DATA_DIR);
    struct gguf_file f;
    struct tokenizer t;
    CHECK(gguf_open(&f, path, err, sizeof err) == 0);
    int vocab = token_count(&f);
    CHECK(tokenizer_load_gguf(&t, &f, vocab + 1, err, sizeof err) == -1);
    CHECK(strstr(err, "tokenizer.ggml.tokens") && strstr(err, "model.gguf"));
    CHECK(tokenizer_load_gguf(&t, &f, vocab - 1, err, sizeof err) == -1);
    CHECK(strstr(err, "tokenizer.ggml.tokens") != NULL);
    char tmp[] = "/tmp/fb_tokgguf_XXXXXX";
    close(mkstemp(tmp));
    CHECK(tokenizer_gguf_write(&f, tmp, err, sizeof err) == 0);
    gguf_close(&f);
    CHECK(gguf_open(&f, tmp, err, sizeof err) == 0);
    CHECK(gguf_find(&f, "general.architecture") && gguf_find(&f, "tokenizer.ggml.merges"));
    CHECK(!gguf_find(&f, "llama.block_count"));
    gguf_close(&f);
    unlink(tmp);
}

int main(void)
{
    check_refusals();
    const char *archs[] = {"llama", "qwen2", "qwen3", "phi3", "gemma3"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        check_fixture(archs[i]);
    const char *data = getenv("FLASHBED_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf",
             data ? data : FLASHBED_DATA_DEFAULT);
    check_real(path, "smollm2-135m-q4_1");
    snprintf(path, sizeof path, "%s/.models/gemma3-270m/gemma-3-270m-q4_k_m.gguf", TEST_SOURCE_DIR);
    check_real(path, "gemma3-270m-q4_k_m");
    printf("%d of %d tokenizations equal to llama.cpp's\n", n_exact, n_compared);
    return check_report("test_tokenizer_gguf");
}
