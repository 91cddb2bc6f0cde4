/* The end-of-generation tokens of a GGUF vocabulary
 * (engine/tokenizer/tokenizer_eog.h) against llama.cpp's own: the tiny
 * fixtures of tests/data/gguf/ and the two real models (each skipped,
 * saying so, when absent), whose sets llama.cpp (llama-cpp-python 0.3.36,
 * the pinned reference environment) gives as
 *
 *   v = llama_cpp.llama_model_get_vocab(llama_cpp.Llama(model_path=PATH,
 *           vocab_only=True).model)
 *   [i for i in range(llama_cpp.llama_vocab_n_tokens(v))
 *      if llama_cpp.llama_vocab_is_eog(v, i)]
 *
 * (SmolLM2: <|endoftext|> 0, <|im_end|> 2, <reponame> 4; Gemma 3:
 * <eos> 1, <end_of_turn> 106, </s> 212). Then each of the rule's parts on
 * vocabularies written here: the texts, a FIM key against a FIM text, the
 * lowest of several FIM texts, the eot and eom keys, the two exceptions,
 * and a set larger than the room refused with its count. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/gguf.h"
#include "engine/tokenizer/tokenizer_eog.h"

#ifndef TEST_DATA_DIR
#error TEST_DATA_DIR must be defined
#endif

enum { ROOM = 16 };

/* "a,b,c": the set of GGUF file path as a comma-separated list ("" when
 * it cannot be read, with the reason on stderr) */
static void eog_of_file(const char *path, char *out, size_t size)
{
    struct gguf_file f;
    char err[512];
    int ids[ROOM], n = 0;
    uint32_t eos = 2, vocab = 0;
    struct gguf_value tokens;
    out[0] = '\0';
    if (gguf_open(&f, path, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    if (gguf_find(&f, "tokenizer.ggml.eos_token_id"))
        gguf_get_u32(&f, "tokenizer.ggml.eos_token_id", &eos, err, sizeof err);
    if (gguf_get_array(&f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &tokens, err, sizeof err) == 0)
        vocab = (uint32_t)tokens.count;
    if (tokenizer_gguf_eog(&f, (int)vocab, (int)eos, ids, ROOM, &n, err, sizeof err) != 0)
        fprintf(stderr, "%s\n", err);
    else
        for (int i = 0; i < n; i++)
            snprintf(out + strlen(out), size - strlen(out), "%s%d", i ? "," : "", ids[i]);
    gguf_close(&f);
}

static void check_file(const char *path, const char *want)
{
    char got[256];
    if (access(path, R_OK) != 0) {
        printf("skipped %s: not here\n", path);
        return;
    }
    eog_of_file(path, got, sizeof got);
    CHECK_STR(got, want);
}

/* the set of texts (NULL-terminated) with keys k, as a list */
static int eog_of(const char *const *texts, struct eog_keys k, char *out, size_t size, int room)
{
    const char *t[32];
    uint64_t len[32];
    int vocab = 0, ids[32], n = 0;
    for (; texts[vocab]; vocab++) {
        t[vocab] = texts[vocab];
        len[vocab] = strlen(texts[vocab]);
    }
    int rc = tokenizer_eog_of_texts(t, len, vocab, &k, ids, room, &n);
    out[0] = '\0';
    for (int i = 0; rc == 0 && i < n; i++)
        snprintf(out + strlen(out), size - strlen(out), "%s%d", i ? "," : "", ids[i]);
    return rc == 0 ? 0 : -n;
}

#define NO_KEYS(eos_id) ((struct eog_keys){eos_id, -1, -1, -1, -1, -1})

static void check_rules(void)
{
    char got[256];
    const char *gemma[] = {"<pad>", "<eos>", "<bos>", "<end_of_turn>", "</s>", "hello", NULL};
    CHECK(eog_of(gemma, NO_KEYS(1), got, sizeof got, ROOM) == 0);
    CHECK_STR(got, "1,3,4");
    /* "<end_of_turn" or "end_of_turn>" is no such text: whole texts only */
    const char *near[] = {"<end_of_turn", "end_of_turn>", "<|im_end|> ", "<eos>", NULL};
    CHECK(eog_of(near, NO_KEYS(3), got, sizeof got, ROOM) == 0);
    CHECK_STR(got, "3");
    /* a FIM key wins over a FIM text; without keys the lowest of the texts */
    const char *fim[] = {"a", "<|fim_pad|>", "<PAD>", "<reponame>", "<|file_sep|>", "b", NULL};
    CHECK(eog_of(fim, NO_KEYS(0), got, sizeof got, ROOM) == 0);
    CHECK_STR(got, "0,1,3,4");
    CHECK(eog_of(fim, (struct eog_keys){0, -1, -1, 5, -1, -1}, got, sizeof got, ROOM) == 0);
    CHECK_STR(got, "0,3,4,5");
    /* the eot and eom keys, whatever their text */
    const char *plain[] = {"a", "b", "c", "d", NULL};
    CHECK(eog_of(plain, (struct eog_keys){0, 2, 3, -1, -1, -1}, got, sizeof got, ROOM) == 0);
    CHECK_STR(got, "0,2,3");
    /* o200k_harmony: <|end|> is not EOG beside <|return|> and <|call|> */
    const char *harmony[] = {"<|endoftext|>", "<|end|>", "<|return|>", "<|call|>", NULL};
    CHECK(eog_of(harmony, NO_KEYS(0), got, sizeof got, ROOM) == 0);
    CHECK_STR(got, "0,2,3");
    const char *phi[] = {"<|endoftext|>", "<|end|>", "<|return|>", NULL};
    CHECK(eog_of(phi, NO_KEYS(0), got, sizeof got, ROOM) == 0);
    CHECK_STR(got, "0,1,2");
    /* Gemma 4: </s> is a normal token beside <|tool_response> */
    const char *g4[] = {"<eos>", "</s>", "<|tool_response>", NULL};
    CHECK(eog_of(g4, NO_KEYS(0), got, sizeof got, ROOM) == 0);
    CHECK_STR(got, "0,2");
    /* more than the room: refused with the count */
    CHECK(eog_of(gemma, NO_KEYS(1), got, sizeof got, 2) == -3);
}

int main(void)
{
    check_rules();
    static const struct {
        const char *arch, *want;
    } fixtures[] = {{"llama", "1"}, {"qwen2", "0,2"}, {"qwen3", "0,2"}, {"phi3", "2,3"}, {"gemma3", "1"}};
    char path[1024];
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        snprintf(path, sizeof path, "%s/gguf/%s/F32/model.gguf", TEST_DATA_DIR, fixtures[i].arch);
        CHECK(access(path, R_OK) == 0);
        check_file(path, fixtures[i].want);
    }
    const char *data = getenv("FLASHBED_DATA");
    snprintf(path, sizeof path, "%s/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf",
             data ? data : FLASHBED_DATA_DEFAULT);
    check_file(path, "0,2,4");
    snprintf(path, sizeof path, "%s/.models/gemma3-270m/gemma-3-270m-q4_k_m.gguf", TEST_SOURCE_DIR);
    check_file(path, "1,106,212");
    return check_report("test_tokenizer_eog");
}
