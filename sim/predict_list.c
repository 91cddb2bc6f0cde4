#include "sim/predict_list.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "common/errbuf.h"
#include "common/parse.h"
#include "common/wtype.h"
#include "sim/paper_tables.h"
#include "sim/replay.h"
#include "sim/trace_volumes.h"
#include "sim/window_auto.h"

int predict_list_check(const struct policy_spec *policies, size_t n, bool have_trace, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        if (cost_check_policy(&policies[i], have_trace, err, errlen) != 0)
            return -1;
    return 0;
}

/* The predictor a policy runs (predict_list.h), into c: its rank or share
 * of the model and where that comes from. Returns its parameters (0: none). */
static double predictor_of(const struct predict_setup *s, const struct policy_spec *policy, struct cost_config *c)
{
    c->predictor_rank = c->predictor_fraction = 0;
    c->predictor_source[0] = '\0';
    if (policy->ops->reads_whole_layers || s->predictor_rank == PREDICT_RANK_NONE)
        return 0; /* a policy that computes every neuron chooses none */
    if (s->layout.ops && s->layout.ops->transposed)
        return 0; /* input sparsity thresholds the input: nothing to predict */
    const struct model_shape *sh = s->shape;
    struct param_counts pc;
    model_shape_params(sh, &pc);
    char src[120];
    double share;
    if (s->predictor_rank == PREDICT_RANK_AUTO &&
        paper_density(s->settings, sh->name, "predictor_model_fraction", &share, src, sizeof src) == 0) {
        c->predictor_fraction = share;
        snprintf(c->predictor_source, sizeof c->predictor_source, "the paper's share for %.40s: %.2f%% of the model (%s)",
                 sh->name, 100 * share, src);
        return share * (double)pc.total;
    }
    uint32_t most = sh->d_model < sh->d_ff ? sh->d_model : sh->d_ff;
    uint32_t r = s->predictor_rank > 0 ? (uint32_t)s->predictor_rank : PREDICT_DEFAULT_RANK < most ? PREDICT_DEFAULT_RANK : most;
    c->predictor_rank = r;
    double params = cost_predictor_params(sh, r);
    snprintf(c->predictor_source, sizeof c->predictor_source,
             "rank %u on each of %u layers%s: %u x (%u x (d_model %u + d_ff %u) + %u) = %.0f parameters, %.2f%% of the "
             "model", r, sh->n_layers,
             s->predictor_rank > 0 ? "" : r < PREDICT_DEFAULT_RANK ? " (the default 128 capped at min(d_model, d_ff))" : " (the default)",
             sh->n_layers, r,
             sh->d_model, sh->d_ff, sh->d_ff, params, 100 * params / (double)pc.total);
    return params;
}

/* The FFN cache's share of the DRAM budget at the cost model's dtype: the
 * budget less the weights that always stay in DRAM and the predictor.
 * Policies that take a budget are refused when nothing is left. */
static int ffn_budget(const struct predict_setup *s, const struct policy_spec *policy, double *bytes, char *err,
                      size_t errlen)
{
    struct param_counts pc;
    model_shape_params(s->shape, &pc);
    double b = cost_weight_bytes(s->dtype); /* aggregates over the model: bytes per weight */
    struct cost_config c;
    double pred = predictor_of(s, policy, &c) * b;
    *bytes = s->dram_share * (double)pc.total * b - (double)(pc.total - pc.ffn) * b - pred;
    if (policy->ops->uses_budget && *bytes <= 0) {
        char held[32], pheld[32];
        format_size((uint64_t)((double)(pc.total - pc.ffn) * b), held, sizeof held);
        format_size((uint64_t)pred, pheld, sizeof pheld);
        err_set(err, errlen,
                 "a DRAM budget of %.1f%% of the model leaves no DRAM for an FFN cache once the %s of non-FFN "
                 "weights%s%s%s are held",
                 100 * s->dram_share, held, pred > 0 ? " and the " : "", pred > 0 ? pheld : "",
                 pred > 0 ? " of the predictor" : "");
        return -1;
    }
    return 0;
}

/* Volumes from replaying the trace under the policy and the layout. */
static int trace_config(const struct predict_setup *s, struct cost_config *c, char *err, size_t errlen)
{
    struct trace_volume_spec spec = {.policy = c->policy, .layout = c->layout, .use_predicted = s->use_predicted,
                                     .dtype_bytes = cost_weight_bytes(s->dtype)};
    if (ffn_budget(s, &c->policy, &spec.ffn_budget_bytes, err, errlen) != 0)
        return -1;
    return trace_volumes(s->trace, s->trace_path, &spec, &c->vol, err, errlen);
}

