#include "engine/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int build_index(struct tokenizer *t)
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

int tokenizer_load_llama2c(struct tokenizer *t, const char *path, int vocab_size, char *err,
                           size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->kind = TOKENIZER_SENTENCEPIECE_BPE;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open tokenizer: %s", path, strerror(errno));
        return -1;
    }
    int32_t max_len;
    t->vocab_size = vocab_size;
    t->pieces = calloc((size_t)vocab_size, sizeof *t->pieces);
    t->piece_len = calloc((size_t)vocab_size, sizeof *t->piece_len);
    t->scores = calloc((size_t)vocab_size, sizeof *t->scores);
    if (fread(&max_len, 4, 1, f) != 1 || max_len <= 0 || max_len > 4096) {
        snprintf(err, errlen, "%s: not a llama2.c tokenizer (bad max token length)", path);
        goto fail;
    }
    for (int i = 0; i < vocab_size; i++) {
        int32_t len;
        if (fread(&t->scores[i], 4, 1, f) != 1 || fread(&len, 4, 1, f) != 1) {
            snprintf(err, errlen, "%s: truncated at token %d of %d", path, i, vocab_size);
            goto fail;
        }
        if (len < 0 || len > max_len) {
            snprintf(err, errlen, "%s: token %d has length %d (max %d)", path, i, len, max_len);
            goto fail;
        }
        t->pieces[i] = malloc((size_t)len + 1);
        if (!t->pieces[i] || fread(t->pieces[i], 1, (size_t)len, f) != (size_t)len) {
            snprintf(err, errlen, "%s: truncated in token %d of %d", path, i, vocab_size);
            goto fail;
        }
        t->pieces[i][len] = '\0';
        t->piece_len[i] = (uint32_t)len;
    }
    if (fgetc(f) != EOF) {
        snprintf(err, errlen, "%s: holds more than the model's %d tokens", path, vocab_size);
        goto fail;
    }
    fclose(f);
    t->max_piece_len = (uint32_t)max_len;
    t->bos_id = 1;
    t->eos_id = 2;
    if (build_index(t)) {
        snprintf(err, errlen, "%s: out of memory", path);
        tokenizer_free(t);
        return -1;
    }
    return 0;
fail:
    fclose(f);
    tokenizer_free(t);
    return -1;
}

void tokenizer_free(struct tokenizer *t)
{
    for (int i = 0; t->pieces && i < t->vocab_size; i++)
        free(t->pieces[i]);
    free(t->pieces);
    free(t->piece_len);
    free(t->scores);
    free(t->index);
    memset(t, 0, sizeof *t);
}

/* Merge candidates in a max-heap: highest score first, leftmost on ties,
 * which is exactly the order of SentencePiece's (and llama2.c's) greedy
 * rescan, in O(n log n) instead of O(n^2). */
struct merge {
    float score;
    int left, right; /* symbol slots; their ids when pushed */
    int left_id, right_id, merged_id;
};

static int merge_before(const struct merge *a, const struct merge *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(struct merge *h, size_t *n, struct merge m)
{
    size_t i = (*n)++;
    while (i > 0 && merge_before(&m, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = m;
}

static struct merge heap_pop(struct merge *h, size_t *n)
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

struct sym {
    int id, prev, next;
};

static void push_pair(const struct tokenizer *t, struct sym *s, int l, char *buf, struct merge *h,
                      size_t *nh)
{
    int r = s[l].next;
    if (l < 0 || r < 0)
        return;
    size_t a = t->piece_len[s[l].id], b = t->piece_len[s[r].id];
    memcpy(buf, t->pieces[s[l].id], a);
    memcpy(buf + a, t->pieces[s[r].id], b);
    int id = tokenizer_lookup(t, buf, a + b);
    if (id < 0 || t->scores[id] <= TOKENIZER_NO_MERGE)
        return;
    heap_push(h, nh,
              (struct merge){t->scores[id], l, r, s[l].id, s[r].id, id});
}

size_t tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, bool add_bos,
                        int *out)
{
    size_t n = 0;
    if (add_bos)
        out[n++] = t->bos_id;
    if (len == 0)
        return n;
    size_t cap = len + 1;
    struct sym *s = malloc(cap * sizeof *s);
    struct merge *h = malloc(4 * cap * sizeof *h + sizeof *h);
    char *buf = malloc(2 * (size_t)t->max_piece_len + 8);
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
    for (int i = 0; i < ns; i++) {
        s[i].prev = i - 1;
        s[i].next = i + 1 < ns ? i + 1 : -1;
    }
    size_t nh = 0;
    for (int i = 0; i + 1 < ns; i++)
        push_pair(t, s, i, buf, h, &nh);
    while (nh > 0) {
        struct merge m = heap_pop(h, &nh);
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
    for (int i = ns > 0 ? 0 : -1; i >= 0; i = s[i].next)
        out[n++] = s[i].id;
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
    const char *p = t->pieces[id];
    size_t n = t->piece_len[id];
    unsigned byte;
    if (n == 6 && sscanf(p, "<0x%02X>", &byte) == 1) {
        buf[0] = (char)byte;
        buf[1] = '\0';
        *len = 1;
        return buf;
    }
    if (prev == t->bos_id && n > 0 && p[0] == ' ') {
        p++;
        n--;
    }
    *len = n;
    return p;
}
