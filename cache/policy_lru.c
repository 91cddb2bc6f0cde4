/* lru: keep the most recently needed rows up to the layer's capacity. A
 * token's rows count as needed in id order: of two rows last needed by the
 * same token the lower id leaves first. */
#include <stdlib.h>

#include "cache/policy.h"
#include "cache/recency_log.h"
#include "common/errbuf.h"

static int lru_init(struct policy *p, char *err, size_t errlen)
{
    return rl_init_layers(p) == 0 ? 0 : err_set(err, errlen, "lru: out of memory");
}

static void lru_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                       const uint32_t *misses, uint32_t n_miss)
{
    (void)t, (void)misses, (void)n_miss;
    struct recency_log *r = (struct recency_log *)p->state + l;
    rl_append(r, need, n, NULL, 0); /* tail = most recent */
    if (p->n_resident[l] > p->capacity)
        rl_delete_oldest(r, p, l, (uint32_t)(p->n_resident[l] - p->capacity));
}

static void lru_free(struct policy *p)
{
    rl_free_layers(p);
}

const struct policy_ops policy_lru = {
    .name = "lru",
    .uses_budget = true,
    .keeps_reads = true,
    .init = lru_init,
    .update = lru_update,
    .free = lru_free,
};
