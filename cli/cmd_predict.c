/* flashbed predict: the cost model for one configuration, the paper's
 * tables (--paper), or a prediction set beside a measured run (--compare). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "common/log.h"
#include "common/options.h"
#include "common/parse.h"
#include "common/provenance.h"
#include "sim/cost_model.h"
#include "sim/paper_tables.h"
#include "sim/replay.h"
#include "sim/trace_volumes.h"
#include "traces/trace.h"

struct predict_opts {
    char *model, *hw, *dtype, *policy, *layout, *dram_budget, *density_from, *trace, *out, *paper,
        *compare, *use;
    uint64_t io_threads, context;
};

#define O(f) offsetof(struct predict_opts, f)
static const struct opt_def predict_options[] = {
    {"model", OPT_STRING, O(model), "opt-6.7b", "SHAPE", "model shape: a name in configs/models/ or a .json path"},
    {"hw", OPT_STRING, O(hw), "m1max-cpu", "PROFILE", "hardware profile: a name in configs/hw/ or a .json path"},
    {"dtype", OPT_STRING, O(dtype), "f32", "TYPE", "weights", .allowed = "f32|f16|bf16"},
    {"policy", OPT_STRING, O(policy), "window:5", "POLICY", "naive, hybrid, predictor, window:K (last K tokens, this one included: the paper's k = 4 is window:5)"},
    {"layout", OPT_STRING, O(layout), "bundled", "LAYOUT", "split (up and down read apart) or bundled"},
    {"dram-budget", OPT_STRING, O(dram_budget), "50%", "PCT|BYTES", "DRAM for the model: share kept resident by hybrid"},
    {"density-from", OPT_STRING, O(density_from), "paper", "SOURCE", "per-token FFN volumes: paper (configs/paper/densities.json)",
     .allowed = "paper"},
    {"trace", OPT_STRING, O(trace), NULL, "FILE", "per-token volumes from replaying this activation trace (then --policy may also be lru, lfu, hot, belady and --layout friends, coalesce:G)"},
    {"use", OPT_STRING, O(use), "auto", "SETS", "with --trace: auto is predicted when the trace has them",
     .allowed = "auto|predicted|actual"},
    {"io-threads", OPT_UINT, O(io_threads), "0", "N", "flash reader threads [default: the profile's]",
     .max = FB_MAX_THREADS},
    {"context", OPT_UINT, O(context), "256", "TOKENS", "mean KV-cache length over the decode"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "result folder [default: results/predict-<timestamp>]"},
    {"paper", OPT_STRING, O(paper), NULL, "WHAT", "regenerate the paper's tables and figure",
     .allowed = "table2|table3|fig7|all"},
    {"compare", OPT_STRING, O(compare), NULL, "RUN.json", "put the prediction beside a measured run (flashbed run's run.json)"},
    OPT_END,
};
#undef O

static const struct opt_command predict_command = {
    .name = "predict",
    .usage = "[--model SHAPE --hw PROFILE --policy P ...] | --paper table2|table3|fig7|all",
    .summary = "Predicts per-token I/O, memory-management and compute latency with the cost model\n"
               "(sim/cost_model.h). --paper regenerates the paper's Table 2, Table 3 and Fig. 7 beside\n"
               "the paper's numbers; --compare puts a prediction beside a measured run.",
    .opts = predict_options,
    .max_positional = 0,
};

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

static cJSON *prediction_json(const struct cost_prediction *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "io_ms", p->io_ms);
    cJSON_AddNumberToObject(o, "mem_ms", p->mem_ms);
    cJSON_AddNumberToObject(o, "compute_ms", p->compute_ms);
    cJSON_AddNumberToObject(o, "attention_ms", p->attention_ms);
    cJSON_AddNumberToObject(o, "predictor_ms", p->predictor_ms);
    cJSON_AddNumberToObject(o, "ffn_ms", p->ffn_ms);
    cJSON_AddNumberToObject(o, "output_ms", p->other_ms);
    cJSON_AddNumberToObject(o, "serial_total_ms", p->serial_ms);
    cJSON_AddNumberToObject(o, "overlapped_total_ms", p->overlapped_ms);
    cJSON_AddNumberToObject(o, "bytes_per_token", p->bytes_per_token);
    cJSON_AddNumberToObject(o, "reads_per_token", p->reads_per_token);
    cJSON_AddNumberToObject(o, "chunk_bytes", p->chunk_bytes);
    cJSON_AddNumberToObject(o, "throughput_bytes", p->throughput);
    cJSON_AddBoolToObject(o, "throughput_interpolated", p->throughput_interpolated);
    cJSON_AddNumberToObject(o, "rows_inserted_per_token", p->rows_inserted);
    cJSON_AddNumberToObject(o, "rows_deleted_per_token", p->rows_deleted);
    cJSON_AddNumberToObject(o, "cache_rows", p->cache_rows);
    cJSON *d = cJSON_AddObjectToObject(o, "dram");
    const double parts[] = {p->dram_embeddings, p->dram_attention, p->dram_predictor, p->dram_ffn, p->dram_total};
    const char *names[] = {"embeddings", "attention", "predictor", "ffn_cache", "total"};
    for (int i = 0; i < 5; i++) {
        cJSON *e = cJSON_AddObjectToObject(d, names[i]);
        cJSON_AddNumberToObject(e, "gb", parts[i] / 1e9);
        cJSON_AddNumberToObject(e, "pct_of_model", 100 * parts[i] / p->model_bytes);
    }
    cJSON_AddNumberToObject(o, "model_gb", p->model_bytes / 1e9);
    return o;
}

static void prediction_md(char *buf, size_t len, const struct cost_config *c, const char *policy,
                          const char *layout, const struct cost_prediction *p)
{
    snprintf(buf, len,
             "# flashbed predict — %s, %s, %s, %s, %s layout\n\n"
             "| I/O ms | mem ms | compute ms | total ms (serial) | total ms (I/O overlapped) |\n"
             "|---:|---:|---:|---:|---:|\n| %.1f | %.1f | %.1f | %.1f | %.1f |\n\n"
             "compute: attention %.1f ms, predictor %.1f ms, FFN %.1f ms, output %.1f ms\n\n"
             "flash: %.3f GB per token in %.0f reads of %.0f bytes at %.2f GB/s (%s, %u threads)\n\n"
             "| DRAM | GB | %% of model |\n|---|---:|---:|\n"
             "| embeddings | %.2f | %.1f |\n| attention | %.2f | %.1f |\n| predictor | %.2f | %.1f |\n"
             "| FFN cache | %.2f | %.1f |\n| total | %.2f | %.1f |\n\nvolumes: %s\n",
             c->shape->name, c->hw->name, c->dtype, policy, layout,
             p->io_ms, p->mem_ms, p->compute_ms, p->serial_ms, p->overlapped_ms, p->attention_ms,
             p->predictor_ms, p->ffn_ms, p->other_ms, p->bytes_per_token / 1e9, p->reads_per_token,
             p->chunk_bytes, p->throughput / 1e9,
             p->chunk_bytes == 0 ? "sequential" : p->throughput_interpolated ? "interpolated" : "closed form",
             c->io_threads, p->dram_embeddings / 1e9, 100 * p->dram_embeddings / p->model_bytes,
             p->dram_attention / 1e9, 100 * p->dram_attention / p->model_bytes, p->dram_predictor / 1e9,
             100 * p->dram_predictor / p->model_bytes, p->dram_ffn / 1e9, 100 * p->dram_ffn / p->model_bytes,
             p->dram_total / 1e9, 100 * p->dram_total / p->model_bytes,
             c->vol.source[0] ? c->vol.source : "whole model (no sparsity)");
}

/* Reads a measured run's summary and writes compare.{json,md}. */
static int compare_with_run(const char *path, const struct cost_prediction *p, const char *dir,
                            cJSON *prov)
{
    char *text = read_text_file(path, NULL);
    if (!text) {
        fb_error("cannot read measured run %s", path);
        return -1;
    }
    cJSON *run = cJSON_Parse(text);
    free(text);
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(run, "summary");
    const char *keys[] = {"io_ms", "mem_ms", "compute_ms"};
    double measured[3], predicted[3] = {p->io_ms, p->mem_ms, p->compute_ms};
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(sum, keys[i]);
        if (!cJSON_IsNumber(v)) {
            fb_error("%s: %s has no number \"summary.%s\" (expected flashbed run's run.json)", path,
                     run ? "the run" : "not JSON:", keys[i]);
            cJSON_Delete(run);
            return -1;
        }
        measured[i] = v->valuedouble;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(root, "provenance", prov);
    cJSON_AddStringToObject(root, "measured_run", path);
    cJSON *measured_prov = cJSON_DetachItemFromObjectCaseSensitive(run, "provenance");
    if (measured_prov)
        cJSON_AddItemToObject(root, "measured_provenance", measured_prov);
    cJSON *rows = cJSON_AddArrayToObject(root, "components");
    char md[4096];
    int len = snprintf(md, sizeof md, "# predicted vs measured — %s\n\n| component | predicted ms | measured ms | error |\n|---|---:|---:|---:|\n", path);
    double mape = 0;
    int nm = 0;
    for (int i = 0; i < 4; i++) {
        double pr = i < 3 ? predicted[i] : predicted[0] + predicted[1] + predicted[2];
        double me = i < 3 ? measured[i] : measured[0] + measured[1] + measured[2];
        double e = me != 0 ? (pr - me) / me : 0;
        if (i < 3 && me != 0) {
            mape += fabs(e);
            nm++;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "component", i < 3 ? keys[i] : "total_ms");
        cJSON_AddNumberToObject(o, "predicted_ms", pr);
        cJSON_AddNumberToObject(o, "measured_ms", me);
        cJSON_AddNumberToObject(o, "rel_err", e);
        cJSON_AddItemToArray(rows, o);
        len += snprintf(md + len, sizeof md - (size_t)len, "| %s | %.2f | %.2f | %+.1f%% |\n",
                        i < 3 ? keys[i] : "total", pr, me, 100 * e);
    }
    mape = nm ? 100 * mape / nm : 0;
    cJSON_AddNumberToObject(root, "mape_pct", mape);
    snprintf(md + len, sizeof md - (size_t)len, "\nMAPE over the three components: %.1f%%\n", mape);
    char out[4200];
    snprintf(out, sizeof out, "%s/compare.json", dir);
    int rc = write_json_file(out, root);
    snprintf(out, sizeof out, "%s/compare.md", dir);
    if (rc == 0)
        rc = write_text_file(out, md);
    fputs(md, stdout);
    cJSON_Delete(root);
    cJSON_Delete(run);
    return rc;
}

