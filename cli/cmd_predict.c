/* flashbed predict: the cost model for a list of policies under one
 * configuration (sim/predict_list.h), the paper's tables (--paper), or a
 * prediction beside a measured run (--compare). */
#include <math.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "common/atomic_file.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "common/log.h"
#include "common/options.h"
#include "common/parse.h"
#include "common/provenance.h"
#include "common/wtype.h"
#include "sim/cost_model.h"
#include "sim/hw_choice.h"
#include "sim/paper_tables.h"
#include "sim/predict_list.h"
#include "sim/predict_report.h"
#include "sim/run_summary.h"
#include "traces/trace.h"

struct predict_opts {
    char *model, *hw, *dtype, *policy, *layout, *dram_budget, *density_from, *trace, *out, *paper,
        *compare, *use, *predictor_rank, *io_engine, *verify;
    uint64_t io_threads, context, tokens;
    double channel_density, down_density;
    bool allow_emulated, force;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define O(f) offsetof(struct predict_opts, f)
static const struct opt_def predict_options[] = {
    {"model", OPT_STRING, O(model), "opt-6.7b", "SHAPE|DIR",
     "model shape: a name in configs/models/, a .json path, or a model folder (its model.json)"},
    {"hw", OPT_STRING, O(hw), "m1max-cpu", "PROFILE", "hardware profile: a name in configs/hw/ or a .json path [default: this machine's own, results/hw-HOST.json, where calibrate writes it, when there is one; else m1max-cpu]; with --paper (given explicitly) it replaces the paper's: every row of table2, table3's rows on its backend (cpu, metal, cuda), fig7"},
    {"dtype", OPT_STRING, O(dtype), "f32", "TYPE", "weights [default: f32; with --paper fig7 or all, Fig. 7's: bf16, the paper's]", .allowed = WTYPE_ALLOWED},
    {"policy", OPT_STRING, O(policy), "window:5", "P[,P...]", "policies to price, each on its own (cache/'s names): naive, hybrid, predictor, window:K (last K tokens, this one included: the paper's k = 4 is window:5), window:auto (the largest K the budget holds, chosen as run chooses it); with --trace also lru, lfu, hot, belady"},
    {"layout", OPT_STRING, O(layout), "bundled", "LAYOUT", "split (up and down read apart) or bundled; with --trace also friends, coalesce:G; transposed: input sparsity (the neuron source teal), its channel bundles and rows of down, from a trace with channel sets or --channel-density and --down-density, no predictor"},
    {"channel-density", OPT_DOUBLE, O(channel_density), "0", "D", "--layout transposed without --trace: the input channels kept per token and layer, over d_model", .max = 1},
    {"down-density", OPT_DOUBLE, O(down_density), "0", "D", "--layout transposed without --trace: the rows of down kept per token and layer, over d_ff", .max = 1},
    {"dram-budget", OPT_STRING, O(dram_budget), "50%", "PCT|BYTES", "DRAM for the model: share kept resident by hybrid"},
    {"density-from", OPT_STRING, O(density_from), "paper", "SOURCE", "per-token FFN volumes: paper (configs/paper/densities.json)",
     .allowed = "paper"},
    {"trace", OPT_STRING, O(trace), NULL, "FILE", "per-token volumes from replaying this activation trace under each policy (naive and hybrid need none: refused with it)"},
    {"use", OPT_STRING, O(use), "auto", "SETS", "with --trace: auto is predicted when the trace has them",
     .allowed = "auto|predicted|actual"},
    {"io-threads", OPT_UINT, O(io_threads), "0", "N", "flash reader threads [default: the profile's]",
     .max = FB_MAX_THREADS},
    {"io-engine", OPT_STRING, O(io_engine), "psync", "NAME", "the engine's reads, whose fixed cost per read a profile with fixed costs gives (run's --io-engine)", .allowed = "psync|io_uring"},
    {"context", OPT_UINT, O(context), "256", "TOKENS", "mean KV-cache length over the decode"},
    {"tokens", OPT_UINT, O(tokens), "0", "N", "window:auto: the run's tokens (prompt + generated - 1, as run counts them), over which K is chosen as run --window auto chooses it [default: the trace's length; without --trace, any K up to 4096]",
     .max = 1u << 30},
    {"verify", OPT_STRING, O(verify), "on", "on|off", "price checking every bundle read whole against its CRC-32C (as run --verify checks them): its bytes at the profile's CRC rate, inside mem ms; with --compare, the run's own choice (summary.verify.requested) unless given", .allowed = "on|off"},
    {"allow-emulated", OPT_FLAG, O(allow_emulated), NULL, NULL, "price with a profile calibrate measured on an emulated device (sim, OpenCL on a CPU): its rates check the pipeline and are no GPU's, so such a profile is refused without this"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "result folder [default: results/predict-<timestamp>]"},
    {"paper", OPT_STRING, O(paper), NULL, "WHAT", "regenerate the paper's tables and figure",
     .allowed = "table2|table3|fig7|all"},
    {"compare", OPT_STRING, O(compare), NULL, "RUN.json", "put the prediction beside a measured run (flashbed run's run.json); one policy"},
    {"predictor-rank", OPT_STRING, O(predictor_rank), "auto", "R|auto|none", "the activation predictor every policy but naive and hybrid runs, held in DRAM and computed per token: rank R on every layer; auto, the paper's share of the model for the shapes it gives one (configs/paper/densities.json), else rank 128 (at most min(d_model, d_ff)); none, no predictor (a run whose neurons an oracle or a trace chose)"},
    {"force", OPT_FLAG, O(force), NULL, NULL, FORCE_HELP},
    OPT_END,
};
#undef O

static const struct opt_command predict_command = {
    .name = "predict",
    .usage = "[--model SHAPE|DIR --hw PROFILE --policy P[,P...] ...] | --paper table2|table3|fig7|all",
    .summary = "Predicts per-token I/O, memory-management and compute latency with the cost model\n"
               "(sim/cost_model.h) for each policy of --policy (e.g. predictor,window:5,lru with --trace):\n"
               "predict.json has one entry per policy in \"predictions\", predict.md one row per policy.\n"
               "--paper regenerates the paper's Table 2, Table 3 and Fig. 7 beside the paper's numbers\n"
               "(with --hw priced with that profile where it applies, the rows marked; options the\n"
               "paper's tables fix are refused with --paper; they model the paper's engine, which checked\n"
               "no reads: verification off);\n"
               "--compare puts a prediction (one policy) beside a measured run.",
    .opts = predict_options,
    .max_positional = 0,
    OPT_GIVEN_AT(struct predict_opts, given),
};

/* --predictor-rank: auto, none or a rank >= 1. */
static int parse_rank(const char *text, int *rank)
{
    if (!strcmp(text, "auto") || !strcmp(text, "none")) {
        *rank = !strcmp(text, "auto") ? PREDICT_RANK_AUTO : PREDICT_RANK_NONE;
        return 0;
    }
    char *end;
    long v = strtol(text, &end, 10);
    if (*end || end == text || v < 1 || v > 1 << 20) {
        fb_error("predict --predictor-rank '%s': a rank from 1 to %d, auto or none", text, 1 << 20);
        return -1;
    }
    *rank = (int)v;
    return 0;
}

/* "50%" -> 0.5 of the model; "6G" -> bytes / model bytes. */
static int parse_budget(const char *text, double model_bytes, double *share, char *err, size_t errlen)
{
    double bytes;
    if (parse_share_or_size(text, model_bytes, &bytes, err, errlen) != 0)
        return -1;
    if (bytes <= 0) {
        snprintf(err, errlen, "'%s' leaves nothing in DRAM", text);
        return -1;
    }
    *share = fmin(1.0, bytes / model_bytes);
    return 0;
}

/* The predictor's rows of the comparison (its time inside compute, its
 * DRAM held), apart from the three components. Returns the Markdown's length. */
static int compare_predictor(const struct run_comparison *c, cJSON *rows, char *md, size_t len)
{
    if (!c->has_predictor)
        return 0;
    const char *keys[] = {"predictor_ms", "predictor_dram_bytes"};
    const double *v[] = {c->predictor_ms, c->predictor_dram}, scale[] = {1, 1e-6};
    int n = 0;
    for (int i = 0; i < 2; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "component", keys[i]);
        cJSON_AddNumberToObject(o, i ? "predicted" : "predicted_ms", v[i][0]);
        cJSON_AddNumberToObject(o, i ? "measured" : "measured_ms", v[i][1]);
        cJSON_AddNumberToObject(o, "rel_err", v[i][2]);
        cJSON_AddItemToArray(rows, o);
        n += snprintf(md + n, len - (size_t)n, "| %s (%s, not in the total) | %.3f | %.3f | %+.1f%% |\n",
                      i ? "predictor DRAM MB" : "predictor ms", i ? "held" : "inside compute", v[i][0] * scale[i],
                      v[i][1] * scale[i], 100 * v[i][2]);
    }
    return n;
}

