/* REPORT.md's part of the training-free sparsity study on the fixtures'
 * GLU tiny shapes (harness/reproduce_tables.h): random weights, so per
 * source and target sparsity each shape's FFN bytes and ms per token,
 * beside stories260K's on the same text, and no perplexities in the table
 * (the text says why and what range they span); a plot of bytes and ms
 * against the sparsity, one panel per source, a curve per model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/model_shape.h"
#include "harness/reproduce_tables.h"

static const char *const shape_sources[] = {"gate", "gate-cal", "teal"};
#define N_SHAPE_SOURCES (sizeof shape_sources / sizeof shape_sources[0])

/* The models of the table: stories260K, then each shape. */
static const struct repro_sparsity *model_at(const struct repro_plan *p, size_t i)
{
    return i == 0 ? &p->sparsity : &p->shapes[i - 1];
}

/* A source's cell at sparsity s of model z on its first text (TinyStories
 * for every model of the table); dense when source is "dense". */
static void read_at(const struct repro_plan *p, const struct repro_sparsity *z, const char *source, double s,
                    struct repro_sparsity_cell *c)
{
    char tg[16] = "";
    if (strcmp(source, "dense"))
        repro_sparsity_tag(tg, sizeof tg, 's', s);
    repro_sparsity_read_cell(p, z, z->text_names[0], source, tg, c);
}

/* " 66.0 KB (50.0%), 0.41 ms |", or " — |" where the cell has not run. */
static void add_cell(struct strbuf *b, const struct repro_sparsity_cell *c)
{
    if (!isfinite(c->bytes) || !isfinite(c->dense_bytes)) {
        strbuf_add(b, " — |");
        return;
    }
    strbuf_add(b, " %.1f KB (%.1f%%),", c->bytes / 1e3, 100 * c->bytes / c->dense_bytes);
    if (isfinite(c->ms))
        strbuf_add(b, " %.2f ms |", c->ms);
    else
        strbuf_add(b, " — ms |");
}

/* One row: a source at a setting on every model of the table. */
static void add_row(struct strbuf *b, const struct repro_plan *p, const char *source, double s)
{
    if (strcmp(source, "dense"))
        strbuf_add(b, "| %s | S = %g |", source, s);
    else
        strbuf_add(b, "| dense | every neuron |");
    for (size_t m = 0; m <= p->n_shapes; m++) {
        struct repro_sparsity_cell c;
        read_at(p, model_at(p, m), source, s, &c);
        add_cell(b, &c);
    }
    strbuf_add(b, "\n");
}

/* How far the shapes' sparse cells' perplexities lie from their own
 * dense's, into *lo and *hi (infinite where none is measured). */
static void perplexity_spread(const struct repro_plan *p, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t m = 0; m < p->n_shapes; m++) {
        const struct repro_sparsity *z = &p->shapes[m];
        struct repro_sparsity_cell d, c;
        read_at(p, z, "dense", 0, &d);
        for (size_t k = 0; k < N_SHAPE_SOURCES && isfinite(d.ppl); k++)
            for (size_t i = 0; i < z->n_sparsities; i++) {
                read_at(p, z, shape_sources[k], z->sparsities[i], &c);
                if (isfinite(c.ppl)) {
                    *lo = fmin(*lo, c.ppl / d.ppl - 1);
                    *hi = fmax(*hi, c.ppl / d.ppl - 1);
                }
            }
    }
}

/* The shapes' perplexities in words: each one's dense, how far the sparse
 * cells lie from it, and the shapes whose head is their embeddings. */
static void perplexity_note(struct strbuf *b, const struct repro_plan *p)
{
    strbuf_add(b, " (dense here:");
    char tied[256] = "";
    for (size_t m = 0, n = 0; m < p->n_shapes; m++) {
        struct repro_sparsity_cell d;
        read_at(p, &p->shapes[m], "dense", 0, &d);
        strbuf_add(b, "%s %s ", m ? "," : "", p->shapes[m].name);
        strbuf_add(b, isfinite(d.ppl) ? "%.3g" : "not measured", d.ppl);
        struct model_shape sh;
        char err[256];
        if (model_shape_load(p->config.settings, p->shapes[m].name, &sh, err, sizeof err) == 0 &&
            sh.tied_embeddings && n < sizeof tied)
            n += (size_t)snprintf(tied + n, sizeof tied - n, "%s%s", n ? " and " : "", sh.name);
    }
    double lo, hi;
    perplexity_spread(p, &lo, &hi);
    if (isfinite(lo))
        strbuf_add(b, "; every sparse cell %+.1f%% to %+.1f%% of its shape's dense", 100 * lo, 100 * hi);
    if (tied[0])
        strbuf_add(b, "; %s tie the LM head to the embeddings, which model make draws at scale 1 where a head "
                      "gets 1/sqrt(d_model): their logits, and perplexities, are the larger for it", tied);
    strbuf_add(b, ")");
}

/* Cells that read a share of the dense FFN more than 5 points below the
 * 1 - S asked for: a ReLU-gated FFN is sparse by itself, and a threshold of
 * 0 then drops every zero. */
static void below_target(struct strbuf *b, const struct repro_plan *p)
{
    size_t n = 0;
    for (size_t m = 0; m < p->n_shapes; m++)
        for (size_t k = 0; k < N_SHAPE_SOURCES; k++)
            for (size_t i = 0; i < p->shapes[m].n_sparsities; i++) {
                struct repro_sparsity_cell c;
                double s = p->shapes[m].sparsities[i];
                read_at(p, &p->shapes[m], shape_sources[k], s, &c);
                if (!(c.bytes / c.dense_bytes < 1 - s - 0.05))
                    continue;
                strbuf_add(b, "%s%s %s at S = %g (%.1f%%)", n++ ? ", " : "Read less than 1 - S: ",
                           p->shapes[m].name, shape_sources[k], s, 100 * c.bytes / c.dense_bytes);
            }
    if (n)
        strbuf_add(b, ": a ReLU-gated FFN is sparse by itself, and where S asks for less than it has, the "
                      "threshold is 0 and drops every zero.\n\n");
}

