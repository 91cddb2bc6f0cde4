#include "engine/tokenizer/tokenizer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/tokenizer/tokenizer_internal.h"

static uint32_t hash_bytes(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

int tokenizer_lookup(const struct tokenizer *t, const char *s, size_t len)
{
    for (uint32_t i = hash_bytes(s, len) & t->index_mask;; i = (i + 1) & t->index_mask) {
        int32_t id = t->index[i];
        if (id < 0)
            return -1;
        if (t->piece_len[id] == len && memcmp(t->pieces[id], s, len) == 0)
            return id;
    }
}

int tokenizer_build_index(struct tokenizer *t)
{
    uint32_t size = 1;
    while (size < 2u * (uint32_t)t->vocab_size)
        size <<= 1;
    t->index = malloc(size * sizeof *t->index);
    if (!t->index)
        return -1;
    memset(t->index, 0xff, size * sizeof *t->index);
    t->index_mask = size - 1;
    for (int id = 0; id < t->vocab_size; id++) {
        /* the first of duplicate pieces wins, as a linear search would */
        if (tokenizer_lookup(t, t->pieces[id], t->piece_len[id]) >= 0)
            continue;
        uint32_t i = hash_bytes(t->pieces[id], t->piece_len[id]) & t->index_mask;
        while (t->index[i] >= 0)
            i = (i + 1) & t->index_mask;
        t->index[i] = id;
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_ids[b] = tokenizer_lookup(t, name, 6);
    }
    return 0;
}

/* The file's records after its header: per token a score, a length and
 * the piece's bytes, vocab_size of them and nothing after. */
static int read_pieces(struct tokenizer *t, FILE *f, int32_t max_len, const char *path, char *err, size_t errlen)
{
    int vocab_size = t->vocab_size;
    for (int i = 0; i < vocab_size; i++) {
        int32_t len;
        if (fread(&t->scores[i], 4, 1, f) != 1 || fread(&len, 4, 1, f) != 1)
            return err_set(err, errlen, "%s: truncated at token %d of %d", path, i, vocab_size);
        if (!isfinite(t->scores[i])) /* merges compare scores: NaN would never merge */
            return err_set(err, errlen, "%s: token %d has a non-finite score (%g)", path, i, (double)t->scores[i]);
        if (len < 0 || len > max_len)
            return err_set(err, errlen, "%s: token %d has length %d (max %d)", path, i, len, max_len);
        t->pieces[i] = malloc((size_t)len + 1);
        if (!t->pieces[i] || fread(t->pieces[i], 1, (size_t)len, f) != (size_t)len)
            return err_set(err, errlen, "%s: truncated in token %d of %d", path, i, vocab_size);
        t->pieces[i][len] = '\0';
        t->piece_len[i] = (uint32_t)len;
    }
    if (fgetc(f) != EOF)
        return err_set(err, errlen, "%s: holds more than the model's %d tokens", path, vocab_size);
    return 0;
}

int tokenizer_load_llama2c(struct tokenizer *t, const char *path, int vocab_size, char *err,
                           size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->kind = TOKENIZER_SENTENCEPIECE_BPE;
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, errlen, "%s: cannot open tokenizer: %s", path, strerror(errno));
        return -1;
    }
    if (vocab_size < 3) { /* the format's BOS and EOS are ids 1 and 2 */
        err_set(err, errlen, "%s: a vocabulary of %d tokens has no room for <s> (1) and </s> (2)", path, vocab_size);
        fclose(f);
        return -1;
    }
    /* each token takes 8 bytes at least (score, length): a vocabulary the
     * file cannot hold is refused before anything is allocated for it */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size < 4 + 8 * (uint64_t)vocab_size) {
        err_set(err, errlen, "%s: truncated: %lld bytes cannot hold the model's %d tokens (4 + 8 bytes a token at least)", path,
                (long long)st.st_size, vocab_size);
        fclose(f);
        return -1;
    }
    int32_t max_len;
    t->vocab_size = vocab_size;
    t->pieces = calloc((size_t)vocab_size, sizeof *t->pieces);
    t->piece_len = calloc((size_t)vocab_size, sizeof *t->piece_len);
    t->scores = calloc((size_t)vocab_size, sizeof *t->scores);
    if (fread(&max_len, 4, 1, f) != 1 || max_len <= 0 || max_len > 4096) {
        err_set(err, errlen, "%s: not a llama2.c tokenizer (bad max token length)", path);
        goto fail;
    }
    if (read_pieces(t, f, max_len, path, err, errlen) != 0)
        goto fail;
    fclose(f);
    t->max_piece_len = (uint32_t)max_len;
    t->bos_id = 1;
    t->eos_id = 2;
    tokenizer_legacy_defaults(t);
    if (tokenizer_build_index(t)) {
        err_set(err, errlen, "%s: out of memory", path);
        tokenizer_free(t);
        return -1;
    }
    return 0;
