/* A tokenizer from a GGUF file's tokenizer.ggml.* metadata, as llama.cpp's
 * llama_vocab::impl::load reads it (the header has the contract). */
#include "engine/tokenizer/tokenizer_gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/tokenizer/tokenizer_internal.h"

#define KEY_MODEL "tokenizer.ggml.model"
#define KEY_PRE "tokenizer.ggml.pre"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_SCORES "tokenizer.ggml.scores"
#define KEY_TYPES "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"

/* llama.cpp's names for the pre-tokenizers flashbed splits as it does. */
static const struct {
    const char *name;
    enum tokenizer_pre pre;
} pre_names[] = {
    {"default", TOKENIZER_PRE_DEFAULT}, {"llama-bpe", TOKENIZER_PRE_LLAMA3}, {"llama3", TOKENIZER_PRE_LLAMA3},
    {"llama-v3", TOKENIZER_PRE_LLAMA3}, {"qwen2", TOKENIZER_PRE_QWEN2},      {"smollm", TOKENIZER_PRE_SMOLLM},
    {"gpt-2", TOKENIZER_PRE_GPT2},
};

/* The model kind, the pre-tokenizer, and llama.cpp's defaults for them
 * (the file's add_* keys override those later). */
static int read_kind(struct tokenizer *t, const struct gguf_file *f, char *err, size_t errlen)
{
    const char *s;
    size_t n;
    if (gguf_get_str(f, KEY_MODEL, &s, &n, err, errlen))
        return -1;
    if (n == 5 && !memcmp(s, "llama", 5)) {
        t->kind = TOKENIZER_SENTENCEPIECE_BPE;
        t->add_bos = t->add_space_prefix = true;
        t->bos_id = 1;
        t->eos_id = 2;
        return 0;
    }
    if (n != 4 || memcmp(s, "gpt2", 4))
        return err_set(err, errlen, "%s: %s \"%.*s\" is not a tokenizer flashbed reads (llama, gpt2)", f->path,
                       KEY_MODEL, (int)(n > 64 ? 64 : n), s);
    t->kind = TOKENIZER_BYTE_BPE;
    t->bos_id = t->eos_id = 11;
    t->pre = TOKENIZER_PRE_DEFAULT;
    if (!gguf_find(f, KEY_PRE))
        return 0;
    if (gguf_get_str(f, KEY_PRE, &s, &n, err, errlen))
        return -1;
    for (size_t i = 0; i < sizeof pre_names / sizeof pre_names[0]; i++)
        if (strlen(pre_names[i].name) == n && !memcmp(pre_names[i].name, s, n)) {
            t->pre = pre_names[i].pre;
            t->ignore_merges = t->add_bos = t->pre == TOKENIZER_PRE_LLAMA3;
            return 0;
        }
    return err_set(err, errlen,
                   "%s: %s \"%.*s\" is a pre-tokenizer flashbed does not split as llama.cpp does (llama-bpe, "
                   "qwen2, smollm, gpt-2, default)",
                   f->path, KEY_PRE, (int)(n > 64 ? 64 : n), s);
}

/* An optional array of count elements of one of two types; *v->type is
 * left 0 (UINT8) with count 0 when the key is absent. */
static int optional_array(const struct gguf_file *f, const char *key, uint32_t ta, uint32_t tb, uint64_t count,
                          struct gguf_value *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    if (!gguf_find(f, key))
        return 0;
    if (gguf_get_array(f, key, GGUF_TYPE_COUNT, v, err, errlen))
        return -1;
    if (v->elem_type != ta && v->elem_type != tb)
        return err_set(err, errlen, "%s: %s is an array of %s, not of %s", f->path, key, gguf_vtype_name(v->elem_type),
                       gguf_vtype_name(ta));
    if (v->count != count)
        return err_set(err, errlen, "%s: %s has %llu entries for %llu tokens", f->path, key,
                       (unsigned long long)v->count, (unsigned long long)count);
    return 0;
}

