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

int replay_window_sweep(const struct replay_study *s, struct replay_result *sweep, size_t *done,
                        replay_study_step step, void *ctx, char *err, size_t errlen)
{
    char why[1024];
    for (size_t k = 0; k < s->n_layouts; k++)
        for (size_t w = 0; w < REPLAY_SWEEP_K; w++) {
            char name[32], layout[LAYOUT_NAME_MAX];
            struct policy_spec window = policy_spec_of(&policy_window, w + 1);
            cache_policy_name(&window, name, sizeof name);
            struct replay_spec spec = {window, s->layouts[k], s->budgets[0].bytes, s->use_predicted, true,
                                       s->row_stride, s->read_align};
            if (replay_run(s->tr, &spec, &sweep[k * REPLAY_SWEEP_K + w], why, sizeof why) != 0) {
                cache_layout_name(&s->layouts[k], layout, sizeof layout);
                return err_set(err, errlen, "%s x %s: %s", name, layout, why);
            }
            (*done)++;
            if (step && !step(ctx, *done, name))
                return 0;
        }
    return 0;
}