static int run_paper(const char *what, const char *dir, cJSON *prov)
{
    bool all = strcmp(what, "all") == 0;
    if ((all || !strcmp(what, "table2")) && paper_table2(dir, prov) != 0)
        return -1;
    if ((all || !strcmp(what, "table3")) && paper_table3(dir, prov) != 0)
        return -1;
    if ((all || !strcmp(what, "fig7")) && paper_fig7(dir, prov) != 0)
        return -1;
    fb_info("written to %s/", dir);
    return 0;
}

/* Per-token volumes from the paper's densities: its own figures when the
 * window matches the paper's (its k previous tokens + this one =
 * window:k+1), else the s_agg curve fitted to OPT-6.7B's figures. */
static int volumes_from_paper(const struct predict_opts *o, const struct model_shape *shape, struct cost_config *c)
{
    if (parse_policy(o->policy, &c->policy, &c->window_k) != 0 || parse_layout(o->layout, &c->layout) != 0) {
        fb_error("predict: bad --policy '%s' or --layout '%s' (naive, hybrid, predictor, window:K; split, bundled;"
                 " lru, lfu, hot, belady, friends and coalesce:G need --trace)",
                 o->policy, o->layout);
        return -1;
    }
    double paper_k = -2;
    paper_density(shape->name, "window_k", &paper_k, NULL, 0);
    enum cost_policy policy = c->policy;
    unsigned k = c->window_k;
    enum cost_layout layout = c->layout;
    const char *method = policy == POLICY_WINDOW ? "window" : policy_name(policy);
    if ((policy == POLICY_WINDOW && (double)k != paper_k + 1) ||
        paper_cost_config(c, shape, method, o->layout, "") != 0) {
        if (policy == POLICY_PREDICTOR || policy == POLICY_WINDOW) {
            double held = paper_s_agg(policy == POLICY_WINDOW ? k : 1);
            double fresh = policy == POLICY_WINDOW && k > 1 ? held - paper_s_agg(k - 1) : held;
            volumes_from_fractions(shape, policy, fresh, held, &c->vol);
            snprintf(c->vol.source, sizeof c->vol.source,
                     "s_agg curve through OPT-6.7B's App. C.1 figures (window of %u token%s: %.2f%% new, %.1f%% held)", k, k == 1 ? "" : "s",
                     100 * fresh, 100 * held);
        }
    }
    c->policy = policy;
    c->window_k = k;
    c->layout = layout;
    return 0;
}