static bool is_special_type(int type)
{
    return type == TOKEN_TYPE_CONTROL || type == TOKEN_TYPE_USER_DEFINED || type == TOKEN_TYPE_UNKNOWN;
}

/* One piece's stored text: SentencePiece's and special tokens' as written
 * (lookups match the file's text); other byte-level tokens turned back
 * from GPT-2's alphabet into their bytes. */
static int set_piece(struct tokenizer *t, int id, const struct gguf_value *v, const int byte_of[512])
{
    if (v->bytes == 0) { /* llama.cpp names an empty token so */
        char name[32];
        snprintf(name, sizeof name, "[EMPTY_%d]", id);
        t->pieces[id] = strdup(name);
        t->piece_len[id] = (uint32_t)strlen(name);
        return t->pieces[id] ? 0 : -1;
    }
    char *p = malloc(v->bytes + 1);
    if (!p)
        return -1;
    memcpy(p, v->data, v->bytes);
    p[v->bytes] = '\0';
    size_t n = v->bytes;
    if (t->kind == TOKENIZER_BYTE_BPE && !is_special_type(t->token_type[id])) {
        char *raw = malloc(v->bytes + 1);
        if (!raw) {
            free(p);
            return -1;
        }
        if (memchr(p, 0, v->bytes) || tokenizer_key_to_bytes(p, byte_of, raw, &n)) {
            free(raw); /* a token spelt outside the alphabet keeps its text */
            n = v->bytes;
        } else {
            free(p);
            p = raw;
        }
    }
    t->pieces[id] = p;
    t->piece_len[id] = (uint32_t)n;
    if (n > t->max_piece_len)
        t->max_piece_len = (uint32_t)n;
    return 0;
}

/* SentencePiece's text for decoding: each "▁" a space. */
static int set_display(struct tokenizer *t, int id)
{
    const char *p = t->pieces[id];
    size_t n = t->piece_len[id], k = 0;
    char *d = malloc(n + 1);
    if (!d)
        return -1;
    for (size_t i = 0; i < n;) {
        if (i + 3 <= n && !memcmp(p + i, "\xE2\x96\x81", 3)) {
            d[k++] = ' ';
            i += 3;
        } else
            d[k++] = p[i++];
    }
    d[k] = '\0';
    t->display[id] = d;
    t->display_len[id] = (uint32_t)k;
    return 0;
}

/* Scores and token types (both optional, as in llama.cpp). */
static int read_attributes(struct tokenizer *t, const struct gguf_file *f, char *err, size_t errlen)
{
    uint64_t n = (uint64_t)t->vocab_size;
    struct gguf_value scores, types;
    if (optional_array(f, KEY_SCORES, GGUF_TYPE_FLOAT32, GGUF_TYPE_INT32, n, &scores, err, errlen) ||
        optional_array(f, KEY_TYPES, GGUF_TYPE_INT32, GGUF_TYPE_INT32, n, &types, err, errlen))
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        float s = 0;
        if (scores.count)
            s = scores.elem_type == GGUF_TYPE_FLOAT32 ? (float)gguf_elem_float(&scores, i)
                                                       : (float)gguf_elem_int(&scores, i);
        if (s != s) /* merges compare scores: NaN would never merge */
            return err_set(err, errlen, "%s: %s[%llu] is NaN", f->path, KEY_SCORES, (unsigned long long)i);
        t->scores[i] = s;
        int64_t ty = types.count ? gguf_elem_int(&types, i) : TOKEN_TYPE_NORMAL;
        t->token_type[i] = (uint8_t)(ty >= TOKEN_TYPE_UNDEFINED && ty <= TOKEN_TYPE_BYTE ? ty : TOKEN_TYPE_UNDEFINED);
    }
    return 0;
}

