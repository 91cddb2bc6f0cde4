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

/* The paper tables a mode is a row of: Table 3 measures naive, hybrid and
 * all on the CPU, naive and all on a device. reproduce plans, reads and
 * reports exactly these (harness/reproduce_*.c). */
enum cache_mode_table {
    CACHE_MODE_TABLE3_CPU = 1u << 0,    /* Table 3's CPU rows */
    CACHE_MODE_TABLE3_DEVICE = 1u << 1, /* Table 3's device rows */
};

/* How many modes the table has (an upper bound for arrays per mode). */
enum { CACHE_MODE_COUNT = 5 };

struct cache_mode {
    const char *name;        /* run --mode and the paper tables' "method": naive .. all */
    const char *paper_label; /* Table 2's words for the row: "naive", "+ predictor", ... */
    const struct policy_ops *policy; /* its K left to the caller when it takes one */
    struct layout_spec layout; /* its layout: coalesce:0 fixed, or with layout_takes_g the caller's G */
    bool layout_takes_g;     /* the layout's argument is the caller's G (all: coalesce:G) */
    unsigned tables;         /* the paper tables it is a row of: enum cache_mode_table's flags */
};

/* The modes in the paper's order (naive, hybrid, predictor, window, all);
 * NULL past the last. */
const struct cache_mode *cache_mode_at(size_t i);

/* The i-th of the modes that are rows of table (one of enum
 * cache_mode_table), in the paper's order; NULL past the last. */
const struct cache_mode *cache_mode_of_table(enum cache_mode_table table, size_t i);

/* How many modes are rows of table. */
size_t cache_mode_table_count(enum cache_mode_table table);

/* The names of table's modes in order, each followed by suffix, joined by
 * sep, into buf (cut to size): ("|", "-trace-r1") gives
 * "naive-trace-r1|hybrid-trace-r1|all-trace-r1". Returns buf. */
const char *cache_mode_table_join(enum cache_mode_table table, const char *sep, const char *suffix, char *buf,
                                  size_t size);

/* The mode named so; NULL when none is. */
const struct cache_mode *cache_mode_find(const char *name);

/* The mode's policy with the caller's K where it takes one (window:5, or
 * with k_auto window:auto), and its layout with the caller's G where it
 * takes one (coalesce:3; the table's coalesce:0 stays). */
struct policy_spec cache_mode_policy(const struct cache_mode *m, uint64_t k, bool k_auto);
struct layout_spec cache_mode_layout(const struct cache_mode *m, uint64_t g);

#endif
