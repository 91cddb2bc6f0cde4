/* The first screen's figures (harness/reproduce_summary.h): speedups
 * beside the paper's, the cost model's holds and misses, the best policy
 * at each DRAM budget; each computed here from the result files. */
#include "harness/reproduce_summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache/mode.h"
#include "cache/policy.h"
#include "cache/policy_spec.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "harness/reproduce_tables.h"
#include "sim/cost_model.h"

/* A shape's Table 3 cells: its CPU modes (cache/mode.c's column: naive,
 * hybrid, all) on the trace, in the table's order. */
struct shape_cells {
    const struct cache_mode *mode[CACHE_MODE_COUNT];
    struct repro_cell c[CACHE_MODE_COUNT];
    bool ran[CACHE_MODE_COUNT];
    size_t n;
};

static void read_cells(const struct repro_summary_row *r, struct shape_cells *s)
{
    s->n = 0;
    for (const struct cache_mode *m; (m = cache_mode_of_table(CACHE_MODE_TABLE3_CPU, s->n)); s->n++) {
        s->mode[s->n] = m;
        s->ran[s->n] = repro_read_run_cell(r->p, r->shape, m->name, "trace", &s->c[s->n]);
    }
}

/* The cell of the mode named so; s->n when it is none of Table 3's. */
static size_t cell_of(const struct shape_cells *s, const char *mode)
{
    size_t i = 0;
    while (i < s->n && strcmp(s->mode[i]->name, mode))
        i++;
    return i;
}

const char *repro_summary_paper_model(const char *shape)
{
    const char *arch = repro_shape_arch(shape);
    const char *full = arch ? repro_shape(arch, REPRO_FULL) : NULL;
    return full && !strcmp(full, "llama-2-7b-fatrelu") ? "llama-2-7b" : full; /* the paper's Llama 2 row */
}

/* The paper's M1 Max CPU figure (Table 3) of the model shape stands for. */
static double paper_cpu(const struct repro_plan *p, const char *shape, const char *mode, const char *key)
{
    const char *model = repro_summary_paper_model(shape);
    const char *match[] = {"model", model, "method", mode, "backend", "CPU", NULL};
    return model ? repro_paper_value(p, "table3.json", match, key) : NAN;
}

/* The rows the headline speaks for: the real shapes, or the tiny ones
 * when there is no other (the tiny tier). *tiny_left: how many left out. */
static size_t headline_rows(const struct repro_summary_row *rows, size_t n, const struct repro_summary_row **out,
                            size_t *tiny_left)
{
    size_t k = 0, real = 0;
    for (size_t i = 0; i < n; i++)
        real += !rows[i].tiny;
    for (size_t i = 0; i < n; i++)
        if (!real || !rows[i].tiny)
            out[k++] = &rows[i];
    *tiny_left = n - k;
    return k;
}

/* " (1 round × 3 tokens: too few)" after a speedup from
 * fewer rounds or tokens than REPRO_SPEEDUP_MIN_*: the fewer of the two cells'. */
static bool too_few_caveat(struct strbuf *b, const struct repro_cell *x, const struct repro_cell *y)
{
    int rounds = x->rounds < y->rounds ? x->rounds : y->rounds;
    double tokens = fmin(x->tokens, y->tokens);
    bool few_tokens = isfinite(tokens) && tokens < REPRO_SPEEDUP_MIN_TOKENS;
    if (rounds >= REPRO_SPEEDUP_MIN_ROUNDS && !few_tokens)
        return false;
    strbuf_add(b, " (%d round%s", rounds, rounds == 1 ? "" : "s");
    if (isfinite(tokens))
        strbuf_add(b, " × %.0f token%s", tokens, tokens == 1 ? "" : "s");
    strbuf_add(b, ": too few)");
    return true;
}

/* " 6.87× / 4.76× |": slow's over fast's (naive over all, or hybrid)
 * here, then the paper's. */
static bool ratio_cell(struct strbuf *b, const struct repro_summary_row *r, const struct shape_cells *s,
                       const char *slow_mode, const char *fast_mode, int part, const char *paper_key)
{
    size_t at = cell_of(s, slow_mode), fast = cell_of(s, fast_mode);
    bool slow_ran = at < s->n && s->ran[at];
    if (!slow_ran || fast == s->n || !s->ran[fast]) {
        strbuf_add(b, " %s did not run |", slow_ran ? fast_mode : slow_mode);
        return false;
    }
    strbuf_add(b, " %.2f×", s->c[at].median[part] / s->c[fast].median[part]);
    bool few = too_few_caveat(b, &s->c[at], &s->c[fast]);
    strbuf_add(b, " / ");
    double slow = paper_cpu(r->p, r->shape, slow_mode, paper_key), quick = paper_cpu(r->p, r->shape, fast_mode, paper_key);
    if (isfinite(slow) && isfinite(quick) && quick > 0)
        strbuf_add(b, "%.2f× |", slow / quick);
    else
        strbuf_add(b, "— |");
    return few;
}

