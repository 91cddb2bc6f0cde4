#include "sim/replay_study.h"

#include <stdio.h>

#include "cache/cache.h"
#include "common/errbuf.h"

/* Replays one configuration into row and prices it. */
static int one_row(const struct replay_study *s, const struct replay_budget *b, const struct policy_spec *pol,
                   const struct layout_spec *lay, struct replay_row *row, size_t *done, char *err, size_t errlen)
{
    char why[1024], policy[POLICY_NAME_MAX], layout[LAYOUT_NAME_MAX];
    cache_policy_name(pol, policy, sizeof policy);
    cache_layout_name(lay, layout, sizeof layout);
    struct replay_spec spec = {*pol, *lay, b->bytes, s->use_predicted, !b->none, s->row_stride, s->read_align};
    if (replay_run(s->tr, &spec, &row->res, why, sizeof why) != 0) {
        err_set(err, errlen, "%s x %s at %s: %s", policy, layout, b->text, why);
        return -1;
    }
    (*done)++;
    row->budget = b->text;
    row->budget_share = b->share;
    if (!s->pricing)
        return 0;
    if (replay_pricing_price(s->pricing, &row->res, &row->modelled, why, sizeof why) != 0) {
        err_set(err, errlen, "pricing %s x %s at %s on %s: %s", policy, layout, b->text, s->pricing->hw->name, why);
        return -1;
    }
    row->priced = true;
    return 0;
}

int replay_study_run(const struct replay_study *s, struct replay_row *rows, size_t *done, replay_study_step step,
                     void *ctx, char *err, size_t errlen)
{
    *done = 0;
    for (size_t b = 0; b < s->n_budgets; b++)
        for (size_t i = 0; i < s->n_policies; i++)
            for (size_t k = 0; k < s->n_layouts; k++) {
                if (one_row(s, &s->budgets[b], &s->policies[i], &s->layouts[k], &rows[*done], done, err, errlen) != 0)
                    return -1;
                if (step && !step(ctx, *done, rows[*done - 1].res.policy))
                    return 0;
            }
    return 0;
}

void replay_rows_free(struct replay_row *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        replay_result_free(&rows[i].res);
}

int replay_window_sweep(const struct replay_study *s, const struct replay_budget *b, struct replay_result *sweep,
                        size_t *done, replay_study_step step, void *ctx, char *err, size_t errlen)
{
    char why[1024];
    for (size_t k = 0; k < s->n_layouts; k++)
        for (size_t w = 0; w < REPLAY_SWEEP_K; w++) {
            char name[32], layout[LAYOUT_NAME_MAX];
            struct policy_spec window = policy_spec_of(&policy_window, w + 1);
            cache_policy_name(&window, name, sizeof name);
            struct replay_spec spec = {window, s->layouts[k], b->bytes, s->use_predicted, !b->none,
                                       s->row_stride, s->read_align};
            if (replay_run(s->tr, &spec, &sweep[k * REPLAY_SWEEP_K + w], why, sizeof why) != 0) {
                cache_layout_name(&s->layouts[k], layout, sizeof layout);
                return err_set(err, errlen, "%s x %s at %s: %s", name, layout, b->text, why);
            }
            (*done)++;
            if (step && !step(ctx, *done, name))
                return 0;
        }
    return 0;
}

double replay_window_spread(const struct replay_result *sweep, size_t n_layouts)
{
    double most = 0;
    for (size_t l = 0; l < n_layouts; l++) {
        const struct replay_result *r = &sweep[l * REPLAY_SWEEP_K]; /* from window:2, k = 1 */
        double lo = r[1].bytes_per_token, hi = lo;
        for (size_t k = 2; k < REPLAY_SWEEP_K; k++) {
            lo = r[k].bytes_per_token < lo ? r[k].bytes_per_token : lo;
            hi = r[k].bytes_per_token > hi ? r[k].bytes_per_token : hi;
        }
        if (hi > 0 && (hi - lo) / hi > most)
            most = (hi - lo) / hi;
    }
    return most;
}

size_t replay_window_choose(const struct replay_result *sweeps, const struct replay_budget *b, size_t n,
                            size_t n_study, size_t n_layouts, char *why, size_t len)
{
    size_t per = n_layouts * REPLAY_SWEEP_K, best = 0;
    double spread = -1;
    for (size_t i = 0; i < n_study; i++) {
        double x = replay_window_spread(&sweeps[i * per], n_layouts);
        if (x > spread) {
            spread = x;
            best = i;
        }
    }
    if (spread >= REPLAY_WINDOW_FLAT || n <= n_study) {
        snprintf(why, len, "at %s, the study's budget where the window's size (k = 1..16) changes the bytes per "
                           "token most (by %.0f%%)", b[best].text, 100 * spread);
        return best;
    }
    snprintf(why, len, "without a budget: at every budget of the study the window's size (k = 1..16) changes the "
                       "bytes per token by under %.0f%% (the budget leaves no room for more tokens' rows); without "
                       "one, by %.0f%%", 100 * REPLAY_WINDOW_FLAT,
             100 * replay_window_spread(&sweeps[n_study * per], n_layouts));
    return n_study;
}
