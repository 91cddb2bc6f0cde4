/* Run planning (run_plan.h): presets, the budget, the sizes. */
#include "engine/run/run_plan.h"
#include "engine/run/run_plan_share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/mode.h"
#include "common/errbuf.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/model/dtype.h"
#include "engine/model/model_format.h"
#include "sim/window_auto.h"


int run_mode_preset(const char *mode, uint32_t window, uint32_t coalesce, struct policy_spec *policy,
                    struct layout_spec *layout)
{
    const struct cache_mode *m = cache_mode_find(mode);
    if (!m)
        return -1;
    *policy = cache_mode_policy(m, window, window == 0);
    *layout = cache_mode_layout(m, coalesce);
    return 0;
}

void plan_human(uint64_t v, char *buf, size_t len)
{
    double x = (double)v;
    snprintf(buf, len, "%.2f %s", x / (x >= 1e9 ? 1e9 : x >= 1e6 ? 1e6 : 1e3), x >= 1e9 ? "GB" : x >= 1e6 ? "MB" : "kB");
}

/* ", and the predictor (N MB)" when one is held, else "": what the
 * budget's fixed part holds besides the resident weights and KV cache. */
static const char *fixed_parts(const struct run_plan_input *in, char *buf, size_t len)
{
    char b[32];
    if (!in->predictor_bytes)
        return "";
    plan_human(in->predictor_bytes, b, sizeof b);
    snprintf(buf, len, " and the predictor (%s)", b);
    return buf;
}

/* The largest set one token needs in any layer over the run's tokens. */
static uint32_t largest_need(const struct trace *tr, bool predicted, uint64_t tokens)
{
    uint32_t most = 0, n;
    for (uint64_t t = 0; t < tokens && t < tr->n_tokens; t++)
        for (uint32_t l = 0; l < tr->meta.n_layers; l++) {
            trace_set(tr, predicted, t, l, &n);
            most = n > most ? n : most;
        }
    return most;
}

/* Replays the run's decisions (cache/ only, no I/O) for each layer's most
 * rows kept at once. */
static int dry_run(const struct run_plan_input *in, const struct cache_config *cc, const struct cache_geometry *g,
                   uint32_t *rows, char *err, size_t errlen)
{
    struct cache c;
    if (cache_open(&c, cc, g, err, errlen) != 0)
        return -1;
    for (uint32_t l = 0; l < g->n_layers; l++) {
        rows[l] = c.p.n_resident[l];
        for (uint64_t t = 0; t < in->tokens; t++) {
            uint32_t n;
            const uint32_t *need = trace_set(in->trace, in->use_predicted, t % in->trace->n_tokens, l, &n);
            struct cache_step st;
            cache_request(&c, t, l, need, n, false, NULL, &st);
            rows[l] = st.resident_after > rows[l] ? st.resident_after : rows[l];
        }
    }
    cache_close(&c);
    return 0;
}

/* Staging for rows used once, and the bounce buffer of coalesced reads. */
static void size_staging(const struct run_plan_input *in, const struct policy_ops *pol, const struct layout_ops *lay,
                         uint64_t capacity, uint64_t room_rows, struct run_plan_out *out)
{
    uint32_t d_ff = in->m->shape.d_ff;
    uint32_t need = in->trace ? largest_need(in->trace, in->use_predicted, in->tokens) : d_ff;
    uint64_t s;
    if (pol->reads_whole_layers) /* every row it does not hold, each token */
        s = d_ff - policy_layer_rows(pol, capacity, d_ff);
    else if (!pol->keeps_reads) /* the needed rows, dropped after the token */
        s = need;
    else /* keeping policies stage only what a full layer cannot keep: batches of a quarter token */
        s = (need + 3) / 4;
    if (room_rows && s > room_rows / 4 && !pol->reads_whole_layers)
        s = room_rows / 4; /* the rest of the budget goes to the caches; staging goes in batches */
    out->staging_rows = (uint32_t)(s ? s : 1);
    out->bounce_rows = lay->reads_unneeded ? out->staging_rows : 1;
}

/* window:auto's K for a layer cache of `capacity` rows: sim/window_auto.h's
 * rule, the one predict uses too. */
static int choose_window(const struct run_plan_input *in, uint64_t capacity, struct run_plan_out *out, char *err,
                         size_t errlen)
{
    struct window_auto_input wi = {in->trace, in->use_predicted, in->tokens, in->m->shape.d_ff, capacity};
    struct window_auto_choice wc;
    if (window_auto_resolve(&in->policy, &wi, &out->policy, &wc, err, errlen) != 0)
        return -1;
    out->window_k = wc.k;
    out->window_from = wc.from;
    return 0;
}