/* The device's counts per token, modelled beside measured (a device run
 * priced on a profile with a device). Returns the Markdown's length. */
static int compare_device(const struct run_comparison *c, cJSON *rows, char *md, size_t len)
{
    if (!c->has_device)
        return 0;
    int n = 0;
    for (int k = 0; k < RUN_DEVICE_KEYS; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "component", run_device_keys[k]);
        cJSON_AddNumberToObject(o, "predicted", c->device[k][0]);
        cJSON_AddNumberToObject(o, "measured", c->device[k][1]);
        cJSON_AddNumberToObject(o, "rel_err", c->device[k][2]);
        cJSON_AddItemToArray(rows, o);
        n += snprintf(md + n, len - (size_t)n, "| device %s per token (a count, not in the total) | %.0f | %.0f | "
                      "%+.1f%% |\n", run_device_keys[k], c->device[k][0], c->device[k][1], 100 * c->device[k][2]);
    }
    return n;
}

/* Checking the reads (a run with --verify on), inside mem_ms. Returns the Markdown's length. */
static int compare_verify(const struct run_comparison *c, cJSON *rows, char *md, size_t len)
{
    if (!c->has_verify)
        return 0;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "component", "verify_ms");
    cJSON_AddNumberToObject(o, "predicted_ms", c->verify_ms[0]);
    cJSON_AddNumberToObject(o, "measured_ms", c->verify_ms[1]);
    cJSON_AddNumberToObject(o, "rel_err", c->verify_ms[2]);
    cJSON_AddItemToArray(rows, o);
    return snprintf(md, len, "| verify ms (CRC-32C of the reads, inside mem) | %.3f | %.3f | %+.1f%% |\n",
                    c->verify_ms[0], c->verify_ms[1], 100 * c->verify_ms[2]);
}

