/* Per-layer ranks (predictor_ranks.h). */
#include "engine/predictor/predictor_ranks.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

/* A decimal number at *p (digits only), advancing *p; -1 if none or too big. */
static int number(const char **p, uint32_t *out)
{
    if (!isdigit((unsigned char)**p))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(*p, &end, 10);
    if (errno || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    *p = end;
    return 0;
}

/* One "A-B:R" or "A:R" entry [p, end) into ranks. */
static int entry(const char *p, const char *end, uint32_t n_layers, uint32_t max_rank, uint32_t *ranks, char *err,
                 size_t errlen)
{
    int len = (int)(end - p);
    uint32_t a, b, r;
    const char *q = p;
    if (number(&q, &a) != 0)
        return err_set(err, errlen, "'%.*s': expected LAYER:RANK or FIRST-LAST:RANK", len, p);
    b = a;
    if (*q == '-') {
        q++;
        if (number(&q, &b) != 0)
            return err_set(err, errlen, "'%.*s': expected a last layer after '-'", len, p);
    }
    if (*q != ':')
        return err_set(err, errlen, "'%.*s': expected ':RANK' after the layers", len, p);
    q++;
    if (number(&q, &r) != 0 || q != end)
        return err_set(err, errlen, "'%.*s': expected a rank (a number) after ':'", len, p);
    if (a > b)
        return err_set(err, errlen, "'%.*s': the layers run backwards (%u > %u)", len, p, a, b);
    if (b >= n_layers)
        return err_set(err, errlen, "'%.*s': layer %u is past the model's last (%u)", len, p, b, n_layers - 1);
    if (r < 1 || r > max_rank)
        return err_set(err, errlen, "'%.*s': rank %u is not 1 to %u (min of d_model and d_ff)", len, p, r, max_rank);
    for (uint32_t l = a; l <= b; l++)
        ranks[l] = r;
    return 0;
}

int predictor_ranks_parse(const char *spec, uint32_t rank, uint32_t n_layers, uint32_t max_rank, uint32_t *ranks,
                          char *err, size_t errlen)
{
    if (rank < 1 || rank > max_rank)
        return err_set(err, errlen, "rank %u is not 1 to %u (min of d_model and d_ff)", rank, max_rank);
    for (uint32_t l = 0; l < n_layers; l++)
        ranks[l] = rank;
    if (!spec || !*spec)
        return 0;
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if (end == p)
            return err_set(err, errlen, "'%s': an empty entry", spec);
        if (entry(p, end, n_layers, max_rank, ranks, err, errlen) != 0)
            return -1;
        if (!*end)
            return 0;
        p = end + 1;
    }
}
