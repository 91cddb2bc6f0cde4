#include "common/parse.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errbuf.h"

/* Multiplier for a unit suffix, or 0 when the suffix is not a size unit. */
static uint64_t unit_multiplier(const char *s)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {
        {"", 1},
        {"b", 1},
        {"k", 1ull << 10}, {"kb", 1ull << 10}, {"kib", 1ull << 10},
        {"m", 1ull << 20}, {"mb", 1ull << 20}, {"mib", 1ull << 20},
        {"g", 1ull << 30}, {"gb", 1ull << 30}, {"gib", 1ull << 30},
        {"t", 1ull << 40}, {"tb", 1ull << 40}, {"tib", 1ull << 40},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(s, units[i].suffix) == 0)
            return units[i].mult;
    return 0;
}

int parse_size(const char *text, uint64_t *out, char *err, size_t errlen)
{
    if (!text || !*text)
        return err_set(err, errlen, "empty size");
    const char *p = text;
    if (!isdigit((unsigned char)*p))
        return err_set(err, errlen, "'%s' is not a size (expected e.g. 4096, 32k, 4G)", text);
    errno = 0;
    char *end;
    uint64_t whole = strtoull(p, &end, 10);
    if (errno == ERANGE)
        return err_set(err, errlen, "size '%s' is too large", text);
    /* Up to six decimals keep frac_num * mult below 2^60 (mult <= 2^40). */
    uint64_t frac_num = 0, frac_den = 1;
    if (*end == '.') {
        end++;
        if (!isdigit((unsigned char)*end))
            return err_set(err, errlen, "'%s' is not a size (expected e.g. 4096, 32k, 4G)", text);
        while (isdigit((unsigned char)*end)) {
            if (frac_den == 1000000)
                return err_set(err, errlen, "size '%s' has too many decimals", text);
            frac_num = frac_num * 10 + (uint64_t)(*end - '0');
            frac_den *= 10;
            end++;
        }
    }
    uint64_t mult = unit_multiplier(end);
    if (!mult)
        return err_set(err, errlen, "'%s' has an unknown size unit (use k, m, g or t; binary)", text);
    if (whole > UINT64_MAX / mult)
        return err_set(err, errlen, "size '%s' is too large", text);
    uint64_t bytes = whole * mult;
    if ((frac_num * mult) % frac_den != 0)
        return err_set(err, errlen, "size '%s' is not a whole number of bytes", text);
    uint64_t extra = frac_num * mult / frac_den;
    if (bytes > UINT64_MAX - extra)
        return err_set(err, errlen, "size '%s' is too large", text);
    bytes += extra;
    *out = bytes;
    return 0;
}

typedef int (*item_parser)(const char *, uint64_t *, char *, size_t);

static int parse_list(const char *text, struct u64_list *out, item_parser item,
                      int positive, char *err, size_t errlen)
{
    out->n = 0;
    out->v = NULL;
    if (!text || !*text)
        return err_set(err, errlen, "empty list");
    size_t cap = 1;
    for (const char *c = text; *c; c++)
        cap += *c == ',';
    uint64_t *v = calloc(cap, sizeof *v);
    char *copy = strdup(text);
    if (!v || !copy) {
        free(v);
        free(copy);
        return err_set(err, errlen, "out of memory");
    }
    size_t n = 0;
    char *save = copy;
    for (;;) {
        char *comma = strchr(save, ',');
        if (comma)
            *comma = '\0';
        if (!*save) {
            free(v);
            free(copy);
            return err_set(err, errlen, "list '%s' has an empty item", text);
        }
        if (item(save, &v[n], err, errlen) != 0) {
            free(v);
            free(copy);
            return -1;
        }
        if (positive && v[n] == 0) {
            free(v);
            free(copy);
            return err_set(err, errlen, "list '%s' contains 0; values must be positive", text);
        }
        n++;
        if (!comma)
            break;
        save = comma + 1;
    }
    free(copy);
    out->n = n;
    out->v = v;
    return 0;
}