/* A run that hid reads behind compute: what the rows compare, and its
 * exposed I/O and real token time beside (the model prices reads serially). */
static void compare_overlap(const struct run_comparison *c, cJSON *root, char *md, size_t len)
{
    if (!c->overlapped)
        return;
    cJSON_AddNumberToObject(root, "exposed_io_ms", c->exposed_io_ms);
    cJSON_AddNumberToObject(root, "overlapped_total_ms", c->overlapped_total_ms);
    snprintf(md, len,
             "\nThe run overlapped %.2f of its %.2f ms of reads with compute: %.2f ms exposed, %.2f ms a token. "
             "The cost model prices reads serially, so io_ms above is the reads' whole time and the total the "
             "serial sum of the parts.\n",
             c->measured[RUN_IO] - c->exposed_io_ms, c->measured[RUN_IO], c->exposed_io_ms, c->overlapped_total_ms);
}

/* compare.json and compare.md from a comparison (sim/run_summary.h). */
static int write_comparison(const char *path, const struct run_comparison *c, struct run_summary *m,
                            struct out_manifest *folder, const char *dir, cJSON *prov)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(root, "provenance", prov);
    cJSON_AddStringToObject(root, "measured_run", path);
    if (m->provenance) {
        cJSON_AddItemToObject(root, "measured_provenance", m->provenance);
        m->provenance = NULL; /* root owns it now */
    }
    cJSON *rows = cJSON_AddArrayToObject(root, "components");
    char md[4096];
    int len = snprintf(md, sizeof md, "# predicted vs measured — %s\n\n| component | predicted ms | measured ms | error |\n|---|---:|---:|---:|\n", path);
    for (int k = 0; k < RUN_PARTS; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "component", run_part_keys[k]);
        cJSON_AddNumberToObject(o, "predicted_ms", c->predicted[k]);
        cJSON_AddNumberToObject(o, "measured_ms", c->measured[k]);
        cJSON_AddNumberToObject(o, "rel_err", c->rel_err[k]);
        cJSON_AddItemToArray(rows, o);
        len += snprintf(md + len, sizeof md - (size_t)len, "| %s | %.2f | %.2f | %+.1f%% |\n",
                        k < RUN_TOTAL ? run_part_keys[k] : "total", c->predicted[k], c->measured[k], 100 * c->rel_err[k]);
    }
    len += compare_verify(c, rows, md + len, sizeof md - (size_t)len);
    len += compare_predictor(c, rows, md + len, sizeof md - (size_t)len);
    len += compare_device(c, rows, md + len, sizeof md - (size_t)len);
    cJSON_AddNumberToObject(root, "mape_pct", c->mape_pct);
    len += snprintf(md + len, sizeof md - (size_t)len, "\nMAPE over the three components: %.1f%%\n", c->mape_pct);
    compare_overlap(c, root, md + len, sizeof md - (size_t)len);
    char verdict[1024];
    run_compare_verdict(c, verdict, sizeof verdict);
    cJSON_AddStringToObject(root, "verdict", verdict);
    len = (int)strlen(md);
    snprintf(md + len, sizeof md - (size_t)len, "\n%s", verdict);
    const char *names[] = {"compare.md"}, *texts[] = {md};
    int rc = write_file_set(folder, dir, root, "compare.json", names, texts, 1);
    fputs(md, stdout);
    cJSON_Delete(root);
    return rc;
}