/* Volumes of a window of k tokens (the predictor: k = 1) on the s_agg curve. */
static void curve_volumes(const struct model_shape *shape, const struct policy_ops *ops, uint64_t k,
                          struct token_volumes *v)
{
    double held = paper_s_agg((double)k);
    double fresh = ops->keeps_reads && k > 1 ? held - paper_s_agg((double)(k - 1)) : held;
    volumes_from_fractions(shape, ops, fresh, held, v);
    snprintf(v->source, sizeof v->source,
             "s_agg curve through OPT-6.7B's App. C.1 figures (window of %llu token%s: %.2f%% new, %.1f%% held)",
             (unsigned long long)k, k == 1 ? "" : "s", 100 * fresh, 100 * held);
}

/* Volumes from the paper's densities: its own figures when it states them
 * (for a window, when K is the paper's k previous tokens + this one), else
 * the s_agg curve fitted to OPT-6.7B's figures. naive and hybrid need none. */
static void paper_config(const struct predict_setup *s, struct cost_config *c)
{
    const struct policy_ops *ops = c->policy.ops;
    uint64_t k = c->policy.arg;
    struct policy_spec policy = c->policy;
    bool window = ops->keeps_recent && ops->takes_arg; /* window:K (the predictor is K = 1) */
    double paper_k = -2;
    paper_density(s->settings, s->shape->name, "window_k", &paper_k, NULL, 0);
    if ((window && (double)k != paper_k + 1) ||
        paper_cost_config(s->settings, c, s->shape, ops->name, &s->layout, "") != 0) {
        if (ops->keeps_recent) {
            curve_volumes(s->shape, ops, window ? k : 1, &c->vol);
            /* the predictor runs whatever the window: its size is the shape's */
            double pred = 0;
            paper_density(s->settings, s->shape->name, "predictor_model_fraction", &pred, NULL, 0);
            c->predictor_fraction = pred;
        }
    }
    c->policy = policy; /* the list's K, not the paper's */
}

/* The transposed layout without a trace: the densities given, read every
 * token and kept by none (the predictor's way: a policy that keeps rows
 * needs a trace's sets). */
static int densities_config(const struct predict_setup *s, struct cost_config *c, char *err, size_t errlen)
{
    if (c->policy.ops->keeps_reads)
        return err_set(err, errlen, "with layout transposed and no trace only predictor (read the kept rows every "
                                    "token) is priced from densities; a policy that keeps rows needs a trace with "
                                    "channel sets (--trace)");
    if (s->channel_density <= 0 || s->down_density <= 0)
        return err_set(err, errlen, "layout transposed without a trace needs --channel-density and --down-density");
    volumes_transposed_from_densities(s->shape, s->channel_density, s->down_density, &c->vol);
    return 0;
}

/* Puts "policy 'P': " before the message in err. Returns -1. */
static int name_error(const struct policy_spec *policy, char *err, size_t errlen)
{
    char why[1024], name[POLICY_NAME_MAX];
    snprintf(why, sizeof why, "%s", err);
    cache_policy_name(policy, name, sizeof name);
    err_set(err, errlen, "policy '%s': %s", name, why);
    return -1;
}

/* window:auto: K for the rows of one layer's FFN cache (ffn_budget at the
 * cost model's dtype), by the rule run uses (window_auto_resolve);
 * c->policy becomes window:K. */
static int resolve_window(const struct predict_setup *s, struct policy_prediction *it, char *err, size_t errlen)
{
    const struct model_shape *sh = s->shape;
    double bytes;
    if (ffn_budget(s, &it->asked, &bytes, err, errlen) != 0)
        return -1;
    uint64_t row = cost_row_bytes(s->dtype, unit_neuron_weights(sh));
    it->window_rows = cache_capacity_rows(bytes > 0 ? (uint64_t)bytes : 0, row, sh->n_layers, sh->d_ff);
    if (it->window_rows == 0) {
        err_set(err, errlen, "window:auto sizes the window to the DRAM budget: %.1f%% of the model leaves no FFN "
                 "cache row (%llu bytes) in each of %u layers", 100 * s->dram_share, (unsigned long long)row,
                 sh->n_layers);
        return -1;
    }
    it->window_tokens = s->tokens ? s->tokens : s->trace ? s->trace->n_tokens : WINDOW_MAX_K;
    struct window_auto_input in = {s->trace, s->use_predicted, it->window_tokens, sh->d_ff, it->window_rows};
    return window_auto_resolve(&it->asked, &in, &it->config.policy, &it->window, err, errlen);
}

