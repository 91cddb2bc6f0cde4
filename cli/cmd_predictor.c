/* flashbed predictor train|eval: activation predictors (issue 13; the
 * paper's §3.1 and App. B). Parses, calls the library
 * (engine/training/predictor_samples.h, predictor_init.h, predictor_train.h,
 * predictor_eval.h) and prints. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/backend_opts.h"
#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "common/clock.h"
#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/json_file.h"
#include "common/log.h"
#include "common/machine.h"
#include "common/options.h"
#include "common/out_path.h"
#include "common/provenance.h"
#include "common/sha256.h"
#include "engine/ffn/ffn_probe.h"
#include "engine/forward/text_feed.h"
#include "engine/predictor/predictor.h"
#include "engine/predictor/predictor_init.h"
#include "engine/predictor/predictor_ranks.h"
#include "engine/training/predictor_eval.h"
#include "engine/training/predictor_eval_report.h"
#include "engine/training/predictor_samples.h"
#include "engine/training/predictor_train.h"

/* ---- shared: the text ---- */

/* The text's tokens from skip on, at least want of them (want 0: all, at
 * least one); 0 or 1 with the error printed. */
static int load_text(const char *cmd, const struct model *m, const char *path, uint64_t skip, uint64_t want,
                     struct text_tokens *t)
{
    char err[4400];
    if (text_tokens_load(m, path, skip, want, true, t, err, sizeof err) != 0) {
        fb_error("%s --text: %s", cmd, err);
        return 1;
    }
    size_t avail = t->n_in_file > skip ? t->n_in_file - (size_t)skip : 0;
    if (avail == 0 || (want && avail < want)) {
        fb_error("%s --tokens: %s has %zu tokens%s; %llu asked for", cmd, path, t->n_in_file,
                 skip ? " before --skip" : "", (unsigned long long)(want ? want : 1) + (unsigned long long)skip);
        return 1;
    }
    return 0;
}

static int threads_of(uint64_t threads)
{
    return machine_compute_threads(threads);
}

static void on_progress_rows(void *ctx, size_t done, size_t total)
{
    (void)total;
    progress_update(ctx, done, NULL);
}

/* ---- predictor train ---- */