/* Reads a measured run's summary and writes compare.{json,md}. */
static int compare_with_run(const char *path, const struct cost_prediction *p, struct out_manifest *folder,
                            const char *dir, cJSON *prov)
{
    struct run_summary m;
    char err[4400];
    if (run_summary_read(path, &m, err, sizeof err) != 0) {
        fb_error("predict --compare: %s", err);
        return -1;
    }
    struct run_comparison c;
    run_compare(p, &m, &c);
    int rc = write_comparison(path, &c, &m, folder, dir, prov);
    run_summary_free(&m);
    return rc;
}

/* Options --paper does not read: the paper's tables fix the models,
 * policies, budgets and volumes, so one given with it would be ignored. */
static const char *const not_for_paper[] = {"model", "policy", "layout", "dram-budget", "density-from", "trace",
                                            "use", "io-threads", "io-engine", "context", "compare", "predictor-rank", "tokens",
                                            "verify", NULL};

/* What --paper takes besides the table: --hw in place of the paper's
 * profiles, --dtype for Fig. 7; refused rather than ignored where it does
 * not apply. 0, or -1 (printed). */
static int paper_options(const struct predict_opts *o, const struct fb_settings *set, struct paper_given *g)
{
    for (const char *const *n = not_for_paper; *n; n++)
        if (opts_given(&predict_command, o, *n)) {
            fb_error("predict --paper %s: --%s does not apply: the paper's tables fix the models, policies, budgets "
                     "and volumes (--hw, and --dtype for Fig. 7, do apply)", o->paper, *n);
            return -1;
        }
    bool dtype_given = opts_given(&predict_command, o, "dtype");
    if (dtype_given && strcmp(o->paper, "fig7") && strcmp(o->paper, "all")) {
        fb_error("predict --paper %s --dtype: Table 2 and Table 3 are priced at the paper's dtypes; --dtype sets "
                 "Fig. 7's (--paper fig7 or all)", o->paper);
        return -1;
    }
    g->hw = opts_given(&predict_command, o, "hw") ? o->hw : NULL;
    g->fig7_dtype = dtype_given ? o->dtype : NULL;
    g->allow_emulated = o->allow_emulated;
    char err[4400];
    if (paper_check_given(set, o->paper, g, err, sizeof err) == 0)
        return 0;
    fb_error("predict --paper %s%s%s: %s%s", o->paper, g->hw ? " --hw " : "", g->hw ? g->hw : "", err,
             strstr(err, "Fig. 7") && !dtype_given ? " (--dtype prices Fig. 7 at another)" : "");
    return -1;
}

