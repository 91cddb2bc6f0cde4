/* REPORT.md's Fig. 7, measured (harness/reproduce_tables.h): the first
 * model's all-mode runs with window:auto at each DRAM share, beside the
 * cost model's price of the same window, as a table, fig7/fig7.csv and a
 * plot (plots/fig7_measured.gp) with the paper's modelled curve
 * (paper-fig7/fig7.csv) on a second axis. Every number comes from the
 * steps' result files. */
#include "harness/reproduce_tables.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/gnuplot.h"

#define MAX_SHARES 16

/* The shares the plan measures, in its order: its fig7-<share>-predict steps. */
static int plan_shares(const struct repro_plan *p, int shares[MAX_SHARES])
{
    int n = 0;
    for (size_t i = 0; i < p->n && n < MAX_SHARES; i++) {
        const char *id = p->steps[i].id;
        size_t len = strlen(id);
        if (!strncmp(id, "fig7-", 5) && len > 13 && !strcmp(id + len - 8, "-predict"))
            shares[n++] = atoi(id + 5);
    }
    return n;
}

/* Whole numbers over the rounds: "16", "15–16" when they differ, "—" when none says. */
static void add_range(struct strbuf *b, const double *v, int n)
{
    double lo = NAN, hi = NAN;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            lo = isnan(lo) || v[i] < lo ? v[i] : lo;
            hi = isnan(hi) || v[i] > hi ? v[i] : hi;
        }
    if (isnan(lo))
        strbuf_add(b, " — |");
    else if (lo == hi)
        strbuf_add(b, " %.0f |", lo);
    else
        strbuf_add(b, " %.0f–%.0f |", lo, hi);
}

static void add_num(struct strbuf *b, double v)
{
    if (isfinite(v))
        strbuf_add(b, " %.3f |", v);
    else
        strbuf_add(b, " — |");
}


static void table_row(struct strbuf *b, int share, const struct repro_cell *c)
{
    strbuf_add(b, "| %d%% |", share);
    add_range(b, c->window_k, c->rounds);
    add_range(b, &c->model_k, 1);
    add_range(b, c->rows, c->rounds);
    add_range(b, &c->model_rows, 1);
    strbuf_add(b, " %d | %.3f (%.3f–%.3f) |", c->rounds, c->median[REPRO_TOTAL], c->lo, c->hi);
    for (int k = 0; k < REPRO_TOTAL; k++)
        add_num(b, c->median[k]);
    for (int k = 0; k < REPRO_N_PARTS; k++)
        add_num(b, c->modelled ? c->model[(k + REPRO_TOTAL) % REPRO_N_PARTS] : NAN); /* total first */
    repro_add_error(b, c->modelled ? c->model[REPRO_TOTAL] : NAN, c->median[REPRO_TOTAL]);
    strbuf_add(b, "\n");
}

static void csv_row(struct strbuf *b, int share, const struct repro_cell *c)
{
    strbuf_add(b, "%d,", share);
    for (int k = 0; k < REPRO_N_PARTS; k++)
        repro_csv_num(b, c->median[(k + REPRO_TOTAL) % REPRO_N_PARTS], ",");
    for (int k = 0; k < REPRO_N_PARTS; k++)
        repro_csv_num(b, c->modelled ? c->model[(k + REPRO_TOTAL) % REPRO_N_PARTS] : NAN, ",");
    repro_csv_num(b, c->lo, ",");
    repro_csv_num(b, c->hi, ",");
    repro_csv_num(b, c->window_k[0], ",");
    repro_csv_num(b, c->model_k, "\n");
}

/* fig7/fig7.csv and the plot; what went wrong is said in the report. */
static void draw(struct strbuf *b, const struct repro_plan *p, const char *shape, const char *csv_text)
{
    char paper[4400], title[400];
    snprintf(paper, sizeof paper, "%s/paper-fig7/fig7.csv", p->config.out);
    snprintf(title, sizeof title, "Fig. 7 measured: %s, all with window:auto, on this machine", shape);
    const struct gnuplot_arg args[] = {GP_TEXT("paper_csv", path_exists(paper) ? paper : ""),
                                       GP_TEXT("plot_title", title)};
    if (repro_plot(b, p, "fig7/fig7", csv_text, "fig7_measured.gp", args, 2, "Fig. 7 measured") && !path_exists(paper))
        strbuf_add(b, "The paper's modelled curve is not drawn: `paper-fig7/fig7.csv` is not written yet.\n\n");
}

void repro_section_fig7(struct strbuf *b, const struct repro_plan *p)
{
    const char *shape = repro_shape(p->config.models[0], p->config.tier);
    strbuf_add(b, "## Fig. 7, measured: latency against the DRAM share, the window following the budget\n\n"
                  "%s in all mode with `--window auto` (the largest window whose rows fit each layer's cache: "
                  "K from the trace's peaks over the run's tokens, and at most those tokens), neurons chosen by "
                  "its calibrated trace, at each DRAM share, rounds alternating the shares; beside it `predict "
                  "--policy window:auto` on this machine's profile, choosing K by the same rule. The two K can "
                  "differ: the run's share is of the model's files (FFN rows in bundles padded for direct I/O: "
                  "on the tiny shapes, whose rows are small, most of the file) and it also holds the KV cache "
                  "and staging; predict's share is of the unpadded weights, so each gets its own rows per layer "
                  "(both columns). Measured: median ms/token over the rounds (min–max); modelled: the cost "
                  "model; error: modelled against measured.\n\n"
                  "| DRAM share | K: run | K: predict | rows/layer: run | rows/layer: predict | rounds | measured "
                  "ms/token | I/O | mem | compute | modelled | I/O | mem | compute | total err |\n"
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
               shape);
    int shares[MAX_SHARES], n = plan_shares(p, shares);
    struct strbuf csv = {0};
    strbuf_add(&csv, "share,measured_total,measured_io,measured_mem,measured_compute,modelled_total,modelled_io,"
                     "modelled_mem,modelled_compute,measured_min,measured_max,run_k,predict_k\n");
    bool any = false;
    for (int i = 0; i < n; i++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "fig7/%d", shares[i]);
        struct repro_cell c;
        if (!repro_read_cell(p, prefix, &c))
            continue;
        table_row(b, shares[i], &c);
        csv_row(&csv, shares[i], &c);
        any = true;
    }
    if (any) {
        strbuf_add(b, "\n(from `fig7/<share>-r<round>/run.json` and `fig7/<share>-predict/predict.json`; the "
                      "paper's curve from `paper-fig7/fig7.csv`: `predict --paper fig7`, the paper's OPT-6.7B on "
                      "its RTX 4090 profile, modelled: another model and machine, on the right axis for its "
                      "shape)\n\n");
        draw(b, p, shape, csv.s ? csv.s : "");
    } else {
        strbuf_add(b, "\nNot measured yet.\n\n");
    }
    if (p->fig7_left_out[0])
        strbuf_add(b, "Left out: %s.\n\n", p->fig7_left_out);
    free(csv.s);
}
