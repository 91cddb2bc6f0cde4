/* flashbed sparsify study: the training-free sparsity study
 * (harness/reproduce_sparsity.c) on any model folder with a GLU FFN:
 * parse, check everything before anything runs, plan, run the steps as
 * reproduce runs them (resumable: the same --out again), write REPORT.md,
 * print where it is. The thresholds files go under --out; the model folder
 * is only read. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "cli/study_run.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/options.h"
#include "engine/forward/text_feed.h"
#include "engine/model/model.h"
#include "engine/predictor/predictor.h"
#include "harness/reproduce.h"

struct study_opts {
    char *model, *text, *calib_text, *sparsities, *predictor, *out;
    uint64_t calib_tokens, tokens;
    struct opt_given given;
};

#define O(f) offsetof(struct study_opts, f)
static const struct opt_def study_options[] = {
    {"model", OPT_STRING, O(model), NULL, "DIR", "flashbed model folder with a GLU FFN (only read)"},
    {"text", OPT_STRING, O(text), NULL, "FILE[,FILE]", "texts to score (UTF-8), each named in the report by its "
     "file name; the calibration text among them is scored past its calibration tokens"},
    {"calibration-text", OPT_STRING, O(calib_text), NULL, "FILE", "text the thresholds (and nothing else) are "
     "chosen on, its first --calibration-tokens tokens"},
    {"calibration-tokens", OPT_UINT, O(calib_tokens), "2048", "N", "calibration tokens", .min = 1,
     .max = OPT_NO_MAX},
    {"tokens", OPT_UINT, O(tokens), "4096", "N", "tokens scored per text", .min = 1, .max = OPT_NO_MAX},
    {"sparsities", OPT_STRING, O(sparsities), "0.25,0.5,0.7,0.9", "LIST", "target sparsities, each in [0, 1)"},
    {"predictor-thresholds", OPT_STRING, O(predictor), "0.3,0.5,0.7,0.9", "LIST",
     "the model's trained predictor at these probability thresholds (only when the model folder has one)"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "the study's folder (new, empty, or a study's: run again to resume)"},
    OPT_END,
};
#undef O

static const struct opt_command study_command = {
    .name = "sparsify study",
    .usage = "--model DIR --text FILE[,FILE] --calibration-text FILE [--calibration-tokens N] [--tokens N]\n"
             "       [--sparsities LIST] [--predictor-thresholds LIST] --out DIR",
    .summary = "Quality against bytes of the training-free neuron sources on one model: for each target\n"
               "sparsity, `sparsify calibrate --out` chooses the thresholds on the calibration text, then\n"
               "`perplexity` scores every text with dense (the reference), gate (one global threshold),\n"
               "gate-cal (per layer), teal (input sparsity) and, when the model folder has one, the trained\n"
               "predictor at each probability threshold: perplexity beside the FFN bytes a token reads and\n"
               "ms per token. REPORT.md under --out holds a table per text and a plot of perplexity\n"
               "against bytes. Each step is one flashbed command (logs/, steps/): run the same command\n"
               "again to resume after Ctrl-C or a failure.",
    .opts = study_options,
    .max_positional = 0,
    OPT_GIVEN_AT(struct study_opts, given),
};

/* A comma list of numbers into v; -1 (printed, naming the option) when one
 * is not a number, outside [lo, hi) (hi_closed: [lo, hi]), or too many. */
static int parse_list(const char *opt, const char *list, double lo, double hi, bool hi_closed, double *v,
                      size_t *n)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    *n = 0;
    for (char *save = NULL, *c = strtok_r(buf, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        char *end;
        double x = strtod(c, &end);
        if (end == c || *end || !(x >= lo && (hi_closed ? x <= hi : x < hi))) {
            fb_error("sparsify study --%s: '%s' is not a number in [%g, %g%s", opt, c, lo, hi, hi_closed ? "]" : ")");
            return -1;
        }
        for (size_t i = 0; i < *n; i++)
            if ((int)(100 * v[i] + 0.5) == (int)(100 * x + 0.5)) {
                fb_error("sparsify study --%s: %g and %g are one setting (to 0.01)", opt, v[i], x);
                return -1;
            }
        if (*n == REPRO_SPARSITY_MAX) {
            fb_error("sparsify study --%s: at most %d values", opt, REPRO_SPARSITY_MAX);
            return -1;
        }
        v[(*n)++] = x;
    }
    if (!*n)
        fb_error("sparsify study --%s: empty list", opt);
    return *n ? 0 : -1;
}