/* The row; true when a speedup in it carries the "too few" caveat. */
static bool speedup_row(struct strbuf *b, const struct repro_summary_row *r)
{
    struct shape_cells s;
    read_cells(r, &s);
    const char *model = repro_summary_paper_model(r->shape);
    strbuf_add(b, "| %s (%s) |", r->label, model ? model : "none");
    for (size_t m = 0; m < s.n; m++) {
        strbuf_add(b, "%s", m ? " → " : " ");
        if (s.ran[m])
            strbuf_add(b, "%.1f", s.c[m].median[REPRO_TOTAL]);
        else
            strbuf_add(b, "%s did not run", s.mode[m]->name);
    }
    strbuf_add(b, " |");
    bool few = ratio_cell(b, r, &s, "naive", "all", REPRO_TOTAL, "total_ms");
    few |= ratio_cell(b, r, &s, "naive", "hybrid", REPRO_TOTAL, "total_ms");
    few |= ratio_cell(b, r, &s, "naive", "all", REPRO_IO, "io_ms");
    strbuf_add(b, "\n");
    return few;
}

void repro_summary_speedups(struct strbuf *b, const struct repro_summary_row *rows, size_t n)
{
    char sequence[128];
    const struct repro_summary_row *head[REPRO_SUMMARY_MAX_ROWS];
    size_t tiny_left, k = headline_rows(rows, n, head, &tiny_left);
    strbuf_add(b, "### Speedups, measured beside the paper's\n\n");
    if (!k) {
        strbuf_add(b, "Table 3's CPU rows did not run: no speedup to give.\n\n");
        return;
    }
    strbuf_add(b, "Per token on this machine's CPU, DRAM half the model (Table 3 below: medians over the rounds, "
                  "neurons from the calibrated trace); a speedup is naive's ms over the faster mode's. The paper's: "
                  "its Table 3, M1 Max CPU, of the model each shape stands for (— where it gives no such row).\n\n"
                  "| shape (the paper's model) | %s, ms/token | all vs naive: here / paper | "
                  "hybrid vs naive: here / paper | I/O alone, all vs naive: here / paper |\n|---|---|---:|---:|---:|\n",
               cache_mode_table_join(CACHE_MODE_TABLE3_CPU, " → ", "", sequence, sizeof sequence));
    bool few = false;
    for (size_t i = 0; i < k; i++)
        few |= speedup_row(b, head[i]);
    if (few)
        strbuf_add(b, "\n\"Too few\": a speedup from under %d rounds, or rounds of under %d measured tokens, whose "
                  "ratio one slow token can move (REPRO_SPEEDUP_MIN_ROUNDS, _TOKENS).\n", REPRO_SPEEDUP_MIN_ROUNDS,
               REPRO_SPEEDUP_MIN_TOKENS);
    if (head[0]->tiny)
        strbuf_add(b, "\nTiny shapes only: their tokens are mostly fixed costs, so these ratios check the pipeline, "
                      "not the paper's claim (`--quick` measures real shapes).\n");
    else if (tiny_left)
        strbuf_add(b, "\nThe %zu tiny shapes are left out here: their tokens are mostly fixed costs (their rows are "
                      "in Table 3).\n", tiny_left);
    strbuf_add(b, "\n");
}

/* Where the cost model holds and where it misses: the lists and, per
 * component, the range of its errors. */
struct model_tally {
    struct strbuf holds, misses, unpriced;
    char last_hold[320], last_miss[320]; /* the shape each list is at, to group a shape's modes */
    double lo[REPRO_TOTAL], hi[REPRO_TOTAL], worst[REPRO_TOTAL];
    char worst_at[REPRO_TOTAL][96];
    double tiny_lo, tiny_hi;
    size_t tiny_n;
};

static void add_err(struct strbuf *list, char *last, const char *shape, const char *what, double err)
{
    if (!strcmp(last, shape))
        strbuf_add(list, ", %s %+.0f%%", what, 100 * err);
    else
        strbuf_add(list, "%s%s %s %+.0f%%", *last ? "; " : "", shape, what, 100 * err);
    snprintf(last, 320, "%s", shape);
}