int parse_size_list(const char *text, struct u64_list *out, char *err, size_t errlen)
{
    return parse_list(text, out, parse_size, 1, err, errlen);
}

int parse_uint(const char *text, uint64_t *out, char *err, size_t errlen)
{
    if (!text || !*text)
        return err_set(err, errlen, "empty number");
    for (const char *c = text; *c; c++)
        if (!isdigit((unsigned char)*c))
            return err_set(err, errlen, "'%s' is not a non-negative whole number", text);
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno == ERANGE)
        return err_set(err, errlen, "number '%s' is too large", text);
    *out = v;
    return 0;
}

int parse_uint_list(const char *text, struct u64_list *out, char *err, size_t errlen)
{
    return parse_list(text, out, parse_uint, 1, err, errlen);
}

/* The next white-space-separated word of *at (comments skipped) into
 * word[len]; 0 at the end, -1 when it does not fit. */
static int next_word(const char **at, char *word, size_t len)
{
    const char *c = *at;
    for (;;) {
        while (isspace((unsigned char)*c))
            c++;
        if (*c != '#')
            break;
        while (*c && *c != '\n')
            c++;
    }
    size_t n = 0;
    while (*c && !isspace((unsigned char)*c)) {
        if (n + 1 >= len)
            return -1;
        word[n++] = *c++;
    }
    word[n] = '\0';
    *at = c;
    return n > 0;
}

/* parse_id_list's refusal of its word number `index`: the list freed. */
static int id_refused(int **ids, size_t index, const char *word, uint64_t limit, char *err, size_t errlen)
{
    free(*ids);
    *ids = NULL;
    return err_set(err, errlen, "id %zu, '%.24s', is not a token id below %llu", index, word,
                   (unsigned long long)limit);
}

int parse_id_list(const char *text, uint64_t limit, int **ids, size_t *n, char *err, size_t errlen)
{
    *ids = NULL;
    *n = 0;
    size_t cap = 0;
    char word[32];
    int got;
    for (const char *at = text ? text : ""; (got = next_word(&at, word, sizeof word)) != 0;) {
        uint64_t id = 0;
        if (got < 0 || parse_uint(word, &id, NULL, 0) != 0 || id >= limit || id > INT_MAX) {
            size_t index = *n + 1;
            *n = 0;
            return id_refused(ids, index, got < 0 ? "(a longer word)" : word, limit, err, errlen);
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            int *grown = realloc(*ids, cap * sizeof **ids);
            if (!grown) {
                free(*ids);
                *ids = NULL;
                *n = 0;
                return err_set(err, errlen, "out of memory");
            }
            *ids = grown;
        }
        (*ids)[(*n)++] = (int)id;
    }
    if (*n == 0)
        return err_set(err, errlen, "holds no token ids");
    return 0;
}

int parse_double(const char *text, double *out, char *err, size_t errlen)
{
    if (!text || !*text)
        return err_set(err, errlen, "empty number");
    errno = 0;
    char *end;
    double v = strtod(text, &end);
    if (*end || errno == ERANGE || !isfinite(v))
        return err_set(err, errlen, "'%s' is not a number", text);
    *out = v;
    return 0;
}

int parse_share(const char *text, double *out, char *err, size_t errlen)
{
    size_t n = text ? strlen(text) : 0;
    if (!n || text[n - 1] != '%')
        return parse_double(text, out, err, errlen);
    char num[64]; /* the number before '%' */
    double v;
    bool fits = n - 1 < sizeof num;
    if (fits)
        snprintf(num, sizeof num, "%.*s", (int)(n - 1), text);
    if (!fits || parse_double(num, &v, err, errlen) != 0)
        return err_set(err, errlen, "'%s' is not a number or a percentage (write 0.5 or 50%%)", text);
    *out = v / 100;
    return 0;
}

