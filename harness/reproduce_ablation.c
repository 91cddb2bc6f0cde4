/* Table 2 as a bar chart, one per model of the study: each mode's measured
 * ms per token (median over the rounds) with the trace choosing the neurons
 * and, where it ran, the trained predictor, beside the cost model's price,
 * each bar stacked I/O, memory, compute; on the paper's own model
 * (OPT-6.7B, --full) its Table 2 I/O beside them. Every bar is a number of
 * REPORT.md's Table 2 (the same cells, harness/reproduce_tables.h). */
#include "harness/reproduce_tables.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gnuplot.h"

/* One bar: label, then I/O, memory, compute, total (empty: not there). */
static void csv_bar(struct strbuf *csv, const char *mode, const char *what, double io, double mem, double compute,
                    double total)
{
    strbuf_add(csv, "%s: %s,", mode, what);
    repro_csv_num(csv, io, ",");
    repro_csv_num(csv, mem, ",");
    repro_csv_num(csv, compute, ",");
    repro_csv_num(csv, total, "\n");
}

/* The bars of one model; false when none of its runs has finished. */
static bool ablation_csv(const struct repro_plan *p, const char *shape, struct strbuf *csv)
{
    strbuf_add(csv, "bar,io_ms,mem_ms,compute_ms,total_ms\n");
    bool any = false, paper = !strcmp(shape, "opt-6.7b"); /* the only model of the paper's Table 2 */
    struct repro_mode mode;
    for (size_t m = 0; repro_mode_get(m, &mode); m++) {
        const struct repro_mode *md = &mode;
        struct repro_cell c;
        if (repro_read_run_cell(p, shape, md->mode, "trace", &c)) {
            any = true;
            csv_bar(csv, md->mode, "measured (trace)", c.median[REPRO_IO], c.median[REPRO_MEM], c.median[REPRO_COMPUTE],
                    c.median[REPRO_TOTAL]);
            if (c.modelled)
                csv_bar(csv, md->mode, "modelled (trace)", c.model[REPRO_IO], c.model[REPRO_MEM], c.model[REPRO_COMPUTE],
                        c.model[REPRO_TOTAL]);
        }
        if (!md->whole_layers && repro_read_run_cell(p, shape, md->mode, "predictor", &c)) {
            any = true;
            csv_bar(csv, md->mode, "measured (predictor)", c.median[REPRO_IO], c.median[REPRO_MEM],
                    c.median[REPRO_COMPUTE], c.median[REPRO_TOTAL]);
        }
        const char *match[] = {"config", repro_table2_config(md), NULL};
        double io = paper ? repro_paper_value(p, "table2.json", match, "io_ms") : NAN;
        if (isfinite(io))
            csv_bar(csv, md->mode, "paper I/O", io, NAN, NAN, io);
    }
    return any;
}

/* runs/<shape>/ablation.{csv,png,svg}; what went wrong is said in the report. */
static void draw(struct strbuf *b, const struct repro_plan *p, const char *shape, const char *csv_text)
{
    char rel[300], alt[300], title[400];
    snprintf(rel, sizeof rel, "runs/%s/ablation", shape);
    snprintf(alt, sizeof alt, "Table 2, %s", shape);
    snprintf(title, sizeof title, "Table 2 measured: %s (synthetic, f16), each mode on this machine beside the cost "
             "model", shape);
    const struct gnuplot_arg args[] = {GP_TEXT("plot_title", title)};
    repro_plot(b, p, rel, csv_text, "table2_ablation.gp", args, 1, alt);
}

void repro_section_ablation(struct strbuf *b, const struct repro_plan *p)
{
    bool said = false;
    for (size_t i = 0; i < p->config.n_models; i++) {
        const char *shape = repro_shape(p->config.models[i], p->config.tier);
        struct strbuf csv = {0};
        if (ablation_csv(p, shape, &csv)) {
            if (!said)
                strbuf_add(b, "The same as bars (`runs/<model>/ablation.csv`): medians over the rounds, I/O, memory "
                              "and compute stacked; the paper's I/O beside them on OPT-6.7B, its Table 2's model.\n\n");
            said = true;
            draw(b, p, shape, csv.s ? csv.s : "");
        }
        free(csv.s);
    }
}