/* The tokens: exactly vocab_size of them, each a string. */
static int read_tokens(struct tokenizer *t, const struct gguf_file *f, char *err, size_t errlen)
{
    struct gguf_value tokens, v;
    if (gguf_get_array(f, KEY_TOKENS, GGUF_TYPE_STRING, &tokens, err, errlen))
        return -1;
    if (tokens.count != (uint64_t)t->vocab_size)
        return err_set(err, errlen, "%s: %s holds %llu tokens, the model's vocabulary %d", f->path, KEY_TOKENS,
                       (unsigned long long)tokens.count, t->vocab_size);
    size_t n = (size_t)t->vocab_size;
    t->pieces = calloc(n, sizeof *t->pieces);
    t->piece_len = calloc(n, sizeof *t->piece_len);
    t->scores = calloc(n, sizeof *t->scores);
    t->token_type = calloc(n, 1);
    if (t->kind == TOKENIZER_SENTENCEPIECE_BPE) {
        t->display = calloc(n, sizeof *t->display);
        t->display_len = calloc(n, sizeof *t->display_len);
    }
    if (!t->pieces || !t->piece_len || !t->scores || !t->token_type ||
        (t->kind == TOKENIZER_SENTENCEPIECE_BPE && (!t->display || !t->display_len)))
        return err_set(err, errlen, "%s: out of memory for %zu tokens", f->path, n);
    if (read_attributes(t, f, err, errlen))
        return -1;
    int cp_of[256], byte_of[512];
    tokenizer_byte_code_points(cp_of);
    for (int i = 0; i < 512; i++)
        byte_of[i] = -1;
    for (int b = 0; b < 256; b++)
        byte_of[cp_of[b]] = b;
    struct gguf_cursor c;
    gguf_cursor_init(&c, &tokens);
    for (int id = 0; gguf_cursor_next(&c, &v); id++)
        if (set_piece(t, id, &v, byte_of) || (t->display && set_display(t, id)))
            return err_set(err, errlen, "%s: out of memory in %s", f->path, KEY_TOKENS);
    return 0;
}

/* Each token's text names one id (llama.cpp refuses a repeated one). */
static int check_unique(const struct tokenizer *t, const struct gguf_file *f, char *err, size_t errlen)
{
    for (int id = 0; id < t->vocab_size; id++) {
        int first = tokenizer_lookup(t, t->pieces[id], t->piece_len[id]);
        if (first != id)
            return err_set(err, errlen, "%s: %s: token %d repeats token %d ('%.60s')", f->path, KEY_TOKENS, id, first,
                           t->pieces[id]);
    }
    return 0;
}

/* The id of a merge part spelt in GPT-2's alphabet, or -1. */
static int part_id(const struct tokenizer *t, const char *s, size_t len, const int byte_of[512], char *tmp,
                   char *raw)
{
    memmove(tmp, s, len);
    tmp[len] = '\0';
    size_t n;
    if (tokenizer_key_to_bytes(tmp, byte_of, raw, &n))
        return tokenizer_lookup(t, s, len);
    return tokenizer_lookup(t, raw, n);
}

/* One merge "a b" (split at the first space after the first byte, as
 * llama.cpp splits it): a, b and ab must be tokens. */
static int add_merge(struct tokenizer *t, const struct gguf_file *f, const struct gguf_value *v, int rank,
                     const int byte_of[512], char *tmp, char *raw, char *err, size_t errlen)
{
    const char *s = (const char *)v->data;
    size_t n = (size_t)v->bytes;
    const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL;
    if (!sp)
        return err_set(err, errlen, "%s: %s[%d] '%.*s' is not two parts \"a b\"", f->path, KEY_MERGES, rank,
                       (int)(n > 60 ? 60 : n), s);
    size_t la = (size_t)(sp - s), lb = n - la - 1;
    int a = part_id(t, s, la, byte_of, tmp, raw), b = part_id(t, sp + 1, lb, byte_of, tmp, raw);
    memcpy(tmp + n + 1, s, la);
    memcpy(tmp + n + 1 + la, sp + 1, lb);
    int ab = a >= 0 && b >= 0 ? part_id(t, tmp + n + 1, la + lb, byte_of, tmp, raw) : -1;
    if (a < 0 || b < 0 || ab < 0)
        return err_set(err, errlen, "%s: %s[%d] '%.*s' names %s, which is not a token", f->path, KEY_MERGES, rank,
                       (int)(n > 60 ? 60 : n), s, a < 0 ? "its first part" : b < 0 ? "its second part" : "its result");
    tokenizer_add_pair(t, a, b, ab, rank);
    return 0;
}

