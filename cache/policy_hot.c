/* hot: PowerInfer-style static pinning. The rows needed most often over the
 * whole trace (an offline profile) are preloaded up to the layer's capacity
 * and never leave; the others are read on demand and dropped after use. */
#include <stdlib.h>

#include "cache/policy.h"
#include "common/errbuf.h"

struct hot_rank {
    uint32_t count, id;
};

static int by_count_desc(const void *a, const void *b)
{
    const struct hot_rank *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

static int hot_init(struct policy *p, char *err, size_t errlen)
{
    struct hot_rank *r = malloc(p->d_ff * sizeof *r);
    if (!r) {
        err_set(err, errlen, "hot: out of memory");
        return -1;
    }
    for (uint32_t l = 0; l < p->n_layers; l++) {
        for (uint32_t i = 0; i < p->d_ff; i++)
            r[i] = (struct hot_rank){0, i};
        for (uint64_t t = 0; t < p->known->n_tokens; t++) {
            uint32_t n;
            const uint32_t *ids = trace_set(p->known, p->predicted, t, l, &n);
            for (uint32_t j = 0; j < n; j++)
                r[ids[j]].count++;
        }
        qsort(r, p->d_ff, sizeof *r, by_count_desc);
        uint64_t pin = p->capacity < p->d_ff ? p->capacity : p->d_ff;
        for (uint64_t k = 0; k < pin && r[k].count > 0; k++)
            policy_preload(p, l, r[k].id);
    }
    free(r);
    return 0;
}

const struct policy_ops policy_hot = {
    .name = "hot",
    .uses_budget = true,
    .needs_known = true,
    .known_for = "pins the trace's most frequent neurons",
    .known_from_profile = true,
    .preload_is_read = true,
    .init = hot_init,
    .update = policy_drop_misses,
};