static int price_one(const struct predict_setup *s, struct policy_prediction *it, char *err, size_t errlen)
{
    struct cost_config *c = &it->config;
    c->shape = s->shape;
    c->hw = s->hw;
    snprintf(c->dtype, sizeof c->dtype, "%s", s->dtype);
    c->layout = s->layout;
    c->dram_share = s->dram_share;
    c->io_threads = s->io_threads;
    c->context_tokens = s->context_tokens;
    snprintf(c->io_engine, sizeof c->io_engine, "%s", s->io_engine ? s->io_engine : "");
    c->verify = s->verify;
    c->policy = it->asked;
    if (it->asked.arg_auto && resolve_window(s, it, err, errlen) != 0)
        return name_error(&it->asked, err, errlen);
    if (s->trace && trace_config(s, c, err, errlen) != 0)
        return name_error(&it->asked, err, errlen);
    if (!s->trace && c->layout.ops->transposed && !c->policy.ops->reads_whole_layers &&
        densities_config(s, c, err, errlen) != 0)
        return name_error(&it->asked, err, errlen);
    if (!s->trace && !c->layout.ops->transposed)
        paper_config(s, c);
    predictor_of(s, &c->policy, c);
    if (cost_predict(c, &it->prediction, err, errlen) != 0)
        return name_error(&it->asked, err, errlen);
    return 0;
}

/* The share of the model a replay keeps in DRAM between tokens for the
 * cost model's hybrid: every weight but the FFN's, and the preloaded rows. */
static double resident_share(const struct model_shape *sh, const struct replay_result *r)
{
    struct param_counts pc;
    model_shape_params(sh, &pc);
    double rows = r->row_bytes ? (double)r->preload_bytes / (double)r->row_bytes : 0;
    double kept = (double)(pc.total - pc.ffn) + rows * (double)unit_neuron_weights(sh);
    if (r->transposed && r->row_bytes) { /* rows of two sizes: the preloaded bytes in weights, at the
                                             * bytes per weight of a channel bundle (vecs x d_ff of them) */
        double bundle_weights = (sh->ffn_kind == FFN_GLU ? 2.0 : 1.0) * sh->d_ff;
        kept = (double)(pc.total - pc.ffn) + (double)r->preload_bytes / ((double)r->row_bytes / bundle_weights);
    }
    return pc.total ? kept / (double)pc.total : 0;
}

int predict_replayed(const struct predict_setup *s, const struct replay_result *r, struct policy_prediction *out,
                     char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct cost_config *c = &out->config;
    if (!s->trace) {
        err_set(err, errlen, "pricing a replay needs its trace (for its bytes per weight)");
        return -1;
    }
    if (!cost_weight_bytes(s->dtype)) {
        err_set(err, errlen, "unknown dtype '%s' (use %s)", s->dtype, wtype_names());
        return -1;
    }
    c->policy = r->pol;
    c->shape = s->shape;
    c->hw = s->hw;
    snprintf(c->dtype, sizeof c->dtype, "%s", s->dtype);
    c->layout = r->lay;
    c->dram_share = resident_share(s->shape, r);
    c->io_threads = s->io_threads;
    c->context_tokens = s->context_tokens;
    c->verify = s->verify;
    trace_volumes_of_replay(r, s->trace_path, cost_weight_bytes(s->dtype), s->trace->meta.dtype, &c->vol);
    if (!r->transposed)
        predictor_of(s, &c->policy, c);
    if (cost_predict(c, &out->prediction, err, errlen) != 0)
        return name_error(&c->policy, err, errlen);
    return 0;
}

/* What can be checked before any replay: the dtype, the layout, each
 * policy's name and (with a trace) its share of the budget. */
static int check_all(const struct predict_setup *s, const struct policy_prediction *items, size_t n, char *err,
                     size_t errlen)
{
    if (!cost_weight_bytes(s->dtype)) {
        err_set(err, errlen, "unknown dtype '%s' (use %s)", s->dtype, wtype_names());
        return -1;
    }
    if (cost_check_layout(&s->layout, s->trace != NULL, err, errlen) != 0)
        return -1;
    uint32_t most = s->shape->d_model < s->shape->d_ff ? s->shape->d_model : s->shape->d_ff;
    if (s->predictor_rank > (int)most) {
        err_set(err, errlen, "a predictor of rank %d passes min(d_model %u, d_ff %u) of %s", s->predictor_rank,
                 s->shape->d_model, s->shape->d_ff, s->shape->name);
        return -1;
    }
    for (size_t i = 0; s->trace && i < n; i++) {
        double bytes;
        if (ffn_budget(s, &items[i].asked, &bytes, err, errlen) != 0)
            return name_error(&items[i].asked, err, errlen);
    }
    return 0;
}

int predict_list(const struct predict_setup *s, const struct policy_spec *policies, size_t n,
                 struct policy_prediction **out, char *err, size_t errlen)
{
    if (predict_list_check(policies, n, s->trace != NULL, err, errlen) != 0 ||
        paper_densities_check(s->settings, err, errlen) != 0)
        return -1;
    struct policy_prediction *items = calloc(n ? n : 1, sizeof *items);
    if (!items) {
        err_set(err, errlen, "out of memory for %zu predictions", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        items[i].asked = items[i].config.policy = policies[i];
    int rc = check_all(s, items, n, err, errlen);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = price_one(s, &items[i], err, errlen);
    if (rc != 0) {
        free(items);
        return -1;
    }
    *out = items;
    return 0;
}
