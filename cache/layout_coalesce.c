/* coalesce:G: bundled rows in neuron order on flash; rows whose ids differ by
 * at most G+1 are fetched by one read that also brings the up to G unneeded
 * bundles between them (fewer, larger reads for some wasted bytes). */
#include "cache/layout.h"

static uint32_t coalesce_read(struct layout *lo, uint32_t l, const uint32_t *rows, uint32_t n,
                              struct read_tally *t, struct layout_read *out)
{
    (void)l;
    uint32_t j = 0, k = 0;
    while (j < n) {
        uint32_t first = rows[j], last = rows[j];
        for (j++; j < n && (uint64_t)rows[j] - last - 1 <= lo->arg; j++)
            last = rows[j];
        tally_reads(t, 1, (uint64_t)(last - first + 1) * lo->row_bytes);
        if (out)
            out[k++] = (struct layout_read){first, last - first + 1, -1};
    }
    return k;
}

const struct layout_ops layout_coalesce = {
    .name = "coalesce",
    .needs_rows = true,
    .takes_arg = true,
    .arg_name = "G",
    .lists_reads = true,
    .reads_unneeded = true,
    .read = coalesce_read,
};
