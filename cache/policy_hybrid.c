/* hybrid: the first R neurons of each layer resident (preloaded), the rest
 * read every token whether needed or not (the paper's Hybrid baseline: the
 * best possible without sparsity). R is the capacity a budget gives (0 for
 * a budget below one row per layer: then it reads like naive), else half
 * the layer (the paper's half the model in DRAM). */
#include "cache/policy.h"

static uint32_t resident_rows(const struct policy *p)
{
    if (!p->capped) /* no budget: the one rule (cache.c), half the layer */
        return (uint32_t)policy_layer_rows(p->ops, 0, p->d_ff);
    return p->capacity < p->d_ff ? (uint32_t)p->capacity : p->d_ff;
}

static int hybrid_init(struct policy *p, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    uint32_t r = resident_rows(p);
    for (uint32_t l = 0; l < p->n_layers; l++)
        for (uint32_t i = 0; i < r; i++)
            policy_preload(p, l, i);
    return 0;
}

static uint32_t hybrid_extra(struct policy *p, uint32_t l, const uint8_t *is_miss, uint32_t n_miss,
                             uint32_t *out)
{
    (void)l;
    uint32_t r = resident_rows(p);
    /* rows below r are resident, so every miss lies at r or above */
    if (!out)
        return p->d_ff - r - n_miss;
    uint32_t n = 0;
    for (uint32_t i = r; i < p->d_ff; i++)
        if (!is_miss[i])
            out[n++] = i;
    return n;
}

const struct policy_ops policy_hybrid = {
    .name = "hybrid",
    .honours_budget = true,
    .reads_whole_layers = true,
    .keeps_resident_part = true,
    .unbudgeted = UNBUDGETED_HALF_LAYER,
    .init = hybrid_init,
    .extra_reads = hybrid_extra,
    .update = policy_drop_misses,
};
