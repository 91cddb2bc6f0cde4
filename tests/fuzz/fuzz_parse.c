/* Fuzzes the parsers of values users type (common/parse.c, and the policy
 * and layout names of cache/parse.c, policy lists as predict takes them,
 * layout lists as replay takes them): the first byte picks the parser, the
 * rest is the text. What parses is checked against the parser's promise (a
 * list has its elements, a share is inside its whole, a policy's or a
 * layout's name parses back to the same value) and formatted back as the
 * program prints it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* A policy value is written back as a name that parses to the same value. */
static void check_policy(const struct policy_spec *p)
{
    char name[POLICY_NAME_MAX], err[512];
    struct policy_spec q;
    cache_policy_name(p, name, sizeof name);
    if (!p->ops || cache_policy_parse(name, true, &q, err, sizeof err) != 0 || !policy_spec_equal(p, &q))
        abort();
}

/* A layout value is written back as a name that parses to the same value. */
static void check_layout(const struct layout_spec *l)
{
    char name[LAYOUT_NAME_MAX], err[512];
    struct layout_spec m;
    cache_layout_name(l, name, sizeof name);
    if (!l->ops || cache_layout_parse(name, &m, err, sizeof err) != 0 || !layout_spec_equal(l, &m))
        abort();
}

/* The text as one layout and as replay's list of them: the same answer
 * when it has no comma, every element written back as it parses. */
static int parse_layouts(const char *text, char *err, size_t errlen)
{
    struct layout_spec one, *l = NULL;
    size_t n = 0;
    char why[512];
    int rc = cache_layout_parse(text, &one, err, errlen);
    if (rc == 0)
        check_layout(&one);
    int rc_list = cache_layout_parse_list(text, &l, &n, why, sizeof why);
    for (size_t i = 0; i < n; i++)
        check_layout(&l[i]);
    if (!strchr(text, ',') && (rc != rc_list || (rc == 0 && (n != 1 || !layout_spec_equal(&one, &l[0]))) ||
                               (rc != 0 && strcmp(err, why) != 0)))
        abort(); /* a list of one refuses as the parser words it */
    free(l);
    return rc;
}

static int parse_policy_list(const char *text, char *err, size_t errlen)
{
    struct policy_spec *p = NULL;
    size_t n = 0;
    int rc = cache_policy_parse_list(text, true, &p, &n, err, errlen);
    for (size_t i = 0; i < n; i++)
        check_policy(&p[i]);
    char why[512];
    predict_list_check(p, n, false, why, sizeof why);
    if (predict_list_check(p, n, true, err, errlen) != 0)
        rc = -1;
    free(p);
    return rc;
}

static int parse_one(int which, const char *text, char *err, size_t errlen)
{
    char buf[32];
    int rc = -1;
    uint64_t u;
    double d;
    struct u64_list l = {0, NULL};
    struct policy_spec p;
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
        if (cache_policy_parse(text, false, &p, err, errlen) == 0 && p.arg_auto)
            abort(); /* window:auto only where asked for */
        if ((rc = cache_policy_parse(text, true, &p, err, errlen)) == 0)
            check_policy(&p);
        break;
    case P_LAYOUT:
        rc = parse_layouts(text, err, errlen);
        break;
    case P_LIST:
        rc = parse_policy_list(text, err, errlen);
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
