/* The paper's ablation (Table 2) as modes: each mode one policy and one
 * layout, in one table that run --mode, reproduce, predict and the paper's
 * tables all read. A mode's policy or layout that takes an argument gets
 * the caller's: window's K (a number, or auto), coalesce's G, unless the
 * table fixes it ("coalesce:0"). Thread-safe (read-only data). */
#ifndef FLASHBED_CACHE_MODE_H
#define FLASHBED_CACHE_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/layout_spec.h"
#include "cache/policy_spec.h"

struct cache_mode {
    const char *name;        /* run --mode and the paper tables' "method": naive .. all */
    const char *paper_label; /* Table 2's words for the row: "naive", "+ predictor", ... */
    const struct policy_ops *policy; /* its K left to the caller when it takes one */
    struct layout_spec layout; /* its layout: coalesce:0 fixed, or with layout_takes_g the caller's G */
    bool layout_takes_g;     /* the layout's argument is the caller's G (all: coalesce:G) */
};

/* The modes in the paper's order (naive, hybrid, predictor, window, all);
 * NULL past the last. */
const struct cache_mode *cache_mode_at(size_t i);

/* The mode named so; NULL when none is. */
const struct cache_mode *cache_mode_find(const char *name);

/* The mode's policy with the caller's K where it takes one (window:5, or
 * with k_auto window:auto), and its layout with the caller's G where it
 * takes one (coalesce:3; the table's coalesce:0 stays). */
struct policy_spec cache_mode_policy(const struct cache_mode *m, uint64_t k, bool k_auto);
struct layout_spec cache_mode_layout(const struct cache_mode *m, uint64_t g);

#endif
