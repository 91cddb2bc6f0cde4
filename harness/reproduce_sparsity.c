/* The quality-against-bytes study of the training-free neuron sources
 * (harness/reproduce.h's struct repro_sparsity): its steps and its report
 * section. On one model with a GLU FFN, for each sparsity S the thresholds
 * `sparsify calibrate` chooses on a calibration text, then `perplexity` on
 * each scored text with every source:
 *
 *   dense      every neuron (the reference point)
 *   gate       the gate alone with ONE threshold for every layer, the one
 *              that drops a share S of all layers' |act(gate.x)| together
 *   gate-cal   the gate with a threshold per layer (CATS-style)
 *   teal       input sparsity (TEAL-style): input channels and down's rows
 *   predictor  the model's trained low-rank predictor at several
 *              probability thresholds
 *
 * each beside the FFN weight bytes a token reads and its ms per token
 * (weights in DRAM: the masked dense FFN computes what the source chose).
 * Cells are <dir>/<text>/<source>-<setting>.json, perplexity's --json
 * (dir: "sparsity" for stories260K and `sparsify study`, one folder per
 * shape for the fixtures' shapes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/atomic_file.h"
#include "common/errbuf.h"
#include "common/json_file.h"
#include "common/provenance.h"
#include "common/strbuf.h"
#include "engine/ffn/neuron_source.h"
#include "harness/reproduce_plan.h"
#include "harness/reproduce_tables.h"

#define at repro_plan_at

void repro_sparsity_tag(char *buf, size_t len, char kind, double v)
{
    snprintf(buf, len, "%c%02.0f", kind, 100 * v);
}

#define tag repro_sparsity_tag

const char *repro_sparsity_dir(const struct repro_sparsity *z)
{
    return z->dir[0] ? z->dir : "sparsity";
}

/* The study's steps' ids start with its folder, '/' as '-'. */
static void id_prefix(const struct repro_sparsity *z, char *buf, size_t len)
{
    snprintf(buf, len, "%s", repro_sparsity_dir(z));
    for (char *c = buf; *c; c++)
        if (*c == '/')
            *c = '-';
}

static int add_thresholds(struct repro_plan *p, const struct repro_sparsity *z, double s)
{
    char id[96], what[160], rel[200], file[4400], t[16], num[32], tokens[32], pre[64];
    tag(t, sizeof t, 's', s);
    id_prefix(z, pre, sizeof pre);
    snprintf(id, sizeof id, "%s-thresholds-%s", pre, t);
    snprintf(rel, sizeof rel, "%s/thresholds/%s.json", repro_sparsity_dir(z), t);
    snprintf(what, sizeof what, "%s: thresholds for sparsity %g (gate, per layer and global; input)", z->name, s);
    snprintf(num, sizeof num, "%g", s);
    snprintf(tokens, sizeof tokens, "%llu", (unsigned long long)z->calib_tokens);
    STEP(p, "sparsity", id, rel, what, "sparsify", "calibrate", "--model", z->model, "--text", z->calib_text,
         "--tokens", tokens, "--sparsity", num, "--kind", "both", "--out", at(p, file, sizeof file, "%s", rel));
    return 0;
}

/* One perplexity cell: the scored text past the calibration tokens when it
 * is the calibration text, source and its setting (extra: NULL-ended). */
