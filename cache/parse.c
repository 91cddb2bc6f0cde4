/* One parser for policy and layout strings ("window:5", "coalesce:2"), and
 * the one formatter of each value back into its name
 * (cache/policy_spec.h, cache/layout_spec.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "common/errbuf.h"
#include "common/parse.h"

static const struct policy_ops *const policies[] = {
#define POLICY(x) &policy_##x,
#include "cache/policies.def"
#undef POLICY
};
static const struct layout_ops *const layouts[] = {
#define LAYOUT(x) &layout_##x,
#include "cache/layouts.def"
#undef LAYOUT
};
#define COUNT(a) (sizeof a / sizeof a[0])

/* "name" or "name:N": finds the entry and its argument. */
static int parse_named(const char *spec, const char *what, const char *const *names, const char *const *arg_names,
                       size_t n, size_t *index, uint64_t *arg, char *err, size_t errlen)
{
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    char list[256] = "";
    for (size_t i = 0; i < n; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (arg_names[i]) {
            strncat(list, ":", sizeof list - strlen(list) - 1);
            strncat(list, arg_names[i], sizeof list - strlen(list) - 1);
        }
        if (strlen(names[i]) != len || strncmp(names[i], spec, len) != 0)
            continue;
        *index = i;
        *arg = 0;
        if (!arg_names[i] && colon) {
            err_set(err, errlen, "%s '%s' takes no argument", what, spec);
            return -1;
        }
        if (arg_names[i]) {
            char *end;
            errno = 0; /* a number past 2^64 - 1 would read as 2^64 - 1 */
            if (!colon || !colon[1] || colon[1] == '-' || (*arg = strtoull(colon + 1, &end, 10), *end) ||
                errno == ERANGE) {
                err_set(err, errlen, "%s '%s' needs a whole number after ':' (e.g. %s:4)", what, spec,
                         names[i]);
                return -1;
            }
        }
        return 0;
    }
    err_set(err, errlen, "unknown %s '%s' (available: %s)", what, spec, list);
    return -1;
}

/* The policy a name gives, with its argument (window:K's K, range
 * checked). The text parser behind cache_policy_parse; "window:auto" is
 * not a name here. */
static int parse_policy_name(const char *text, const struct policy_ops **ops, uint64_t *arg, char *err,
                             size_t errlen)
{
    const char *names[COUNT(policies)], *args[COUNT(policies)];
    for (size_t i = 0; i < COUNT(policies); i++) {
        names[i] = policies[i]->name;
        args[i] = policies[i]->takes_arg ? policies[i]->arg_name : NULL;
    }
    size_t k;
    if (parse_named(text, "policy", names, args, COUNT(policies), &k, arg, err, errlen) != 0)
        return -1;
    if (policies[k]->takes_arg && (*arg == 0 || *arg >= UINT32_MAX)) {
        err_set(err, errlen, "policy '%s': a window holds at least the current token (K from 1 to %u)", text,
                 UINT32_MAX - 1);
        return -1;
    }
    *ops = policies[k];
    return 0;
}

/* "name:auto" for a policy that takes an argument: its ops; else NULL. */
static const struct policy_ops *auto_policy(const char *text)
{
    const char *colon = strchr(text, ':');
    if (!colon || strcmp(colon, ":auto") != 0)
        return NULL;
    for (size_t i = 0; i < COUNT(policies); i++)
        if (policies[i]->takes_arg && strlen(policies[i]->name) == (size_t)(colon - text) &&
            !strncmp(policies[i]->name, text, (size_t)(colon - text)))
            return policies[i];
    return NULL;
}

int cache_policy_parse(const char *text, bool auto_ok, struct policy_spec *out, char *err, size_t errlen)
{
    const struct policy_ops *ops = auto_ok ? auto_policy(text) : NULL;
    uint64_t arg = 0;
    memset(out, 0, sizeof *out);
    if (ops) { /* the K a budget sizes: resolved by the caller (sim/window_auto.h) */
        out->ops = ops;
        out->arg_auto = true;
        return 0;
    }
    if (parse_policy_name(text, &ops, &arg, err, errlen) != 0)
        return -1;
    *out = policy_spec_of(ops, arg);
    return 0;
}

