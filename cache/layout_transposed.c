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

static uint64_t padded(uint64_t bytes, uint64_t align)
{
    return align > 1 ? (bytes + align - 1) / align * align : bytes;
}

void cache_transposed_geometry(uint32_t n_layers, uint32_t d_model, uint32_t d_ff, bool glu,
                               uint64_t bytes_per_weight, uint64_t align, struct transposed_geometry *g)
{
    uint32_t vecs = glu ? 2 : 1;
    g->chan = (struct cache_geometry){.n_layers = n_layers,
                                      .d_ff = d_model,
                                      .vec_bytes = (uint64_t)d_ff * bytes_per_weight,
                                      .vecs_per_row = vecs,
                                      .row_bytes = padded((uint64_t)vecs * d_ff * bytes_per_weight, align),
                                      .read_align = align};
    g->down = (struct cache_geometry){.n_layers = n_layers,
                                      .d_ff = d_ff,
                                      .vec_bytes = (uint64_t)d_model * bytes_per_weight,
                                      .vecs_per_row = 1,
                                      .row_bytes = padded((uint64_t)d_model * bytes_per_weight, align),
                                      .read_align = align};
}

void cache_transposed_capacity(uint64_t budget_bytes, const struct transposed_geometry *g, uint64_t *chan_rows,
                               uint64_t *down_rows)
{
    long double chan = (long double)g->chan.row_bytes * g->chan.d_ff;
    long double down = (long double)g->down.row_bytes * g->down.d_ff;
    uint64_t chan_budget = chan + down > 0 ? (uint64_t)((long double)budget_bytes * chan / (chan + down)) : 0;
    *chan_rows = cache_capacity_rows(chan_budget, g->chan.row_bytes, g->chan.n_layers, g->chan.d_ff);
    *down_rows = cache_capacity_rows(budget_bytes - chan_budget, g->down.row_bytes, g->down.n_layers, g->down.d_ff);
}
