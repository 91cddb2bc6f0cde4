/* lru: keep the most recently needed rows up to the layer's capacity. */
#include <stdlib.h>

#include "cache/bucket_list.h"
#include "cache/policy.h"
#include "common/errbuf.h"

static int lru_init(struct policy *p, char *err, size_t errlen)
{
    struct bucket_list *b = calloc(p->n_layers, sizeof *b);
    p->state = b;
    for (uint32_t l = 0; b && l < p->n_layers; l++)
        if (bl_init(&b[l], p->d_ff, 1) != 0)
            b = NULL;
    if (!b) {
        err_set(err, errlen, "lru: out of memory");
        return -1;
    }
    return 0;
}

static void lru_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                       const uint32_t *misses, uint32_t n_miss)
{
    (void)t, (void)misses, (void)n_miss;
    struct bucket_list *b = (struct bucket_list *)p->state + l;
    for (uint32_t j = 0; j < n; j++)
        bl_push_tail(b, need[j], 0); /* tail = most recent */
    while (p->n_resident[l] > p->capacity) {
        uint32_t victim = b->head[0];
        bl_remove(b, victim);
        policy_delete(p, l, victim);
    }
}

static void lru_free(struct policy *p)
{
    struct bucket_list *b = p->state;
    for (uint32_t l = 0; b && l < p->n_layers; l++)
        bl_free(&b[l]);
    free(b);
}

const struct policy_ops policy_lru = {
    .name = "lru",
    .uses_budget = true,
    .keeps_reads = true,
    .init = lru_init,
    .update = lru_update,
    .free = lru_free,
};