static void tally_parts(struct model_tally *t, const struct repro_cell *c, const char *shape, const char *mode)
{
    for (int k = 0; k < REPRO_TOTAL; k++) {
        if (!(c->median[k] > 0) || !isfinite(c->model[k]))
            continue;
        double e = cost_rel_err(c->model[k], c->median[k]);
        t->lo[k] = fmin(t->lo[k], e), t->hi[k] = fmax(t->hi[k], e);
        if (fabs(e) > fabs(t->worst[k]) || isnan(t->worst[k])) {
            t->worst[k] = e;
            snprintf(t->worst_at[k], sizeof t->worst_at[k], "%s %s", shape, mode);
        }
    }
}

/* One measured cell: into holds or misses by its total; its parts' errors. */
static void tally_cell(struct model_tally *t, const struct repro_cell *c, bool ran, const char *shape,
                       const char *mode)
{
    if (!ran || !c->modelled) {
        strbuf_add(&t->unpriced, "%s%s %s (%s)", t->unpriced.len ? ", " : "", shape, mode,
                   ran ? "predict did not run" : "did not run");
        return;
    }
    double e = cost_rel_err(c->model[REPRO_TOTAL], c->median[REPRO_TOTAL]);
    if (round(100 * fabs(e)) <= round(100 * REPRO_MODEL_HOLDS)) /* as printed: a -15% holds */
        add_err(&t->holds, t->last_hold, shape, mode, e);
    else
        add_err(&t->misses, t->last_miss, shape, mode, e);
    tally_parts(t, c, shape, mode);
}

static void tally_tiny(struct model_tally *t, const struct repro_summary_row *r)
{
    struct shape_cells s;
    read_cells(r, &s);
    for (size_t m = 0; m < s.n; m++)
        if (s.ran[m] && s.c[m].modelled) {
            double e = cost_rel_err(s.c[m].model[REPRO_TOTAL], s.c[m].median[REPRO_TOTAL]);
            t->tiny_lo = fmin(t->tiny_lo, e), t->tiny_hi = fmax(t->tiny_hi, e);
            t->tiny_n++;
        }
}

/* Fig. 7's shares of a study: fig7/<share>-r1 folders; false when none ran. */
static bool tally_fig7(struct model_tally *t, const struct repro_plan *p, const char *study)
{
    char label[320];
    snprintf(label, sizeof label, "%.255s%sFig. 7 (all, window:auto)", study ? study : "", study ? ": " : "");
    char dir[4400], names[64][64];
    snprintf(dir, sizeof dir, "%s/fig7", p->config.out);
    size_t n = repro_summary_list(dir, "run.json", names, 64), ran = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (len < 4 || strcmp(names[i] + len - 3, "-r1"))
            continue;
        char prefix[128], share[64];
        snprintf(share, sizeof share, "at %.*s%%", (int)(len - 3), names[i]);
        snprintf(prefix, sizeof prefix, "fig7/%.*s", (int)(len - 3), names[i]);
        struct repro_cell c;
        tally_cell(t, &c, repro_read_cell(p, prefix, &c), label, share);
        ran++;
    }
    return ran > 0;
}

static bool plan_has(const struct repro_plan *p, const char *section)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->steps[i].section, section))
            return true;
    return false;
}

static void model_parts(struct strbuf *b, const struct model_tally *t)
{
    static const char *const names[] = {"I/O", "memory management", "compute"};
    strbuf_add(b, "- By component, over these rows:");
    for (int k = 0; k < REPRO_TOTAL; k++) {
        if (isnan(t->worst[k]))
            strbuf_add(b, "%s %s not measured", k ? ";" : "", names[k]);
        else
            strbuf_add(b, "%s %s %+.0f%% to %+.0f%% (furthest: %s)", k ? ";" : "", names[k], 100 * t->lo[k],
                       100 * t->hi[k], t->worst_at[k]);
    }
    strbuf_add(b, ".\n");
}

static void model_lists(struct strbuf *b, struct model_tally *t)
{
    char *holds = strbuf_take(&t->holds), *misses = strbuf_take(&t->misses), *unpriced = strbuf_take(&t->unpriced);
    strbuf_add(b, "- **Holds** (total within ±%.0f%% of the measured): %s.\n", 100 * REPRO_MODEL_HOLDS,
               holds && *holds ? holds : "nowhere");
    strbuf_add(b, "- **Misses** (beyond ±%.0f%%): %s.\n", 100 * REPRO_MODEL_HOLDS, misses && *misses ? misses : "nowhere");
    model_parts(b, t);
    if (unpriced && *unpriced)
        strbuf_add(b, "- No figure: %s.\n", unpriced);
    if (t->tiny_n)
        strbuf_add(b, "- The tiny shapes' %zu rows, left out above (fixed costs per read and per layer, which the "
                      "model does not price, dominate their tokens): %+.0f%% to %+.0f%%.\n",
                   t->tiny_n, 100 * t->tiny_lo, 100 * t->tiny_hi);
    free(holds), free(misses), free(unpriced);
}

