/* A caching policy as a value: which policy (its ops table, whose
 * properties are all a caller may ask of it: cache/policy.h) and its
 * argument. Text becomes a policy once, at the edge (the command line,
 * reproduce's plans, configuration files), through cache_policy_parse;
 * below the edge the value travels in the configuration structs and no
 * one parses a name again. cache_policy_name writes a value back into its
 * name, the one spelling every result file and message uses.
 *
 * "window:auto" is a window whose K is still to be chosen (arg_auto): only
 * the callers that size a window to a DRAM budget take it (run, predict),
 * and they resolve it by one rule (sim/window_auto.h: window_auto_resolve)
 * before anything below them sees the value. A zeroed value (ops NULL) is
 * no policy. Plain data: copy it freely; thread-safe. */
#ifndef FLASHBED_CACHE_POLICY_SPEC_H
#define FLASHBED_CACHE_POLICY_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/policy.h"

struct policy_spec {
    const struct policy_ops *ops; /* NULL: no policy */
    uint64_t arg;                 /* window:K's K, 1 to UINT32_MAX - 1; 0 without an argument or when auto */
    bool arg_auto;                /* "window:auto": K left to the budget (ops->takes_arg) */
};

/* The longest policy name cache_policy_name writes, its NUL included. */
#define POLICY_NAME_MAX 48

/* A policy without an argument, or window:K: the value of ops and arg. */
static inline struct policy_spec policy_spec_of(const struct policy_ops *ops, uint64_t arg)
{
    struct policy_spec s = {ops, ops && ops->takes_arg ? arg : 0, false};
    return s;
}

/* Two values name the same policy. */
static inline bool policy_spec_equal(const struct policy_spec *a, const struct policy_spec *b)
{
    return a->ops == b->ops && a->arg == b->arg && a->arg_auto == b->arg_auto;
}

/* The one parser of a policy name: naive, hybrid, predictor, window:K (K >=
 * 1 tokens, the current one included: the paper's k = 4 is window:5), lru,
 * lfu, hot, belady; with auto_ok also window:auto. 0, or -1 with err (the
 * name, and what is available or wrong). */
int cache_policy_parse(const char *text, bool auto_ok, struct policy_spec *out, char *err, size_t errlen);

/* A comma-separated list of policy names ("lru,belady,window:5"), each as
 * cache_policy_parse reads it, into *out (malloc'd, *n of them; the caller
 * frees *out, on failure too). An empty element or one longer than a
 * name can be is an error naming its position. 0, or -1 with err; on
 * failure *out holds the *n elements before the bad one. */
int cache_policy_parse_list(const char *list, bool auto_ok, struct policy_spec **out, size_t *n, char *err,
                            size_t errlen);

/* The name cache_policy_parse reads back: "lru", "window:5", "window:auto". */
void cache_policy_name(const struct policy_spec *p, char *buf, size_t len);

#endif
