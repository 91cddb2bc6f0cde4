/* The one mode table (cache/mode.h). */
#include "cache/mode.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cache/cache.h"

static const struct cache_mode modes[] = {
    {"naive", "naive", "naive", "coalesce:0"},
    {"hybrid", "hybrid", "hybrid", "coalesce:0"},
    {"predictor", "+ predictor", "predictor", "split"},
    {"window", "+ windowing", "window", "split"},
    {"all", "+ bundling", "window", "coalesce"},
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

/* name:arg when the bare name is one that takes an argument, else name. */
static void with_arg(char *buf, size_t len, const char *name, bool takes_arg, const char *arg)
{
    if (takes_arg)
        snprintf(buf, len, "%s:%s", name, arg);
    else
        snprintf(buf, len, "%s", name);
}

void cache_mode_names(const struct cache_mode *m, const char *k, uint64_t g, char *policy, size_t plen,
                      char *layout, size_t llen)
{
    const struct policy_ops *pol = cache_policy_named(m->policy);
    const struct layout_ops *lay = cache_layout_named(m->layout);
    char gs[24];
    snprintf(gs, sizeof gs, "%llu", (unsigned long long)g);
    with_arg(policy, plen, m->policy, pol && pol->takes_arg, k);
    with_arg(layout, llen, m->layout, lay && lay->takes_arg, gs);
}