struct train_opts {
    char *model, *text, *rank_layers, *init, *dtype;
    uint64_t tokens, rank, epochs, batch, seed, threads, context, svd_iterations;
    double lr, threshold, target_recall, act_threshold, holdout;
    bool force;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
/* --dtype's allowed values, "f32|f16": the table's rows a predictor may be
 * stored in (predictor_wtype_ok), written by cmd_predictor before any
 * option is parsed or shown. */
static char train_dtypes[64];

#define O(f) offsetof(struct train_opts, f)
static const struct opt_def train_options[] = {
    {"model", OPT_STRING, O(model), NULL, "DIR", "flashbed model folder (the predictor is written into it)"},
    {"text", OPT_STRING, O(text), NULL, "FILE", "text the dense model is run over for samples (UTF-8)"},
    {"tokens", OPT_UINT, O(tokens), NULL, "N", "tokens of the text to collect samples from (one row each)",
     .min = 10, .max = OPT_NO_MAX},
    {"rank", OPT_UINT, O(rank), "128", "R", "predictor rank of every layer (at most min(d_model, d_ff))",
     .min = 1, .max = OPT_NO_MAX},
    {"rank-layers", OPT_STRING, O(rank_layers), NULL, "SPEC", "per-layer ranks, e.g. 28-31:1024,0:64"},
    {"init", OPT_STRING, O(init), "svd", "HOW", "starting weights: truncated SVD of the up (GLU: gate) "
     "projection, or random", .allowed = "svd|random"},
    {"svd-iterations", OPT_UINT, O(svd_iterations), STRINGIFY(PREDICTOR_SVD_ITERATIONS), "N", "--init svd: subspace iterations, each two products "
     "with the matrix (1 or 2 give training a good enough start; more matter with --epochs 0)", .max = 64},
    {"epochs", OPT_UINT, O(epochs), "10", "E", "passes over the training rows (0: the starting weights as they are)",
     .max = 100000},
    {"batch", OPT_UINT, O(batch), "64", "B", "rows per mini-batch", .min = 1, .max = 1 << 20},
    {"lr", OPT_DOUBLE, O(lr), "0.003", "X", "Adam's learning rate", .min = 1e-9, .max = 1},
    {"seed", OPT_UINT, O(seed), "1", "S", "seed of the initialisation and the shuffles"},
    {"threads", OPT_UINT, O(threads), "0", "N", "compute threads (0: all CPUs)", .max = FB_MAX_THREADS},
    {"threshold", OPT_DOUBLE, O(threshold), "0.5", "P", "probability above which a neuron is predicted active",
     .max = 1},
    {"target-recall", OPT_DOUBLE, O(target_recall), NULL, "R", "instead of --threshold: per layer the highest "
     "threshold reaching recall R on the validation rows; the epoch kept is the one predicting fewest neurons there",
     .min = 0.01, .max = 1},
    {"act-threshold", OPT_DOUBLE, O(act_threshold), NULL, "T",
     "SiLU and GELU FFNs (required there): a neuron is active when |act(gate)*up| (|act(up)| without a gate) > T", .max = OPT_NO_MAX},
    {"holdout", OPT_DOUBLE, O(holdout), "0.1", "F", "share of the rows, the last ones, held out for validation",
     .min = 0.01, .max = 0.5},
    {"context", OPT_UINT, O(context), "0", "N", "window length in tokens, BOS included (0: the model's)",
     .max = MODEL_MAX_POSITIONS},
    {"dtype", OPT_STRING, O(dtype), "f32", "TYPE", "predictor weights as stored", .allowed = train_dtypes},
    {"force", OPT_FLAG, O(force), NULL, NULL, "replace a predictor the model folder already has"},
    OPT_END,
};
#undef O

static const struct opt_command train_command = {
    .name = "predictor train",
    .usage = "--model DIR --text FILE --tokens N [--rank R] [--rank-layers SPEC] [--epochs E] [options]",
    .summary = "Trains a rank-R activation predictor per layer (logits = B(Ax) + bias on the FFN input after\n"
               "the layer's norm) and writes it into the model folder (predictor.safetensors and model.json's\n"
               "\"predictor\", with the training's provenance). Samples: the dense model run over N tokens of\n"
               "the text, the last --holdout share held out. Starts from a truncated SVD of the up projection\n"
               "(GLU: the gate), then Adam on a balanced binary cross-entropy (positives weighted by\n"
               "negatives/positives per layer); per layer the epoch with the lowest validation loss is kept\n"
               "(epoch 0, the start, included), or with --target-recall the one predicting fewest neurons at\n"
               "that recall, with its per-layer thresholds. Ctrl-C keeps the best epochs so far and writes them.",
    .opts = train_options,
    .max_positional = 0,
    OPT_GIVEN_AT(struct train_opts, given),
};

/* Checks that need the model: the target, --act-threshold, the ranks, an
 * existing predictor. 0, or 2 with the error printed. */
static int check_train(const struct train_opts *o, const struct model *m, uint32_t *ranks,
                       enum predictor_target *target)
{
    char err[512];
    const struct model_shape *s = &m->shape;
    bool act_given = opts_given(&train_command, o, "act-threshold");
    uint32_t most = s->d_model < s->d_ff ? s->d_model : s->d_ff;
    if (predictor_target_of(&m->arch, target, err, sizeof err) != 0)
        fb_error("predictor train --model: %s: %s", o->model, err);
    else if (*target == PREDICT_GLU_ABS && !act_given)
        fb_error("predictor train --act-threshold: %s's FFN (%s%s) is zero almost nowhere, so every neuron is "
                 "slightly active; say which count (|%s| > T)", o->model, s->ffn_activation,
                 m->arch.glu ? ", GLU" : "", m->arch.glu ? "act(gate)*up" : "act(up)");
    else if (*target == PREDICT_RELU && act_given)
        fb_error("predictor train --act-threshold: %s's FFN (%s) is sparse at exactly zero (active: output not "
                 "zero); the option is for SiLU and GELU FFNs", o->model, s->ffn_activation);
    else if (opts_given(&train_command, o, "target-recall") && opts_given(&train_command, o, "threshold"))
        fb_error("predictor train --target-recall: chooses each layer's threshold; do not give --threshold too");
    else if (o->rank > most)
        fb_error("predictor train --rank: %llu is more than min(d_model %u, d_ff %u) = %u", (unsigned long long)o->rank,
                 s->d_model, s->d_ff, most);
    else if (predictor_ranks_parse(o->rank_layers, (uint32_t)o->rank, s->n_layers, most, ranks, err,
                                   sizeof err) != 0)
        fb_error("predictor train --rank-layers: %s", err);
    else if (!o->force && predictor_present(o->model))
        fb_error("predictor train: %s already has a predictor (%s); --force replaces it", o->model, PREDICTOR_FILE);
    else
        return 0;
    return 2;
}

/* Samples from the text; 0, 1 on error, 130 when interrupted. */
static int collect(const struct train_opts *o, const struct fb_settings *set, const struct model *m,
                   const struct text_tokens *t, struct predictor_samples *s, double *seconds)
{
    char err[1024];
    const struct model_shape *sh = &m->shape;
    if (predictor_samples_alloc(s, sh->n_layers, sh->d_model, sh->d_ff, t->n, err, sizeof err) != 0) {
        fb_error("predictor train --tokens: %s", err);
        return 1;
    }
    struct progress pr;
    progress_begin(&pr, "samples", t->n);
    struct predictor_collect_config c = {.settings = set, .threads = threads_of(o->threads),
                                         .context = (int)o->context, .act_threshold = (float)o->act_threshold,
                                         .progress = on_progress_rows, .ctx = &pr};
    uint64_t t0 = now_ns();
    int rc = predictor_samples_collect(s, m, t->ids, t->n, &c, err, sizeof err);
    *seconds = (double)(now_ns() - t0) * 1e-9;
    progress_end(&pr);
    if (rc < 0)
        fb_error("predictor train: %s", err);
    else if (rc == 1)
        fb_error("predictor train: interrupted while collecting samples (%zu of %zu rows); nothing written",
                 s->n_rows, t->n);
    return rc < 0 ? 1 : rc == 1 ? 130 : 0;
}

struct train_view {
    struct progress bar;
    uint32_t epochs;
};

static void on_step(void *ctx, uint64_t done, uint64_t total)
{
    struct train_view *v = ctx;
    v->bar.total = total ? total : 1; /* known once training has sized its batches */
    progress_update(&v->bar, done, NULL);
}

static void on_epoch(void *ctx, const struct predictor_epoch_report *r)
{
    struct train_view *v = ctx;
    double tl = 0, vl = 0, rec = 0, dens = 0, truth = 0;
    unsigned better = 0;
    for (uint32_t l = 0; l < r->n_layers; l++) {
        tl += r->train_loss[l], vl += r->val[l].loss, rec += r->val[l].recall;
        dens += r->val[l].predicted_density, truth += r->val[l].true_density, better += r->improved[l];
    }
    double n = r->n_layers ? r->n_layers : 1;
    if (v->bar.enabled)
        fprintf(stderr, "\r\033[K");
    char train[32] = "-"; /* epoch 0: the starting weights, not trained */
    if (r->epoch > 0)
        snprintf(train, sizeof train, "%.4f", tl / n);
    fprintf(stderr, "epoch %u/%u: train loss %s, validation loss %.4f, recall %.4f, predicted density %.2f%% "
                    "(true %.2f%%), %u of %u layers improved, %.2f s\n", r->epoch, v->epochs, train, vl / n,
            rec / n, 100 * dens / n, 100 * truth / n, better, r->n_layers, r->seconds);
}

static cJSON *layers_json(const struct predictor *p, const struct predictor_train_result *r)
{
    cJSON *a = cJSON_CreateArray();
    for (uint32_t l = 0; l < r->n_layers; l++) {
        const struct predictor_layer_eval *e = &r->best[l];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "layer", l);
        cJSON_AddNumberToObject(o, "rank", p->layers[l].rank);
        cJSON_AddNumberToObject(o, "pos_weight", r->pos_weight[l]);
        cJSON_AddNumberToObject(o, "best_epoch", r->best_epoch[l]);
        cJSON_AddNumberToObject(o, "loss", e->loss);
        cJSON_AddNumberToObject(o, "recall", e->recall);
        cJSON_AddNumberToObject(o, "predicted_density", e->predicted_density);
        cJSON_AddNumberToObject(o, "true_density", e->true_density);
        cJSON_AddNumberToObject(o, "false_positive_rate", e->false_positive_rate);
        cJSON_AddNumberToObject(o, "threshold", e->threshold);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* model.json's predictor.training: where the predictor came from. */
static cJSON *training_json(const struct train_opts *o, const struct text_tokens *t, const struct predictor *p,
                            const struct predictor_train_result *r, double collect_s)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "text", o->text);
    cJSON_AddStringToObject(j, "text_sha256", t->sha256);
    cJSON_AddNumberToObject(j, "tokens", (double)t->n);
    cJSON_AddNumberToObject(j, "train_rows", (double)r->train_rows);
    cJSON_AddNumberToObject(j, "validation_rows", (double)r->val_rows);
    cJSON_AddStringToObject(j, "init", o->init);
    if (!strcmp(o->init, "svd"))
        cJSON_AddNumberToObject(j, "svd_iterations", (double)o->svd_iterations);
    cJSON_AddNumberToObject(j, "epochs", (double)o->epochs);
    cJSON_AddNumberToObject(j, "epochs_run", r->epochs_run);
    cJSON_AddBoolToObject(j, "interrupted", r->interrupted);
    cJSON_AddNumberToObject(j, "batch", (double)o->batch);
    cJSON_AddNumberToObject(j, "lr", o->lr);
    cJSON_AddNumberToObject(j, "seed", (double)o->seed);
    cJSON_AddNumberToObject(j, "threads", threads_of(o->threads));
    cJSON_AddStringToObject(j, "loss", "balanced binary cross-entropy: positives weighted negatives/positives per layer");
    cJSON_AddStringToObject(j, "optimizer", "adam beta1 0.9 beta2 0.999 eps 1e-8");
    if (o->target_recall > 0) {
        cJSON_AddNumberToObject(j, "target_recall", o->target_recall);
        cJSON_AddStringToObject(j, "kept", "per layer the epoch with the lowest predicted density on the validation "
                                "rows at the highest threshold reaching target_recall there (0: the start)");
    } else
        cJSON_AddStringToObject(j, "kept", "per layer the epoch with the lowest validation loss (0: the start)");
    cJSON *loss = cJSON_AddArrayToObject(j, "loss"), *recall = cJSON_AddArrayToObject(j, "recall");
    for (uint32_t l = 0; l < r->n_layers; l++) {
        cJSON_AddItemToArray(loss, cJSON_CreateNumber(r->best[l].loss));
        cJSON_AddItemToArray(recall, cJSON_CreateNumber(r->best[l].recall));
    }
    cJSON_AddItemToObject(j, "layers", layers_json(p, r));
    cJSON_AddNumberToObject(j, "collect_seconds", collect_s);
    cJSON_AddNumberToObject(j, "collect_tokens_per_second", collect_s > 0 ? (double)t->n / collect_s : 0);
    cJSON_AddNumberToObject(j, "train_seconds", r->seconds);
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", opts_to_json(&train_command, o));
    cJSON_AddItemToObject(j, "provenance", prov);
    return j;
}