/* A window the engine holds: K up to RUN_MAX_WINDOW (auto: chosen so). */
static int check_window(const struct policy_spec *policy, char *err, size_t errlen)
{
    char name[POLICY_NAME_MAX];
    if (!policy->ops->takes_arg || policy->arg_auto || policy->arg <= RUN_MAX_WINDOW)
        return 0;
    cache_policy_name(policy, name, sizeof name);
    return err_set(err, errlen, "policy %s: the engine's window is 1 to %u tokens", name, RUN_MAX_WINDOW);
}

/* The policy run, as far as it is known before the budget is shared:
 * window:auto's K is chosen later (choose_window), and needs a budget. */
static int start_policy(const struct run_plan_input *in, const struct plan_share *sh, struct run_plan_out *out,
                        char *err, size_t errlen)
{
    char name[POLICY_NAME_MAX];
    out->policy = in->policy;
    if (in->policy.arg_auto) {
        cache_policy_name(&in->policy, name, sizeof name);
        if (!sh->budget)
            return err_set(err, errlen, "policy %s sizes the window to a DRAM budget%s: it needs one", name,
                           in->device ? " or a device budget" : "");
        return 0;
    }
    if (check_window(&in->policy, err, errlen) != 0)
        return -1;
    out->window_k = in->policy.ops->takes_arg ? (uint32_t)in->policy.arg : 0;
    return 0;
}

int run_plan_check(const struct policy_spec *policy, char *err, size_t errlen)
{
    return check_window(policy, err, errlen);
}

static int check_input(const struct run_plan_input *in, const struct plan_share *sh, const struct policy_ops *pol,
                       char *err, size_t errlen)
{
    char policy[POLICY_NAME_MAX];
    cache_policy_name(&in->policy, policy, sizeof policy);
    if (pol->needs_known && !in->trace && !(pol->known_from_profile && in->profile)) {
        err_set(err, errlen, "policy %s needs the sets to come: it runs only when a trace chooses the neurons%s",
                 policy, pol->known_from_profile ? " or, with the oracle, after a warm-up profile" : "");
        return -1;
    }
    if (pol->needs_future && in->tokens > in->trace->n_tokens) {
        err_set(err, errlen, "policy belady looks into the future: the run's %llu tokens pass the trace's %llu "
                 "(a longer trace, or fewer tokens)", (unsigned long long)in->tokens,
                 (unsigned long long)in->trace->n_tokens);
        return -1;
    }
    if (pol->uses_budget && !sh->budget) {
        err_set(err, errlen, "policy %s keeps what a budget holds: it needs a DRAM budget%s", policy,
                in->device ? " or a device budget" : "");
        return -1;
    }
    return 0;
}

/* hybrid: R resident rows per layer beside one layer's streamed rest (the
 * paper's half of the model in DRAM when no budget is given), in the
 * share's memory. */
static uint64_t hybrid_capacity(const struct run_plan_input *in, const struct plan_share *sh, uint64_t avail)
{
    const struct model_shape *s = &in->m->shape;
    uint64_t layer = (uint64_t)s->d_ff * sh->stage_row;
    if (!sh->budget)
        return 0;
    uint64_t room = avail > layer ? avail - layer : 0;
    /* R rows in each layer and the streamed layer's other d_ff - R staged: R (L row - stage) more than a
     * staged layer (DRAM: R (L - 1) rows; one layer: all of it) */
    uint64_t per = (uint64_t)s->n_layers * sh->row_bytes - sh->stage_row;
    uint64_t r = per ? room / per : s->d_ff;
    return r < s->d_ff ? r : s->d_ff;
}

/* Rows each layer's cache holds: the policy's default, or with a trace
 * what a dry run of it shows the policy keeps (run_plan.h). */
