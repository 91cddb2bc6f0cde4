/* Flash layouts behind one ops table: how the rows a token reads from one
 * layer turn into reads of some size. Decisions only: the replay counts the
 * reads, the engine's flash FFN performs them (the same list). */
#ifndef FLASHBED_CACHE_LAYOUT_H
#define FLASHBED_CACHE_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cache/unit_geometry.h"
#include "traces/trace.h"

struct layout;

/* Read sizes in power-of-two buckets: bucket b counts reads of [2^b, 2^(b+1)) bytes. */
struct read_size_hist {
    uint64_t count[64];
};

struct read_tally {
    uint64_t reads, bytes;
    struct read_size_hist *sizes;   /* may be NULL */
};

static inline void tally_reads(struct read_tally *t, uint64_t count, uint64_t size)
{
    t->reads += count;
    t->bytes += count * size;
    if (t->sizes)
        t->sizes->count[63 - __builtin_clzll(size | 1)] += count;
}

/* Where one vector (extent) of a bundle is read: the extent lies at
 * `offset` into the bundle and is `bytes` long (its unit geometry's,
 * cache/unit_geometry.h); the read is at *off into the bundle, *len bytes.
 * With align 0 exactly the extent; with a direct-I/O alignment the read
 * widens to whole blocks of it, never past the bundle's stride (row_bytes),
 * which is how the engine's streamer issues a per-vector (split) read, and
 * so how the split layout counts its bytes. */
static inline void layout_vector_span(uint64_t offset, uint64_t bytes, uint64_t row_bytes, uint64_t align,
                                      uint64_t *off, uint64_t *len)
{
    uint64_t lo = offset, hi = lo + bytes;
    if (align > 1) {
        lo = lo / align * align;
        hi = (hi + align - 1) / align * align;
        if (hi > row_bytes)
            hi = row_bytes;
    }
    *off = lo;
    *len = hi - lo;
}

struct layout_read;

/* Every row its own read of row_bytes, listed when out is not NULL: the
 * read of bundled (a neuron's bundle) and of transposed (a channel bundle
 * or a row of down). Returns how many it listed. */
uint32_t layout_read_each_row(uint64_t row_bytes, const uint32_t *rows, uint32_t n, struct read_tally *t,
                              struct layout_read *out);

/* One read: `count` whole bundles of adjacent neurons first..first+count-1
 * (vec < 0), or vector `vec` of neuron first's bundle alone (count 1): up,
 * (gate,) down in model_format.h's bundle order. */
struct layout_read {
    uint32_t first, count;
    int32_t vec;
};

struct layout_ops {
    const char *name;
    bool takes_arg;           /* "coalesce:G" */
    const char *arg_name;     /* how --help names the argument: "G" */
    bool needs_rows;          /* read() looks at the ids, not only their count */
    bool needs_known;         /* init() needs the trace's sets (friends) */
    const char *known_for;    /* needs_known: what it reads them for, as a refusal says it */
    bool lists_reads;         /* read() can list its reads (contiguous ranges): the engine runs it */
    bool per_vector;          /* each vector of a row is its own read (split) */
    bool reads_unneeded;      /* a read may span rows not needed (friends; coalesce:G when G > 0),
                               * which a run lands in a bounce buffer */
    bool transposed;          /* rows are the transposed file's channel bundles and down rows, in two
                               * caches (cache/transposed.h): input sparsity's layout, and only its */
    bool baseline;            /* each needed bundle in a read of its own, nothing added (bundled):
                               * what replay's report measures a layout that needs_known against */
    const char *structure;    /* needs_known: what it looks for in the sets, as a report names it
                               * when the trace has none ("co-activation") */
    /* Prepares per-layout data (friends computes co-activation). 0, or -1 with err. */
    int (*init)(struct layout *lo, char *err, size_t errlen);
    /* rows: the ascending ids of layer l read this token; adds their reads to
     * t, and when out is not NULL (lists_reads only) also lists them there
     * (room for vecs_per_row * n) and returns how many; else returns 0.
     * Without needs_rows and out, rows may be NULL (only n counts). */
    uint32_t (*read)(struct layout *lo, uint32_t l, const uint32_t *rows, uint32_t n, struct read_tally *t,
                     struct layout_read *out);
    void (*free)(struct layout *lo);
};

struct layout {
    const struct layout_ops *ops;
    const struct trace *known;  /* friends: the sets co-activation is counted on */
    bool predicted;
    uint32_t n_layers, d_ff;
    uint32_t vecs_per_row;    /* a unit's extents: 2 (relu) or 3 (glu) of a neuron bundle */
    struct unit_extent vec[UNIT_MAX_EXTENTS]; /* each extent's offset and bytes (the unit geometry's) */
    uint64_t row_bytes;       /* one unit on flash: its stride (the engine's aligned stride) */
    uint64_t read_align;      /* a per-vector read widens to blocks of this many bytes
                               * (layout_vector_span); 0: exactly the vector */
    uint64_t arg;             /* coalesce:G -> G */
    uint64_t info;            /* friends: tokens the counts used */
    void *state;
};

#define LAYOUT(x) extern const struct layout_ops layout_##x;
#include "cache/layouts.def"
#undef LAYOUT

#endif