static void print_trained(const struct train_opts *o, const struct predictor *p, const struct predictor_train_result *r,
                          size_t rows, double collect_s)
{
    printf("predictor for %s: %zu rows (%zu training, %zu validation) collected at %.0f tokens/s; init %s, %u of "
           "%llu epochs in %.2f s%s\n", o->model, rows, r->train_rows, r->val_rows, collect_s > 0 ? rows / collect_s : 0,
           o->init, r->epochs_run, (unsigned long long)o->epochs, r->seconds, r->interrupted ? " [interrupted]" : "");
    printf("layer  rank  kept epoch  val loss  threshold  recall  predicted  true     FP rate\n");
    for (uint32_t l = 0; l < r->n_layers; l++) {
        const struct predictor_layer_eval *e = &r->best[l];
        printf("%5u  %4u  %10u  %8.4f  %9.3g  %6.4f  %8.2f%%  %6.2f%%  %7.4f\n", l, p->layers[l].rank,
               r->best_epoch[l], e->loss, e->threshold, e->recall, 100 * e->predicted_density,
               100 * e->true_density, e->false_positive_rate);
    }
    printf("written: %s/%s (%llu bytes, %s)\n", o->model, PREDICTOR_FILE, (unsigned long long)predictor_bytes(p),
           wtype_name(p->dtype));
}

