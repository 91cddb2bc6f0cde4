/* flashbed replay: a trace against DRAM budgets x policies x layouts
 * (sim/replay.h), each row priced by the cost model (sim/replay_price.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "cli/shared.h"
#include "common/atomic_file.h"
#include "common/fsutil.h"
#include "common/gnuplot.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/options.h"
#include "common/parse.h"
#include "common/provenance.h"
#include "sim/hw_choice.h"
#include "sim/replay.h"
#include "sim/replay_price.h"
#include "sim/replay_report.h"
#include "sim/replay_study.h"
#include "traces/trace.h"
#include "traces/trace_stats.h"

#define DEFAULT_POLICIES "naive,hybrid,predictor,window:5,lru,lfu,hot,belady"
#define SWEEP_K REPLAY_SWEEP_K

struct replay_opts {
    char *trace, *policy, *layout, *budget, *use, *out, *hw, *row_stride, *read_align;
    bool plot, window_sweep, quiet, allow_emulated, force;
};

#define O(f) offsetof(struct replay_opts, f)
static const struct opt_def replay_options[] = {
    {"trace", OPT_STRING, O(trace), NULL, "FILE", "trace to replay (flashbed trace synth, or recorded)"},
    {"policy", OPT_STRING, O(policy), DEFAULT_POLICIES, "LIST",
     "policies: naive, hybrid, predictor, window:K (the last K tokens: the paper's k = K-1), lru, lfu, hot, belady"},
    {"layout", OPT_STRING, O(layout), "split,bundled", "LIST",
     "layouts: split, bundled, friends, coalesce:G; transposed (input sparsity: a trace with channel sets, which "
     "the others refuse; its channel and down streams are reported apart)"},
    {"dram-budget", OPT_STRING, O(budget), "25%", "LIST",
     "FFN cache budgets, each bytes (\"2G\") or a share of the FFN (\"25%\"): \"10%,25%,50%\" replays every "
     "policy and layout at each (lru, lfu, hot, belady keep within it; window and hybrid too); none: no "
     "budget, as a run without --dram-budget (window keeps every row of its K tokens, hybrid half the FFN)"},
    {"row-stride", OPT_STRING, O(row_stride), "packed", "S",
     "bytes a row takes in the FFN cache and on flash: packed (the trace's row as it is: the paper's "
     "accounting), aligned (rounded up to 4096 bytes, as flashbed's model folder stores bundles for direct "
     "I/O and a run caches them: replay then holds and reads what run does; run.json's summary.row_stride), "
     "or bytes; budget shares are of the FFN at this stride. A trace with channel sets (layout transposed): "
     "the alignment both streams' rows are padded to, aligned (4096: ffn_t.bin's, as run --active teal reads "
     "and caches them) or bytes (a power of two)"},
    {"read-align", OPT_STRING, O(read_align), "0", "BYTES",
     "the direct-I/O block a split read widens to (each vector read as whole blocks, never past the row "
     "stride), as a run reads: run.json's summary.read_align; 0: each vector read exactly"},
    {"hw", OPT_STRING, O(hw), NULL, "PROFILE",
     "hardware profile pricing each row in ms per token (the cost model): a name in configs/hw/ or a .json path "
     "[default: this machine's own, as flashbed calibrate writes it (results/hw-HOST.json, else "
     "configs/hw/HOST.json), else m1max-cpu, the paper's; the report says which priced it]"},
    {"allow-emulated", OPT_FLAG, O(allow_emulated), NULL, NULL,
     "price with a profile calibrate measured on an emulated device (sim, OpenCL on a CPU): its rates check the "
     "pipeline and are no GPU's, so such a profile is refused without this"},
    {"use", OPT_STRING, O(use), NULL, "SETS",
     "which sets to replay [default: predicted when the trace has them, else actual]",
     .allowed = "predicted|actual"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "result folder [default: results/replay-<timestamp>]"},
    {"window-sweep", OPT_FLAG, O(window_sweep), NULL, NULL,
     "also replay window:1..17 (the paper's k = 0..16) per layout at every budget and without one, and keep the "
     "sweep at the budget where the window's size changes the bytes most (without a budget when it changes them "
     "under 5% at each): window_sweep.csv, and a line saying which"},
    {"plot", OPT_FLAG, O(plot), NULL, NULL,
     "draw fig4a, bytes_vs_k (implies --window-sweep) and budget_bytes, budget_ms, budget_reads "
     "(per token against the budget; with one budget, a marker per policy and layout), each .png and .svg"},
    {"quiet", OPT_FLAG, O(quiet), NULL, NULL, "do not print the tables (the verdict is printed still)"},
    {"force", OPT_FLAG, O(force), NULL, NULL, FORCE_HELP},
    OPT_END,
};
#undef O

static const struct opt_command replay_command = {
    .name = "replay",
    .usage = "--trace FILE [--policy LIST] [--layout LIST] [--dram-budget LIST] [--hw PROFILE] [--use predicted|actual] [--out DIR]",
    .summary = "Replays an activation trace offline under DRAM budgets x caching policies x flash layouts:\n"
               "bytes and reads per token, read sizes, hit ratio, DRAM held by the FFN cache, rows\n"
               "inserted/deleted per token, whether the budget holds what the policy needs, and the\n"
               "cost model's ms per token on --hw. Writes replay.json, replay.csv and replay.md to\n"
               "--out (with --plot: Fig. 4a, bytes per token against K and against the budget), and\n"
               "prints the verdict: per budget the fastest feasible policy and layout, the runner-up,\n"
               "and why no caching policy won when none did (replay.md opens with it).",
    .opts = replay_options,
    .max_positional = 0,
};

/* The --dram-budget list, each a share of the trace's FFN or bytes, into
 * b[n]. 0, or -1 after printing what is wrong, naming the option, the
 * list and the element. */
