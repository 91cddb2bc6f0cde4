/* flashbed run's setup from its options as data (run_setup.h). */
#include "engine/run/run_setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/model/ffn_transposed.h"
#include "engine/model/model_format.h"
#include "engine/run/warmup.h"

void run_setup_sizes(struct run_setup *p, const struct model *m, int max_seq)
{
    p->model_bytes = m->dram_bytes + m->ffn_bytes;
    p->kv_bytes = 2ull * m->shape.n_layers * (uint64_t)max_seq * m->kv_dim * sizeof(float);
}

/* The policy and layout of a mode, or of --policy and --layout. */
static int policy_and_layout(const struct run_options *o, struct run_setup *p, char *err, size_t errlen)
{
    if (run_mode_preset(o->mode, o->window, o->coalesce, &p->policy, &p->layout) != 0)
        return err_set(err, errlen, "internal: %s --mode '%s' has no preset", o->cmd, o->mode);
    if (!o->policy.ops && !o->layout.ops)
        return 0;
    struct policy_spec policy = o->policy.ops ? o->policy : p->policy;
    /* --policy alone: --layout's default, bundled */
    struct layout_spec layout = o->layout.ops ? o->layout : o->mode_given ? p->layout
                                                                           : layout_spec_of(&layout_bundled, 0);
    char why[512], preset[POLICY_NAME_MAX], given[POLICY_NAME_MAX], lpreset[LAYOUT_NAME_MAX], lgiven[LAYOUT_NAME_MAX];
    if (o->mode_given && (!policy_spec_equal(&policy, &p->policy) || !layout_spec_equal(&layout, &p->layout))) {
        cache_policy_name(&p->policy, preset, sizeof preset);
        cache_policy_name(&policy, given, sizeof given);
        cache_layout_name(&p->layout, lpreset, sizeof lpreset);
        cache_layout_name(&layout, lgiven, sizeof lgiven);
        return err_set(err, errlen, "%s: --mode %s means --policy %s --layout %s, not %s and %s", o->cmd, o->mode,
                       preset, lpreset, given, lgiven);
    }
    if (run_plan_check(&policy, why, sizeof why) != 0)
        return err_set(err, errlen, "%s: %s", o->cmd, why);
    p->policy = policy;
    p->layout = layout;
    return 0;
}

/* Input sparsity reads ffn_t.bin by channel: --active teal goes with the
 * transposed layout and it with teal alone; the mode's (or --policy's)
 * policy stays. */
int run_setup_policy(const struct run_options *o, struct run_setup *p, char *err, size_t errlen)
{
    const struct neuron_source_ops *src = o->active ? neuron_source_find(o->active, NULL) : NULL;
    bool teal = src && src->reads_channels;
    const struct layout_ops *lay = o->layout.ops;
    char name[LAYOUT_NAME_MAX];
    if (!teal && lay && lay->transposed)
        return err_set(err, errlen, "%s --layout transposed: reads ffn_t.bin by input channel, for input sparsity "
                       "only (--active teal)", o->cmd);
    if (teal && lay && !lay->transposed) {
        cache_layout_name(&o->layout, name, sizeof name);
        return err_set(err, errlen, "%s --active teal --layout %s: input sparsity reads ffn_t.bin by input channel, "
                       "which is --layout transposed (its default)", o->cmd, name);
    }
    if (!teal)
        return policy_and_layout(o, p, err, errlen);
    struct run_options policy_only = *o;
    policy_only.layout.ops = NULL; /* the mode's preset's layout is not compared */
    if (policy_and_layout(&policy_only, p, err, errlen) != 0)
        return -1;
    p->layout = layout_spec_of(&layout_transposed, 0);
    return 0;
}

/* --active teal: its thresholds, on the cpu backend, with ffn_t.bin. */
static int choose_teal(const struct run_options *o, const struct model *m, struct run_setup *p, char *err,
                       size_t errlen)
{
    struct ffn_t_layout t;
    char why[4600];
    if (p->device)
        return err_set(err, errlen, "%s --active teal: input sparsity on flash runs on the cpu backend only for now, "
                       "not %s", o->cmd, p->backend ? p->backend : "a device");
    if (o->check)
        return err_set(err, errlen, "%s --active teal --check: the true activations beside input sparsity are not "
                       "computed on flash (perplexity and generate measure its accuracy)", o->cmd);
    if (ffn_transposed_open(m, &t, why, sizeof why) != 0)
        return err_set(err, errlen, "%s --active teal: %s", o->cmd, why);
    p->cfg.select = p->sel.cfg;
    p->cfg.stream.read_ahead = false; /* the channels depend on the layer's own input */
    p->ffn_t_checked = ffn_t_has_checksums(m->dir);
    snprintf(p->active_desc, sizeof p->active_desc, "%s, read from %s", p->sel.desc, MODEL_FFN_T_FILE);
    return 0;
}