/* Each table asked for written, and its Markdown printed on stdout as it
 * comes (as predict prints predict.md), the folder named on stderr. */
static int run_paper(const struct fb_settings *set, const char *what, const struct paper_given *g,
                     struct out_manifest *folder, const char *dir, cJSON *prov)
{
    int (*const write[])(const struct fb_settings *, struct out_manifest *, const char *, const struct paper_given *,
                         cJSON *, char **, char *, size_t) = {
        paper_write_table2, paper_write_table3, paper_write_fig7};
    const char *names[] = {"table2", "table3", "fig7"};
    char err[4400];
    bool first = true;
    for (int i = 0; i < 3; i++) {
        if (strcmp(what, "all") && strcmp(what, names[i]))
            continue;
        char *md = NULL;
        if (write[i](set, folder, dir, g, prov, &md, err, sizeof err) != 0) {
            fb_error("%s", err);
            return -1;
        }
        printf("%s%s", first ? "" : "\n", md);
        free(md);
        first = false;
    }
    fflush(stdout);
    fb_info("written to %s/", dir);
    return 0;
}

/* Whether any of the n policies asks for window:auto. */
static bool asks_auto(const struct policy_spec *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i].arg_auto)
            return true;
    return false;
}

/* The policies (parsed into *p, *n of them: the caller frees *p) and the
 * layout (into *layout), checked before anything is loaded: the one place
 * predict reads a policy's or a layout's name. A policy the list names
 * before one that does not parse is checked first, as the list reads. */
static int check_names(const struct predict_opts *o, struct policy_spec **p, size_t *n, struct layout_spec *layout)
{
    char err[1024];
    int rc = cache_policy_parse_list(o->policy, true, p, n, err, sizeof err);
    if (predict_list_check(*p, *n, o->trace != NULL, err, sizeof err) != 0 || rc != 0) {
        fb_error("predict: bad --policy: %s%s", err, strstr(err, "from a trace") ? " (--trace FILE)" : "");
        return -1;
    }
    if (cache_layout_parse(o->layout, layout, err, sizeof err) != 0 ||
        cost_check_layout(layout, o->trace != NULL, err, sizeof err) != 0) {
        fb_error("predict: bad --layout: %s%s", err, strstr(err, "from a trace") ? " (--trace FILE)" : "");
        return -1;
    }
    if (opts_given(&predict_command, o, "tokens") && !asks_auto(*p, *n)) {
        fb_error("predict --tokens: the run's tokens choose window:auto's K; --policy %s has no window:auto",
                 o->policy);
        return -1;
    }
    if (o->compare && *n != 1) {
        fb_error("predict --compare puts one prediction beside a run: give one --policy (not %zu)", *n);
        return -1;
    }
    if (o->compare && run_summary_check_comparable(o->compare, err, sizeof err) != 0) {
        fb_error("predict --compare: %s", err);
        return -1;
    }
    return 0;
}

