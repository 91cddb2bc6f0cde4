/* predictor: load exactly the needed set each token, keep nothing. */
#include "cache/policy.h"

const struct policy_ops policy_predictor = {
    .name = "predictor",
    .keeps_recent = true,
    .update = policy_drop_misses,
};