/* Per-token volumes from replaying a trace of this shape. The FFN cache gets
 * the DRAM budget less the weights that always stay in DRAM. */
static int volumes_from_trace(const struct predict_opts *o, const struct model_shape *shape,
                              const struct param_counts *pc, struct cost_config *c)
{
    char err[1024];
    if (replay_check_policy(o->policy, err, sizeof err) != 0 || replay_check_layout(o->layout, err, sizeof err) != 0) {
        fb_error("predict: %s", err);
        return -1;
    }
    int b = dtype_bytes(c->dtype);
    double ffn_budget = c->dram_share * (double)pc->total * b - (double)(pc->total - pc->ffn) * b;
    if (replay_policy_uses_budget(o->policy) && ffn_budget <= 0) {
        char held[32];
        format_size((uint64_t)(pc->total - pc->ffn) * (uint64_t)b, held, sizeof held);
        fb_error("predict --dram-budget %s: leaves no DRAM for an FFN cache once the %s of non-FFN weights are held",
                 o->dram_budget, held);
        return -1;
    }
    struct trace tr;
    if (trace_load(o->trace, &tr, err, sizeof err) != 0) {
        fb_error("predict --trace: %s", err);
        return -1;
    }
    struct trace_volume_spec spec = {
        .policy = o->policy, .layout = o->layout, .ffn_budget_bytes = ffn_budget, .dtype_bytes = b};
    if (trace_choose_sets(o->use, &tr.meta, o->trace, &spec.use_predicted, err, sizeof err) != 0) {
        fb_error("predict --use: %s", err);
        trace_free(&tr);
        return -1;
    }
    int rc = trace_matches_shape(&tr, o->trace, shape, err, sizeof err);
    if (rc == 0)
        rc = trace_volumes(&tr, o->trace, &spec, &c->vol, &c->policy, &c->layout, err, sizeof err);
    if (rc != 0)
        fb_error("predict --trace: %s", err);
    trace_free(&tr);
    return rc;
}

