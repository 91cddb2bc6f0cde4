#include "common/suggest.h"

#include <stdint.h>
#include <string.h>

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > SUGGEST_MAX_LEN || lb > SUGGEST_MAX_LEN)
        return SIZE_MAX;
    /* d[i][j]: edits from a's first i characters to b's first j */
    size_t d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1;
        }
    return d[la][lb];
}

/* How many edits a word of len characters may be from what it meant. */
static size_t reach(size_t len)
{
    size_t r = len / 3;
    return r < 1 ? 1 : r > 3 ? 3 : r;
}

/* The one candidate holding word, or NULL when none or several do. */
static const char *only_container(const char *word, const char *const *candidates, size_t n)
{
    const char *found = NULL;
    if (strlen(word) < 3)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (candidates[i] && strstr(candidates[i], word)) {
            if (found && strcmp(found, candidates[i]) != 0)
                return NULL;
            found = candidates[i];
        }
    return found;
}

const char *suggest_nearest(const char *word, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!candidates[i])
            continue;
        size_t d = edit_distance(word, candidates[i]);
        if (d == 0)
            return NULL;
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    if (best && best_d <= reach(strlen(word)))
        return best;
    return only_container(word, candidates, n);
}