/* Loads --trace for a shape and picks its sets (--use). */
static int load_trace(const struct predict_opts *o, const struct model_shape *shape, struct trace *tr,
                      bool *use_predicted)
{
    char err[1024];
    if (trace_load(o->trace, tr, err, sizeof err) != 0) {
        fb_error("predict --trace: %s", err);
        return -1;
    }
    if (trace_choose_sets(o->use, &tr->meta, o->trace, use_predicted, err, sizeof err) != 0) {
        fb_error("predict --use: %s", err);
    } else if (trace_matches_shape(tr, o->trace, shape, err, sizeof err) != 0) {
        fb_error("predict --trace: %s", err);
    } else {
        return 0;
    }
    trace_free(tr);
    return -1;
}

/* Writes predict.json and predict.md (sim/predict_report.h), then the comparison or the table. */
static int write_predictions(const struct predict_opts *o, struct out_manifest *folder, const char *dir, cJSON *prov,
                             const struct predict_setup *s, const struct policy_prediction *it, size_t n)
{
    char *md = predict_report_md(s, it, n);
    if (!md) {
        fb_error("out of memory writing %s/predict.md", dir);
        return -1;
    }
    if (mkdir_p(dir, 0755) != 0) {
        fb_error("predict --out: %s: cannot create: %s", dir, strerror(errno));
        free(md);
        return -1;
    }
    cJSON *root = predict_report_json(it, n, prov);
    const char *names[] = {"predict.md"}, *texts[] = {md};
    int rc = write_file_set(folder, dir, root, "predict.json", names, texts, 1);
    cJSON_Delete(root);
    if (rc == 0 && o->compare)
        rc = compare_with_run(o->compare, &it[0].prediction, folder, dir, prov);
    else if (rc == 0)
        fputs(md, stdout);
    free(md);
    return rc;
}

/* With --compare, the run read once before pricing: its model must be the
 * shape priced (run_summary_check_shape); verification is priced as
 * --verify gives it, else as the run chose (summary.verify.requested),
 * else on (run's default). 0, or -1 (printed). */
static int run_choices(const struct predict_opts *o, const struct model_shape *shape, bool *verify)
{
    *verify = !strcmp(o->verify, "on");
    if (!o->compare)
        return 0;
    struct run_summary m;
    char err[4400];
    if (run_summary_read(o->compare, &m, err, sizeof err) != 0 ||
        run_summary_check_shape(&m, o->compare, shape, o->dtype, err, sizeof err) != 0) {
        fb_error("predict --compare: %s", err);
        run_summary_free(&m);
        return -1;
    }
    if (!opts_given(&predict_command, o, "verify"))
        *verify = m.verify;
    run_summary_free(&m);
    return 0;
}

#define HW_NOTE_LEN 10000

/* The profile to price with (sim/hw_choice.h's rule): --hw, else this
 * machine's own where calibrate writes it, else m1max-cpu; loaded into
 * hw, resolved, and recorded as prov's "hw" parameter; note says which
 * when --hw was not given ("" when it was), for the end of a run that
 * priced. 0, or -1 with err set. */
static int load_profile(const struct predict_opts *o, const struct fb_settings *set, cJSON *prov,
                        struct hw_profile *hw, char note[HW_NOTE_LEN], char *err, size_t errlen)
{
    note[0] = '\0';
    struct hw_choice *c = malloc(sizeof *c);
    if (!c) {
        snprintf(err, errlen, "predict: out of memory");
        return -1;
    }
    hw_choose(set, opts_given(&predict_command, o, "hw") ? o->hw : NULL, NULL, c);
    int rc = hw_profile_load_flags(set, c->profile, o->allow_emulated ? HW_LOAD_ALLOW_EMULATED : 0, hw, err,
                                   errlen) != 0 ||
                     cost_resolve_profile(hw, set, err, errlen) != 0
                 ? -1
                 : 0;
    if (rc == 0 && !c->given)
        hw_choice_note(c, hw->name, hw->path, note, HW_NOTE_LEN);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(prov, "parameters"), "hw", cJSON_CreateString(c->profile));
    free(c);
    return rc;
}

