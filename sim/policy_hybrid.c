/* hybrid: a fixed half of the FFN resident (preloaded), the other half read
 * every token whether needed or not (the paper's Hybrid baseline: the best
 * possible without sparsity). */
#include "sim/policy.h"

static int hybrid_init(struct policy *p, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    for (uint32_t l = 0; l < p->n_layers; l++)
        for (uint32_t i = 0; i < p->d_ff / 2; i++)
            policy_preload(p, l, i);
    return 0;
}

static uint32_t hybrid_extra(struct policy *p, uint32_t l, const uint8_t *is_miss, uint32_t n_miss,
                             uint32_t *out)
{
    (void)l;
    /* the lower half is resident, so every miss lies in the upper half */
    if (!out)
        return p->d_ff - p->d_ff / 2 - n_miss;
    uint32_t n = 0;
    for (uint32_t i = p->d_ff / 2; i < p->d_ff; i++)
        if (!is_miss[i])
            out[n++] = i;
    return n;
}

const struct policy_ops policy_hybrid = {
    .name = "hybrid",
    .init = hybrid_init,
    .extra_reads = hybrid_extra,
    .update = policy_drop_misses,
};
