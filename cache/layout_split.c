/* split: up column, down row (and gate row) of a neuron live in separate
 * matrices: each is its own read of its extent (the unit geometry's), widened to whole
 * direct-I/O blocks when the geometry has an alignment (layout_vector_span:
 * the engine reads exactly that). */
#include "cache/layout.h"

static uint32_t split_read(struct layout *lo, uint32_t l, const uint32_t *rows, uint32_t n,
                           struct read_tally *t, struct layout_read *out)
{
    (void)l;
    for (uint32_t v = 0; v < lo->vecs_per_row; v++) {
        uint64_t off, len;
        layout_vector_span(lo->vec[v].offset, lo->vec[v].bytes, lo->row_bytes, lo->read_align, &off, &len);
        tally_reads(t, n, len);
    }
    if (!out)
        return 0;
    uint32_t k = 0;
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t v = 0; v < lo->vecs_per_row; v++)
            out[k++] = (struct layout_read){rows[j], 1, (int32_t)v};
    return k;
}

const struct layout_ops layout_split = {
    .name = "split",
    .lists_reads = true,
    .per_vector = true,
    .read = split_read,
};