/* --active oracle, predictor or gate (engine/ffn/select_choice.h): the engine's
 * source and its threshold. */
static int choose_source(const struct run_options *o, const struct model *m, struct run_setup *p, char *err,
                         size_t errlen)
{
    if (select_choice_open(o->cmd, o->active, o->threshold_given, o->threshold, o->sparsify, m, &p->sel, err,
                           errlen) != 0)
        return -1;
    p->have_sel = true;
    const struct select_config *c = &p->sel.cfg;
    if (c->ops->reads_channels)
        return choose_teal(o, m, p, err, errlen);
    p->cfg.select = *c; /* one neuron-source value from the option to the engine */
    /* the truth beside a predictor: what it was trained to predict, unless told */
    if (!c->ops->truth)
        p->cfg.neuron.threshold = o->act_threshold_given || !c->predictor ? (float)o->act_threshold
                                                                   : c->predictor->act_threshold;
    snprintf(p->active_desc, sizeof p->active_desc, "%s", p->sel.desc);
    return 0;
}

/* --active trace:FILE: the trace, of the model's shape, and its sets (--use). */
static int open_trace(const struct run_options *o, const struct model *m, struct run_setup *p, char *err,
                      size_t errlen)
{
    const char *path = o->active + 6;
    char why[4600];
    if (trace_load(path, &p->trace, why, sizeof why) != 0)
        return err_set(err, errlen, "%s --active: %s", o->cmd, why);
    p->have_trace = true;
    if (trace_matches_shape(&p->trace, path, &m->shape, why, sizeof why) != 0)
        return err_set(err, errlen, "%s --active: %s", o->cmd, why);
    p->cfg.select = (struct select_config){.ops = &source_trace, .trace = &p->trace};
    if (trace_choose_sets(o->use, &p->trace.meta, path, &p->cfg.select.use_predicted, why, sizeof why) != 0)
        return err_set(err, errlen, "%s --use: %s", o->cmd, why);
    snprintf(p->active_desc, sizeof p->active_desc, "trace %s (%s sets, %llu tokens, replayed cyclically)", path,
             p->cfg.select.use_predicted ? "predicted" : "active", (unsigned long long)p->trace.n_tokens);
    return 0;
}

/* The policies input sparsity on flash takes: those that read only what
 * is needed and decide from the sets so far (predictor, window:K, lru,
 * lfu). */
static int run_setup_teal_policy(const struct run_options *o, const struct run_setup *p, char *err, size_t errlen)
{
    const struct policy_ops *pol = p->policy.ops;
    char name[POLICY_NAME_MAX];
    cache_policy_name(&p->policy, name, sizeof name);
    if (pol->reads_whole_layers)
        return err_set(err, errlen, "%s --active teal: policy %s reads every row it does not hold, so nothing is "
                       "chosen (use --mode predictor, window or all)", o->cmd, name);
    if (pol->known_from_profile || pol->needs_future)
        return err_set(err, errlen, "%s --active teal: policy %s ranks sets known beforehand, which input sparsity "
                       "on flash does not have (use predictor, window:K, lru or lfu)", o->cmd, name);
    if (p->policy.arg_auto)
        return err_set(err, errlen, "%s --active teal: window:auto is not sized for input sparsity's two caches yet: "
                       "give --window K", o->cmd);
    return 0;
}

int run_setup_check_source(const struct run_options *o, const struct run_setup *p, char *err, size_t errlen)
{
    const struct neuron_source_ops *src = select_source(&p->cfg.select);
    bool chooser = src->deployable;
    if (o->check && src->truth)
        return err_set(err, errlen, "%s --check compares a predictor, the gate or a trace with the true activations: "
                       "the oracle's choice is them (use --active predictor, gate or trace:FILE)", o->cmd);
    if (src->reads_channels && run_setup_teal_policy(o, p, err, errlen) != 0)
        return -1;
    if (chooser && p->policy.ops->reads_whole_layers) {
        char policy[POLICY_NAME_MAX];
        cache_policy_name(&p->policy, policy, sizeof policy);
        return err_set(err, errlen, "%s --active %s: policy %s reads every neuron it does not hold, so nothing is "
                       "chosen (use --mode predictor, window or all, or --active oracle)", o->cmd, o->active, policy);
    }
    return 0;
}