static int layer_rows(const struct run_plan_input *in, struct run_plan_out *out, uint64_t capacity, char *err,
                      size_t errlen)
{
    const struct model *m = in->m;
    const struct model_shape *s = &m->shape;
    out->layer_rows = calloc(s->n_layers, sizeof *out->layer_rows);
    if (!out->layer_rows)
        return err_set(err, errlen, "out of memory");
    struct ffn_flash_config fc = {.policy = out->policy, .capacity_rows = capacity};
    uint32_t deflt = ffn_flash_default_rows(&fc, s->d_ff);
    for (uint32_t l = 0; l < s->n_layers; l++)
        out->layer_rows[l] = deflt;
    if (!in->trace || !deflt)
        return 0;
    struct cache_config cc = {out->policy, in->layout, capacity, in->trace, in->use_predicted, false};
    struct unit_geometry u;
    struct cache_geometry g;
    int rc = model_unit_geometry(m, &u, err, errlen);
    cache_geometry_of_unit(&u, 0 /* rows only: no bytes */, &g);
    if (rc != 0 || dry_run(in, &cc, &g, out->layer_rows, err, errlen) != 0) {
        free(out->layer_rows);
        out->layer_rows = NULL;
        return -1;
    }
    return 0;
}

/* Staging, bounce rows and naive's dram.bin buffer, within what the
 * share leaves after its fixed part (avail): *staged is what they take
 * there (on the device, its staging area alone), out->held_bytes what
 * they take in DRAM. 0, or -1 with err. */
static int plan_staging(const struct run_plan_input *in, const struct plan_share *sh, const struct policy_ops *pol,
                        const struct layout_ops *lay, uint64_t avail, uint64_t capacity, uint64_t *staged,
                        struct run_plan_out *out, char *err, size_t errlen)
{
    uint64_t stride = in->m->bundle_stride;
    size_staging(in, pol, lay, capacity, avail / sh->row_bytes, out);
    /* FFN_ALIGN: the largest alignment a reader takes, so never less than the engine's */
    out->scratch_bytes =
        in->stream_dram ? ffn_flash_stream_scratch(in->m->dram_bytes, in->m->shape.n_layers, FFN_ALIGN) : 0;
    out->held_bytes = (uint64_t)(out->staging_rows + out->bounce_rows) * stride + out->scratch_bytes;
    *staged = sh->device ? (uint64_t)out->staging_rows * sh->stage_row : out->held_bytes;
    if (!sh->budget || *staged <= avail)
        return 0;
    if (sh->device)
        return plan_device_refuse_staging(sh, *staged, out, err, errlen);
    char b1[32], b2[32], b3[32], parts[96];
    plan_human(sh->fixed, b1, sizeof b1), plan_human(*staged, b2, sizeof b2), plan_human(sh->budget, b3, sizeof b3);
    return err_set(err, errlen, "the DRAM budget of %s cannot hold the resident weights and KV cache%s (%s) plus "
                   "the staging area (%s: %u rows of %llu bytes%s)", b3, fixed_parts(in, parts, sizeof parts), b1,
                   b2, out->staging_rows + out->bounce_rows, (unsigned long long)stride,
                   out->scratch_bytes ? " and the buffer through which naive streams dram.bin" : "");
}

/* The rows per layer the share's rest (room, after staged bytes of
 * staging) holds for the policies it sizes: those that use a budget, and
 * those that keep what they read within one (window). capacity is left as
 * it is for the others. */
static int plan_capacity(const struct run_plan_input *in, const struct plan_share *sh, const struct policy_ops *pol,
                         uint64_t room, uint64_t staged, uint64_t *capacity, char *err, size_t errlen)
{
    const struct model_shape *s = &in->m->shape;
    bool sized = pol->uses_budget || (pol->keeps_reads && pol->honours_budget);
    if (sh->budget && sized)
        *capacity = cache_capacity_rows(room, sh->row_bytes, s->n_layers, s->d_ff);
    if (!((pol->uses_budget || (sized && sh->budget)) && *capacity == 0))
        return 0;
    if (sh->device)
        return plan_device_refuse_rows(in, sh, staged, err, errlen);
    char b1[32];
    plan_human(room, b1, sizeof b1);
    return err_set(err, errlen, "the %s left for the FFN caches hold no row in each of %u layers (a row is %llu "
                   "bytes)", b1, s->n_layers, (unsigned long long)in->m->bundle_stride);
}

/* The share the caches are sized to: the device budget's when given, else
 * the DRAM budget's (weights, KV cache and predictor first). */
static int plan_share(const struct run_plan_input *in, struct plan_share *sh, char *err, size_t errlen)
{
    if (in->device_budget && !in->device)
        return err_set(err, errlen, "a device budget needs a device whose memory is not the host's: this backend "
                       "computes in host memory, which the DRAM budget bounds");
    if (in->device_budget) {
        plan_share_device(in, sh);
        return 0;
    }
    uint64_t stride = in->m->bundle_stride;
    *sh = (struct plan_share){.budget = in->budget, .fixed = in->m->dram_bytes + in->kv_bytes + in->predictor_bytes,
                              .row_bytes = stride, .stage_row = stride};
    return 0;
}

