/* The plan of input sparsity on flash (run_plan.h: run_plan_transposed). */
#include <stdlib.h>
#include <string.h>

#include "cache/transposed.h"
#include "common/errbuf.h"
#include "engine/ffn/ffn_transposed.h"
#include "engine/model/model_format.h"
#include "engine/run/run_plan.h"
#include "engine/run/run_plan_share.h"

/* Each stream's staging rows and their bytes. */
static uint64_t plan_staging(const struct transposed_geometry *g, struct run_plan_out *out)
{
    out->staging_rows = ffn_transposed_staging_rows(g->chan.d_ff, g->chan.row_bytes);
    out->down_staging_rows = ffn_transposed_staging_rows(g->down.d_ff, g->down.row_bytes);
    return (uint64_t)out->staging_rows * g->chan.row_bytes + (uint64_t)out->down_staging_rows * g->down.row_bytes;
}

/* The budget's fixed part (dram.bin, the KV cache, staging) and what it
 * leaves the caches (*avail; 0 without a budget). */
static int plan_fixed(const struct run_plan_input *in, uint64_t staged, uint64_t *avail, char *err, size_t errlen)
{
    uint64_t fixed = in->m->dram_bytes + in->kv_bytes + staged;
    *avail = 0;
    if (!in->budget)
        return 0;
    if (fixed >= in->budget) {
        char b1[32], b2[32], b3[32], b4[32];
        plan_human(in->budget, b1, sizeof b1), plan_human(in->m->dram_bytes, b2, sizeof b2);
        plan_human(in->kv_bytes, b3, sizeof b3), plan_human(staged, b4, sizeof b4);
        return err_set(err, errlen, "the DRAM budget of %s: the weights that stay in DRAM (%s), the KV cache (%s) and "
                       "the two streams' staging rows (%s) already take it all", b1, b2, b3, b4);
    }
    *avail = in->budget - fixed;
    return 0;
}

int run_plan_transposed(const struct run_plan_input *in, struct run_plan_out *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const struct model *m = in->m;
    const struct model_shape *s = &m->shape;
    const struct policy_ops *pol = in->policy.ops;
    if (!pol || !in->layout.ops || !in->layout.ops->transposed)
        return err_set(err, errlen, "internal: the transposed plan needs a policy and the transposed layout");
    if (in->policy.arg_auto)
        return err_set(err, errlen, "window:auto is not sized for input sparsity's two caches yet: give --window K");
    if (in->device)
        return err_set(err, errlen, "input sparsity on flash runs on the cpu backend only for now");
    struct transposed_geometry g;
    cache_transposed_geometry(s->n_layers, s->d_model, s->d_ff, m->arch.glu, wtype_row_bytes(m->dtype, 1), FFN_ALIGN, &g);
    uint64_t staged = plan_staging(&g, out), avail;
    if (plan_fixed(in, staged, &avail, err, errlen) != 0)
        return -1;
    if (in->budget)
        cache_transposed_capacity(avail, &g, &out->capacity_rows, &out->down_capacity_rows);
    out->cache_budget = avail;
    out->policy = in->policy;
    out->window_k = pol->takes_arg ? (uint32_t)in->policy.arg : 0;
    uint32_t chan_slots = (uint32_t)policy_layer_rows(pol, out->capacity_rows, g.chan.d_ff);
    out->down_slots = (uint32_t)policy_layer_rows(pol, out->down_capacity_rows, g.down.d_ff);
    out->layer_rows = malloc(s->n_layers * sizeof *out->layer_rows);
    if (!out->layer_rows)
        return err_set(err, errlen, "out of memory");
    for (uint32_t l = 0; l < s->n_layers; l++)
        out->layer_rows[l] = chan_slots;
    out->ffn_cache_bytes = out->capacity_rows * s->n_layers * g.chan.row_bytes +
                           out->down_capacity_rows * s->n_layers * g.down.row_bytes;
    out->held_bytes = staged + (uint64_t)s->n_layers * (chan_slots * g.chan.row_bytes + out->down_slots * g.down.row_bytes);
    return 0;
}
