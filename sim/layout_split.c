/* split: up column, down row (and gate row) of a neuron live in separate
 * matrices: each is its own read of d_model * bytes. */
#include "sim/layout.h"

static void split_read(struct layout *lo, uint32_t l, const uint32_t *rows, uint32_t n,
                       struct read_tally *t)
{
    (void)l, (void)rows;
    tally_reads(t, (uint64_t)n * lo->vecs_per_row, lo->vec_bytes);
}

const struct layout_ops layout_split = {
    .name = "split",
    .read = split_read,
};