static int read_merges(struct tokenizer *t, const struct gguf_file *f, char *err, size_t errlen)
{
    struct gguf_value merges, v;
    if (gguf_get_array(f, KEY_MERGES, GGUF_TYPE_STRING, &merges, err, errlen))
        return -1;
    if (tokenizer_alloc_pairs(t, (size_t)merges.count))
        return err_set(err, errlen, "%s: out of memory for %s", f->path, KEY_MERGES);
    int cp_of[256], byte_of[512];
    tokenizer_byte_code_points(cp_of);
    for (int i = 0; i < 512; i++)
        byte_of[i] = -1;
    for (int b = 0; b < 256; b++)
        byte_of[cp_of[b]] = b;
    /* scratch: a merge's text, its parts joined, and their bytes */
    size_t cap = 3 * (size_t)merges.bytes + 16;
    char *tmp = malloc(cap), *raw = malloc(cap);
    int rc = tmp && raw ? 0 : err_set(err, errlen, "%s: out of memory for %s", f->path, KEY_MERGES);
    struct gguf_cursor c;
    gguf_cursor_init(&c, &merges);
    for (int rank = 0; rc == 0 && gguf_cursor_next(&c, &v); rank++)
        rc = add_merge(t, f, &v, rank, byte_of, tmp, raw, err, errlen);
    free(tmp);
    free(raw);
    return rc;
}

/* The tokens matched whole in the text before splitting (llama.cpp's
 * cache_special_tokens): control, user-defined and unknown ones, the
 * longest first (ties: the lower id). */
struct len_id {
    uint32_t len;
    int id;
};

static int longer_first(const void *a, const void *b)
{
    const struct len_id *x = a, *y = b;
    return x->len != y->len ? (x->len > y->len ? -1 : 1) : (x->id > y->id) - (x->id < y->id);
}

static int collect_special(struct tokenizer *t)
{
    size_t n = 0;
    for (int id = 0; id < t->vocab_size; id++)
        n += is_special_type(t->token_type[id]);
    struct len_id *v = malloc((n + 1) * sizeof *v);
    t->special_ids = malloc((n + 1) * sizeof *t->special_ids);
    if (!v || !t->special_ids) {
        free(v);
        return -1;
    }
    for (int id = 0; id < t->vocab_size; id++)
        if (is_special_type(t->token_type[id]))
            v[t->n_special++] = (struct len_id){t->piece_len[id], id};
    qsort(v, n, sizeof *v, longer_first);
    for (size_t i = 0; i < n; i++)
        t->special_ids[i] = v[i].id;
    free(v);
    return 0;
}

/* llama.cpp (llama-vocab.cpp's load) takes tokens spelled as an end of
 * turn or of text for control tokens whatever type the file gives them
 * ("control-looking token ... its type will be overridden"): so they are
 * matched whole only when special tokens are parsed. Gemma 3's vocabulary
 * has "</s>" as a user-defined token, which llama.cpp therefore splits as
 * text in "a </s> b". The spellings of its list that a vocabulary may hold
 * as another type. */
static void control_by_spelling(struct tokenizer *t)
{
    static const char *const spellings[] = {"<|eot_id|>", "<|im_end|>",      "<|end|>", "<|return|>",
                                            "<|call|>",   "<end_of_turn>",   "<|endoftext|>", "</s>",
                                            "<|eom_id|>", "<EOT>",           "_<EOT>",  "<|end_of_text|>",
                                            "<end_of_utterance>"};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        int id = tokenizer_lookup(t, spellings[i], strlen(spellings[i]));
        if (id >= 0)
            t->token_type[id] = TOKEN_TYPE_CONTROL;
    }
}