/* Element i of list, its text item, into out. */
static int parse_element(const char *list, const char *item, size_t i, bool auto_ok, struct policy_spec *out,
                         char *err, size_t errlen)
{
    size_t len = strlen(item);
    if (len == 0)
        return err_set(err, errlen, "policy %zu of '%s' is empty (policies are separated by single commas)", i + 1,
                       list);
    if (len >= POLICY_NAME_MAX)
        return err_set(err, errlen, "policy %zu of '%s' is longer than %d characters", i + 1, list,
                       POLICY_NAME_MAX - 1);
    return cache_policy_parse(item, auto_ok, out, err, errlen);
}

int cache_policy_parse_list(const char *list, bool auto_ok, struct policy_spec **out, size_t *n, char *err,
                            size_t errlen)
{
    size_t count;
    char **items = split_commas(list, &count);
    *n = 0;
    *out = calloc(count, sizeof **out);
    int rc = items && *out ? 0 : err_set(err, errlen, "out of memory for %zu policies", count);
    while (rc == 0 && *n < count)
        if ((rc = parse_element(list, items[*n], *n, auto_ok, &(*out)[*n], err, errlen)) == 0)
            ++*n;
    free(items);
    return rc;
}

/* The layout a name gives, with its argument (coalesce:G's G, range
 * checked). The text parser behind cache_layout_parse. */
static int parse_layout_name(const char *text, const struct layout_ops **ops, uint64_t *arg, char *err,
                             size_t errlen)
{
    const char *names[COUNT(layouts)], *args[COUNT(layouts)];
    for (size_t i = 0; i < COUNT(layouts); i++) {
        names[i] = layouts[i]->name;
        args[i] = layouts[i]->takes_arg ? layouts[i]->arg_name : NULL;
    }
    size_t k;
    if (parse_named(text, "layout", names, args, COUNT(layouts), &k, arg, err, errlen) != 0)
        return -1;
    if (layouts[k] == &layout_coalesce && *arg >= UINT32_MAX) {
        err_set(err, errlen, "layout '%s': the gap must be below %u rows", text, UINT32_MAX);
        return -1;
    }
    *ops = layouts[k];
    return 0;
}

int cache_layout_parse(const char *text, struct layout_spec *out, char *err, size_t errlen)
{
    const struct layout_ops *ops;
    uint64_t arg = 0;
    memset(out, 0, sizeof *out);
    if (parse_layout_name(text, &ops, &arg, err, errlen) != 0)
        return -1;
    *out = layout_spec_of(ops, arg);
    return 0;
}

int cache_layout_parse_list(const char *list, struct layout_spec **out, size_t *n, char *err, size_t errlen)
{
    size_t count;
    char **items = split_commas(list, &count);
    *n = 0;
    *out = calloc(count, sizeof **out);
    int rc = items && *out ? 0 : err_set(err, errlen, "out of memory for %zu layouts", count);
    while (rc == 0 && *n < count)
        if ((rc = cache_layout_parse(items[*n], &(*out)[*n], err, errlen)) == 0)
            ++*n;
    free(items);
    return rc;
}

void cache_layout_name(const struct layout_spec *l, char *buf, size_t len)
{
    if (l->ops && l->ops->takes_arg)
        snprintf(buf, len, "%s:%llu", l->ops->name, (unsigned long long)l->arg);
    else
        snprintf(buf, len, "%s", l->ops ? l->ops->name : "");
}

void cache_policy_name(const struct policy_spec *p, char *buf, size_t len)
{
    if (p->ops && p->ops->takes_arg && p->arg_auto)
        snprintf(buf, len, "%s:auto", p->ops->name);
    else if (p->ops && p->ops->takes_arg)
        snprintf(buf, len, "%s:%llu", p->ops->name, (unsigned long long)p->arg);
    else
        snprintf(buf, len, "%s", p->ops ? p->ops->name : "");
}

const struct policy_ops *cache_policy_named(const char *name)
{
    for (size_t i = 0; i < COUNT(policies); i++)
        if (!strcmp(policies[i]->name, name))
            return policies[i];
    return NULL;
}