static int add_cell(struct repro_plan *p, const struct repro_sparsity *z, size_t text, const char *source,
                    const char *setting, const char *const *extra)
{
    char id[200], what[160], rel[200], out[4400], skip[32], tokens[32], pre[64]; /* id: the step keeps 95 */
    const char *dash = setting[0] ? "-" : "";
    id_prefix(z, pre, sizeof pre);
    snprintf(rel, sizeof rel, "%s/%s/%s%s%s.json", repro_sparsity_dir(z), z->text_names[text], source, dash, setting);
    snprintf(id, sizeof id, "%s-%s-%s%s%s", pre, z->text_names[text], source, dash, setting);
    snprintf(what, sizeof what, "%s: perplexity on %s, %s%s%s", z->name, z->text_names[text], source,
             setting[0] ? " " : "", setting);
    snprintf(skip, sizeof skip, "%llu",
             (unsigned long long)(strcmp(z->texts[text], z->calib_text) ? 0 : z->calib_tokens));
    snprintf(tokens, sizeof tokens, "%llu", (unsigned long long)z->tokens);
    const char *args[24] = {"perplexity", "--model", z->model, "--text", z->texts[text], "--skip", skip, "--tokens",
                            tokens, "--json", at(p, out, sizeof out, "%s", rel)};
    size_t n = 11;
    for (size_t i = 0; extra[i] && n + 1 < sizeof args / sizeof args[0]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    return repro_plan_add(p, "sparsity", id, rel, what, args);
}

/* Each sparsity's three threshold sources on one text. */
static int add_sparsity_cells(struct repro_plan *p, const struct repro_sparsity *z, size_t text, double s)
{
    static const char *const sources[] = {"gate", "gate-cal", "teal"};
    char t[16], file[4400];
    tag(t, sizeof t, 's', s);
    at(p, file, sizeof file, "%s/thresholds/%s.json", repro_sparsity_dir(z), t);
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
        const char *extra[] = {"--active", sources[i], "--sparsify", file, NULL};
        if (add_cell(p, z, text, sources[i], t, extra) != 0)
            return -1;
    }
    return 0;
}

/* The predictor, trained into the study's own model folder (z->model under
 * the plan's folder: never a user's): the step's output is the predictor's
 * file, which an unfinished try leaves to be removed. */
static int add_predictor(struct repro_plan *p, const struct repro_sparsity *z)
{
    char tokens[32], rel[4400];
    size_t root = strlen(p->config.out);
    if (strncmp(z->model, p->config.out, root) || z->model[root] != '/')
        return -1; /* a plan error: only reproduce trains, into its models/ */
    snprintf(tokens, sizeof tokens, "%llu", (unsigned long long)z->calib_tokens);
    snprintf(rel, sizeof rel, "%s/predictor.safetensors", z->model + root + 1);
    const char *args[24] = {"predictor", "train", "--model", z->model, "--text", z->calib_text, "--tokens", tokens,
                            "--force"};
    size_t n = 9;
    if (z->predictor_act[0]) {
        args[n++] = "--act-threshold";
        args[n++] = z->predictor_act;
    }
    if (z->predictor_rank[0]) {
        args[n++] = "--rank";
        args[n++] = z->predictor_rank;
    }
    args[n] = NULL;
    char what[160], id[96];
    snprintf(what, sizeof what, "%s: its activation predictor, trained on the calibration tokens", z->name);
    id_prefix(z, id, sizeof id - 16);
    snprintf(id + strlen(id), sizeof id - strlen(id), "-predictor");
    return repro_plan_add(p, "sparsity", id, rel, what, args);
}

int repro_plan_sparsity(struct repro_plan *p, const struct repro_sparsity *z)
{
    if (!z->model[0])
        return 0;
    for (size_t s = 0; s < z->n_sparsities; s++)
        if (add_thresholds(p, z, z->sparsities[s]) != 0)
            return -1;
    if (z->n_predictor && z->train_predictor && add_predictor(p, z) != 0)
        return -1;
    for (size_t t = 0; t < z->n_texts; t++) {
        const char *none[] = {NULL};
        if (add_cell(p, z, t, "dense", "", none) != 0)
            return -1;
        for (size_t s = 0; s < z->n_sparsities; s++)
            if (add_sparsity_cells(p, z, t, z->sparsities[s]) != 0)
                return -1;
        for (size_t i = 0; i < z->n_predictor; i++) {
            char tg[16], num[32];
            tag(tg, sizeof tg, 'p', z->predictor_p[i]);
            snprintf(num, sizeof num, "%g", z->predictor_p[i]);
            const char *extra[] = {"--active", "predictor", "--threshold", num, NULL};
            if (add_cell(p, z, t, "predictor", tg, extra) != 0)
                return -1;
        }
    }
    return 0;
}

/* ---- the report ---- */