static int parse_budgets(const char *list, char **items, size_t n, uint64_t ffn_bytes, struct replay_budget *b)
{
    double ffn = (double)ffn_bytes;
    for (size_t i = 0; i < n; i++) {
        char err[512];
        double v;
        if (!items[i][0]) {
            fb_error("replay --dram-budget '%s': budget %zu is empty (budgets are separated by single commas)", list,
                     i + 1);
            return -1;
        }
        if (!strcmp(items[i], "none")) { /* as a run without a budget: window keeps all, hybrid half */
            b[i] = (struct replay_budget){items[i], 0, 0, true};
            continue;
        }
        if (parse_share_or_size(items[i], ffn, &v, err, sizeof err) != 0) {
            fb_error("replay --dram-budget '%s': budget %zu: %s", list, i + 1, err);
            return -1;
        }
        b[i] = (struct replay_budget){items[i], (uint64_t)v, ffn > 0 ? v / ffn : 0};
    }
    return 0;
}

/* The policies, parsed into pols[np] (window:auto is predict's and run's:
 * a replay needs its K), then --layout's list into *lays (*nl of them; the
 * caller frees *lays): the one place replay reads a policy's or a layout's
 * name. 0, or -1 (printed). */
static int parse_lists(char **policies, size_t np, struct policy_spec *pols, const char *layouts,
                       struct layout_spec **lays, size_t *nl)
{
    char err[512];
    for (size_t i = 0; i < np; i++)
        if (cache_policy_parse(policies[i], false, &pols[i], err, sizeof err) != 0) {
            fb_error("replay --policy: %s", err);
            return -1;
        }
    if (cache_layout_parse_list(layouts, lays, nl, err, sizeof err) != 0) {
        fb_error("replay --layout: %s", err);
        return -1;
    }
    return 0;
}

/* Where replay's files go: the result folder (its path, and the open
 * folder they are claimed in), and the settings naming the plot scripts. */
struct replay_out {
    const struct fb_settings *set;
    struct out_manifest *folder;
    const char *dir;
};

static int write_sagg_plot(const struct replay_out *out, const struct trace *tr)
{
    struct trace_stats s;
    if (trace_stats_compute(tr, &s) != 0) {
        fb_error("replay: out of memory computing s_agg");
        return -1;
    }
    char err[4400];
    int rc = trace_stats_write_sagg(out->folder, out->dir, &s, tr, true, out->set, err,
                                    sizeof err);
    if (rc != 0)
        fb_error("%s", err);
    trace_stats_free(&s);
    return rc;
}

/* Draws plots/<script> into DIR/NAME.png and .svg; 0, or -1 after printing why. */
static int draw(const struct replay_out *out, const char *name, const char *script, const struct gnuplot_arg *args,
                size_t n)
{
    char stem[4200], err[4400];
    snprintf(stem, sizeof stem, "%s/%s", out->dir, name);
    if (gnuplot_draw(out->set, out->folder, script, args, n, stem, err, sizeof err) == 0)
        return 0;
    fb_error("%s", err);
    return -1;
}

