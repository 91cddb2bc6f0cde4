/* flashbed sparsify calibrate: per-layer thresholds for training-free FFN
 * sparsity (engine/training/sparsify_calibrate.h), written into the model
 * folder as sparsify.json or to --out FILE (engine/ffn/sparsify_file.h).
 * `sparsify study` is cli/cmd_sparsify_study.c. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "cli/shared.h"
#include "common/clock.h"
#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/machine.h"
#include "common/options.h"
#include "common/provenance.h"
#include "engine/ffn/sparsify_file.h"
#include "engine/forward/text_feed.h"
#include "engine/training/sparsify_calibrate.h"

struct calibrate_opts {
    char *model, *text, *kind, *out;
    uint64_t tokens, threads, context;
    double sparsity;
    bool force;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define O(f) offsetof(struct calibrate_opts, f)
static const struct opt_def calibrate_options[] = {
    {"model", OPT_STRING, O(model), NULL, "DIR", "flashbed model folder (sparsify.json is written into it unless --out)"},
    {"out", OPT_STRING, O(out), NULL, "FILE", "write the thresholds to FILE instead of the model folder's "
     "sparsify.json (perplexity, generate and run read it with --sparsify FILE)"},
    {"text", OPT_STRING, O(text), NULL, "FILE", "calibration text the dense model is run over (UTF-8)"},
    {"sparsity", OPT_DOUBLE, O(sparsity), NULL, "S", "target share dropped per layer, 0 <= S < 1 (0.5 or 50%)",
     .max = 1, .max_open = true, .percent = true},
    {"kind", OPT_STRING, O(kind), "both", "KIND", "which thresholds: gate (CATS-style, |act(gate.x)|; GLU FFNs), "
     "input (TEAL-style: |x| of the FFN input and |h| of the intermediate), or both", .allowed = "gate|input|both"},
    {"tokens", OPT_UINT, O(tokens), "1024", "N", "tokens of the text to calibrate on (the text must have them)",
     .min = 1, .max = OPT_NO_MAX},
    {"context", OPT_UINT, O(context), "0", "N", "window length in tokens, BOS included (0: the model's)",
     .max = MODEL_MAX_POSITIONS},
    {"threads", OPT_UINT, O(threads), "0", "N", "compute threads (0: all CPUs)", .max = FB_MAX_THREADS},
    {"force", OPT_FLAG, O(force), NULL, NULL, "replace the sparsify.json the model folder already has (or --out's FILE)"},
    OPT_END,
};
#undef O

static const struct opt_command calibrate_command = {
    .name = "sparsify calibrate",
    .usage = "--model DIR --text FILE --sparsity S [--kind gate|input|both] [--tokens N] [--out FILE]",
    .summary = "Chooses per-layer thresholds for training-free FFN sparsity on a calibration text and\n"
               "writes them into the model folder (sparsify.json, with the text's name, SHA-256 and token\n"
               "count, the model's identity and provenance). The dense model is run over N tokens of the\n"
               "text; per layer, a share S of the values falls at or below each threshold:\n"
               "  gate  |act(gate.x)| (CATS-style): perplexity/generate/run --active gate-cal use it;\n"
               "        also one global threshold for every layer (a share S of all layers' values\n"
               "        pooled at or below it, to within 1/65536): --active gate --sparsify FILE uses it\n"
               "  input |x_j| of the FFN input after the norm, and |act(gate.x').(up.x')| over the kept\n"
               "        channels x' (TEAL-style): perplexity/generate --active teal use them\n"
               "A threshold of -1 drops nothing (S = 0). With --out FILE the thresholds go to FILE\n"
               "instead (the model folder is not written): --sparsify FILE reads them.",
    .opts = calibrate_options,
    .max_positional = 0,
    OPT_GIVEN_AT(struct calibrate_opts, given),
};

/* Checks that need the model; 0, or 2 with the error printed. */
static int check_calibrate(const struct calibrate_opts *o, const struct model *m, enum sparsify_kind kind)
{
    if ((kind & SPARSIFY_GATE) && !m->arch.glu)
        fb_error("sparsify calibrate --kind %s: %s's FFN (%s) has no gate projection; the gate thresholds need a GLU "
                 "FFN (use --kind input)", o->kind, o->model, m->shape.ffn_activation);
    else if (!o->out && !o->force && sparsify_present(o->model))
        fb_error("sparsify calibrate: %s already has %s; --force replaces it", o->model, SPARSIFY_FILE);
    else if (o->out && !o->force && path_exists(o->out))
        fb_error("sparsify calibrate --out: %s already exists; --force replaces it", o->out);
    else
        return 0;
    return 2;
}

/* The calibration text's tokens: all N asked for, or the error printed. */
static int load_text(const struct calibrate_opts *o, const struct model *m, struct text_tokens *t)
{
    char err[4400];
    if (text_tokens_load(m, o->text, 0, o->tokens, true, t, err, sizeof err) != 0) {
        fb_error("sparsify calibrate --text: %s", err);
        return 1;
    }
    if (t->n_in_file < o->tokens) {
        fb_error("sparsify calibrate --text: %s has %zu tokens, the calibration needs %llu (--tokens)", o->text,
                 t->n_in_file, (unsigned long long)o->tokens);
        return 1;
    }
    return 0;
}

