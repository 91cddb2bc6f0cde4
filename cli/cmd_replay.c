/* flashbed replay: a trace against policies x layouts (sim/replay.h). */
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
#include "common/gnuplot.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/options.h"
#include "common/parse.h"
#include "common/progress.h"
#include "common/provenance.h"
#include "sim/replay.h"
#include "sim/replay_report.h"
#include "traces/trace.h"
#include "traces/trace_stats.h"

#define DEFAULT_POLICIES "naive,hybrid,predictor,window:5,lru,lfu,hot,belady"
#define SWEEP_K 17 /* the paper's k = 0..16 */

struct replay_opts {
    char *trace, *policy, *layout, *budget, *use, *out;
    bool plot, window_sweep, quiet;
};

#define O(f) offsetof(struct replay_opts, f)
static const struct opt_def replay_options[] = {
    {"trace", OPT_STRING, O(trace), NULL, "FILE", "trace to replay (flashbed trace synth, or recorded)"},
    {"policy", OPT_STRING, O(policy), DEFAULT_POLICIES, "LIST",
     "policies: naive, hybrid, predictor, window:K, lru, lfu, hot, belady"},
    {"layout", OPT_STRING, O(layout), "split,bundled", "LIST", "layouts: split, bundled, friends, coalesce:G"},
    {"dram-budget", OPT_STRING, O(budget), "25%", "BYTES|PCT",
     "FFN cache of lru, lfu, hot, belady: bytes (\"2G\") or a share of the FFN (\"25%\")"},
    {"use", OPT_STRING, O(use), NULL, "SETS",
     "which sets to replay [default: predicted when the trace has them, else actual]",
     .allowed = "predicted|actual"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "result folder [default: results/replay-<timestamp>]"},
    {"window-sweep", OPT_FLAG, O(window_sweep), NULL, NULL,
     "also replay window:1..17 (the paper's k = 0..16) per layout: window_sweep.csv"},
    {"plot", OPT_FLAG, O(plot), NULL, NULL,
     "draw fig4a.png/svg (s_agg(k)) and bytes_vs_k.png/svg (implies --window-sweep)"},
    {"quiet", OPT_FLAG, O(quiet), NULL, NULL, "do not print the table"},
    OPT_END,
};
#undef O

static const struct opt_command replay_command = {
    .name = "replay",
    .usage = "--trace FILE [--policy LIST] [--layout LIST] [--dram-budget BYTES|PCT] [--use predicted|actual] [--out DIR]",
    .summary = "Replays an activation trace offline under DRAM caching policies x flash layouts:\n"
               "bytes and reads per token, read sizes, hit ratio, DRAM held by the FFN cache, rows\n"
               "inserted/deleted per token, and the replay speed. Writes replay.json, replay.csv\n"
               "and replay.md to --out (with --plot: Fig. 4a and bytes per token against K).",
    .opts = replay_options,
    .max_positional = 0,
};

/* Splits a comma list into a NULL-terminated array of strings (one heap block). */
static char **split_list(const char *text, size_t *n)
{
    size_t count = 1, len = strlen(text);
    for (const char *c = text; *c; c++)
        count += *c == ',';
    char **v = malloc((count + 1) * sizeof *v + len + 1);
    if (!v)
        return NULL;
    char *copy = (char *)(v + count + 1);
    memcpy(copy, text, len + 1);
    size_t k = 0;
    for (char *tok = copy;; tok++) {
        v[k++] = tok;
        tok = strchr(tok, ',');
        if (!tok)
            break;
        *tok = 0;
    }
    v[k] = NULL;
    *n = k;
    return v;
}

/* A share of the trace's FFN, or bytes. */
static int parse_budget(const char *text, const struct trace_meta *m, uint64_t *bytes, char *err, size_t errlen)
{
    double ffn = (double)(replay_row_bytes(m) * m->d_ff * m->n_layers), v;
    if (parse_share_or_size(text, ffn, &v, err, errlen) != 0)
        return -1;
    *bytes = (uint64_t)v;
    return 0;
}

