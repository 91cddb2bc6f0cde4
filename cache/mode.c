/* The one mode table (cache/mode.h). */
#include "cache/mode.h"

#include <stdio.h>
#include <string.h>

#include "cache/cache.h"

enum { CPU = CACHE_MODE_TABLE3_CPU, DEVICE = CACHE_MODE_TABLE3_DEVICE };

static const struct cache_mode modes[] = {
    {"naive", "naive", &policy_naive, {&layout_coalesce, 0}, false, CPU | DEVICE},
    {"hybrid", "hybrid", &policy_hybrid, {&layout_coalesce, 0}, false, CPU},
    {"predictor", "+ predictor", &policy_predictor, {&layout_split, 0}, false, 0},
    {"window", "+ windowing", &policy_window, {&layout_split, 0}, false, 0},
    {"all", "+ bundling", &policy_window, {&layout_coalesce, 0}, true, CPU | DEVICE},
};

_Static_assert(sizeof modes / sizeof modes[0] == CACHE_MODE_COUNT, "CACHE_MODE_COUNT is the table's length");

const struct cache_mode *cache_mode_at(size_t i)
{
    return i < sizeof modes / sizeof modes[0] ? &modes[i] : NULL;
}

const struct cache_mode *cache_mode_of_table(enum cache_mode_table table, size_t i)
{
    for (size_t j = 0; j < sizeof modes / sizeof modes[0]; j++)
        if ((modes[j].tables & table) && i-- == 0)
            return &modes[j];
    return NULL;
}

size_t cache_mode_table_count(enum cache_mode_table table)
{
    size_t n = 0;
    while (cache_mode_of_table(table, n))
        n++;
    return n;
}

const char *cache_mode_table_join(enum cache_mode_table table, const char *sep, const char *suffix, char *buf,
                                  size_t size)
{
    const struct cache_mode *m;
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; (m = cache_mode_of_table(table, i)) && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s%s", i ? sep : "", m->name, suffix);
    return buf;
}

const struct cache_mode *cache_mode_find(const char *name)
{
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(modes[i].name, name))
            return &modes[i];
    return NULL;
}

struct policy_spec cache_mode_policy(const struct cache_mode *m, uint64_t k, bool k_auto)
{
    struct policy_spec p = policy_spec_of(m->policy, k);
    p.arg_auto = k_auto && m->policy->takes_arg;
    if (p.arg_auto)
        p.arg = 0;
    return p;
}

struct layout_spec cache_mode_layout(const struct cache_mode *m, uint64_t g)
{
    return m->layout_takes_g ? layout_spec_of(m->layout.ops, g) : m->layout;
}