int cmd_predict(int argc, char **argv)
{
    struct predict_opts o;
    memset(&o, 0, sizeof o);
    int rc = cli_parse(&predict_command, &o, argc, argv, NULL, NULL);
    if (rc != 0) {
        opts_free(&predict_command, &o);
        return rc > 0 ? 0 : 2;
    }
    char dir[4096], err[512];
    if (o.out)
        snprintf(dir, sizeof dir, "%s", o.out);
    else {
        char stamp[32];
        provenance_stamp(stamp, sizeof stamp);
        snprintf(dir, sizeof dir, "results/predict-%s", stamp);
    }
    cJSON *prov = provenance_new();
    cJSON *params = opts_to_json(&predict_command, &o);
    cJSON_AddItemToObject(prov, "parameters", params);
    rc = 1;
    if (o.paper) {
        rc = run_paper(o.paper, dir, prov) == 0 ? 0 : 1;
        goto out;
    }
    struct model_shape shape;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    if (!hw)
        goto out;
    if (model_shape_load(o.model, &shape, err, sizeof err) != 0 ||
        hw_profile_load(o.hw, hw, err, sizeof err) != 0 || cost_resolve_profile(hw, err, sizeof err) != 0) {
        fb_error("%s", err);
        free(hw);
        goto out;
    }
    struct cost_config c = {.shape = &shape, .hw = hw, .context_tokens = (double)o.context};
    snprintf(c.dtype, sizeof c.dtype, "%s", o.dtype);
    c.io_threads = o.io_threads ? (unsigned)o.io_threads : hw->io_threads;
    struct param_counts pc;
    model_shape_params(&shape, &pc);
    if (parse_budget(o.dram_budget, (double)pc.total * dtype_bytes(c.dtype), &c.dram_share, err, sizeof err) != 0) {
        fb_error("predict --dram-budget: %s", err);
        free(hw);
        goto out;
    }
    if (o.trace) {
        if (volumes_from_trace(&o, &shape, &pc, &c) != 0) {
            free(hw);
            goto out;
        }
    } else if (volumes_from_paper(&o, &shape, &c) != 0) {
        free(hw);
        goto out;
    }
    struct cost_prediction p;
    if (cost_predict(&c, &p, err, sizeof err) != 0) {
        fb_error("%s", err);
        free(hw);
        goto out;
    }
    if (mkdir_p(dir, 0755) != 0) {
        fb_error("cannot create %s", dir);
        free(hw);
        goto out;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(root, "provenance", prov);
    cJSON_AddStringToObject(root, "volume_source", c.vol.source);
    cJSON_AddItemToObject(root, "prediction", prediction_json(&p));
    char path[4200], md[8192];
    snprintf(path, sizeof path, "%s/predict.json", dir);
    rc = write_json_file(path, root) == 0 ? 0 : 1;
    cJSON_Delete(root);
    prediction_md(md, sizeof md, &c, o.policy, o.layout, &p);
    snprintf(path, sizeof path, "%s/predict.md", dir);
    if (rc == 0 && write_text_file(path, md) != 0)
        rc = 1;
    if (o.compare) {
        if (compare_with_run(o.compare, &p, dir, prov) != 0)
            rc = 1;
    } else {
        fputs(md, stdout);
    }
    free(hw);
out:
    cJSON_Delete(prov);
    opts_free(&predict_command, &o);
    return rc;
}