static int check_lists(char **policies, size_t np, char **layouts, size_t nl)
{
    char err[512];
    for (size_t i = 0; i < np; i++)
        if (replay_check_policy(policies[i], err, sizeof err) != 0) {
            fb_error("replay --policy: %s", err);
            return -1;
        }
    for (size_t i = 0; i < nl; i++)
        if (replay_check_layout(layouts[i], err, sizeof err) != 0) {
            fb_error("replay --layout: %s", err);
            return -1;
        }
    return 0;
}

static int write_sagg_plot(const char *dir, const struct trace *tr)
{
    struct trace_stats s;
    if (trace_stats_compute(tr, &s) != 0) {
        fb_error("replay: out of memory computing s_agg");
        return -1;
    }
    char err[4400];
    int rc = trace_stats_write_sagg(dir, &s, tr->meta.has_predicted, true, err, sizeof err);
    if (rc != 0)
        fb_error("%s", err);
    trace_stats_free(&s);
    return rc;
}

static int write_sweep(const char *dir, const struct replay_result *sweep, size_t nl, bool plot,
                       const char *title)
{
    char path[4200], png[4200], svg[4200], var[4300], vtitle[600];
    char *csv = replay_window_sweep_csv(sweep, SWEEP_K, nl);
    snprintf(path, sizeof path, "%s/window_sweep.csv", dir);
    int rc = csv ? write_text_file(path, csv) : -1;
    free(csv);
    if (rc != 0 || !plot)
        return rc;
    snprintf(png, sizeof png, "%s/bytes_vs_k.png", dir);
    snprintf(svg, sizeof svg, "%s/bytes_vs_k.svg", dir);
    snprintf(var, sizeof var, "csv='%s'", path);
    snprintf(vtitle, sizeof vtitle, "plot_title='%s'", title);
    const char *vars[] = {var, vtitle, NULL};
    const char *outs[] = {png, svg, NULL};
    char err[4400];
    if (gnuplot_render("replay_bytes_vs_k.gp", vars, outs, err, sizeof err) == 0)
        return 0;
    fb_error("%s", err);
    return -1;
}

static int write_outputs(const char *dir, const char *trace_path, struct replay_result *res, size_t n,
                         bool complete, cJSON *params)
{
    char path[4200];
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", params);
    cJSON *j = replay_report_json(res, n, prov, trace_path, complete);
    snprintf(path, sizeof path, "%s/replay.json", dir);
    int rc = write_json_file(path, j);
    cJSON_Delete(j);
    char *csv = replay_report_csv(res, n);
    snprintf(path, sizeof path, "%s/replay.csv", dir);
    if (rc == 0)
        rc = csv ? write_text_file(path, csv) : -1;
    free(csv);
    char *md = replay_report_markdown(res, n, trace_path);
    snprintf(path, sizeof path, "%s/replay.md", dir);
    if (rc == 0)
        rc = md ? write_text_file(path, md) : -1;
    free(md);
    return rc;
}

