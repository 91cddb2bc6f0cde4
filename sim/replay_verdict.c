#include "sim/replay_verdict.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/policy.h"
#include "common/strbuf.h"

/* An effective rate below this share of the sequential bandwidth is what
 * the verdict calls IOPS-bound: the reads' count, not their bytes, sets
 * their time. */
#define IOPS_BOUND_SHARE 0.5

static bool same_budget(const struct replay_row *a, const struct replay_row *b)
{
    return a->res.dram_budget == b->res.dram_budget && a->res.budget_given == b->res.budget_given &&
           !strcmp(a->budget, b->budget);
}

static bool is_caching(const struct replay_row *r)
{
    return !r->res.pol.ops->reads_whole_layers;
}

static double ms(const struct replay_row *r)
{
    return r->modelled.prediction.serial_ms;
}

/* Whether r beats the current pick *p (strictly faster, so ties keep the first). */
static void keep_faster(const struct replay_row *r, const struct replay_row **p)
{
    if (!*p || ms(r) < ms(*p))
        *p = r;
}

/* One budget's verdict over the rows of that budget (from index i on). */
static void judge(const struct replay_row *rows, size_t n, size_t i, struct replay_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->first = &rows[i];
    const struct replay_row *any_caching = NULL;
    for (size_t j = i; j < n; j++) {
        const struct replay_row *r = &rows[j];
        if (!same_budget(r, v->first) || !r->priced)
            continue;
        if (r->res.feasible)
            keep_faster(r, &v->best);
        if (!is_caching(r))
            continue;
        v->n_caching++;
        if (r->res.max_needed_rows > v->max_needed_rows)
            v->max_needed_rows = r->res.max_needed_rows;
        keep_faster(r, &any_caching);
        if (r->res.feasible) {
            v->n_caching_feasible++;
            keep_faster(r, &v->caching);
        }
    }
    if (!v->caching)
        v->caching = any_caching;
    bool future = v->best && v->best->res.pol.ops->needs_future;
    for (size_t j = i; v->best && j < n; j++) {
        const struct replay_row *r = &rows[j];
        if (!same_budget(r, v->first) || !r->priced || !r->res.feasible)
            continue;
        if (!policy_spec_equal(&r->res.pol, &v->best->res.pol))
            keep_faster(r, &v->runner_up);
        if (future && !r->res.pol.ops->needs_future)
            keep_faster(r, &v->online);
    }
}

size_t replay_verdicts(const struct replay_row *rows, size_t n, struct replay_verdict *v)
{
    size_t nv = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < nv && !seen; k++)
            seen = same_budget(v[k].first, &rows[i]);
        if (!seen)
            judge(rows, n, i, &v[nv++]);
    }
    return nv;
}

/* "window:5 with bundled" */
static void config_name(const struct replay_row *r, char *buf, size_t len)
{
    snprintf(buf, len, "%s with %s", r->res.policy, r->res.layout);
}

/* The budget's heading: "25% (1.23 MB, 43 rows per layer)". */
static void budget_head(struct strbuf *b, const struct replay_row *r)
{
    if (!r->res.budget_given)
        strbuf_add(b, "- %s (no budget): ", r->budget);
    else
        strbuf_add(b, "- %s (%.3g MB, %llu rows per layer): ", r->budget, r->res.dram_budget / 1e6,
                   (unsigned long long)r->res.budget_rows);
}

/* Why the best row is feasible, in its own numbers. */
static void feasible_words(struct strbuf *b, const struct replay_row *r)
{
    if (!is_caching(r))
        strbuf_add(b, "feasible (it streams whole layers)");
    else if (!r->res.budget_given)
        strbuf_add(b, "feasible (no budget)");
    else
        strbuf_add(b, "feasible (a token needs up to %llu rows in one layer; the budget holds %llu)",
                   (unsigned long long)r->res.max_needed_rows, (unsigned long long)r->res.budget_rows);
    if (is_caching(r) && r->res.transient_rows)
        strbuf_add(b, ", with a transient of up to %llu row%s (%.3g KB) over a layer's share while a token is computed",
                   (unsigned long long)r->res.transient_rows, r->res.transient_rows == 1 ? "" : "s",
                   r->res.transient_bytes / 1e3);
}

/* A row's flash traffic per token: a caching row's bytes in its reads; a
 * whole-layer row's FFN bytes, which the cost model prices as one
 * sequential stream (its replayed reads are not what it pays for). */
static void volume_words(struct strbuf *b, const struct replay_row *r)
{
    if (is_caching(r)) /* whole reads, or two digits of a fraction (a read every few tokens) */
        strbuf_add(b, "%.3g MB in %.*f reads per token", r->res.bytes_per_token / 1e6,
                   r->res.reads_per_token < 10 ? 2 : 0, r->res.reads_per_token);
    else
        strbuf_add(b, "%.3g MB of FFN per token, streamed", r->res.bytes_per_token / 1e6);
}

