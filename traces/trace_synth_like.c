/* A synthetic twin of a recorded trace (trace_synth.h's synth_params_like):
 * what the recorded trace says of itself that the generator can copy. */
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "traces/trace.h"
#include "traces/trace_stats.h"
#include "traces/trace_synth.h"

/* The trace's shape of sequences: tokens, sequences, prompt share. */
static void copy_sequences(struct synth_params *p, const struct trace_stats *s)
{
    p->tokens = s->n_tokens;
    p->prompts = s->n_sequences > 0 ? s->n_sequences : 1;
    p->prompt_share = (double)s->n_prompt_tokens / (double)s->n_tokens;
}

static void copy_reuse(struct synth_reuse *reuse, const struct trace_stats *s)
{
    _Static_assert(sizeof reuse->sagg == sizeof s->sagg_active, "s_agg of trace_stats.h");
    memcpy(reuse->sagg, s->sagg_active, sizeof reuse->sagg);
    reuse->k_max = s->sagg_k_max;
    reuse->hot10 = s->hot10_share;
}

int synth_params_like(struct synth_params *p, const char *path, double **density, struct synth_reuse *reuse,
                      char *err, size_t errlen)
{
    struct trace tr;
    struct trace_stats s = {0};
    *density = NULL;
    if (trace_load(path, &tr, err, errlen) != 0)
        return -1;
    int rc = -1;
    if (trace_matches_shape(&tr, path, p->shape, err, errlen) != 0)
        goto out;
    if (tr.n_tokens == 0) {
        err_set(err, errlen, "trace synth --like %s: the trace has no tokens", path);
        goto out;
    }
    if (trace_stats_compute(&tr, &s) != 0 || !(*density = malloc(s.n_layers * sizeof **density))) {
        err_set(err, errlen, "trace synth --like %s: out of memory", path);
        goto out;
    }
    memcpy(*density, s.density_active, s.n_layers * sizeof **density);
    copy_sequences(p, &s);
    p->active_only = !tr.meta.has_predicted;
    if (tr.meta.has_predicted) {
        p->targets.pred_over_active = s.pred_over_active;
        p->targets.recall = s.recall;
    }
    p->layer_density = *density;
    if (reuse)
        copy_reuse(reuse, &s);
    p->like = path;
    rc = 0;
out:
    trace_stats_free(&s);
    trace_free(&tr);
    return rc;
}