fail:
    fclose(f);
    tokenizer_free(t);
    return -1;
}

/* llama2.c and tokenizer.json files say nothing of these: BOS when the
 * caller asks, no EOS, SentencePiece's dummy prefix, GPT-2's splitter as
 * this file has always approximated it. */
void tokenizer_legacy_defaults(struct tokenizer *t)
{
    t->add_bos = true;
    t->add_eos = false;
    t->add_space_prefix = true;
    t->pre = TOKENIZER_PRE_LEGACY;
}

void tokenizer_free(struct tokenizer *t)
{
    for (int i = 0; t->pieces && i < t->vocab_size; i++)
        free(t->pieces[i]);
    free(t->pieces);
    free(t->piece_len);
    free(t->scores);
    free(t->index);
    free(t->pair_keys);
    free(t->pair_rank);
    free(t->pair_merged);
    free(t->token_type);
    for (int i = 0; t->display && i < t->vocab_size; i++)
        free(t->display[i]);
    free(t->display);
    free(t->display_len);
    free(t->special_ids);
    memset(t, 0, sizeof *t);
}

/* Merge candidates in a max-heap: highest score first, leftmost on ties,
 * which is exactly the order of SentencePiece's (and llama2.c's) greedy
 * rescan, in O(n log n) instead of O(n^2). */

