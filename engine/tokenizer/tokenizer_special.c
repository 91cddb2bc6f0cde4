/* Special tokens cut out of a text before it is split, as llama.cpp's
 * tokenizer_st_partition does (the contract is tokenizer_internal.h's). */
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"

/* The first occurrence of needle (n > 0 bytes) in hay[0, len), or NULL. */
static const char *find_bytes(const char *hay, size_t len, const char *needle, size_t n)
{
    for (const char *p = hay; (size_t)(p - hay) + n <= len;) {
        p = memchr(p, needle[0], len - n + 1 - (size_t)(p - hay));
        if (!p)
            return NULL;
        if (!memcmp(p, needle, n))
            return p;
        p++;
    }
    return NULL;
}

/* Whether text[pos, pos + n) is all uncut. */
static bool uncut(const int *mark, size_t pos, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (mark[pos + i] != 0)
            return false;
    return true;
}

/* Every whole occurrence of token id in uncut text, left to right, each
 * search resuming after a cut: mark[start] = id + 1, the rest -1. */
static void cut_token(const struct tokenizer *t, int id, const char *text, size_t len, int *mark)
{
    size_t n = t->piece_len[id];
    if (n == 0 || n > len)
        return;
    for (size_t from = 0; from + n <= len;) {
        const char *hit = find_bytes(text + from, len - from, t->pieces[id], n);
        if (!hit)
            return;
        size_t pos = (size_t)(hit - text);
        if (!uncut(mark, pos, n)) {
            from = pos + 1;
            continue;
        }
        mark[pos] = id + 1;
        for (size_t i = 1; i < n; i++)
            mark[pos + i] = -1;
        from = pos + n;
    }
}

static bool eligible(const struct tokenizer *t, int id, bool parse_special)
{
    int type = t->token_type[id];
    return parse_special || (type != TOKEN_TYPE_CONTROL && type != TOKEN_TYPE_UNKNOWN);
}

size_t tokenizer_partition(const struct tokenizer *t, const char *text, size_t len, bool parse_special,
                           struct tokenizer_fragment **out)
{
    int *mark = calloc(len + 1, sizeof *mark);
    *out = malloc((2 * len + 2) * sizeof **out);
    if (!mark || !*out) { /* no room to cut: the text as one stretch */
        free(mark);
        free(*out);
        *out = malloc(sizeof **out);
        if (!*out)
            return 0;
        (*out)[0] = (struct tokenizer_fragment){0, len, -1};
        return len > 0;
    }
    for (int k = 0; k < t->n_special; k++)
        if (eligible(t, t->special_ids[k], parse_special))
            cut_token(t, t->special_ids[k], text, len, mark);
    size_t nf = 0;
    for (size_t i = 0; i < len;) {
        if (mark[i] > 0) {
            int id = mark[i] - 1;
            (*out)[nf++] = (struct tokenizer_fragment){i, t->piece_len[id], id};
            i += t->piece_len[id];
            continue;
        }
        size_t j = i;
        while (j < len && mark[j] == 0)
            j++;
        (*out)[nf++] = (struct tokenizer_fragment){i, j - i, -1};
        i = j;
    }
    free(mark);
    return nf;
}
