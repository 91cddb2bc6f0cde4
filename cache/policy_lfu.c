/* lfu: keep the rows needed most often while resident, up to the layer's
 * capacity (frequency restarts at 1 when a row comes back); ties go to the
 * least recently needed (a token's rows count as needed in id order).
 *
 * On the request path (cache/cache.h) the victims always have frequency 1:
 * a layer holds at most its capacity before a token, and the token's
 * misses are its only new rows, all of frequency 1; so the rows to evict
 * (what exceeds the capacity) are at most the misses, and the rows of
 * frequency 1 at least the misses. A row needed again while resident (2 or
 * more) is therefore never the least frequent, and stays. So only the rows
 * of frequency 1 are listed, least recently needed first (cache/
 * recency_log.h): the misses enter it, a row needed again leaves it. An
 * LFU with a list per frequency decides the same, row for row
 * (tests/unit/test_policy_fast.c checks it). */
#include <stdlib.h>

#include "cache/policy.h"
#include "cache/recency_log.h"
#include "common/errbuf.h"

static int lfu_init(struct policy *p, char *err, size_t errlen)
{
    return rl_init_layers(p) == 0 ? 0 : err_set(err, errlen, "lfu: out of memory");
}

static void lfu_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                       const uint32_t *misses, uint32_t n_miss)
{
    (void)t;
    struct recency_log *r = (struct recency_log *)p->state + l;
    /* a needed row that was resident is needed again: frequency 2 or more */
    for (uint32_t j = 0; j < n; j++)
        r->pos[need[j]] = RL_NONE;
    rl_append(r, misses, n_miss, NULL, 0); /* frequency 1, the most recent last */
    if (p->n_resident[l] > p->capacity)
        rl_delete_oldest(r, p, l, (uint32_t)(p->n_resident[l] - p->capacity));
}

static void lfu_free(struct policy *p)
{
    rl_free_layers(p);
}

const struct policy_ops policy_lfu = {
    .name = "lfu",
    .uses_budget = true,
    .keeps_reads = true,
    .init = lfu_init,
    .update = lfu_update,
    .free = lfu_free,
};
