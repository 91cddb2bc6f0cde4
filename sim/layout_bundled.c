/* bundled: the paper's row-column bundling (§3.2): a neuron's up column and
 * down row (and gate row) stored together, one read of 2 (3) * d_model * bytes. */
#include "sim/layout.h"

static void bundled_read(struct layout *lo, uint32_t l, const uint32_t *rows, uint32_t n,
                         struct read_tally *t)
{
    (void)l, (void)rows;
    tally_reads(t, n, lo->vec_bytes * lo->vecs_per_row);
}

const struct layout_ops layout_bundled = {
    .name = "bundled",
    .read = bundled_read,
};
