/* The bandwidth ceiling beside each decode step (bw_ceiling.h). */
#include "engine/forward/bw_ceiling.h"

#include <stdlib.h>

#include "common/errbuf.h"
#include "common/median.h"

int bw_ceiling_open(struct bw_ceiling *c, const struct model *m, int max_passes, char *err, size_t errlen)
{
    *c = (struct bw_ceiling){.resident_bytes = (double)m->dram_bytes + (m->ffn ? (double)m->ffn_bytes : 0),
                             .max_passes = max_passes};
    c->paired = calloc(max_passes > 0 ? (size_t)max_passes : 1, sizeof *c->paired);
    return c->paired ? 0 : err_set(err, errlen, "cannot allocate the bandwidth record");
}

void bw_ceiling_close(struct bw_ceiling *c)
{
    free(c->paired);
    c->paired = NULL;
}

void bw_ceiling_pass(struct bw_ceiling *c, struct engine *e, double step_s, double bytes)
{
    const struct model *m = e->m;
    if (c->passes >= c->max_passes)
        return;
    double s = ck_read_pass(e->ck, m->dram, m->dram_bytes);
    if (m->ffn)
        s += ck_read_pass(e->ck, m->ffn, m->ffn_bytes);
    double bw = c->resident_bytes / s;
    c->read_s += s;
    c->paired[c->passes++] = bytes / step_s / bw;
    if (bw > c->best_bw)
        c->best_bw = bw;
}

double bw_ceiling_bandwidth(const struct bw_ceiling *c)
{
    return c->read_s > 0 ? c->passes * c->resident_bytes / c->read_s : 0;
}

double bw_ceiling_median_paired(struct bw_ceiling *c)
{
    return median_sorting(c->paired, (size_t)c->passes);
}