static int write_sweep(const struct replay_out *out, const struct replay_result *sweep, size_t nl, const char *budget,
                       bool plot, const char *title, const char *subtitle)
{
    char path[4200];
    char *csv = replay_window_sweep_csv(sweep, SWEEP_K, nl, budget);
    snprintf(path, sizeof path, "%s/window_sweep.csv", out->dir);
    int rc = csv ? write_text_file(out->folder, path, csv) : -1;
    free(csv);
    if (rc != 0 || !plot)
        return rc;
    const struct gnuplot_arg args[] = {GP_TEXT("csv", path), GP_TEXT("plot_title", title),
                                       GP_TEXT("plot_subtitle", subtitle)};
    return draw(out, "bytes_vs_k", "replay_bytes_vs_k.gp", args, 3);
}

static int write_outputs(const struct replay_out *out, const struct replay_row *rows, size_t n,
                         const struct replay_report_info *info, cJSON *params)
{
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", params);
    cJSON *j = replay_report_json(rows, n, info, prov);
    char *csv = replay_report_csv(rows, n), *md = replay_report_markdown(rows, n, info);
    const char *names[] = {"replay.csv", "replay.md"}, *texts[] = {csv, md};
    int rc = write_file_set(out->folder, out->dir, j, "replay.json", names, texts, 2); /* all three, or none changes */
    cJSON_Delete(j);
    free(csv);
    free(md);
    return rc;
}

/* One plot of replay.csv against the budget (plots/replay_vs_budget.gp). */
static int budget_plot(const struct replay_out *out, const char *name, const char *ycol, double yscale,
                       const char *ylabel, const char *title, const char *subtitle)
{
    char csv[4200];
    snprintf(csv, sizeof csv, "%s/replay.csv", out->dir);
    const struct gnuplot_arg args[] = {GP_TEXT("csv", csv),           GP_TEXT("ycol", ycol),
                                       GP_NUMBER("yscale", yscale),   GP_TEXT("ylabel_text", ylabel),
                                       GP_TEXT("plot_title", title), GP_TEXT("plot_subtitle", subtitle)};
    return draw(out, name, "replay_vs_budget.gp", args, 6);
}

/* The three plots against the budget: bytes, modelled ms and reads per token. */
static int write_budget_plots(const struct replay_out *out, const struct replay_report_info *info)
{
    char trace[300], sub[600];
    replay_trace_title(info, trace, sizeof trace);
    snprintf(sub, sizeof sub, "%s; %s profile (%s)", trace, info->pricing->hw->name, info->pricing->dtype);
    /* the script ends each title: "against the DRAM budget", or with one budget "at a DRAM budget of B" */
    if (budget_plot(out, "budget_bytes", "bytes_per_token", 1e-6, "flash → DRAM per token (MB)",
                    "Flash bytes read per token", sub) != 0 ||
        budget_plot(out, "budget_ms", "total_ms", 1, "modelled time per token, I/O + memory + compute (ms)",
                    "Modelled time per token", sub) != 0 ||
        budget_plot(out, "budget_reads", "reads_per_token", 1, "flash reads per token",
                    "Flash reads per token", sub) != 0)
        return -1;
    return 0;
}

/* After each row of the study: the progress bar; stops at an interrupt. */
static bool study_step(void *ctx, size_t done, const char *policy)
{
    progress_update(ctx, done, policy);
    return !interrupted();
}

/* After each replay of the window sweep: the bar, past the study's rows. */
struct sweep_progress {
    struct progress *bar;
    size_t base;
};

static bool sweep_step(void *ctx, size_t done, const char *policy)
{
    const struct sweep_progress *sp = ctx;
    progress_update(sp->bar, sp->base + done, policy);
    return !interrupted();
}

/* The budgets as resolved, for the provenance's parameters. */
static void budget_params(cJSON *params, const struct replay_budget *b, size_t nb)
{
    cJSON *a = cJSON_AddArrayToObject(params, "dram_budgets_bytes");
    for (size_t i = 0; i < nb; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)b[i].bytes));
    if (nb == 1) /* what a single budget always recorded */
        cJSON_AddNumberToObject(params, "dram_budget_bytes", (double)b[0].bytes);
}