static void on_progress_rows(void *ctx, size_t done, size_t total)
{
    (void)total;
    progress_update(ctx, done, NULL);
}

static cJSON *extra_json(const struct calibrate_opts *o, const struct text_tokens *t, double seconds)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "text", o->text);
    cJSON_AddStringToObject(j, "text_sha256", t->sha256);
    cJSON_AddNumberToObject(j, "tokens", (double)t->n);
    cJSON_AddStringToObject(j, "rule", "per layer, the k-th smallest value, k = floor(sparsity * values): a share "
                            "sparsity of the values falls at or below it; -1 when k = 0");
    cJSON_AddNumberToObject(j, "seconds", seconds);
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", opts_to_json(&calibrate_command, o));
    cJSON_AddItemToObject(j, "provenance", prov);
    return j;
}

static void print_thresholds(const struct calibrate_opts *o, const struct sparsify_thresholds *t, size_t tokens)
{
    printf("sparsify: %s, sparsity %g (%s) over %zu tokens of %s\n", o->model, t->sparsity,
           sparsify_kind_name(t->kind), tokens, o->text);
    if (t->gate)
        printf("gate, global (every layer): %.6g\n", t->gate_global);
    printf("layer  gate           input          intermediate\n");
    for (uint32_t l = 0; l < t->n_layers; l++) {
        char g[24] = "-", in[24] = "-", h[24] = "-";
        if (t->gate)
            snprintf(g, sizeof g, "%.6g", t->gate[l]);
        if (t->input) {
            snprintf(in, sizeof in, "%.6g", t->input[l]);
            snprintf(h, sizeof h, "%.6g", t->inter[l]);
        }
        printf("%5u  %-13s  %-13s  %s\n", l, g, in, h);
    }
}

static int calibrate_model(const struct calibrate_opts *o, const struct fb_settings *set, const struct model *m)
{
    enum sparsify_kind kind;
    sparsify_kind_parse(o->kind, &kind);
    struct text_tokens t = {0};
    int rc = check_calibrate(o, m, kind);
    if (rc == 0)
        rc = load_text(o, m, &t);
    struct sparsify_thresholds th = {0};
    char err[4400];
    if (rc == 0) {
        struct progress pr;
        progress_begin(&pr, "calibration", t.n);
        struct predictor_collect_config c = {.settings = set, .threads = machine_compute_threads(o->threads),
                                             .context = (int)o->context, .progress = on_progress_rows, .ctx = &pr};
        uint64_t t0 = now_ns();
        rc = sparsify_calibrate(m, t.ids, t.n, o->sparsity, kind, &c, &th, err, sizeof err);
        progress_end(&pr);
        if (rc == 1)
            fb_error("sparsify calibrate: interrupted; nothing written");
        else if (rc != 0 || sparsify_write(m, &th, extra_json(o, &t, (double)(now_ns() - t0) * 1e-9), o->out, err,
                                           sizeof err) != 0)
            fb_error("sparsify calibrate: %s", err);
        else
            print_thresholds(o, &th, t.n);
        rc = rc == 1 ? 130 : rc != 0 ? 1 : 0;
    }
    sparsify_free(&th);
    text_tokens_free(&t);
    return rc;
}

/* --out FILE: writable, and none of the inputs nor a file of the model folder. */
static int calibrate_out_ok(const struct calibrate_opts *o)
{
    const char *inputs[] = {o->text};
    return out_file_ok_beside("sparsify calibrate --out", o->out, 0, inputs, 1, o->model);
}

static int cmd_sparsify_calibrate(int argc, char **argv, const struct fb_settings *set)
{
    struct calibrate_opts o;
    int rc;
    if (!cli_start(&calibrate_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    struct model m;
    char err[1024];
    if (!o.model || !o.text || !opts_given(&calibrate_command, &o, "sparsity")) {
        fb_error("sparsify calibrate: needs --model DIR, --text FILE and --sparsity S");
        rc = 2;
    } else if (!o.out && out_dir_ok("sparsify calibrate --model", o.model) != 0) { /* sparsify.json is written there */
        rc = 1;
    } else if (o.out && calibrate_out_ok(&o) != 0) {
        rc = 1;
    } else if (model_open(&m, o.model, err, sizeof err) != 0) {
        fb_error("sparsify calibrate --model: %s", err);
        rc = 1;
    } else {
        interrupt_install();
        rc = calibrate_model(&o, set, &m);
        model_close(&m);
    }
    opts_free(&calibrate_command, &o);
    return rc;
}

const struct subcommand sparsify_subcommands[] = {
    {"calibrate", "per-layer thresholds for training-free sparsity (gate, CATS-style; input, TEAL-style)",
     &calibrate_command, NULL, cmd_sparsify_calibrate},
    {"study", "perplexity against FFN bytes per token for every training-free neuron source", NULL,
     "--model DIR --text FILE[,FILE] --calibration-text FILE --out DIR [...]", cmd_sparsify_study},
    {NULL, NULL, NULL, NULL, NULL},
};

int cmd_sparsify(int argc, char **argv, const struct fb_settings *set)
{
    return cli_subcommands_run("sparsify", sparsify_subcommands, argc, argv, set);
}