/* Loads the shape, the profile and the trace, prices the list, writes it.
 * The exit status: FB_EXIT_USAGE for names or a budget that do not parse. */
static int predict(const struct predict_opts *o, const struct fb_settings *set, struct out_manifest *folder,
                   const char *dir, cJSON *prov)
{
    size_t n;
    struct policy_spec *policies = NULL;
    struct layout_spec layout;
    struct hw_profile *hw = NULL;
    int rc = FB_EXIT_FAILURE;
    if (check_names(o, &policies, &n, &layout) != 0) {
        free(policies);
        return FB_EXIT_USAGE;
    }
    if (!(hw = calloc(1, sizeof *hw))) {
        free(policies);
        return FB_EXIT_FAILURE;
    }
    char err[1024], note[HW_NOTE_LEN] = "";
    struct model_shape shape;
    struct predict_setup s = {.settings = set, .shape = &shape, .hw = hw, .dtype = o->dtype, .layout = layout,
                              .context_tokens = (double)o->context, .trace_path = o->trace,
                              .tokens = o->tokens, .io_engine = o->io_engine,
                              .channel_density = o->channel_density, .down_density = o->down_density};
    struct param_counts pc;
    struct trace tr;
    struct policy_prediction *items = NULL;
    if (parse_rank(o->predictor_rank, &s.predictor_rank) != 0)
        goto out;
    if (model_shape_load(set, o->model, &shape, err, sizeof err) != 0 ||
        load_profile(o, set, prov, hw, note, err, sizeof err) != 0) {
        fb_error("%s", err);
        goto out;
    }
    if (run_choices(o, &shape, &s.verify) != 0)
        goto out;
    s.io_threads = o->io_threads ? (unsigned)o->io_threads : hw->io_threads;
    model_shape_params(&shape, &pc);
    if (parse_budget(o->dram_budget, (double)pc.total * cost_weight_bytes(o->dtype), &s.dram_share, err, sizeof err) !=
        0) {
        fb_error("predict --dram-budget: %s", err);
        rc = FB_EXIT_USAGE;
        goto out;
    }
    if (o->trace && load_trace(o, &shape, &tr, &s.use_predicted) != 0)
        goto out;
    s.trace = o->trace ? &tr : NULL;
    if (predict_list(&s, policies, n, &items, err, sizeof err) != 0)
        fb_error("predict: %s", err);
    else
        rc = write_predictions(o, folder, dir, prov, &s, items, n) == 0 ? FB_EXIT_OK : FB_EXIT_FAILURE;
    if (rc == FB_EXIT_OK && note[0])
        fb_info("%s", note);
    free(items);
    if (s.trace)
        trace_free(&tr);
out:
    free(hw);
    free(policies);
    return rc;
}

static const char *const predict_files[] = {"predict.json", "predict.md", NULL};

int cmd_predict(int argc, char **argv, const struct fb_settings *set)
{
    struct predict_opts o;
    int rc;
    if (!cli_start(&predict_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    char dir[4096];
    result_dir_name(o.out, "predict", dir, sizeof dir);
    struct out_manifest *folder;
    if (out_result_dir_ok("predict --out", dir, o.force, false, predict_files, &folder) != 0) {
        opts_free(&predict_command, &o);
        return 1;
    }
    struct paper_given given = {0};
    if (o.paper && paper_options(&o, set, &given) != 0) {
        opts_free(&predict_command, &o);
        return out_result_dir_close(folder, 1);
    }
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", opts_to_json(&predict_command, &o));
    if (o.paper)
        rc = run_paper(set, o.paper, &given, folder, dir, prov) == 0 ? 0 : 1;
    else
        rc = predict(&o, set, folder, dir, prov);
    cJSON_Delete(prov);
    opts_free(&predict_command, &o);
    return out_result_dir_close(folder, rc);
}