static double num_or_nan(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

bool repro_sparsity_read_cell(const struct repro_plan *p, const struct repro_sparsity *z, const char *text,
                              const char *source, const char *setting, struct repro_sparsity_cell *c)
{
    char path[4400];
    at(p, path, sizeof path, "%s/%s/%s%s%s.json", repro_sparsity_dir(z), text, source, setting[0] ? "-" : "",
       setting);
    cJSON *j = read_json_file(path);
    *c = (struct repro_sparsity_cell){NAN, NAN, NAN, NAN, NAN, NAN};
    if (!j)
        return false;
    c->ppl = num_or_nan(j, "perplexity");
    c->density = num_or_nan(j, "density");
    c->input_density = num_or_nan(j, "input_density");
    c->bytes = num_or_nan(j, "ffn_bytes_per_token");
    c->dense_bytes = num_or_nan(j, "dense_ffn_bytes_per_token");
    c->ms = num_or_nan(j, "ms_per_token");
    cJSON_Delete(j);
    return true;
}

static void add_pct(struct strbuf *b, double v)
{
    if (isfinite(v))
        strbuf_add(b, " %.1f%% |", 100 * v);
    else
        strbuf_add(b, " — |");
}

static void add_row(struct strbuf *b, const char *source, const char *setting, const struct repro_sparsity_cell *c,
                    const struct repro_sparsity_cell *dense)
{
    strbuf_add(b, "| %s | %s |", source, setting);
    add_pct(b, c->density);
    add_pct(b, c->input_density);
    strbuf_add(b, " %.3f | %.1f%% | %.3f |", c->bytes / 1e6, 100 * c->bytes / c->dense_bytes, c->ppl);
    if (isfinite(dense->ppl) && dense != c)
        strbuf_add(b, " %+.1f%% |", 100 * (c->ppl / dense->ppl - 1));
    else
        strbuf_add(b, " — |");
    repro_add_ms(b, c->ms);
    strbuf_add(b, "\n");
}

/* The plot's data: a row per source and setting under the header
 * CSV_HEADER (plots/sparsity_quality.gp picks a source's rows by name). */
#define CSV_HEADER "source,ffn_mb_per_token,perplexity\n"
static void csv_rows(struct strbuf *csv, const char *source, const struct repro_sparsity_cell *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isfinite(c[i].ppl) && isfinite(c[i].bytes))
            strbuf_add(csv, "%s,%.6g,%.6g\n", source, c[i].bytes / 1e6, c[i].ppl);
}

/* One source's cells on a text: the table's rows and the plot's. */
static void source_rows(struct strbuf *b, struct strbuf *csv, const struct repro_plan *p,
                        const struct repro_sparsity *z, size_t text, const char *source,
                        const struct repro_sparsity_cell *dense)
{
    /* a source that reads no thresholds file (the predictor) is swept by its own threshold, P;
     * the others by the sparsity their file was calibrated at, S */
    const struct neuron_source_ops *o = neuron_source_find(source, NULL);
    bool pred = o && o->file == SOURCE_FILE_NONE;
    size_t n = pred ? z->n_predictor : z->n_sparsities;
    struct repro_sparsity_cell cells[REPRO_SPARSITY_MAX];
    for (size_t i = 0; i < n; i++) {
        char tg[16], setting[48];
        double v = pred ? z->predictor_p[i] : z->sparsities[i];
        tag(tg, sizeof tg, pred ? 'p' : 's', v);
        snprintf(setting, sizeof setting, pred ? "P > %g" : "S = %g", v);
        if (repro_sparsity_read_cell(p, z, z->text_names[text], source, tg, &cells[i]))
            add_row(b, source, setting, &cells[i], dense);
    }
    csv_rows(csv, source, cells, n);
}

