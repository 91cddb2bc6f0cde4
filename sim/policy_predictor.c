/* predictor: load exactly the needed set each token, keep nothing. */
#include "sim/policy.h"

static int predictor_init(struct policy *p, char *err, size_t errlen)
{
    (void)p, (void)err, (void)errlen;
    return 0;
}

static void predictor_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need,
                             uint32_t n, const uint32_t *misses, uint32_t n_miss)
{
    (void)t, (void)need, (void)n;
    policy_delete_list(p, l, misses, n_miss);
}

const struct policy_ops policy_predictor = {
    .name = "predictor",
    .init = predictor_init,
    .update = predictor_update,
};