static int merge_before(const struct merge *a, const struct merge *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

void tokenizer_heap_push(struct merge *h, size_t *n, struct merge m)
{
    size_t i = (*n)++;
    while (i > 0 && merge_before(&m, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = m;
}

struct merge tokenizer_heap_pop(struct merge *h, size_t *n)
{
    struct merge top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && merge_before(&h[c + 1], &h[c]))
            c++;
        if (!merge_before(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}


uint64_t tokenizer_pair_key(int a, int b)
{
    return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

uint32_t tokenizer_pair_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k;
}

/* The merge of adjacent tokens a and b: SentencePiece merges when the
 * concatenation is a scored piece; byte-level BPE only when the pair is in
 * its merge list (the lower the rank, the earlier). */
static int find_merge(const struct tokenizer *t, int a, int b, char *buf, int *merged, float *score)
{
    if (t->kind == TOKENIZER_BYTE_BPE) {
        uint64_t k = tokenizer_pair_key(a, b);
        for (uint32_t i = tokenizer_pair_hash(k) & t->pair_mask;; i = (i + 1) & t->pair_mask) {
            if (t->pair_rank[i] < 0)
                return -1;
            if (t->pair_keys[i] == k) {
                *merged = t->pair_merged[i];
                *score = -(float)t->pair_rank[i];
                return 0;
            }
        }
    }
    size_t la = t->piece_len[a], lb = t->piece_len[b];
    memcpy(buf, t->pieces[a], la);
    memcpy(buf + la, t->pieces[b], lb);
    int id = tokenizer_lookup(t, buf, la + lb);
    if (id < 0 || t->scores[id] <= TOKENIZER_NO_MERGE)
        return -1;
    *merged = id;
    *score = t->scores[id];
    return 0;
}

static void push_pair(const struct tokenizer *t, struct sym *s, int l, char *buf, struct merge *h,
                      size_t *nh)
{
    int r = s[l].next, merged;
    float score;
    if (l < 0 || r < 0 || find_merge(t, s[l].id, s[r].id, buf, &merged, &score))
        return;
    tokenizer_heap_push(h, nh, (struct merge){score, l, r, s[l].id, s[r].id, merged});
}

/* BPE over the symbols s[0..ns): merges by priority until none applies,
 * then appends the ids to out. h holds 3 * ns merges. Returns the count. */
size_t tokenizer_bpe(const struct tokenizer *t, struct sym *s, int ns, struct merge *h, char *buf, int *out)
{
    for (int i = 0; i < ns; i++) {
        s[i].prev = i - 1;
        s[i].next = i + 1 < ns ? i + 1 : -1;
    }
    size_t nh = 0;
    for (int i = 0; i + 1 < ns; i++)
        push_pair(t, s, i, buf, h, &nh);
    while (nh > 0) {
        struct merge m = tokenizer_heap_pop(h, &nh);
        /* stale when either side has merged since the candidate was pushed */
        if (s[m.left].id != m.left_id || s[m.left].next != m.right || s[m.right].id != m.right_id)
            continue;
        s[m.left].id = m.merged_id;
        int after = s[m.right].next;
        s[m.left].next = after;
        if (after >= 0)
            s[after].prev = m.left;
        s[m.right].id = -1;
        if (s[m.left].prev >= 0)
            push_pair(t, s, s[m.left].prev, buf, h, &nh);
        push_pair(t, s, m.left, buf, h, &nh);
    }
    size_t n = 0;
    for (int i = ns > 0 ? 0 : -1; i >= 0; i = s[i].next)
        out[n++] = s[i].id;
    return n;
}

/* GPT-2's pre-tokenizer on bytes: contractions, " ?letters", " ?digits",
 * " ?other", whitespace runs (the last space joins the next word). Bytes
 * >= 0x80 count as letters: an approximation of the Unicode classes. */
enum char_class { CC_SPACE, CC_LETTER, CC_DIGIT, CC_OTHER };

static enum char_class classify(unsigned char c)
{
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
        return CC_SPACE;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80)
        return CC_LETTER;
    if (c >= '0' && c <= '9')
        return CC_DIGIT;
    return CC_OTHER;
}

size_t tokenizer_pretoken_end_legacy(const char *text, size_t len, size_t i)
{
    const unsigned char *u = (const unsigned char *)text;
    if (u[i] == '\'' && i + 1 < len) {
        if (strchr("stmd", text[i + 1]) && text[i + 1])
            return i + 2;
        if (i + 2 < len && (!strncmp(text + i + 1, "re", 2) || !strncmp(text + i + 1, "ve", 2) ||
                            !strncmp(text + i + 1, "ll", 2)))
            return i + 3;
    }
    enum char_class c = classify(u[i]);
    size_t j = i;
    if (c == CC_SPACE) {
        if (u[i] == ' ' && i + 1 < len && classify(u[i + 1]) != CC_SPACE) {
            j = i + 1; /* " word": the space leads the word */
            c = classify(u[j]);
        } else {
            while (j < len && classify(u[j]) == CC_SPACE)
                j++;
            if (j == len || j - i == 1)
                return j;
            return j - 1; /* the last one goes with what follows */
        }
    }
    while (j < len && classify(u[j]) == c)
        j++;
    return j;
}

size_t tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, bool add_bos,
                        int *out)
{
    if (t->gguf)
        return tokenizer_encode_special(t, text, len, add_bos, false, out);
    size_t n = 0;
    if (add_bos)
        out[n++] = t->bos_id;
    if (len == 0)
        return n;
    size_t cap = len + 1;
    struct sym *s = malloc(cap * sizeof *s);
    struct merge *h = malloc(3 * cap * sizeof *h + sizeof *h);
    char *buf = malloc(2 * (size_t)t->max_piece_len + 8);
    if (t->kind == TOKENIZER_BYTE_BPE) {
        for (size_t i = 0; i < len;) {
            size_t end = tokenizer_pretoken_end_legacy(text, len, i);
            int ns = 0;
            for (size_t k = i; k < end; k++) {
                int b = t->byte_ids[(unsigned char)text[k]];
                s[ns++].id = b >= 0 ? b : 0;
            }
            n += tokenizer_bpe(t, s, ns, h, buf, out + n);
            i = end;
        }
    } else {
        int ns = 0;
        int space = tokenizer_lookup(t, " ", 1);
        if (space >= 0)
            s[ns++].id = space; /* the dummy prefix */
        for (size_t i = 0; i < len;) {
            /* one UTF-8 character: a lead byte and up to 3 continuation bytes */
            size_t clen = 1;
            while (i + clen < len && ((unsigned char)text[i + clen] & 0xC0) == 0x80 && clen < 4)
                clen++;
            int id = tokenizer_lookup(t, text + i, clen);
            if (id >= 0)
                s[ns++].id = id;
            else
                for (size_t k = 0; k < clen; k++) {
                    int b = t->byte_ids[(unsigned char)text[i + k]];
                    s[ns++].id = b >= 0 ? b : 0; /* no byte token: <unk> (id 0) */
                }
            i += clen;
        }
        n += tokenizer_bpe(t, s, ns, h, buf, out + n);
    }
    free(s);
    free(h);
    free(buf);
    return n;
}

const char *tokenizer_decode(const struct tokenizer *t, int prev, int id, size_t *len, char buf[2])
{
    if (id < 0 || id >= t->vocab_size) {
        *len = 0;
        return "";
    }
    if (t->token_type && t->token_type[id] == TOKEN_TYPE_CONTROL) {
        *len = 0;
        return "";
    }
    const char *p = t->display ? t->display[id] : t->pieces[id];
    size_t n = t->display ? t->display_len[id] : t->piece_len[id];
    if (t->kind == TOKENIZER_BYTE_BPE) { /* pieces are raw bytes already */
        *len = n;
        return p;
    }
    unsigned byte;
    if (n == 6 && sscanf(p, "<0x%02X>", &byte) == 1) {
        buf[0] = (char)byte;
        buf[1] = '\0';
        *len = 1;
        return buf;
    }
    if (t->add_space_prefix && prev == t->bos_id && n > 0 && p[0] == ' ') {
        p++;
        n--;
    }
    *len = n;
    return p;
}

/* ---- byte-level BPE from tokenizer.json ---- */

/* GPT-2 spells byte b as one printable code point: itself for ! .. ~,
 * ¡ .. ¬ and ® .. ÿ, and 256 + k for the k-th other byte. */
void tokenizer_byte_code_points(int cp_of[256])
{
    int k = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        cp_of[b] = printable ? b : 256 + k++;
    }
}

/* The raw bytes of a vocab key; -1 when a code point is not a byte's. */
int tokenizer_key_to_bytes(const char *key, const int byte_of[512], char *out, size_t *len)
{
    const unsigned char *u = (const unsigned char *)key;
    size_t n = 0;
    while (*u) {
        int cp;
        if (u[0] < 0x80)
            cp = *u++;
        else if ((u[0] & 0xE0) == 0xC0 && (u[1] & 0xC0) == 0x80) {
            cp = ((u[0] & 0x1F) << 6) | (u[1] & 0x3F);
            u += 2;
        } else
            return -1;
        if (cp >= 512 || byte_of[cp] < 0)
            return -1;
        out[n++] = (char)byte_of[cp];
    }
    out[n] = '\0';
    *len = n;
    return 0;
}

/* model.vocab into the pieces, each key turned back into its raw bytes
 * (GPT-2's byte alphabet); ids are checked here once for everything that
 * reads them later (the merges). */
static int load_vocab(struct tokenizer *t, const cJSON *vocab, int vocab_size, const char *path, char *err,
                      size_t errlen)
{
    int cp_of[256], byte_of[512];
    tokenizer_byte_code_points(cp_of);
    for (int i = 0; i < 512; i++)
        byte_of[i] = -1;
    for (int b = 0; b < 256; b++)
        byte_of[cp_of[b]] = b;
    const cJSON *e;
    char piece[1024];
    cJSON_ArrayForEach(e, vocab)
    {
        uint64_t id64;
        if (json_number_u64(e, "vocab entry", 0, (uint64_t)vocab_size - 1, &id64, path, err, errlen))
            return err_set(err, errlen, "%s: vocab entry '%.100s' has an id outside 0..%d or not a whole number",
                           path, e->string, vocab_size - 1);
        int id = (int)id64;
        size_t n;
        if (strlen(e->string) >= sizeof piece / 2 || tokenizer_key_to_bytes(e->string, byte_of, piece, &n)) {
            /* special tokens spelled outside the byte alphabet keep their text */
            snprintf(piece, sizeof piece, "%s", e->string);
            n = strlen(piece);
        }
        free(t->pieces[id]);
        t->pieces[id] = malloc(n + 1);
        memcpy(t->pieces[id], piece, n + 1);
        t->piece_len[id] = (uint32_t)n;
        if (n > t->max_piece_len)
            t->max_piece_len = (uint32_t)n;
    }
    return 0;
}

/* added_tokens fill ids the vocab left out (their text as it is); every
 * id still without a piece gets an empty one. */
static void add_added_tokens(struct tokenizer *t, const cJSON *added, int vocab_size)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, added)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (cJSON_IsNumber(id) && cJSON_IsString(content) && id->valuedouble >= 0 && id->valuedouble < vocab_size &&
            !t->pieces[(int)id->valuedouble]) {
            t->pieces[(int)id->valuedouble] = strdup(content->valuestring);
            t->piece_len[(int)id->valuedouble] = (uint32_t)strlen(content->valuestring);
        }
    }
    for (int i = 0; i < vocab_size; i++)
        if (!t->pieces[i]) { /* ids the model has but the tokenizer never produces */
            t->pieces[i] = strdup("");
            t->piece_len[i] = 0;
        }
}

