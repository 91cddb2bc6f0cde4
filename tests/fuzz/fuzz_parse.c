/* Fuzzes the parsers of values users type (common/parse.c, and the policy
 * and layout names of cache/parse.c and predict's policy lists): the first
 * byte picks the parser, the rest is the text. What parses is checked
 * against the parser's promise (a list has its elements, a share is
 * inside its whole) and formatted back as the program prints it. */
#include <math.h>
#include <stdlib.h>

#include "cache/cache.h"
#include "common/parse.h"
#include "sim/predict_list.h"
#include "fuzz_util.h"

enum { P_SIZE, P_SIZE_LIST, P_UINT_LIST, P_UINT, P_DOUBLE, P_SHARE, P_DURATION, P_POLICY, P_LAYOUT, P_LIST, P_COUNT };

static void check_list(const struct u64_list *l)
{
    char buf[32];
    for (size_t i = 0; i < l->n; i++)
        format_size(l->v[i], buf, sizeof buf);
}

static int parse_one(int which, const char *text, char *err, size_t errlen)
{
    char buf[32];
    int rc = -1;
    uint64_t u, arg;
    double d;
    struct u64_list l = {0, NULL};
    const struct policy_ops *p;
    const struct layout_ops *lo;
    size_t n;
    switch (which) {
    case P_SIZE:
        if ((rc = parse_size(text, &u, err, errlen)) == 0)
            format_size(u, buf, sizeof buf);
        break;
    case P_SIZE_LIST:
        if ((rc = parse_size_list(text, &l, err, errlen)) == 0) {
            if (!l.n)
                abort(); /* empty lists are refused */
            check_list(&l);
        }
        u64_list_free(&l);
        break;
    case P_UINT_LIST:
        if ((rc = parse_uint_list(text, &l, err, errlen)) == 0) {
            if (!l.n)
                abort();
            check_list(&l);
        }
        u64_list_free(&l);
        break;
    case P_UINT:
        rc = parse_uint(text, &u, err, errlen);
        break;
    case P_DOUBLE:
        if ((rc = parse_double(text, &d, err, errlen)) == 0 && !isfinite(d))
            abort(); /* "a finite real number" */
        break;
    case P_SHARE:
        if ((rc = parse_share_or_size(text, 1e12, &d, err, errlen)) == 0 && !(d >= 0 && isfinite(d)))
            abort();
        break;
    case P_DURATION:
        if ((rc = parse_duration(text, &d, err, errlen)) == 0 && !(d >= 0 && isfinite(d)))
            abort();
        break;
    case P_POLICY:
        rc = cache_parse_policy(text, &p, &arg, err, errlen);
        break;
    case P_LAYOUT:
        rc = cache_parse_layout(text, &lo, &arg, err, errlen);
        break;
    case P_LIST:
        predict_list_check(text, false, &n, err, errlen);
        rc = predict_list_check(text, true, &n, err, errlen);
        break;
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    char *text = fuzz_strndup(data + 1, size - 1);
    char err[512] = "";
    int rc = parse_one(data[0] % P_COUNT, text, err, sizeof err);
    fuzz_note(text, rc, err);
    free(text);
    return 0;
}
