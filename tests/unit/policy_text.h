/* Tests name policies and layouts as users do: POLICY("window:5") is the
 * value cache_policy_parse reads from the text (window:auto included), and
 * LAYOUT("coalesce:2") the value cache_layout_parse reads; each is a zeroed
 * value and a failed check when the text does not parse. POLICY_NAME and
 * LAYOUT_NAME write a value back. Include after check.h. */
#ifndef FLASHBED_TESTS_POLICY_TEXT_H
#define FLASHBED_TESTS_POLICY_TEXT_H

#include "cache/layout_spec.h"
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

/* The name of a value (cache_policy_name), in one of four buffers that
 * last until the fourth call after. */
static inline const char *POLICY_NAME(const struct policy_spec *p)
{
    static char names[4][POLICY_NAME_MAX];
    static unsigned next;
    char *buf = names[next++ % 4];
    cache_policy_name(p, buf, POLICY_NAME_MAX);
    return buf;
}

static inline struct layout_spec LAYOUT(const char *text)
{
    struct layout_spec l;
    char err[256];
    if (cache_layout_parse(text, &l, err, sizeof err) != 0) {
        fprintf(stderr, "layout '%s': %s\n", text, err);
        check_failures++;
    }
    return l;
}

/* The name of a layout value (cache_layout_name), in one of four buffers
 * that last until the fourth call after. */
static inline const char *LAYOUT_NAME(const struct layout_spec *l)
{
    static char names[4][LAYOUT_NAME_MAX];
    static unsigned next;
    char *buf = names[next++ % 4];
    cache_layout_name(l, buf, LAYOUT_NAME_MAX);
    return buf;
}

#endif