/* One merge's two halves: "a b" (older files) or ["a", "b"]; false for
 * anything else, which is skipped. left holds a's copy in the first form. */
static bool merge_halves(const cJSON *e, char *left, size_t leftlen, const char **a, const char **b)
{
    if (cJSON_IsString(e)) { /* exactly two parts, as tokenizers splits it */
        const char *sp = strchr(e->valuestring, ' ');
        if (!sp || strchr(sp + 1, ' ') || (size_t)(sp - e->valuestring) >= leftlen)
            return false;
        snprintf(left, leftlen, "%.*s", (int)(sp - e->valuestring), e->valuestring);
        *a = left;
        *b = sp + 1;
        return true;
    }
    if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
        cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
        *a = cJSON_GetArrayItem(e, 0)->valuestring;
        *b = cJSON_GetArrayItem(e, 1)->valuestring;
        return true;
    }
    return false;
}

/* The merges as an open-addressing table from a pair of ids to its rank
 * (its place in the list: lower merges first) and the merged id. Every
 * merge is "a b" or ["a", "b"] with a, b and ab in the vocab, as the
 * tokenizers library's BPE builder requires (MergeTokenOutOfVocabulary). */
static int merge_ids(const cJSON *vocab, const cJSON *e, int rank, int ids[3], const char *path, char *err,
                     size_t errlen)
{
    const char *a, *b;
    char left[1024], ab[2048];
    if (!merge_halves(e, left, sizeof left, &a, &b))
        return err_set(err, errlen, "%s: merge %d is not \"a b\" or [\"a\", \"b\"]", path, rank);
    snprintf(ab, sizeof ab, "%s%s", a, b);
    const char *part[3] = {a, b, ab};
    for (int k = 0; k < 3; k++) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(vocab, part[k]);
        if (!cJSON_IsNumber(id))
            return err_set(err, errlen, "%s: merge %d (%.100s + %.100s) needs '%.200s', which model.vocab lacks", path,
                           rank, a, b, part[k]);
        ids[k] = (int)id->valuedouble; /* checked whole and in range by load_vocab */
    }
    return 0;
}