/* Initialises p, trains it on s and writes it; 0, 1 on error, 130 interrupted (written). */
static int train_and_save(const struct train_opts *o, const struct model *m, const struct text_tokens *t,
                          const struct predictor_samples *s, struct predictor *p, double collect_s)
{
    char err[4400];
    enum predictor_init how;
    predictor_init_parse(o->init, &how);
    if (predictor_init_weights(p, m, how, o->seed, (uint32_t)o->svd_iterations, threads_of(o->threads), err,
                               sizeof err) != 0) {
        fb_error("predictor train --init: %s", err);
        return 1;
    }
    struct train_view v = {.epochs = (uint32_t)o->epochs};
    progress_begin(&v.bar, "training", 1);
    struct predictor_train_config c = {.epochs = (uint32_t)o->epochs, .batch = (uint32_t)o->batch, .lr = o->lr,
                                       .seed = o->seed, .threads = threads_of(o->threads), .holdout = o->holdout,
                                       .target_recall = o->target_recall, .on_epoch = on_epoch, .on_step = on_step, .ctx = &v};
    struct predictor_train_result r;
    if (predictor_train(p, s, &c, &r, err, sizeof err) != 0) {
        progress_end(&v.bar);
        fb_error("predictor train: %s", err);
        return 1;
    }
    progress_end(&v.bar);
    p->training = training_json(o, t, p, &r, collect_s);
    int rc = predictor_save(p, o->model, o->force, err, sizeof err);
    if (rc != 0)
        fb_error("predictor train: %s", err);
    else
        print_trained(o, p, &r, s->n_rows, collect_s);
    rc = rc != 0 ? 1 : r.interrupted ? 130 : 0;
    predictor_train_result_free(&r);
    return rc;
}