static void text_table(struct strbuf *b, const struct repro_plan *p, const struct repro_sparsity *z, size_t text)
{
    static const char *const sources[] = {"gate", "gate-cal", "teal", "predictor"};
    struct repro_sparsity_cell dense;
    bool have = repro_sparsity_read_cell(p, z, z->text_names[text], "dense", "", &dense);
    dense.density = 1; /* every neuron: perplexity's dense JSON has no density */
    strbuf_add(b, "### %s on %s\n\n", z->name, z->text_names[text]);
    if (!have) {
        strbuf_add(b, "Not measured yet.\n\n");
        return;
    }
    strbuf_add(b, "| source | setting | FFN density | input kept | FFN MB per token | of dense | perplexity | "
                  "vs dense | ms per token |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    add_row(b, "dense", "every neuron", &dense, &dense);
    struct strbuf csv = {0};
    strbuf_add(&csv, CSV_HEADER);
    csv_rows(&csv, "dense", &dense, 1);
    size_t n_sources = z->n_predictor ? 4 : 3;
    for (size_t s = 0; s < n_sources; s++)
        source_rows(b, &csv, p, z, text, sources[s], &dense);
    strbuf_add(b, "\n");
    repro_sparsity_gate_note(b, p, z, text);
    char *data = strbuf_take(&csv), rel[200], title[200];
    snprintf(rel, sizeof rel, "%s/%s-quality", repro_sparsity_dir(z), z->text_names[text]);
    snprintf(title, sizeof title, "%s on %s: perplexity against FFN bytes read per token", z->name,
             z->text_names[text]);
    const struct gnuplot_arg args[] = {GP_TEXT("plot_title", title),
                                       GP_TEXT("sources", n_sources == 4 ? "dense gate gate-cal teal predictor"
                                                                         : "dense gate gate-cal teal")};
    if (data)
        repro_plot(b, p, rel, data, "sparsity_quality.gp", args, 2, title);
    free(data);
}

void repro_section_sparsity(struct strbuf *b, const struct repro_plan *p)
{
    const struct repro_sparsity *z = &p->sparsity;
    if (!z->model[0])
        return;
    strbuf_add(b, "## Training-free sparsity: quality against bytes (%s)\n\n", z->name);
    strbuf_add(b, "Which neurons a token computes, chosen without retraining: the gate with one threshold for "
                  "every layer (gate) or one per layer (gate-cal, CATS-style), input sparsity (teal, TEAL-style: "
                  "input channels whose |x| is small drop their columns of gate and up, then rows of down whose "
                  "|h| is small), and the trained low-rank predictor%s. Thresholds are chosen by `flashbed "
                  "sparsify calibrate` for each target sparsity S on the first %llu tokens of `%s`; that text is "
                  "scored past them. FFN MB per token counts the weight bytes a token reads under the choice "
                  "(teal: kept channels' gate and up columns and kept rows of down); ms per token are measured "
                  "with the weights in DRAM (the masked dense FFN), not from flash. ",
               z->n_predictor ? "" : " (not planned here)", (unsigned long long)z->calib_tokens, z->calib_text);
    strbuf_add(b, z->trained ? "%s is a trained model: its perplexities measure what a choice costs.\n\n"
                             : "%s has random weights: its perplexities mean nothing, only its bytes and times.\n\n",
               z->name);
    for (size_t t = 0; t < z->n_texts; t++)
        text_table(b, p, z, t);
    repro_section_sparsity_shapes(b, p);
    strbuf_add(b, "The same study of any model folder with a GLU FFN: `flashbed sparsify study --model DIR "
                  "--text FILE[,FILE] --calibration-text FILE [--calibration-tokens N] [--tokens N] [--sparsities "
                  "LIST] [--predictor-thresholds LIST] --out DIR` (the predictor where the folder has one).\n\n");
}

int repro_sparsity_plan_build(const struct repro_sparsity *z, const char *out, const struct fb_settings *set,
                              struct repro_plan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->config.tier = REPRO_QUICK;
    p->config.out = out;
    p->config.disk = out;
    p->config.settings = set;
    p->sparsity = *z;
    if (repro_plan_sparsity(p, &p->sparsity) != 0) {
        repro_plan_free(p);
        return err_set(err, errlen, "out of memory");
    }
    return 0;
}

int repro_sparsity_report_write(const struct repro_plan *p, const char *command_line, char *err, size_t errlen)
{
    struct strbuf b = {0};
    char date[64], path[4400];
    provenance_date(date, sizeof date);
    strbuf_add(&b, "# flashbed sparsify study: %s\n\n- command: `%s`\n- commit: %s\n- written: %s\n\n",
               p->sparsity.name, command_line, provenance_git_commit(), date);
    repro_section_sparsity(&b, p);
    char *text = strbuf_take(&b);
    if (!text)
        return err_set(err, errlen, "out of memory");
    int rc = atomic_write_text(p->folder, at(p, path, sizeof path, "REPORT.md"), text, err, errlen);
    free(text);
    return rc;
}