int tokenizer_alloc_pairs(struct tokenizer *t, size_t n_merges)
{
    uint32_t size = 1;
    while (size < 2u * n_merges + 2)
        size <<= 1;
    t->pair_mask = size - 1;
    t->pair_keys = calloc(size, sizeof *t->pair_keys);
    t->pair_rank = malloc(size * sizeof *t->pair_rank);
    t->pair_merged = calloc(size, sizeof *t->pair_merged);
    if (!t->pair_keys || !t->pair_rank || !t->pair_merged)
        return -1;
    for (uint32_t i = 0; i < size; i++)
        t->pair_rank[i] = -1;
    return 0;
}

void tokenizer_add_pair(struct tokenizer *t, int a, int b, int merged, int rank)
{
    uint64_t k = tokenizer_pair_key(a, b);
    uint32_t i = tokenizer_pair_hash(k) & t->pair_mask;
    while (t->pair_rank[i] >= 0 && t->pair_keys[i] != k)
        i = (i + 1) & t->pair_mask;
    if (t->pair_rank[i] >= 0)
        return; /* the first (lowest) rank of a repeated pair wins */
    t->pair_keys[i] = k;
    t->pair_rank[i] = rank;
    t->pair_merged[i] = merged;
}

static int load_merges(struct tokenizer *t, const cJSON *vocab, const cJSON *merges, const char *path, char *err,
                       size_t errlen)
{
    int n_merges = cJSON_GetArraySize(merges);
    if (tokenizer_alloc_pairs(t, (size_t)n_merges))
        return err_set(err, errlen, "%s: out of memory for %d merges", path, n_merges);
    int rank = 0, ids[3];
    const cJSON *e;
    cJSON_ArrayForEach(e, merges)
    {
        int r = rank++;
        if (merge_ids(vocab, e, r, ids, path, err, errlen) != 0)
            return -1;
        tokenizer_add_pair(t, ids[0], ids[1], ids[2], r);
    }
    return 0;
}

int tokenizer_load_hf_bytelevel(struct tokenizer *t, const char *path, int vocab_size, char *err,
                                size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->kind = TOKENIZER_BYTE_BPE;
    t->vocab_size = vocab_size;
    tokenizer_legacy_defaults(t);
    char *text = read_text_file(path, NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges)) {
        err_set(err, errlen, "%s: not a BPE tokenizer.json (no model.vocab and model.merges)", path);
        cJSON_Delete(root);
        return -1;
    }
    t->pieces = calloc((size_t)vocab_size, sizeof *t->pieces);
    t->piece_len = calloc((size_t)vocab_size, sizeof *t->piece_len);
    t->scores = calloc((size_t)vocab_size, sizeof *t->scores);
    if (load_vocab(t, vocab, vocab_size, path, err, errlen) != 0)
        goto fail;
    add_added_tokens(t, added, vocab_size);
    if (tokenizer_build_index(t)) {
        err_set(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        t->byte_ids[b] = tokenizer_lookup(t, &c, 1);
    }
    if (load_merges(t, vocab, merges, path, err, errlen) != 0)
        goto fail;
    cJSON_Delete(root);
    return 0;
fail:
    cJSON_Delete(root);
    tokenizer_free(t);
    return -1;
}
