/* naive: the whole FFN from flash every token, nothing kept (the paper's
 * Naive baseline: load the whole model each forward pass). */
#include "sim/policy.h"

static int naive_init(struct policy *p, char *err, size_t errlen)
{
    (void)p, (void)err, (void)errlen;
    return 0;
}

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

static void naive_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                         const uint32_t *misses, uint32_t n_miss)
{
    (void)t, (void)need, (void)n;
    policy_delete_list(p, l, misses, n_miss);
}

const struct policy_ops policy_naive = {
    .name = "naive",
    .init = naive_init,
    .extra_reads = naive_extra,
    .update = naive_update,
};
