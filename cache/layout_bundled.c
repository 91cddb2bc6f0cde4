/* bundled: the paper's row-column bundling (§3.2): a neuron's up column and
 * down row (and gate row) stored together, one read of 2 (3) * d_model * bytes. */
#include "cache/layout.h"

uint32_t layout_read_each_row(uint64_t row_bytes, const uint32_t *rows, uint32_t n, struct read_tally *t,
                              struct layout_read *out)
{
    tally_reads(t, n, row_bytes);
    if (!out)
        return 0;
    for (uint32_t j = 0; j < n; j++)
        out[j] = (struct layout_read){rows[j], 1, -1};
    return n;
}

static uint32_t bundled_read(struct layout *lo, uint32_t l, const uint32_t *rows, uint32_t n,
                             struct read_tally *t, struct layout_read *out)
{
    (void)l;
    return layout_read_each_row(lo->row_bytes, rows, n, t, out);
}

const struct layout_ops layout_bundled = {
    .name = "bundled",
    .lists_reads = true,
    .baseline = true,
    .read = bundled_read,
};