/* Everything a run holds, freed in one place. */
struct replay_state {
    const struct fb_settings *set; /* the global settings (configs, plot scripts) */
    char **policies, **budget_items;
    struct policy_spec *pols;  /* policies parsed */
    struct layout_spec *lays;  /* layouts parsed */
    struct replay_budget *budgets;
    struct trace tr;
    struct replay_pricing pricing;
    bool priced;
    struct hw_choice hw;       /* which profile prices the rows, and why */
    char profile_note[4000];   /* hw_choice_note's, for the report */
    struct replay_row *rows;
    struct replay_budget *cands; /* the window sweep's budgets: the study's, then none (unless given) */
    size_t n_cand;
    struct replay_result *sweep; /* [n_cand x layouts x SWEEP_K] */
    size_t done, sweep_done;
};

static void state_free(struct replay_state *st)
{
    replay_rows_free(st->rows, st->done);
    for (size_t i = 0; st->sweep && i < st->sweep_done; i++)
        replay_result_free(&st->sweep[i]);
    free(st->rows);
    free(st->sweep);
    free(st->cands);
    if (st->priced)
        replay_pricing_close(&st->pricing);
    trace_free(&st->tr);
    free(st->policies);
    free(st->pols);
    free(st->lays);
    free(st->budget_items);
    free(st->budgets);
}

/* The window sweep's budgets: the study's, then none unless it is one of
 * them (replay_window_choose draws at none only when the window matters at
 * none of the study's). 0, or -1 (printed). */
static int sweep_budgets(struct replay_state *st, const struct replay_study *j)
{
    bool has_none = false;
    for (size_t i = 0; i < j->n_budgets; i++)
        has_none |= j->budgets[i].none;
    st->n_cand = j->n_budgets + !has_none;
    st->cands = calloc(st->n_cand, sizeof *st->cands);
    if (!st->cands) {
        fb_error("replay: out of memory");
        return -1;
    }
    memcpy(st->cands, j->budgets, j->n_budgets * sizeof *st->cands);
    if (!has_none)
        st->cands[j->n_budgets] = (struct replay_budget){"none", 0, 0, true};
    return 0;
}

