#include "sim/replay_price.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "sim/cost_model.h"
#include "sim/paper_tables.h"

/* The shape the header names in configs/models/, when it has the header's
 * dimensions. 0 when found. */
static int named_shape(const struct fb_settings *set, const struct trace *tr, struct model_shape *s, char *src,
                       size_t len)
{
    char model[64], why[512];
    trace_source_synthetic(&tr->meta, model, sizeof model);
    if (!model[0] || model_shape_load(set, model, s, why, sizeof why) != 0)
        return -1;
    if (trace_matches_shape(tr, "the trace", s, why, sizeof why) != 0)
        return -1;
    snprintf(src, len, "configs/models/%s.json (the model the trace's header names)", model);
    return 0;
}

/* A shape from the header alone: what it does not say is left out of the
 * price (no vocabulary) or taken as the plainest transformer's. */
static void header_shape(const struct trace_meta *m, struct model_shape *s, char *src, size_t len)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "trace header");
    s->n_layers = m->n_layers;
    s->d_model = m->d_model;
    s->d_ff = m->d_ff;
    s->ffn_kind = m->ffn_kind == FFN_GLU ? FFN_GLU : FFN_RELU;
    s->n_heads = s->n_kv_heads = 1; /* only head_dim x kv heads = d_model matters to the price */
    snprintf(s->norm, sizeof s->norm, "rmsnorm");
    snprintf(s->position, sizeof s->position, "rope");
    snprintf(src, len, "the trace's header alone: attention 4 x d_model^2 per layer, no vocabulary "
                       "(embeddings and logits not priced), no biases");
}

/* The dtype to price at: the trace's width when the profile has a rate for
 * it, else the profile's first with a rate. */
static int pick_dtype(struct replay_pricing *p, enum fb_dtype trace_type, char *err, size_t errlen)
{
    double trace_bytes = cost_weight_bytes(wtype_name(trace_type));
    const struct compute_rate *first = NULL;
    for (size_t i = 0; i < p->hw->n_compute; i++) {
        const struct compute_rate *c = &p->hw->compute[i];
        if (c->bw <= 0 || !cost_weight_bytes(c->dtype))
            continue;
        if (cost_weight_bytes(c->dtype) == trace_bytes) {
            snprintf(p->dtype, sizeof p->dtype, "%s", c->dtype);
            return 0;
        }
        if (!first)
            first = c;
    }
    if (!first) {
        err_set(err, errlen, "%s has no compute rate to price with", p->hw->path);
        return -1;
    }
    snprintf(p->dtype, sizeof p->dtype, "%s", first->dtype);
    snprintf(p->dtype_note, sizeof p->dtype_note,
             "Priced at %s: %s has no rate for the trace's %s weights (%g bytes each); the replay's bytes are "
             "rescaled to %g per weight (as predict --dtype does)",
             p->dtype, p->hw->name, wtype_name(trace_type), trace_bytes, cost_weight_bytes(p->dtype));
    return 0;
}

int replay_pricing_open(struct replay_pricing *p, const struct fb_settings *set, const struct trace *tr,
                        const char *trace_path, const char *hw, unsigned hw_flags, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->hw = calloc(1, sizeof *p->hw);
    if (!p->hw) {
        err_set(err, errlen, "out of memory for a hardware profile");
        return -1;
    }
    /* densities.json once here, not once per priced row */
    if (hw_profile_load_flags(set, hw, hw_flags, p->hw, err, errlen) != 0 || cost_resolve_profile(p->hw, set, err, errlen) != 0 ||
        pick_dtype(p, tr->meta.dtype, err, errlen) != 0 || paper_densities_check(set, err, errlen) != 0) {
        replay_pricing_close(p);
        return -1;
    }
    if (named_shape(set, tr, &p->shape, p->shape_source, sizeof p->shape_source) != 0)
        header_shape(&tr->meta, &p->shape, p->shape_source, sizeof p->shape_source);
    p->setup = (struct predict_setup){
        .settings = set,
        .shape = &p->shape,
        .hw = p->hw,
        .dtype = p->dtype,
        .io_threads = p->hw->io_threads,
        .context_tokens = REPLAY_PRICE_CONTEXT,
        .trace = tr,
        .trace_path = trace_path,
        .predictor_rank = PREDICT_RANK_AUTO,
    };
    return 0;
}

int replay_pricing_price(const struct replay_pricing *p, const struct replay_result *r, struct policy_prediction *out,
                         char *err, size_t errlen)
{
    return predict_replayed(&p->setup, r, out, err, errlen);
}

void replay_pricing_close(struct replay_pricing *p)
{
    free(p->hw);
    p->hw = NULL;
}
