/* The one mode table (cache/mode.h). */
#include "cache/mode.h"

#include <stdio.h>
#include <string.h>

#include "cache/cache.h"

static const struct cache_mode modes[] = {
    {"naive", "naive", &policy_naive, "coalesce:0"},
    {"hybrid", "hybrid", &policy_hybrid, "coalesce:0"},
    {"predictor", "+ predictor", &policy_predictor, "split"},
    {"window", "+ windowing", &policy_window, "split"},
    {"all", "+ bundling", &policy_window, "coalesce"},
};

const struct cache_mode *cache_mode_at(size_t i)
{
    return i < sizeof modes / sizeof modes[0] ? &modes[i] : NULL;
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

void cache_mode_layout(const struct cache_mode *m, uint64_t g, char *layout, size_t len)
{
    const struct layout_ops *lay = cache_layout_named(m->layout);
    if (lay && lay->takes_arg)
        snprintf(layout, len, "%s:%llu", m->layout, (unsigned long long)g);
    else
        snprintf(layout, len, "%s", m->layout);
}