/* The share's fixed part does not leave room for anything. */
static int refuse_fixed(const struct run_plan_input *in, const struct plan_share *sh, char *err, size_t errlen)
{
    if (sh->device)
        return plan_device_refuse_fixed(sh, err, errlen);
    char b1[32], b2[32], parts[96];
    plan_human(sh->fixed, b1, sizeof b1), plan_human(sh->budget, b2, sizeof b2);
    return err_set(err, errlen, "the DRAM budget of %s: the weights that stay in DRAM and the KV cache%s already "
                   "take %s", b2, fixed_parts(in, parts, sizeof parts), b1);
}

int run_plan_make(const struct run_plan_input *in, struct run_plan_out *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const struct model *m = in->m;
    const struct model_shape *s = &m->shape;
    const struct policy_ops *pol = in->policy.ops;
    const struct layout_ops *lay = in->layout.ops;
    struct plan_share sh;
    uint64_t staged;
    if (!lay)
        return err_set(err, errlen, "the plan needs a layout");
    if (plan_share(in, &sh, err, errlen) != 0 || start_policy(in, &sh, out, err, errlen) != 0 ||
        check_input(in, &sh, pol, err, errlen) != 0)
        return -1;
    if (sh.budget && sh.fixed >= sh.budget)
        return refuse_fixed(in, &sh, err, errlen);
    uint64_t avail = sh.budget ? sh.budget - sh.fixed : 0;
    uint64_t capacity = pol->keeps_resident_part ? hybrid_capacity(in, &sh, avail) : 0;
    if (plan_staging(in, &sh, pol, lay, avail, capacity, &staged, out, err, errlen) != 0 ||
        plan_capacity(in, &sh, pol, avail - (sh.budget ? staged : 0), staged, &capacity, err, errlen) != 0)
        return -1;
    if (in->policy.arg_auto && choose_window(in, capacity, out, err, errlen) != 0)
        return -1;
    out->capacity_rows = capacity;
    struct unit_geometry u;
    if (model_unit_geometry(m, &u, err, errlen) != 0)
        return -1;
    out->ffn_cache_bytes = capacity * s->n_layers * u.bytes;
    if (layer_rows(in, out, capacity, err, errlen) != 0)
        return -1;
    for (uint32_t l = 0; l < s->n_layers; l++)
        out->held_bytes += (uint64_t)out->layer_rows[l] * m->bundle_stride;
    if (in->device && plan_device_finish(in, &sh, out, err, errlen) != 0) {
        free(out->layer_rows);
        out->layer_rows = NULL;
        return -1;
    }
    return 0;
}

void run_plan_apply(const struct run_plan_out *plan, const struct trace *profile, struct ffn_flash_config *cfg)
{
    cfg->policy = plan->policy;
    cfg->profile = profile;
    cfg->capacity_rows = plan->capacity_rows;
    cfg->layer_rows = plan->layer_rows;
    cfg->stream.staging_rows = plan->staging_rows;
    cfg->stream.bounce_rows = plan->bounce_rows;
    cfg->down.capacity_rows = plan->down_capacity_rows;
    cfg->down.staging_rows = plan->down_staging_rows;
}

int run_plan_dense_device_check(const struct model *m, uint64_t kv_bytes, uint64_t device_budget, char *err,
                                size_t errlen)
{
    uint64_t need = m->dram_bytes + kv_bytes + m->ffn_bytes;
    char b1[32], b2[32];
    if (!device_budget || need <= device_budget)
        return 0;
    plan_human(need, b1, sizeof b1), plan_human(device_budget, b2, sizeof b2);
    return err_set(err, errlen, "the model and its KV cache need %s on the device, the device budget is %s", b1, b2);
}

int run_plan_dense_check(const struct model *m, uint64_t kv_bytes, uint64_t budget, char *err, size_t errlen)
{
    uint64_t need = m->dram_bytes + kv_bytes + m->ffn_bytes;
    if (budget && need > budget)
        return err_set(err, errlen, "the model needs %.2f GB in DRAM, the budget is %.2f GB", (double)need / 1e9,
                       (double)budget / 1e9);
    return 0;
}
