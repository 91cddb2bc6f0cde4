/* Tests name policies as users do: POLICY("window:5") is the value
 * cache_policy_parse reads from the text (window:auto included), a zeroed
 * value and a failed check when it does not parse. Include after check.h. */
#ifndef FLASHBED_TESTS_POLICY_TEXT_H
#define FLASHBED_TESTS_POLICY_TEXT_H

#include "cache/policy_spec.h"

static inline struct policy_spec POLICY(const char *text)
{
    struct policy_spec p;
    char err[256];
    if (cache_policy_parse(text, true, &p, err, sizeof err) != 0) {
        fprintf(stderr, "policy '%s': %s\n", text, err);
        check_failures++;
    }
    return p;
}

#endif