void repro_summary_cost_model(struct strbuf *b, const struct repro_summary_row *rows, size_t n,
                              const struct repro_plan *const *plans, const char *const *names, size_t n_plans)
{
    struct model_tally t = {.tiny_lo = INFINITY, .tiny_hi = -INFINITY};
    for (int k = 0; k < REPRO_TOTAL; k++)
        t.lo[k] = INFINITY, t.hi[k] = -INFINITY, t.worst[k] = NAN;
    const struct repro_summary_row *head[REPRO_SUMMARY_MAX_ROWS];
    size_t tiny_left, k = headline_rows(rows, n, head, &tiny_left);
    for (size_t i = 0; i < k; i++) {
        struct shape_cells s;
        read_cells(head[i], &s);
        for (size_t m = 0; m < s.n; m++)
            tally_cell(&t, &s.c[m], s.ran[m], head[i]->label, s.mode[m]->name);
    }
    for (size_t i = 0; i < n && tiny_left; i++)
        if (rows[i].tiny)
            tally_tiny(&t, &rows[i]);
    for (size_t s = 0; s < n_plans; s++)
        if (!tally_fig7(&t, plans[s], names ? names[s] : NULL) && plan_has(plans[s], "fig7"))
            strbuf_add(&t.unpriced, "%sFig. 7 (did not run)", t.unpriced.len ? ", " : "");
    strbuf_add(b, "### The cost model against the measurements\n\n`flashbed predict` on this machine's profile "
                  "against the measured medians above and Fig. 7's (error: modelled against measured).\n\n");
    model_lists(b, &t);
    strbuf_add(b, "\n");
}

/* The best deployable feasible row of one budget of a replay; NULL when
 * none. A policy that needs the future (belady) is a bound, not a choice. */
static const cJSON *best_row(const cJSON *results, const char *budget)
{
    const cJSON *best = NULL, *row;
    cJSON_ArrayForEach(row, results)
    {
        const cJSON *bud = cJSON_GetObjectItemCaseSensitive(row, "dram_budget");
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(row, "total_ms");
        const cJSON *pol = cJSON_GetObjectItemCaseSensitive(row, "policy");
        struct policy_spec spec;
        char err[256];
        if (!cJSON_IsString(bud) || strcmp(bud->valuestring, budget) || !cJSON_IsNumber(ms) || !cJSON_IsString(pol) ||
            !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "feasible")))
            continue;
        if (cache_policy_parse(pol->valuestring, false, &spec, err, sizeof err) != 0 || spec.ops->needs_future)
            continue;
        if (!best || ms->valuedouble < cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(best, "total_ms")))
            best = row;
    }
    return best;
}

/* The budgets of a replay, in its order; n of them, at most max. */
static size_t replay_budgets(const cJSON *results, char (*budgets)[32], size_t max)
{
    size_t n = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, results)
    {
        const char *bud = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "dram_budget"));
        bool seen = !bud;
        for (size_t i = 0; i < n && !seen; i++)
            seen = !strcmp(budgets[i], bud);
        if (!seen && n < max)
            snprintf(budgets[n++], 32, "%.31s", bud);
    }
    return n;
}

static cJSON *read_replay(const struct repro_plan *p, const char *trace)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/policies/%s/replay.json", p->config.out, trace);
    return read_json_file(path);
}

/* replay's reason at budget for a streaming winner: its verdict's "Why
 * not caching:" sentence (sim/replay_verdict.c), NULL when it gives none. */
static char *why_not_caching(const cJSON *replay, const char *budget)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(replay, "verdict"), "budgets");
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        const char *at = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "dram_budget"));
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "text"));
        const char *why = at && text && !strcmp(at, budget) ? strstr(text, "Why not caching: ") : NULL;
        if (why) {
            why += strlen("Why not caching: ");
            return strndup(why, strcspn(why, "\n"));
        }
    }
    return NULL;
}

/* Whether row is a policy a system can run that caches (neither reads
 * whole layers nor needs the future), feasible at budget. */