/* A text's name in ids and file names: its file name without the
 * extension, letters, digits, '-' and '_' kept. */
static void text_name(const char *path, char *name, size_t len)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t n = 0;
    for (const char *c = base; *c && *c != '.' && n + 1 < len; c++)
        name[n++] = isalnum((unsigned char)*c) || *c == '-' ? *c : '_';
    name[n] = '\0';
    if (!n)
        snprintf(name, len, "text");
}

/* --text's files into z: 0, or the exit status after saying why (a file
 * missing: FB_EXIT_FAILURE; a list it cannot take: FB_EXIT_USAGE). */
static int parse_texts(const struct study_opts *o, struct repro_sparsity *z)
{
    char buf[8800];
    snprintf(buf, sizeof buf, "%s", o->text);
    for (char *save = NULL, *c = strtok_r(buf, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        if (z->n_texts == REPRO_SPARSITY_TEXTS) {
            fb_error("sparsify study --text: at most %d texts", REPRO_SPARSITY_TEXTS);
            return FB_EXIT_USAGE;
        }
        if (!path_exists(c)) {
            fb_error("sparsify study --text: %s: no such file", c);
            return FB_EXIT_FAILURE;
        }
        snprintf(z->texts[z->n_texts], sizeof z->texts[0], "%s", c);
        text_name(c, z->text_names[z->n_texts], sizeof z->text_names[0]);
        for (size_t i = 0; i < z->n_texts; i++)
            if (!strcmp(z->text_names[i], z->text_names[z->n_texts])) {
                fb_error("sparsify study --text: %s and %s would have one name (%s)", z->texts[i], c,
                         z->text_names[i]);
                return FB_EXIT_USAGE;
            }
        z->n_texts++;
    }
    if (!z->n_texts)
        fb_error("sparsify study --text: empty list");
    return z->n_texts ? 0 : FB_EXIT_USAGE;
}

/* The calibration text has the calibration tokens, and tokens left to
 * score past them when it is also scored. */
static int check_calibration_text(const struct study_opts *o, const struct model *m, const struct repro_sparsity *z)
{
    struct text_tokens t;
    char err[4400];
    int rc = text_tokens_load(m, o->calib_text, 0, 1, false, &t, err, sizeof err);
    size_t have = t.n_in_file;
    text_tokens_free(&t);
    bool scored = false;
    for (size_t i = 0; i < z->n_texts; i++)
        scored = scored || !strcmp(z->texts[i], o->calib_text);
    if (rc != 0)
        fb_error("sparsify study --calibration-text: %s", err);
    else if (have < o->calib_tokens + (scored ? 1 : 0)) {
        fb_error("sparsify study --calibration-tokens: %s has %zu tokens, %llu are asked for%s", o->calib_text, have,
                 (unsigned long long)o->calib_tokens, scored ? " and it is scored past them (--text)" : "");
        rc = -1;
    }
    return rc;
}

/* --out: new, an empty folder, or a study's folder (reproduce.json at
 * its root): the runner removes what unfinished steps left under it, which
 * must never be the user's own files. */
static int check_out(const char *out)
{
    char mark[4400];
    snprintf(mark, sizeof mark, "%s/reproduce.json", out);
    if (!path_exists(out) || path_exists(mark))
        return 0;
    DIR *d = opendir(out);
    struct dirent *e = NULL;
    while (d && (e = readdir(d)) && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")))
        ;
    if (d)
        closedir(d);
    if (d && !e)
        return 0;
    fb_error("sparsify study --out: %s %s: choose another folder (or the --out of an earlier study to resume it)",
             out, d ? "is not empty and is not a study's folder (no reproduce.json)" : "exists and is not a folder");
    return -1;
}

/* The model: a GLU FFN; the predictor's thresholds only when it has one. */
static int check_model(const struct study_opts *o, const struct model *m, struct repro_sparsity *z)
{
    if (!m->arch.glu) {
        fb_error("sparsify study --model: %s's FFN (%s) has no gate projection; the study needs a GLU FFN",
                 o->model, m->shape.ffn_activation);
        return -1;
    }
    if (!predictor_present(o->model)) {
        if (opts_given(&study_command, o, "predictor-thresholds")) {
            fb_error("sparsify study --predictor-thresholds: %s has no activation predictor (make one in a copy of "
                     "the folder with `flashbed predictor train`)", o->model);
            return -1;
        }
        z->n_predictor = 0;
        fb_info("%s has no activation predictor: the study leaves the predictor out", o->model);
    }
    snprintf(z->name, sizeof z->name, "%s", m->shape.name);
    return 0;
}

/* Everything checked before anything runs; z filled. 0, or the exit status
 * (printed): FB_EXIT_USAGE for the command line, FB_EXIT_FAILURE for a file. */
static int study_config(const struct study_opts *o, struct repro_sparsity *z)
{
    if (!o->model || !o->text || !o->calib_text || !o->out) {
        fb_error("sparsify study: needs --model DIR, --text FILE[,FILE], --calibration-text FILE and --out DIR");
        return FB_EXIT_USAGE;
    }
    memset(z, 0, sizeof *z);
    snprintf(z->model, sizeof z->model, "%s", o->model);
    snprintf(z->calib_text, sizeof z->calib_text, "%s", o->calib_text);
    z->calib_tokens = o->calib_tokens;
    z->tokens = o->tokens;
    z->trained = true;
    int rc = parse_texts(o, z);
    if (rc != 0)
        return rc;
    if (parse_list("sparsities", o->sparsities, 0, 1, false, z->sparsities, &z->n_sparsities) != 0 ||
        parse_list("predictor-thresholds", o->predictor, 0, 1, true, z->predictor_p, &z->n_predictor) != 0)
        return FB_EXIT_USAGE;
    if (!path_exists(o->calib_text)) {
        fb_error("sparsify study --calibration-text: %s: no such file", o->calib_text);
        return FB_EXIT_FAILURE;
    }
    struct model m;
    char err[4400];
    if (model_open(&m, o->model, err, sizeof err) != 0) {
        fb_error("sparsify study --model: %s", err);
        return FB_EXIT_FAILURE;
    }
    rc = check_model(o, &m, z) == 0 && check_calibration_text(o, &m, z) == 0 ? 0 : FB_EXIT_FAILURE;
    model_close(&m);
    return rc == 0 && check_out(o->out) != 0 ? FB_EXIT_FAILURE : rc;
}

/* The plan run, then REPORT.md (also after an interruption: what finished). */
static int run_plan(struct repro_plan *plan, const char *out, const struct fb_settings *set)
{
    char program[4096];
    if (study_own_path("sparsify study", program, sizeof program) != 0)
        return 1;
    const struct study_run_spec spec = {"sparsify study", program, out, repro_sparsity_report_write, true};
    return study_run(plan, &spec, set);
}

int cmd_sparsify_study(int argc, char **argv, const struct fb_settings *set)
{
    struct study_opts o;
    int rc;
    if (!cli_start(&study_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    struct repro_sparsity *z = malloc(sizeof *z);
    struct repro_plan plan;
    char err[4400];
    if (!z) {
        fb_error("sparsify study: out of memory");
        rc = FB_EXIT_FAILURE;
    } else if ((rc = study_config(&o, z)) != 0)
        ;
    else if (repro_sparsity_plan_build(z, o.out, set, &plan, err, sizeof err) != 0) {
        fb_error("sparsify study: %s", err);
        rc = 1;
    } else {
        rc = run_plan(&plan, o.out, set);
        repro_plan_free(&plan);
    }
    free(z);
    opts_free(&study_command, &o);
    return rc;
}
