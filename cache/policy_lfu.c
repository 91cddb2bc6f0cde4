/* lfu: keep the rows needed most often while resident, up to the layer's
 * capacity (frequency restarts at 1 when a row comes back); ties go to the
 * least recently needed. O(1) per access: one list per frequency. */
#include <stdlib.h>

#include "cache/bucket_list.h"
#include "cache/policy.h"
#include "common/errbuf.h"

#define LFU_MAX_FREQ 4095 /* frequencies saturate: ties beyond are LRU */

struct lfu_layer {
    struct bucket_list b;   /* bucket = frequency */
    uint32_t min;           /* no resident row has a lower frequency */
};

static int lfu_init(struct policy *p, char *err, size_t errlen)
{
    struct lfu_layer *s = calloc(p->n_layers, sizeof *s);
    p->state = s;
    for (uint32_t l = 0; s && l < p->n_layers; l++)
        if (bl_init(&s[l].b, p->d_ff, LFU_MAX_FREQ + 1) != 0)
            s = NULL;
    if (!s) {
        err_set(err, errlen, "lfu: out of memory");
        return -1;
    }
    return 0;
}

static void lfu_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                       const uint32_t *misses, uint32_t n_miss)
{
    (void)t, (void)misses, (void)n_miss;
    struct lfu_layer *s = (struct lfu_layer *)p->state + l;
    struct bucket_list *b = &s->b;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t f = b->bucket[need[j]];
        f = f == BL_NONE ? 1 : f < LFU_MAX_FREQ ? f + 1 : f;
        bl_push_tail(b, need[j], f);
        if (f == 1)
            s->min = 1;
    }
    while (p->n_resident[l] > p->capacity) {
        while (s->min <= LFU_MAX_FREQ && b->head[s->min] == BL_NONE)
            s->min++;
        uint32_t victim = b->head[s->min];
        bl_remove(b, victim);
        policy_delete(p, l, victim);
    }
}

static void lfu_free(struct policy *p)
{
    struct lfu_layer *s = p->state;
    for (uint32_t l = 0; s && l < p->n_layers; l++)
        bl_free(&s[l].b);
    free(s);
}

const struct policy_ops policy_lfu = {
    .name = "lfu",
    .uses_budget = true,
    .keeps_reads = true,
    .init = lfu_init,
    .update = lfu_update,
    .free = lfu_free,
};