static int train_model(const struct train_opts *o, const struct fb_settings *set, const struct model *m)
{
    uint32_t *ranks = calloc(m->shape.n_layers ? m->shape.n_layers : 1, sizeof *ranks);
    enum predictor_target target;
    if (!ranks)
        return 1;
    int rc = check_train(o, m, ranks, &target);
    struct text_tokens t = {0};
    if (rc == 0)
        rc = load_text("predictor train", m, o->text, 0, o->tokens, &t);
    struct predictor_samples s = {0};
    double collect_s = 0;
    if (rc == 0)
        rc = collect(o, set, m, &t, &s, &collect_s);
    struct predictor p = {0};
    char err[512];
    enum fb_dtype dt = DTYPE_F32;
    wtype_parse(o->dtype, &dt); /* one of train_dtypes: the options checked it */
    const struct model_shape *sh = &m->shape;
    if (rc == 0 && predictor_alloc(&p, sh->n_layers, sh->d_model, sh->d_ff, ranks, dt, err, sizeof err) != 0) {
        fb_error("predictor train: %s", err);
        rc = 1;
    }
    if (rc == 0) {
        predictor_set_threshold(&p, o->threshold);
        p.target = target;
        p.act_threshold = target == PREDICT_GLU_ABS ? (float)o->act_threshold : 0.0f;
        rc = train_and_save(o, m, &t, &s, &p, collect_s);
    }
    predictor_free(&p);
    predictor_samples_free(&s);
    text_tokens_free(&t);
    free(ranks);
    return rc;
}