int run_setup_plan(const struct run_options *o, const struct model *m, struct run_setup *p, char *err,
                   size_t errlen)
{
    p->cfg.neuron.threshold = (float)o->threshold;
    p->cfg.neuron.check = o->check;
    p->cfg.stream.io_engine = o->io_engine;
    p->cfg.stream.fault = o->fault;
    p->cfg.stream.verify = o->verify;
    p->cfg.stream.io_threads = o->io_threads;
    p->cfg.stream.iodepth = o->iodepth;
    p->cfg.stream.direct = o->direct;
    p->cfg.stream.read_ahead = o->read_ahead;
    if (run_setup_policy(o, p, err, errlen) != 0)
        return -1;
    p->cfg.policy = p->policy;
    p->cfg.layout = p->layout;
    /* a policy that holds no part of any layer streams the whole model, dram.bin too (naive) */
    p->cfg.neuron.stream_dram = p->policy.ops->reads_whole_layers && !p->policy.ops->keeps_resident_part;
    int rc;
    if (!strncmp(o->active, "trace:", 6) && o->sparsify)
        rc = err_set(err, errlen, "%s --sparsify %s: --active %s reads no thresholds file (gate and gate-cal do)",
                     o->cmd, o->sparsify, o->active);
    else if (!strncmp(o->active, "trace:", 6))
        rc = open_trace(o, m, p, err, errlen);
    else if (select_choice_known(o->active))
        rc = choose_source(o, m, p, err, errlen);
    else {
        char names[256];
        neuron_source_names_then(names, sizeof names, "trace:FILE");
        rc = err_set(err, errlen, "%s --active: '%s' is not %s", o->cmd, o->active, names);
    }
    return rc != 0 ? -1 : run_setup_check_source(o, p, err, errlen);
}

bool run_setup_needs_warmup(const struct run_setup *p)
{
    return !p->dense && p->policy.ops->known_from_profile && !p->have_trace;
}

int run_setup_warmup(const struct run_options *o, const struct model *m, const struct backend_ops *be, int threads,
                     const int *tokens, int n, struct run_setup *p, char *err, size_t errlen)
{
    if (n > (int)m->shape.max_positions)
        n = (int)m->shape.max_positions;
    char why[1024], policy[POLICY_NAME_MAX];
    struct warmup_input in = {.settings = o->settings, .m = m, .be = be, .threads = threads, .io = &p->cfg,
                              .tokens = tokens, .n_tokens = n};
    if (warmup_profile(&in, &p->profile, why, sizeof why) != 0)
        return err_set(err, errlen, "%s --warmup-file: %s", o->cmd, why);
    p->have_profile = true;
    cache_policy_name(&p->policy, policy, sizeof policy);
    snprintf(p->profile_desc, sizeof p->profile_desc, "%s ranks the %s's needed neurons over a warm-up of %d tokens "
             "(%s)", policy, o->active, n, o->warmup_file ? o->warmup_file : "the prompt");
    return 0;
}

/* A dense run: the model and the KV cache within the DRAM budget, and
 * with a device budget on the device too. */
static int fit_dense(const struct run_options *o, const struct model *m, const struct run_setup *p, char *err,
                     size_t errlen)
{
    char why[1024];
    if (run_plan_dense_check(m, p->kv_bytes, p->budget, why, sizeof why) != 0 ||
        run_plan_dense_device_check(m, p->kv_bytes, p->device_budget, why, sizeof why) != 0)
        return err_set(err, errlen, "%s --mode dense: %s", o->cmd, why);
    return 0;
}

int run_setup_fit(const struct run_options *o, const struct model *m, struct run_setup *p, uint64_t tokens,
                  char *err, size_t errlen)
{
    char why[1024];
    if (p->device_budget && !p->device)
        return err_set(err, errlen, "%s --device-budget: the %s backend computes in host memory: there is no device "
                       "memory to budget (--dram-budget bounds it)", o->cmd, p->backend ? p->backend : "host");
    if (p->dense)
        return fit_dense(o, m, p, err, errlen);
    struct run_plan_input in = {.m = m, .policy = p->policy, .layout = p->layout, .budget = p->budget,
                                .kv_bytes = p->kv_bytes, .trace = p->have_trace ? &p->trace : NULL,
                                .profile = p->have_profile ? &p->profile : NULL, .use_predicted = p->cfg.select.use_predicted,
                                .tokens = tokens, .stream_dram = p->cfg.neuron.stream_dram,
                                .predictor_bytes = ffn_flash_predictor_bytes(m, &p->cfg), .device = p->device,
                                .device_budget = p->device_budget};
    bool transposed = p->layout.ops->transposed;
    if ((transposed ? run_plan_transposed : run_plan_make)(&in, &p->plan, why, sizeof why) != 0)
        return err_set(err, errlen, "%s: %s", o->cmd, why);
    run_plan_apply(&p->plan, p->have_profile ? &p->profile : NULL, &p->cfg);
    return 0;
}

void run_setup_free(struct run_setup *p)
{
    if (p->have_trace)
        trace_free(&p->trace);
    if (p->have_profile)
        trace_free(&p->profile);
    if (p->have_sel)
        select_choice_free(&p->sel);
    p->have_trace = p->have_profile = p->have_sel = false;
    free(p->plan.layer_rows);
    p->plan.layer_rows = NULL;
}
