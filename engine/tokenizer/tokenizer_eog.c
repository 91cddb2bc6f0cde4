/* The end-of-generation tokens of a GGUF vocabulary (tokenizer_eog.h). */
#include "engine/tokenizer/tokenizer_eog.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* llama.cpp's texts of end-of-generation tokens (special_eog_ids' list) */
static const char *const eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
};
/* its texts of the fill-in-the-middle pad, repo and file-separator tokens,
 * which end generation too */
static const char *const fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
static const char *const fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
static const char *const fim_sep_texts[] = {"<|file_sep|>"};

/* every id the rule can take: the EOG texts, three FIM tokens, three keys */
#define MOST_CANDIDATES (COUNT(eog_texts) + 6)

static bool text_is(const char *s, uint64_t len, const char *want)
{
    return strlen(want) == len && memcmp(s, want, len) == 0;
}

static bool one_of(const char *s, uint64_t len, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (text_is(s, len, list[i]))
            return true;
    return false;
}

struct eog_set {
    int ids[MOST_CANDIDATES];
    int n;
};

static void add(struct eog_set *s, int id)
{
    if (id < 0)
        return;
    for (int i = 0; i < s->n; i++)
        if (s->ids[i] == id)
            return;
    if ((size_t)s->n < MOST_CANDIDATES)
        s->ids[s->n++] = id;
}

static void drop(struct eog_set *s, int id)
{
    for (int i = 0; i < s->n; i++)
        if (s->ids[i] == id) {
            s->ids[i] = s->ids[--s->n];
            return;
        }
}

/* The key's id, or where it is absent the lowest id whose text is in list. */
static int fim_id(int key, const char *const *text, const uint64_t *len, int vocab, const char *const *list, size_t n)
{
    if (key >= 0)
        return key;
    for (int id = 0; id < vocab; id++)
        if (one_of(text[id], len[id], list, n))
            return id;
    return -1;
}

/* The id in s whose text is want, or -1. */
static int member(const struct eog_set *s, const char *const *text, const uint64_t *len, const char *want)
{
    for (int i = 0; i < s->n; i++)
        if (text_is(text[s->ids[i]], len[s->ids[i]], want))
            return s->ids[i];
    return -1;
}

/* llama.cpp's two exceptions: o200k_harmony's and solar-open's <|end|>,
 * Gemma 4's and PLaMo's normal </s>. */
static void exceptions(struct eog_set *s, const char *const *text, const uint64_t *len)
{
    bool ret = member(s, text, len, "<|return|>") >= 0, flush = member(s, text, len, "<|flush|>") >= 0;
    bool call = member(s, text, len, "<|call|>") >= 0 || member(s, text, len, "<|calls|>") >= 0;
    int end = member(s, text, len, "<|end|>");
    if (end >= 0 && call && (ret || flush))
        drop(s, end);
    int close = member(s, text, len, "</s>");
    if (close >= 0 && (member(s, text, len, "<|tool_response>") >= 0 || member(s, text, len, "<|plamo:eos|>") >= 0))
        drop(s, close);
}

static int by_id(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int tokenizer_eog_of_texts(const char *const *text, const uint64_t *len, int vocab, const struct eog_keys *k,
                           int *out, int max, int *n)
{
    struct eog_set s = {.n = 0};
    add(&s, fim_id(k->fim_pad, text, len, vocab, fim_pad_texts, COUNT(fim_pad_texts)));
    add(&s, fim_id(k->fim_rep, text, len, vocab, fim_rep_texts, COUNT(fim_rep_texts)));
    add(&s, fim_id(k->fim_sep, text, len, vocab, fim_sep_texts, COUNT(fim_sep_texts)));
    for (int id = 0; id < vocab; id++)
        if (one_of(text[id], len[id], eog_texts, COUNT(eog_texts)))
            add(&s, id);
    add(&s, k->eos);
    add(&s, k->eot);
    add(&s, k->eom);
    exceptions(&s, text, len);
    qsort(s.ids, (size_t)s.n, sizeof s.ids[0], by_id);
    *n = s.n;
    if (s.n > max)
        return -1;
    memcpy(out, s.ids, (size_t)s.n * sizeof *out);
    return 0;
}

/* key's token id into *out (-1 when the file has no such key). */
static int key_id(const struct gguf_file *f, const char *key, int vocab, int *out, char *err, size_t errlen)
{
    uint32_t id;
    *out = -1;
    if (!gguf_find(f, key))
        return 0;
    if (gguf_get_u32(f, key, &id, err, errlen))
        return -1;
    if (id >= (uint32_t)vocab)
        return err_set(err, errlen, "%s: key %s %u is outside the vocabulary of %d tokens", f->path, key, id, vocab);
    *out = (int)id;
    return 0;
}

int tokenizer_gguf_eog(const struct gguf_file *f, int vocab, int eos, int *out, int max, int *n, char *err,
                       size_t errlen)
{
    struct eog_keys k = {.eos = eos};
    struct gguf_value tokens, v;
    if (key_id(f, "tokenizer.ggml.eot_token_id", vocab, &k.eot, err, errlen) ||
        key_id(f, "tokenizer.ggml.eom_token_id", vocab, &k.eom, err, errlen) ||
        key_id(f, "tokenizer.ggml.fim_pad_token_id", vocab, &k.fim_pad, err, errlen) ||
        key_id(f, "tokenizer.ggml.fim_rep_token_id", vocab, &k.fim_rep, err, errlen) ||
        key_id(f, "tokenizer.ggml.fim_sep_token_id", vocab, &k.fim_sep, err, errlen) ||
        gguf_get_array(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &tokens, err, errlen))
        return -1;
    if (vocab < 1 || tokens.count != (uint64_t)vocab)
        return err_set(err, errlen, "%s: tokenizer.ggml.tokens holds %llu tokens, the model's vocabulary %d", f->path,
                       (unsigned long long)tokens.count, vocab);
    const char **text = malloc((size_t)vocab * sizeof *text);
    uint64_t *len = malloc((size_t)vocab * sizeof *len);
    if (!text || !len) {
        free(text);
        free(len);
        return err_set(err, errlen, "%s: out of memory for the end-of-generation tokens", f->path);
    }
    struct gguf_cursor c;
    gguf_cursor_init(&c, &tokens);
    for (int id = 0; id < vocab && gguf_cursor_next(&c, &v); id++) {
        text[id] = (const char *)v.data;
        len[id] = v.bytes;
    }
    int rc = tokenizer_eog_of_texts(text, len, vocab, &k, out, max, n);
    free(text);
    free(len);
    if (rc != 0)
        return err_set(err, errlen, "%s: %d end-of-generation tokens, more than the %d a model holds", f->path, *n,
                       max);
    return 0;
}