static int cmd_predictor_train(int argc, char **argv, const struct fb_settings *set)
{
    struct train_opts o;
    int rc;
    if (!cli_start(&train_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    struct model m;
    char err[1024];
    if (!o.model || !o.text || !opts_given(&train_command, &o, "tokens")) {
        fb_error("predictor train: needs --model DIR, --text FILE and --tokens N");
        rc = 2;
    } else if (out_dir_ok("predictor train --model", o.model) != 0) { /* the predictor is written there */
        rc = 1;
    } else if (model_open(&m, o.model, err, sizeof err) != 0) {
        fb_error("predictor train --model: %s", err);
        rc = 1;
    } else {
        interrupt_install();
        rc = train_model(&o, set, &m);
        model_close(&m);
    }
    opts_free(&train_command, &o);
    return rc;
}

/* ---- predictor eval ---- */

struct eval_opts {
    char *model, *text, *out, *backend;
    uint64_t tokens, skip, gen_tokens, threads, context;
    double threshold;
    bool plot, force;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define O(f) offsetof(struct eval_opts, f)
static const struct opt_def eval_options[] = {
    {"model", OPT_STRING, O(model), NULL, "DIR", "flashbed model folder with a predictor"},
    {"text", OPT_STRING, O(text), NULL, "FILE", "text to evaluate on (UTF-8)"},
    {"tokens", OPT_UINT, O(tokens), "0", "N", "tokens of the text (0: all after --skip)"},
    {"skip", OPT_UINT, O(skip), "0", "N", "leave out the text's first N tokens (e.g. those trained on)"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "folder for eval.json, eval.md, fig9a.csv (created)"},
    {"plot", OPT_FLAG, O(plot), NULL, NULL, "draw the paper's Fig. 9a (fig9a.png, fig9a.svg)"},
    {"threshold", OPT_DOUBLE, O(threshold), NULL, "P", "probability threshold [default: the predictor's]",
     .max = 1},
    {"gen-tokens", OPT_UINT, O(gen_tokens), "32", "N", "greedy tokens per fixed prompt (0: no greedy comparison)",
     .max = 4096},
    {"context", OPT_UINT, O(context), "0", "N", "window length in tokens, BOS included (0: the model's)",
     .max = MODEL_MAX_POSITIONS},
    {"threads", OPT_UINT, O(threads), "0", "N", "compute threads (0: all CPUs)", .max = FB_MAX_THREADS},
    {"backend", OPT_STRING, O(backend), "cpu", "NAME", BACKEND_OPT_HELP, .allowed = BACKEND_OPT_ALLOWED},
    {"force", OPT_FLAG, O(force), NULL, NULL, FORCE_HELP},
    OPT_END,
};
#undef O

static const struct opt_command eval_command = {
    .name = "predictor eval",
    .usage = "--model DIR --text FILE --out DIR [--tokens N] [--skip N] [--threshold P] [--plot]",
    .summary = "Evaluates the model folder's predictor: per layer true and predicted density, recall,\n"
               "false-negative and false-positive rates on dense's inputs; perplexity dense vs with the\n"
               "FFN computed on the predicted neurons only; greedy agreement with dense over fixed prompts;\n"
               "the predictor's bytes and multiply-adds as % of the model's. Writes eval.json, eval.md,\n"
               "fig9a.csv (and with --plot the paper's Fig. 9a).",
    .opts = eval_options,
    .max_positional = 0,
    OPT_GIVEN_AT(struct eval_opts, given),
};

struct eval_view {
    struct progress bar;
    const char *stage;
};

static void on_eval_progress(void *ctx, const char *stage, uint64_t done, uint64_t total)
{
    struct eval_view *v = ctx;
    if (!v->stage || strcmp(v->stage, stage) != 0) {
        progress_end(&v->bar);
        progress_begin(&v->bar, stage, total);
        v->stage = stage;
    }
    progress_update(&v->bar, done, NULL);
}

static void print_eval(const struct predictor_eval_result *r, const char *out)
{
    printf("layer  true     predicted  recall  FN rate  FP rate  missed |h|\n");
    for (uint32_t l = 0; l < r->n_layers; l++) {
        const struct predictor_eval_layer *L = &r->layers[l];
        printf("%5u  %6.2f%%  %8.2f%%  %6.4f  %7.4f  %7.4f  %9.2f%%\n", l, 100 * L->true_density,
               100 * L->predicted_density, L->recall, L->false_negative_rate, L->false_positive_rate,
               100 * L->missed_mass_share);
    }
    printf("perplexity dense %.6g, with the predictor %.6g, oracle %.6g over %zu tokens; top-1 agreement %.4f; "
           "greedy agreement %.4f (position by position %.4f)%s\n", r->perplexity_dense, r->perplexity_predictor,
           r->perplexity_oracle, r->tokens, r->top1_agreement, r->greedy_agreement, r->greedy_match,
           r->interrupted ? " [interrupted]" : "");
    printf("predictor %.3f%% of the model's bytes, %.3f%% of its multiply-adds per token; written to %s\n",
           r->model_bytes ? 100.0 * (double)r->predictor_bytes / (double)r->model_bytes : 0.0,
           r->model_madds ? 100.0 * (double)r->predictor_madds / (double)r->model_madds : 0.0, out);
}

static int evaluate(const struct eval_opts *o, const struct fb_settings *set, const struct model *m,
                    struct predictor *p, const struct cli_backend *be, struct out_manifest *folder)
{
    struct text_tokens t = {0};
    if (load_text("predictor eval", m, o->text, o->skip, o->tokens, &t) != 0)
        return 1;
    if (opts_given(&eval_command, o, "threshold"))
        predictor_set_threshold(p, o->threshold);
    struct eval_view v = {0};
    struct predictor_eval_config c = {.settings = set, .backend = be->ops, .threads = threads_of(o->threads),
                                      .context = (int)o->context, .gen_tokens = (int)o->gen_tokens,
                                      .progress = on_eval_progress, .ctx = &v};
    struct predictor_eval_result r;
    char err[4400];
    int rc = predictor_eval_run(m, p, t.ids, t.n, &c, &r, err, sizeof err);
    progress_end(&v.bar);
    if (rc != 0) {
        fb_error("predictor eval: %s", err);
        text_tokens_free(&t);
        return 1;
    }
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", opts_to_json(&eval_command, o));
    cli_backend_provenance(prov, be);
    struct predictor_eval_source src = {.model_dir = o->model, .model_name = m->shape.name, .text = o->text,
                                        .text_sha256 = t.sha256, .gen_tokens = (int)o->gen_tokens};
    rc = predictor_eval_write(folder, o->out, &r, p, &src, prov, o->plot, set, err, sizeof err);
    if (rc != 0)
        fb_error("predictor eval --out: %s", err);
    else
        print_eval(&r, o->out);
    rc = rc != 0 ? 1 : r.interrupted ? 130 : 0;
    predictor_eval_result_free(&r);
    text_tokens_free(&t);
    return rc;
}

static int eval_model(const struct eval_opts *o, const struct fb_settings *set, const struct model *m,
                      struct out_manifest *folder)
{
    struct predictor p;
    char err[4400];
    const struct model_shape *s = &m->shape;
    int lrc = predictor_load(&p, o->model, s->n_layers, s->d_model, s->d_ff, err, sizeof err);
    if (lrc != 0) {
        if (lrc == 1)
            fb_error("predictor eval --model: %s has no predictor (flashbed predictor train writes one)", o->model);
        else
            fb_error("predictor eval --model: %s", err);
        return 1;
    }
    /* the folder is made only once the backend started, and taken away
     * again (while empty) when the evaluation fails */
    char first[4200];
    snprintf(first, sizeof first, "%s/eval.json", o->out);
    struct out_parents made = {0};
    struct cli_backend be;
    int rc = 1;
    if (cli_backend_open("predictor eval", o->backend, set, &be) == 0 &&
        out_parents_ok("predictor eval --out", first, &made) == 0) {
        rc = evaluate(o, set, m, &p, &be, folder);
        if (rc == 1)
            out_parents_undo(&made);
        else
            out_parents_keep(&made);
    }
    predictor_free(&p);
    return rc;
}

static const char *const eval_files[] = {"eval.json", "eval.md", "fig9a.csv", NULL};

static int cmd_predictor_eval(int argc, char **argv, const struct fb_settings *set)
{
    struct eval_opts o;
    int rc;
    if (!cli_start(&eval_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    struct model m;
    char err[1024];
    struct out_manifest *folder = NULL;
    if (!o.model || !o.text || !o.out) {
        fb_error("predictor eval: needs --model DIR, --text FILE and --out DIR");
        rc = 2;
    } else if (out_result_dir_ok("predictor eval --out", o.out, o.force, false, eval_files, &folder) != 0) {
        rc = 1;
    } else if (model_open(&m, o.model, err, sizeof err) != 0) {
        fb_error("predictor eval --model: %s", err);
        rc = 1;
    } else {
        interrupt_install();
        rc = eval_model(&o, set, &m, folder);
        model_close(&m);
    }
    opts_free(&eval_command, &o);
    return out_result_dir_close(folder, rc);
}

const struct subcommand predictor_subcommands[] = {
    {"train", "the paper's low-rank activation predictor per layer, from a text, into the model folder",
     &train_command, NULL, cmd_predictor_train},
    {"eval", "a predictor's recall, densities, perplexity and greedy agreement (Fig. 9a)", &eval_command, NULL,
     cmd_predictor_eval},
    {NULL, NULL, NULL, NULL, NULL},
};

int cmd_predictor(int argc, char **argv, const struct fb_settings *set)
{
    predictor_wtype_names(train_dtypes, sizeof train_dtypes, "|", "|");
    return cli_subcommands_run("predictor", predictor_subcommands, argc, argv, set);
}