static int run_replay(struct replay_opts *o, cJSON *params)
{
    char err[1024];
    size_t np = 0, nl = 0;
    char **policies = split_list(o->policy, &np);
    char **layouts = split_list(o->layout, &nl);
    int rc = 2;
    struct trace tr;
    memset(&tr, 0, sizeof tr);
    struct replay_result *res = NULL, *sweep = NULL;
    size_t done = 0, sweep_done = 0;
    bool use_pred = o->use && strcmp(o->use, "predicted") == 0;
    char dir[4096];
    result_dir_name(o->out, "replay", dir, sizeof dir);
    if (!policies || !layouts) {
        fb_error("replay: out of memory");
        goto out;
    }
    if (check_lists(policies, np, layouts, nl) != 0)
        goto out;
    if (out_dir_ok("replay --out", dir) != 0) {
        rc = 1;
        goto out;
    }
    if (trace_load(o->trace, &tr, err, sizeof err) != 0) {
        fb_error("%s", err);
        rc = 1;
        goto out;
    }
    if (!o->use)
        use_pred = tr.meta.has_predicted;
    cJSON_ReplaceItemInObject(params, "use", cJSON_CreateString(use_pred ? "predicted" : "actual"));
    if (use_pred && !tr.meta.has_predicted) {
        fb_error("replay --use predicted: %s has no predicted sets (use --use actual)", o->trace);
        goto out;
    }
    uint64_t budget;
    if (parse_budget(o->budget, &tr.meta, &budget, err, sizeof err) != 0) {
        fb_error("replay --dram-budget: %s", err);
        goto out;
    }
    cJSON_AddNumberToObject(params, "dram_budget_bytes", (double)budget);
    cJSON_ReplaceItemInObject(params, "out", cJSON_CreateString(dir));
    if (mkdir_p(dir, 0755) != 0) {
        fb_error("replay --out: %s: cannot create: %s", dir, strerror(errno));
        rc = 1;
        goto out;
    }
    bool sweep_on = o->window_sweep || o->plot;
    res = calloc(np * nl, sizeof *res);
    sweep = sweep_on ? calloc(SWEEP_K * nl, sizeof *sweep) : NULL;
    if (!res || (sweep_on && !sweep)) {
        fb_error("replay: out of memory");
        goto out;
    }
    interrupt_install();
    struct progress prog;
    progress_begin(&prog, "replay", np * nl + (sweep_on ? SWEEP_K * nl : 0));
    rc = 0;
    for (size_t i = 0; i < np && !interrupted() && rc == 0; i++)
        for (size_t k = 0; k < nl && !interrupted(); k++) {
            struct replay_spec spec = {policies[i], layouts[k], budget, use_pred, true};
            if (replay_run(&tr, &spec, &res[done], err, sizeof err) != 0) {
                fb_error("replay %s x %s: %s", policies[i], layouts[k], err);
                rc = 1;
                break;
            }
            done++;
            progress_update(&prog, done, policies[i]);
        }
    for (size_t k = 0; sweep_on && k < nl && rc == 0; k++)
        for (size_t w = 0; w < SWEEP_K && !interrupted(); w++) {
            char name[32];
            snprintf(name, sizeof name, "window:%zu", w + 1);
            struct replay_spec spec = {name, layouts[k], budget, use_pred, true};
            if (replay_run(&tr, &spec, &sweep[k * SWEEP_K + w], err, sizeof err) != 0) {
                fb_error("replay %s x %s: %s", name, layouts[k], err);
                rc = 1;
                break;
            }
            sweep_done++;
            progress_update(&prog, done + sweep_done, name);
        }
    progress_end(&prog);
    bool complete = !interrupted() && rc == 0 && done == np * nl && sweep_done == (sweep_on ? SWEEP_K * nl : 0);
    if (interrupted())
        fb_warn("replay: interrupted; writing the %zu configurations measured", done);
    if (done) {
        cJSON *p = params;
        params = NULL;
        if (write_outputs(dir, o->trace, res, done, complete, p) != 0)
            rc = 1;
        if (!o->quiet && rc == 0) {
            char *md = replay_report_markdown(res, done, o->trace);
            if (md)
                fputs(md, stdout);
            free(md);
        }
    }
    if (rc == 0 && sweep_on && sweep_done == SWEEP_K * nl) {
        char title[300];
        snprintf(title, sizeof title, "bytes per token against window size, %s sets", use_pred ? "predicted" : "active");
        if (write_sweep(dir, sweep, nl, o->plot, title) != 0)
            rc = 1;
    }
    if (rc == 0 && o->plot && write_sagg_plot(dir, &tr) != 0)
        rc = 1;
    if (rc == 0)
        fb_info("results in %s", dir);
    if (rc == 0 && !complete)
        rc = 130;
out:
    cJSON_Delete(params);
    for (size_t i = 0; res && i < done; i++)
        replay_result_free(&res[i]);
    for (size_t i = 0; sweep && i < sweep_done; i++)
        replay_result_free(&sweep[i]);
    free(res);
    free(sweep);
    trace_free(&tr);
    free(policies);
    free(layouts);
    return rc;
}

int cmd_replay(int argc, char **argv)
{
    struct replay_opts o;
    memset(&o, 0, sizeof o);
    int rc = cli_parse(&replay_command, &o, argc, argv, NULL, NULL);
    if (rc != 0) {
        opts_free(&replay_command, &o);
        return rc > 0 ? 0 : 2;
    }
    if (!o.trace) {
        fb_error("replay: needs --trace FILE");
        opts_free(&replay_command, &o);
        return 2;
    }
    cJSON *params = opts_to_json(&replay_command, &o);
    rc = run_replay(&o, params);
    opts_free(&replay_command, &o);
    return rc;
}
