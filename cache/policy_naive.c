/* naive: the whole FFN from flash every token, nothing kept (the paper's
 * Naive baseline: load the whole model each forward pass). */
#include "cache/policy.h"

static uint32_t naive_extra(struct policy *p, uint32_t l, const uint8_t *is_miss, uint32_t n_miss,
                            uint32_t *out)
{
    (void)l;
    if (!out)
        return p->d_ff - n_miss; /* nothing is resident: every non-miss is extra */
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->d_ff; i++)
        if (!is_miss[i])
            out[n++] = i;
    return n;
}

const struct policy_ops policy_naive = {
    .name = "naive",
    .reads_whole_layers = true,
    .extra_reads = naive_extra,
    .update = policy_drop_misses,
};