/* The window sweep at each of its budgets, the bar past the study's rows. */
static int run_sweeps(struct replay_state *st, const struct replay_study *j, struct progress *prog, char *err,
                      size_t errlen)
{
    struct sweep_progress sp = {prog, st->done};
    size_t per = SWEEP_K * j->n_layouts;
    for (size_t c = 0; c < st->n_cand && !interrupted(); c++) {
        size_t done = 0;
        sp.base = st->done + st->sweep_done;
        int rc = replay_window_sweep(j, &st->cands[c], &st->sweep[c * per], &done, sweep_step, &sp, err, errlen);
        st->sweep_done += done;
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Each --layout against the trace (replay_check_layout), before anything
 * is written. 0, or the exit status after printing why. */
static int check_layouts(const struct replay_opts *o, const struct replay_state *st, const struct replay_study *j)
{
    char err[512], name[LAYOUT_NAME_MAX];
    for (size_t k = 0; k < j->n_layouts; k++)
        if (replay_check_layout(&st->tr.meta, &j->layouts[k], j->row_stride, j->read_align, err, sizeof err) != 0) {
            cache_layout_name(&j->layouts[k], name, sizeof name);
            fb_error("replay --layout %s: %s: %s", name, o->trace, err);
            return 2;
        }
    return 0;
}

/* Loads the trace and checks what depends on it: the sets, the layouts, the
 * budgets and the profile. 0, or the exit status after printing why. */
static int prepare(struct replay_opts *o, struct replay_state *st, struct replay_study *j, cJSON *params)
{
    char err[1024];
    if (trace_load(o->trace, &st->tr, err, sizeof err) != 0) {
        fb_error("%s", err);
        return 1;
    }
    j->tr = &st->tr;
    j->use_predicted = o->use ? strcmp(o->use, "predicted") == 0 : st->tr.meta.has_predicted;
    cJSON_ReplaceItemInObject(params, "use", cJSON_CreateString(j->use_predicted ? "predicted" : "actual"));
    if (j->use_predicted && !st->tr.meta.has_predicted) {
        fb_error("replay --use predicted: %s has no predicted sets (use --use actual)", o->trace);
        return 2;
    }
    st->budgets = calloc(j->n_budgets, sizeof *st->budgets);
    if (!st->budgets) {
        fb_error("replay: out of memory");
        return FB_EXIT_FAILURE;
    }
    if (replay_row_stride(&st->tr.meta, o->row_stride, &j->row_stride, err, sizeof err) != 0) {
        fb_error("replay --row-stride '%s': %s", o->row_stride, err);
        return 2;
    }
    /* a trace with channel sets: row_stride is the alignment of both streams' rows */
    bool chan = st->tr.meta.has_channels;
    uint64_t row_bytes = j->row_stride || chan ? j->row_stride : replay_row_bytes(&st->tr.meta);
    cJSON_AddNumberToObject(params, chan ? "row_align" : "row_stride_bytes", (double)row_bytes);
    if (replay_read_align(row_bytes, o->read_align, &j->read_align, err, sizeof err) != 0) {
        fb_error("replay --read-align '%s': %s", o->read_align, err);
        return 2;
    }
    cJSON_AddNumberToObject(params, "read_align", (double)j->read_align);
    if (parse_budgets(o->budget, st->budget_items, j->n_budgets, replay_ffn_bytes(&st->tr.meta, j->row_stride),
                      st->budgets) != 0)
        return 2;
    j->budgets = st->budgets;
    budget_params(params, st->budgets, j->n_budgets);
    if (check_layouts(o, st, j) != 0)
        return 2;
    hw_choose(st->set, o->hw, NULL, &st->hw);
    cJSON_DeleteItemFromObject(params, "hw"); /* the profile chosen, given or not */
    cJSON_AddStringToObject(params, "hw", st->hw.profile);
    if (replay_pricing_open(&st->pricing, st->set, &st->tr, o->trace, st->hw.profile,
                            o->allow_emulated ? HW_LOAD_ALLOW_EMULATED : 0, err, sizeof err) != 0) {
        fb_error("replay --hw '%s'%s: %s", st->hw.profile, st->hw.given ? "" : " (this machine's own profile)", err);
        return FB_EXIT_FAILURE; /* a profile missing or malformed: an input */
    }
    st->priced = true;
    hw_choice_note(&st->hw, st->pricing.hw->name, st->pricing.hw->path, st->profile_note, sizeof st->profile_note);
    j->pricing = &st->pricing;
    return 0;
}

/* Splits and checks the lists given on the command line. 0, or the exit status. */
static int split_options(struct replay_opts *o, struct replay_state *st, struct replay_study *j)
{
    st->policies = split_commas(o->policy, &j->n_policies);
    st->budget_items = split_commas(o->budget, &j->n_budgets);
    st->pols = st->policies ? calloc(j->n_policies, sizeof *st->pols) : NULL;
    if (!st->policies || !st->pols || !st->budget_items) {
        fb_error("replay: out of memory");
        return FB_EXIT_FAILURE;
    }
    j->policies = st->pols;
    int rc = parse_lists(st->policies, j->n_policies, st->pols, o->layout, &st->lays, &j->n_layouts) != 0 ? 2 : 0;
    j->layouts = st->lays;
    return rc;
}

/* Writes what was replayed, then the sweep and the plots. */
static int write_all(struct replay_opts *o, const struct replay_out *out, struct replay_state *st,
                     const struct replay_study *j, bool sweep_on, bool complete, cJSON *params, int rc)
{
    char model[64];
    bool synthetic = trace_source_synthetic(&st->tr.meta, model, sizeof model);
    struct replay_report_info info = {o->trace, &st->tr.meta, synthetic, model, &st->pricing, complete,
                                      st->profile_note};
    if (st->done) {
        if (write_outputs(out, st->rows, st->done, &info, params) != 0)
            rc = 1;
        if (rc == 0) { /* the tables then the verdict, or with --quiet the verdict alone */
            char *text = o->quiet ? replay_report_verdict(st->rows, st->done, &info)
                                  : replay_report_terminal(st->rows, st->done, &info);
            if (text)
                fputs(text, stdout);
            free(text);
        }
    } else {
        cJSON_Delete(params);
    }
    if (rc == 0 && sweep_on && st->sweep_done == st->n_cand * SWEEP_K * j->n_layouts) {
        char why[600], title[200];
        size_t c = replay_window_choose(st->sweep, st->cands, st->n_cand, j->n_budgets, j->n_layouts, why, sizeof why);
        snprintf(title, sizeof title, "Flash bytes per token against the window's size, %s sets",
                 j->use_predicted ? "predicted" : "active");
        printf("\nWindow sweep (window_sweep.csv%s): %s.\n", o->plot ? ", bytes_vs_k" : "", why);
        if (write_sweep(out, &st->sweep[c * SWEEP_K * j->n_layouts], j->n_layouts, st->cands[c].text,
                        o->plot, title, why) != 0)
            rc = 1;
    }
    if (rc == 0 && o->plot && complete && write_budget_plots(out, &info) != 0)
        rc = 1;
    if (rc == 0 && o->plot && write_sagg_plot(out, &st->tr) != 0)
        rc = 1;
    return rc;
}

/* The study's rows and, with the sweep on, its budgets and results
 * (*n_sweep of them). 0, or 1 (printed). */
static int allocate_rows(struct replay_state *st, const struct replay_study *j, size_t n_rows, bool sweep_on,
                         size_t *n_sweep)
{
    if (sweep_on && sweep_budgets(st, j) != 0)
        return 1;
    *n_sweep = sweep_on ? st->n_cand * SWEEP_K * j->n_layouts : 0;
    st->rows = calloc(n_rows, sizeof *st->rows);
    st->sweep = sweep_on ? calloc(*n_sweep, sizeof *st->sweep) : NULL;
    if (!st->rows || (sweep_on && !st->sweep)) {
        fb_error("replay: out of memory");
        return 1;
    }
    return 0;
}

static const char *const replay_files[] = {"replay.json", "replay.csv", "replay.md", NULL};

static int run_replay(struct replay_opts *o, const struct fb_settings *set, cJSON *params, struct out_manifest **folder)
{
    struct replay_state st;
    memset(&st, 0, sizeof st);
    st.set = set;
    struct replay_study j;
    memset(&j, 0, sizeof j);
    char dir[4096];
    result_dir_name(o->out, "replay", dir, sizeof dir);
    int rc = split_options(o, &st, &j);
    if (rc == 0 && out_result_dir_ok("replay --out", dir, o->force, false, replay_files, folder) != 0)
        rc = 1;
    if (rc == 0)
        rc = prepare(o, &st, &j, params);
    cJSON_ReplaceItemInObject(params, "out", cJSON_CreateString(dir));
    if (rc == 0 && mkdir_p(dir, 0755) != 0) {
        fb_error("replay --out: %s: cannot create: %s", dir, strerror(errno));
        rc = 1;
    }
    bool sweep_on = o->window_sweep || o->plot;
    size_t n_rows = j.n_budgets * j.n_policies * j.n_layouts, n_sweep = 0;
    if (rc == 0)
        rc = allocate_rows(&st, &j, n_rows, sweep_on, &n_sweep);
    if (rc != 0) {
        cJSON_Delete(params);
        state_free(&st);
        return rc;
    }
    interrupt_install();
    struct progress prog;
    progress_begin(&prog, "replay", n_rows + n_sweep);
    char err[1024];
    rc = 0;
    if (replay_study_run(&j, st.rows, &st.done, study_step, &prog, err, sizeof err) != 0) {
        fb_error("replay %s", err);
        rc = 1;
    }
    if (rc == 0 && sweep_on && !interrupted() && run_sweeps(&st, &j, &prog, err, sizeof err) != 0) {
        fb_error("replay %s", err);
        rc = 1;
    }
    progress_end(&prog);
    bool complete = !interrupted() && rc == 0 && st.done == n_rows && st.sweep_done == n_sweep;
    if (interrupted())
        fb_warn("replay: interrupted; writing the %zu configurations replayed", st.done);
    const struct replay_out out = {set, *folder, dir};
    rc = write_all(o, &out, &st, &j, sweep_on, complete, params, rc);
    if (rc == 0)
        fb_info("results in %s", dir);
    if (rc == 0 && !complete)
        rc = 130;
    state_free(&st);
    return rc;
}

int cmd_replay(int argc, char **argv, const struct fb_settings *set)
{
    struct replay_opts o;
    int rc;
    if (!cli_start(&replay_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    if (!o.trace) {
        fb_error("replay: needs --trace FILE");
        opts_free(&replay_command, &o);
        return 2;
    }
    cJSON *params = opts_to_json(&replay_command, &o);
    struct out_manifest *folder = NULL;
    rc = run_replay(&o, set, params, &folder);
    opts_free(&replay_command, &o);
    return out_result_dir_close(folder, rc);
}