int parse_duration(const char *text, double *seconds, char *err, size_t errlen)
{
    if (!text || !*text)
        return err_set(err, errlen, "empty duration");
    errno = 0;
    char *end;
    double v = strtod(text, &end);
    if (end == text || errno == ERANGE || !isfinite(v) || v < 0 || text[0] == '-')
        return err_set(err, errlen, "'%s' is not a duration (expected e.g. 2, 0.5, 500ms)", text);
    double scale;
    if (!*end || strcmp(end, "s") == 0)
        scale = 1.0;
    else if (strcmp(end, "ms") == 0)
        scale = 1e-3;
    else if (strcmp(end, "us") == 0)
        scale = 1e-6;
    else
        return err_set(err, errlen, "'%s' has an unknown time unit (use s, ms or us)", text);
    *seconds = v * scale;
    return 0;
}

void format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "kmgt";
    int u = -1;
    uint64_t v = bytes;
    while (v >= 1024 && v % 1024 == 0 && u < 3) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
}

void u64_list_free(struct u64_list *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* Whether text is a number alone: digits, at most one '.', no unit. */
static bool is_bare_number(const char *text)
{
    bool digit = false, dot = false;
    for (const char *c = text; *c; c++) {
        if (*c == '.' && !dot)
            dot = true;
        else if (isdigit((unsigned char)*c))
            digit = true;
        else
            return false;
    }
    return digit;
}

int parse_size_with_unit(const char *text, const char *guess, uint64_t *out, char *err, size_t errlen)
{
    bool zero = text && strspn(text, "0.") == strlen(text);
    if (!text || !is_bare_number(text) || zero)
        return parse_size(text, out, err, errlen);
    if (strcmp(guess, "%") == 0)
        return err_set(err, errlen, "'%s' has no unit: did you mean %s%%? (a share is written %s%%, a size %sB "
                       "for bytes, or %sK, %sM, %sG)", text, text, text, text, text, text, text);
    char meant[160] = ""; /* "256k or 256m" from "k,m" */
    size_t n_units;
    char **units = split_commas(guess, &n_units);
    for (size_t i = 0; units && i < n_units; i++)
        snprintf(meant + strlen(meant), sizeof meant - strlen(meant), "%s%s%s",
                 i == 0 ? "" : i + 1 == n_units ? " or " : ", ", text, units[i]);
    free(units);
    return err_set(err, errlen, "'%s' has no unit: did you mean %s? (a size is written %sB for bytes, or %sK, "
                   "%sM, %sG)", text, meant, text, text, text, text);
}

int parse_share_or_size(const char *text, double whole, double *bytes, char *err, size_t errlen)
{
    size_t len = strlen(text);
    if (len && text[len - 1] == '%') {
        char num[64];
        double pct = 0; /* -O3 cannot see parse_double sets it on success */
        if (len - 1 >= sizeof num) {
            err_set(err, errlen, "'%s' is not a percentage", text);
            return -1;
        }
        snprintf(num, sizeof num, "%.*s", (int)(len - 1), text);
        if (parse_double(num, &pct, err, errlen) != 0)
            return -1;
        if (!(pct >= 0 && pct <= 100)) {
            err_set(err, errlen, "a share lies between 0%% and 100%%, not %s", text);
            return -1;
        }
        *bytes = pct / 100 * whole;
        return 0;
    }
    uint64_t v;
    if (parse_size_with_unit(text, "%", &v, err, errlen) != 0)
        return -1;
    *bytes = (double)v;
    return 0;
}

char **split_commas(const char *text, size_t *n)
{
    size_t count = 1, len = strlen(text);
    for (const char *c = text; *c; c++)
        count += *c == ',';
    char **v = malloc((count + 1) * sizeof *v + len + 1);
    *n = count;
    if (!v)
        return NULL;
    char *copy = (char *)(v + count + 1);
    memcpy(copy, text, len + 1);
    size_t k = 0;
    for (char *tok = copy;; tok++) {
        v[k++] = tok;
        tok = strchr(tok, ',');
        if (!tok)
            break;
        *tok = 0;
    }
    v[k] = NULL;
    *n = k;
    return v;
}