/* The winner and the runner-up. */
static void winner_line(struct strbuf *b, const struct replay_verdict *v)
{
    const struct replay_row *w = v->best;
    const struct cost_prediction *c = &w->modelled.prediction;
    char name[160];
    config_name(w, name, sizeof name);
    strbuf_add(b, "best %s, %.3g ms per token (I/O %.3g, memory %.3g, compute %.3g); ", name, ms(w), c->io_ms,
               c->mem_ms, c->compute_ms);
    volume_words(b, w);
    strbuf_add(b, "; ");
    feasible_words(b, w);
    strbuf_add(b, ".\n");
    if (!v->runner_up) {
        strbuf_add(b, "  Runner-up: none (no other policy is feasible here).\n");
        return;
    }
    config_name(v->runner_up, name, sizeof name);
    strbuf_add(b, "  Runner-up: %s, %.3g ms (+%.0f%%); ", name, ms(v->runner_up),
               ms(w) > 0 ? 100 * (ms(v->runner_up) / ms(w) - 1) : 0);
    volume_words(b, v->runner_up);
    strbuf_add(b, ".\n");
    if (v->online) {
        config_name(v->online, name, sizeof name);
        strbuf_add(b, "  %s reads the future (the offline lower bound); the fastest a run can use: %s, %.3g ms "
                      "(+%.0f%%).\n",
                   w->res.policy, name, ms(v->online), ms(w) > 0 ? 100 * (ms(v->online) / ms(w) - 1) : 0);
    }
}

/* Why the caching row c's reads cost what they do against the winner w's. */
static void io_words(struct strbuf *b, const struct replay_row *c, const struct replay_row *w,
                     const struct hw_profile *hw)
{
    const struct cost_prediction *pc = &c->modelled.prediction, *pw = &w->modelled.prediction;
    char name[160];
    config_name(c, name, sizeof name);
    if (pc->io_ms <= pw->io_ms) {
        strbuf_add(b, "%s, reads less (%.3g ms of I/O against %s's %.3g) but its memory management and "
                      "compute (the predictor included) bring it to %.3g ms",
                   name, pc->io_ms, w->res.policy, pw->io_ms, ms(c));
        return;
    }
    double io_s = pc->io_ms / 1e3, rate = io_s > 0 ? pc->reads_per_token / io_s : 0;
    double bw = io_s > 0 ? pc->bytes_per_token / io_s : 0, seq = hw->flash.sequential_bw;
    if (seq > 0 && rate > 0 && bw < IOPS_BOUND_SHARE * seq)
        strbuf_add(b, "%s, is IOPS-bound on %s: its reads of %.0f bytes, %.0f per token at %.0f reads/s "
                      "(%.3g MB/s, %.1f%% of the profile's %.3g GB/s sequential), take %.3g ms of I/O against %s's "
                      "%.3g ms",
                   name, hw->name, pc->chunk_bytes, pc->reads_per_token, rate, bw / 1e6, 100 * bw / seq, seq / 1e9,
                   pc->io_ms, w->res.policy, pw->io_ms);
    else
        strbuf_add(b, "%s, reads %.3g MB in %.0f reads per token: %.3g ms of I/O against %s's %.3g ms", name,
                   pc->bytes_per_token / 1e6, pc->reads_per_token, pc->io_ms, w->res.policy, pw->io_ms);
}

/* Why no caching policy won, when one that reads whole layers did. */
static void why_not_caching(struct strbuf *b, const struct replay_verdict *v, const struct hw_profile *hw)
{
    if (!is_caching(v->best) && v->caching) {
        const struct replay_row *f = v->first;
        if (v->n_caching_feasible == 0 && !f->res.transposed && f->res.budget_rows > 0)
            strbuf_add(b, "  Why not caching: every caching policy is infeasible at %s: a token needs up to %llu of "
                          "a layer's %u rows (%.0f%%), the budget holds %llu (%.0f%%). Were they feasible, the fastest, ",
                       f->budget, (unsigned long long)v->max_needed_rows, f->res.d_ff,
                       100.0 * v->max_needed_rows / f->res.d_ff, (unsigned long long)f->res.budget_rows,
                       100.0 * f->res.budget_rows / f->res.d_ff);
        else if (v->n_caching_feasible == 0)
            strbuf_add(b, "  Why not caching: every caching policy is infeasible at %s: %s. Were they feasible, the "
                          "fastest, ",
                       f->budget, v->caching->res.infeasible);
        else
            strbuf_add(b, "  Why not caching: the fastest feasible caching row, ");
        io_words(b, v->caching, v->best, hw);
        strbuf_add(b, ".\n");
    }
}

char *replay_verdict_lines(const struct replay_verdict *v, const struct hw_profile *hw)
{
    struct strbuf b = {0};
    budget_head(&b, v->first);
    if (!v->best) {
        strbuf_add(&b, "no verdict: no row is priced and feasible.\n");
        return strbuf_take(&b);
    }
    winner_line(&b, v);
    why_not_caching(&b, v, hw);
    return strbuf_take(&b);
}

char *replay_verdict_text(const struct replay_row *rows, size_t n, const struct hw_profile *hw,
                          const char *profile_note)
{
    struct replay_verdict *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return NULL;
    struct strbuf b = {0};
    strbuf_add(&b, "## Verdict: the fastest feasible policy and layout at each budget\n\n%s Ranked by the modelled "
                   "time per token (serial: I/O + memory + compute).\n\n", profile_note);
    size_t nv = replay_verdicts(rows, n, v);
    for (size_t i = 0; i < nv; i++) {
        char *lines = replay_verdict_lines(&v[i], hw);
        strbuf_add(&b, "%s", lines ? lines : "");
        b.failed |= !lines;
        free(lines);
    }
    free(v);
    return strbuf_take(&b);
}
