/* REPORT.md's Tables 2 and 3 and Fig. 7 (harness/reproduce.h): the
 * measured runs' medians over their rounds beside the cost model's price
 * and the paper's numbers, computed from <prefix>-r<round>/run.json and
 * <prefix>-predict/predict.json (runs/<shape>/<mode>-<source> for the
 * tables, fig7/<share> for Fig. 7) and configs/paper/. Internal to
 * harness/reproduce_*.c. */
#ifndef FLASHBED_HARNESS_REPRODUCE_TABLES_H
#define FLASHBED_HARNESS_REPRODUCE_TABLES_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "common/gnuplot.h"
#include "common/strbuf.h"
#include "harness/reproduce.h"

#define REPRO_MAX_ROUNDS 16

/* REPRO_TOTAL: the sum of the three, as predict --compare takes it */
enum { REPRO_IO, REPRO_MEM, REPRO_COMPUTE, REPRO_TOTAL, REPRO_N_PARTS };

/* One measured configuration: its rounds and its price. */
struct repro_cell {
    char budget[32];                              /* the runs' --dram-budget ("none") */
    int rounds;
    double part[REPRO_N_PARTS][REPRO_MAX_ROUNDS]; /* per round */
    double window_k[REPRO_MAX_ROUNDS];            /* per round: summary.window_k (NAN: none) */
    double rows[REPRO_MAX_ROUNDS];                /* per round: summary.capacity_rows_per_layer */
    double median[REPRO_N_PARTS], lo, hi;         /* lo, hi: of the total */
    double model[REPRO_N_PARTS];
    double model_k, model_rows;                   /* predict's window:auto K and cache rows (NAN: none) */
    double tokens, cold;                          /* the first round's measured and cold tokens (NAN: none) */
    bool modelled;
};

/* Reads every round of the configuration at prefix (under the study's
 * folder) and its price; false when no round has run. */
bool repro_read_cell(const struct repro_plan *p, const char *prefix, struct repro_cell *c);
/* The same for a Tables 2 and 3 configuration: runs/<shape>/<mode>-<source>. */
bool repro_read_run_cell(const struct repro_plan *p, const char *shape, const char *mode, const char *source,
                         struct repro_cell *c);

/* Writes csv_text to <study>/<rel>.csv, draws <rel>.png and .svg from it
 * with plots/<script> (csv set here, args[n_args]: the script's others, at
 * most 7) and links the PNG in the report as ![alt](<rel>.png); when it
 * cannot, the report says what is there and why there is no plot. true
 * when drawn. */
bool repro_plot(struct strbuf *b, const struct repro_plan *p, const char *rel, const char *csv_text,
                const char *script, const struct gnuplot_arg *args, size_t n_args, const char *alt);

/* A number from configs/paper/<file>'s rows (in the folder p's settings
 * name) where every key of match equals its value (NULL-terminated pairs);
 * NAN when the paper has none. */
double repro_paper_value(const struct repro_plan *p, const char *file, const char *const *match, const char *key);

/* Table 2's paper row of a mode: its "config" in configs/paper/table2.json. */
const char *repro_table2_config(const struct repro_mode *md);

/* Table cells: " +12% |" ("n/a" without a measurement), " 1.2 |" ("—"). */
void repro_add_error(struct strbuf *b, double modelled, double measured);
void repro_add_ms(struct strbuf *b, double v);
/* A CSV field and its separator: the number, or empty (gnuplot skips it). */
void repro_csv_num(struct strbuf *b, double v, const char *sep);

/* Appends the Markdown file rel of a step, its headings moved two levels
 * down, each table cut after its first head rows with a link to csv_rel
 * (which holds them all), and the lines "- NOTE..." of every string NOTE
 * of skip_notes (a JSON array; NULL: none) left out. false when rel is
 * not there. */
bool repro_quote_folded(struct strbuf *b, const struct repro_plan *p, const char *rel, const char *csv_rel,
                        size_t head, const cJSON *skip_notes);
/* The policy study: each trace's replay, its tables folded into its
 * replay.csv, and the friends-against-bundled notes of every trace said
 * once, as a range (harness/reproduce_policies.c). */
void repro_section_policies(struct strbuf *b, const struct repro_plan *p);

void repro_section_table2(struct strbuf *b, const struct repro_plan *p);
/* Table 2 as a bar chart per model: runs/<shape>/ablation.csv, .png, .svg
 * (harness/reproduce_ablation.c). */
void repro_section_ablation(struct strbuf *b, const struct repro_plan *p);
void repro_section_table3(struct strbuf *b, const struct repro_plan *p);
/* Fig. 7 measured: the first model's runs at each DRAM share with
 * window:auto beside the cost model's, a CSV and a plot with the paper's
 * modelled curve (harness/reproduce_fig7.c). */
void repro_section_fig7(struct strbuf *b, const struct repro_plan *p);
/* Table 3's device rows: naive and all measured on each device backend
 * beside the price with its own profile, emulated ones labelled, and the
 * paper's device rows modelled (harness/reproduce_device.c). */
void repro_section_devices(struct strbuf *b, const struct repro_plan *p);
/* The training-free sparsity study: per scored text a table of every
 * source's perplexity beside its FFN bytes per token, and its plot
 * (harness/reproduce_sparsity.c); then the fixtures' shapes'
 * (repro_section_sparsity_shapes); nothing when the plan has no study. */
void repro_section_sparsity(struct strbuf *b, const struct repro_plan *p);
/* The same study on the fixtures' GLU tiny shapes, random weights: per
 * source and sparsity each shape's FFN bytes and ms per token beside
 * stories260K's, their perplexities left out (harness/reproduce_sparsity_shapes.c);
 * nothing when the plan has no shapes. */
void repro_section_sparsity_shapes(struct strbuf *b, const struct repro_plan *p);

/* What a sparsity study's cell measured, from perplexity's --json (NAN
 * where it has not run or lacks the key). */
struct repro_sparsity_cell {
    double ppl, density, input_density, bytes, dense_bytes, ms;
};
/* The cell <dir>/<text>/<source>[-<setting>].json of study z; false (all
 * NAN) when it is not there. */
bool repro_sparsity_read_cell(const struct repro_plan *p, const struct repro_sparsity *z, const char *text,
                              const char *source, const char *setting, struct repro_sparsity_cell *c);
/* A setting as cells' files and steps' ids have it: kind 's' 0.5 is "s50". */
void repro_sparsity_tag(char *buf, size_t len, char kind, double v);
/* Study z's folder under the plan's: "sparsity" unless z->dir says. */
const char *repro_sparsity_dir(const struct repro_sparsity *z);
/* When the global gate scores better at a higher sparsity on text than at
 * the one before, a paragraph that says so and why, from the study's cells
 * and thresholds files (harness/reproduce_sparsity_note.c); else nothing. */
void repro_sparsity_gate_note(struct strbuf *b, const struct repro_plan *p, const struct repro_sparsity *z,
                              size_t text);
/* The real GGUF models' perplexity beside llama.cpp's over the same
 * windows and its full run, and the models skipped and why
 * (harness/reproduce_real.c); nothing when the tier plans none. */
void repro_section_real(struct strbuf *b, const struct repro_plan *p);
/* What differs from the paper and why, from the numbers: the disk against
 * the M1 Max's at the paper's chunk sizes, the cost model's misses. */
void repro_section_differences(struct strbuf *b, const struct repro_plan *p);

#endif