/* An optional token id key: inside the vocabulary when present. */
static int read_id(const struct gguf_file *f, const char *key, int vocab_size, int *id, char *err, size_t errlen)
{
    if (!gguf_find(f, key)) {
        if (*id >= vocab_size)
            *id = -1; /* llama.cpp's default id, outside this vocabulary: none */
        return 0;
    }
    uint32_t v;
    if (gguf_get_u32(f, key, &v, err, errlen))
        return -1;
    if (v >= (uint32_t)vocab_size)
        return err_set(err, errlen, "%s: %s is %u, outside the vocabulary of %d tokens", f->path, key, v, vocab_size);
    *id = (int)v;
    return 0;
}

static int read_flag(const struct gguf_file *f, const char *key, bool *flag, char *err, size_t errlen)
{
    return gguf_find(f, key) ? gguf_get_bool(f, key, flag, err, errlen) : 0;
}

/* BOS, EOS and what the vocabulary adds. */
static int read_specials(struct tokenizer *t, const struct gguf_file *f, char *err, size_t errlen)
{
    if (read_id(f, "tokenizer.ggml.bos_token_id", t->vocab_size, &t->bos_id, err, errlen) ||
        read_id(f, "tokenizer.ggml.eos_token_id", t->vocab_size, &t->eos_id, err, errlen) ||
        read_flag(f, "tokenizer.ggml.add_bos_token", &t->add_bos, err, errlen) ||
        read_flag(f, "tokenizer.ggml.add_eos_token", &t->add_eos, err, errlen))
        return -1;
    if (t->kind == TOKENIZER_SENTENCEPIECE_BPE &&
        read_flag(f, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err, errlen))
        return -1;
    if (t->add_bos && t->bos_id < 0)
        return err_set(err, errlen, "%s: tokenizer.ggml.add_bos_token is true, but there is no BOS token", f->path);
    if (t->add_eos && t->eos_id < 0)
        return err_set(err, errlen, "%s: tokenizer.ggml.add_eos_token is true, but there is no EOS token", f->path);
    return 0;
}

/* Each byte's token: SentencePiece's <0xXX>; byte-level BPE's one-byte
 * pieces. */
static void set_byte_ids(struct tokenizer *t)
{
    if (t->kind == TOKENIZER_BYTE_BPE)
        for (int b = 0; b < 256; b++) {
            char c = (char)b;
            t->byte_ids[b] = tokenizer_lookup(t, &c, 1);
        }
}

int tokenizer_load_gguf(struct tokenizer *t, const struct gguf_file *f, int vocab_size, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->gguf = true;
    t->vocab_size = vocab_size;
    if (vocab_size <= 0)
        return err_set(err, errlen, "%s: a vocabulary of %d tokens", f->path, vocab_size);
    int rc = read_kind(t, f, err, errlen);
    if (rc == 0)
        rc = read_tokens(t, f, err, errlen);
    if (rc == 0 && tokenizer_build_index(t))
        rc = err_set(err, errlen, "%s: out of memory for the token index", f->path);
    if (rc == 0)
        rc = check_unique(t, f, err, errlen);
    if (rc == 0)
        control_by_spelling(t);
    if (rc == 0 && t->kind == TOKENIZER_BYTE_BPE)
        rc = read_merges(t, f, err, errlen);
    if (rc == 0)
        rc = read_specials(t, f, err, errlen);
    if (rc == 0 && collect_special(t))
        rc = err_set(err, errlen, "%s: out of memory", f->path);
    if (rc != 0) {
        tokenizer_free(t);
        return -1;
    }
    set_byte_ids(t);
    return 0;
}
