/* transposed: the layout of input sparsity on flash (cache/transposed.h).
 * Its rows are channel bundles (a column of up, and of gate, per input
 * channel) or rows of down, in two caches; each needed row is one read of
 * the row's bytes, as bundled reads a neuron's bundle. */
#include "cache/layout.h"
#include "cache/transposed.h"

static uint32_t transposed_read(struct layout *lo, uint32_t l, const uint32_t *rows, uint32_t n,
                                struct read_tally *t, struct layout_read *out)
{
    (void)l;
    return layout_read_each_row(lo->row_bytes, rows, n, t, out);
}

const struct layout_ops layout_transposed = {
    .name = "transposed",
    .lists_reads = true,
    .transposed = true,
    .read = transposed_read,
};

int cache_transposed_geometry(const struct unit_dims *d, uint64_t align, struct transposed_geometry *g, char *err,
                              size_t errlen)
{
    if (unit_geometry_make(UNIT_CHANNEL_BUNDLE, d, align, &g->chan_unit, err, errlen) != 0 ||
        unit_geometry_make(UNIT_DOWN_ROW, d, align, &g->down_unit, err, errlen) != 0)
        return -1;
    cache_geometry_of_unit(&g->chan_unit, align, &g->chan);
    cache_geometry_of_unit(&g->down_unit, align, &g->down);
    return 0;
}

void cache_transposed_capacity(uint64_t budget_bytes, const struct transposed_geometry *g, uint64_t *chan_rows,
                               uint64_t *down_rows)
{
    const struct unit_geometry u[2] = {g->chan_unit, g->down_unit};
    uint64_t rows[2];
    cache_shared_capacity(budget_bytes, u, 2, rows);
    *chan_rows = rows[0];
    *down_rows = rows[1];
}