static bool runnable_caching_fits(const cJSON *row, const char *budget)
{
    const char *bud = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "dram_budget"));
    const char *pol = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "policy"));
    struct policy_spec spec;
    char err[256];
    return bud && pol && !strcmp(bud, budget) && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "feasible")) &&
           cache_policy_parse(pol, false, &spec, err, sizeof err) == 0 && !spec.ops->reads_whole_layers &&
           !spec.ops->needs_future;
}

/* A streaming winner's reason, short enough for its cell: " (no caching
 * policy fits)" when no caching row a system can run is feasible at the
 * budget (belady left out, as the cell's choice leaves it); else replay's
 * verdict's " (caching IOPS-bound)" where it says so, or " (caching
 * slower)"; "" for a caching winner. */
static const char *streaming_reason(const cJSON *replay, const char *budget, const cJSON *best)
{
    const char *policy = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(best, "policy"));
    struct policy_spec spec;
    char err[256];
    if (!policy || cache_policy_parse(policy, false, &spec, err, sizeof err) != 0 || !spec.ops->reads_whole_layers)
        return "";
    const cJSON *row;
    bool fits = false;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(replay, "results"))
        fits = fits || runnable_caching_fits(row, budget);
    if (!fits)
        return " (no caching policy fits)";
    char *why = why_not_caching(replay, budget);
    const char *tag = why && strstr(why, "IOPS-bound") ? " (caching IOPS-bound)" : " (caching slower)";
    free(why);
    return tag;
}

static void best_policy_row(struct strbuf *b, const struct repro_plan *p, const char *study, const char *trace,
                            char (*budgets)[32], size_t n_budgets)
{
    cJSON *r = read_replay(p, trace);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(r, "results");
    strbuf_add(b, "| %s%s%s |", study ? study : "", study ? ": " : "", trace);
    for (size_t i = 0; i < n_budgets; i++) {
        const cJSON *best = results ? best_row(results, budgets[i]) : NULL;
        if (best) {
            strbuf_add(b, " %s, %s: %.3g ms%s |", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(best, "policy")),
                       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(best, "layout")),
                       cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(best, "total_ms")),
                       streaming_reason(r, budgets[i], best));
        } else {
            strbuf_add(b, " %s |", results ? "none feasible" : "did not run");
        }
    }
    strbuf_add(b, "\n");
    cJSON_Delete(r);
}

/* The budgets of the first replay that ran; 0 when none did. */
static size_t study_budgets(const struct repro_plan *const *plans, size_t n, char (*budgets)[32], size_t max)
{
    for (size_t s = 0; s < n; s++) {
        char names[32][64];
        size_t k = repro_summary_traces(plans[s], names, 32);
        for (size_t i = 0; i < k; i++) {
            cJSON *r = read_replay(plans[s], names[i]);
            size_t got = replay_budgets(cJSON_GetObjectItemCaseSensitive(r, "results"), budgets, max);
            cJSON_Delete(r);
            if (got)
                return got;
        }
    }
    return 0;
}

void repro_summary_policies(struct strbuf *b, const struct repro_plan *const *plans, const char *const *names,
                            size_t n)
{
    strbuf_add(b, "### The best policy at each DRAM budget\n\n");
    char budgets[8][32];
    size_t n_budgets = study_budgets(plans, n, budgets, 8);
    if (!n_budgets) {
        strbuf_add(b, "The policy study did not run.\n\n");
        return;
    }
    strbuf_add(b, "From the policy study (`replay` of each trace, priced by the cost model on this machine's "
                  "profile): per budget, the feasible policy and layout with the least modelled ms per token "
                  "(I/O + memory + compute), among those a system can run (belady, which knows the future, is "
                  "their bound and left out).\n\n| trace |");
    for (size_t i = 0; i < n_budgets; i++)
        strbuf_add(b, " %s |", budgets[i]);
    strbuf_add(b, "\n|---|");
    for (size_t i = 0; i < n_budgets; i++)
        strbuf_add(b, "---|");
    strbuf_add(b, "\n");
    for (size_t s = 0; s < n; s++) {
        char traces[32][64];
        size_t k = repro_summary_traces(plans[s], traces, 32);
        for (size_t i = 0; i < k; i++)
            best_policy_row(b, plans[s], names ? names[s] : NULL, traces[i], budgets, n_budgets);
    }
    strbuf_add(b, "\nWhere a mode that streams whole layers (naive, hybrid) won, the bracket says why: no caching policy a system "
                  "can run fits the budget (a token needs more rows of a layer than it holds), or, from replay's "
                  "verdict (its figures in each trace's policies/TRACE/replay.md), caching's reads are IOPS-bound, or "
                  "caching is slower in the model.\n\n");
}
