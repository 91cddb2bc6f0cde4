/* Flash layouts behind one ops table: how the rows a token reads from one
 * layer turn into reads of some size. Internal to sim/. */
#ifndef FLASHBED_SIM_LAYOUT_H
#define FLASHBED_SIM_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/replay.h"

struct layout;

struct read_tally {
    uint64_t reads, bytes;
    struct read_size_hist *sizes;
};

static inline void tally_reads(struct read_tally *t, uint64_t count, uint64_t size)
{
    t->reads += count;
    t->bytes += count * size;
    t->sizes->count[63 - __builtin_clzll(size | 1)] += count;
}

struct layout_ops {
    const char *name;
    bool takes_arg;           /* "coalesce:G" */
    bool needs_rows;          /* read() looks at the ids, not only their count */
    /* Prepares per-layout data (friends computes co-activation). 0, or -1 with err. */
    int (*init)(struct layout *lo, char *err, size_t errlen);
    /* rows: the ascending ids of layer l read this token; adds their reads to
     * t. Without needs_rows, rows may be NULL (only n counts). */
    void (*read)(struct layout *lo, uint32_t l, const uint32_t *rows, uint32_t n, struct read_tally *t);
    void (*free)(struct layout *lo);
};

struct layout {
    const struct layout_ops *ops;
    const struct trace *tr;
    bool predicted;
    uint32_t n_layers, d_ff;
    uint64_t vec_bytes;       /* one up column / down row / gate row: d_model * bytes */
    uint32_t vecs_per_row;    /* 2 (relu) or 3 (glu) */
    uint64_t arg;             /* coalesce:G -> G */
    uint64_t info;            /* friends: tokens the counts used */
    void *state;
};

extern const struct layout_ops layout_split, layout_bundled, layout_friends, layout_coalesce;

#endif