static void shapes_intro(struct strbuf *b, const struct repro_plan *p)
{
    const struct repro_sparsity *z = &p->shapes[0];
    strbuf_add(b, "### The same study on the fixtures' GLU shapes (random weights)\n\n**Only stories260K is a "
                  "trained model here.** ");
    for (size_t m = 0; m < p->n_shapes; m++)
        strbuf_add(b, "%s%s", m ? ", " : "", p->shapes[m].name);
    strbuf_add(b, " are the tiny shapes (configs/models/) of the architectures the transformers fixtures check, "
                  "with random weights: made by `flashbed model make` (%s, seed 1, its synthetic byte-fallback "
                  "tokenizer) and converted, as the rest of this study's synthetic models. Each is studied as "
                  "stories260K is, on %s alone: thresholds for each S chosen on its first %llu tokens, the next "
                  "%llu scored with dense, gate, gate-cal and teal. No predictor is trained for them: a predictor "
                  "learns which neurons a trained model's inputs fire, and random weights have nothing to learn. "
                  "Their perplexities are left out of the table: a random model predicts nothing, so how far a "
                  "choice moves its perplexity says nothing of what the choice costs a trained model",
               z->dtype[0] ? z->dtype : "f16", z->text_names[0], (unsigned long long)z->calib_tokens,
               (unsigned long long)z->tokens);
    perplexity_note(b, p);
    strbuf_add(b, "; each cell's JSON (`sparsity-shapes/SHAPE/%s/`) has it. What the shapes measure is the FFN weight bytes a token "
                  "reads under each choice and its time. Each cell: FFN KB read per token (of the model's dense "
                  "FFN), ms per token (weights in DRAM, the masked dense FFN). %s's column repeats its %s table "
                  "above%s%s.\n\n",
               z->text_names[0], p->sparsity.name, p->sparsity.text_names[0],
               p->sparsity.dtype[0] ? "; its weights are " : "", p->sparsity.dtype);
}

/* The plot's data: for each source, for each model, a block (gnuplot's
 * index) of rows S, FFN KB per token, ms per token; dense at S = 0. */
static char *plot_csv(const struct repro_plan *p)
{
    struct strbuf csv = {0};
    for (size_t k = 0; k < N_SHAPE_SOURCES; k++)
        for (size_t m = 0; m <= p->n_shapes; m++) {
            const struct repro_sparsity *z = model_at(p, m);
            struct repro_sparsity_cell c;
            read_at(p, z, "dense", 0, &c);
            size_t rows = 0;
            for (size_t i = 0; i <= z->n_sparsities; i++) {
                if (i > 0)
                    read_at(p, z, shape_sources[k], z->sparsities[i - 1], &c);
                if (!isfinite(c.bytes))
                    continue;
                strbuf_add(&csv, "%g,%.6g,", i ? z->sparsities[i - 1] : 0.0, c.bytes / 1e3);
                repro_csv_num(&csv, c.ms, "\n");
                rows++;
            }
            /* gnuplot counts no empty block: a row of nothing keeps the index */
            strbuf_add(&csv, rows ? "\n\n" : "NaN,NaN,NaN\n\n\n");
        }
    return strbuf_take(&csv);
}

static void shapes_plot(struct strbuf *b, const struct repro_plan *p)
{
    char models[512] = "";
    for (size_t m = 0, n = 0; m <= p->n_shapes && n < sizeof models; m++)
        n += (size_t)snprintf(models + n, sizeof models - n, "%s%s", m ? " " : "", model_at(p, m)->name);
    char *csv = plot_csv(p);
    const char *title = "FFN bytes and ms per token against the target sparsity, per model (dense at S = 0)";
    const struct gnuplot_arg args[] = {GP_TEXT("plot_title", title), GP_TEXT("sources", "gate gate-cal teal"),
                                       GP_TEXT("models", models)};
    if (csv)
        repro_plot(b, p, "sparsity-shapes/bytes", csv, "sparsity_shapes.gp", args, 3, title);
    free(csv);
}

void repro_section_sparsity_shapes(struct strbuf *b, const struct repro_plan *p)
{
    if (!p->n_shapes || !p->sparsity.model[0])
        return;
    shapes_intro(b, p);
    strbuf_add(b, "| source | setting | %s (trained%s%s) |", p->sparsity.name, p->sparsity.dtype[0] ? ", " : "",
               p->sparsity.dtype);
    for (size_t m = 0; m < p->n_shapes; m++)
        strbuf_add(b, " %s (random%s%s) |", p->shapes[m].name, p->shapes[m].dtype[0] ? ", " : "",
                   p->shapes[m].dtype);
    strbuf_add(b, "\n|---|---|");
    for (size_t m = 0; m <= p->n_shapes; m++)
        strbuf_add(b, "---:|");
    strbuf_add(b, "\n");
    add_row(b, p, "dense", 0);
    const struct repro_sparsity *z = &p->shapes[0];
    for (size_t k = 0; k < N_SHAPE_SOURCES; k++)
        for (size_t i = 0; i < z->n_sparsities; i++)
            add_row(b, p, shape_sources[k], z->sparsities[i]);
    strbuf_add(b, "\n");
    below_target(b, p);
    shapes_plot(b, p);
    strbuf_add(b, "To measure what these choices cost in quality, run the study on a trained checkpoint: convert "
                  "it (`flashbed convert CHECKPOINT --out DIR`) and give DIR to the command below.\n\n");
}
