/* A measured run's summary and the comparison with a prediction (sim/run_summary.h). */
#include "sim/run_summary.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "common/limits.h"

const char *const run_part_keys[RUN_PARTS] = {"io_ms", "mem_ms", "compute_ms", "total_ms"};

static double number_or_nan(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void copy_string(char *buf, size_t len, const cJSON *v, const char *otherwise)
{
    snprintf(buf, len, "%s", cJSON_IsString(v) ? v->valuestring : otherwise);
}

/* summary.verify: requested "on" or "off" (absent: off), and its time per token. */
static int read_verify(const cJSON *sum, struct run_summary *out, const char *path, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sum, "verify");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(v, "requested");
    out->verify_ms = number_or_nan(v, "verify_ms_per_token");
    if (!req)
        return 0;
    if (!cJSON_IsString(req) || (strcmp(req->valuestring, "on") && strcmp(req->valuestring, "off")))
        return err_set(err, errlen, "%s: \"summary.verify.requested\" must be \"on\" or \"off\"", path);
    out->verify = !strcmp(req->valuestring, "on");
    return 0;
}

/* provenance.model, .dtype and .shape, each when present and well formed. */
static void read_model(const cJSON *prov, struct run_summary *out)
{
    copy_string(out->model, sizeof out->model, cJSON_GetObjectItemCaseSensitive(prov, "model"), "");
    copy_string(out->dtype, sizeof out->dtype, cJSON_GetObjectItemCaseSensitive(prov, "dtype"), "");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(prov, "shape");
    const char *keys[3] = {"n_layers", "d_model", "d_ff"};
    uint32_t v[3];
    for (int k = 0; k < 3; k++) {
        double d = number_or_nan(shape, keys[k]);
        if (!(d >= 1 && d <= UINT32_MAX) || d != floor(d))
            return; /* absent or malformed: checked by dtype alone */
        v[k] = (uint32_t)d;
    }
    memcpy(out->shape, v, sizeof v);
}

int run_summary_read(const char *path, struct run_summary *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    cJSON *run = read_json_file(path);
    if (!run)
        return err_set(err, errlen, "%s: cannot read it as JSON (expected flashbed run's run.json)", path);
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(run, "summary");
    out->part_ms[RUN_TOTAL] = 0;
    for (int k = 0; k < RUN_TOTAL; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(sum, run_part_keys[k]);
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0) {
            cJSON_Delete(run);
            return err_set(err, errlen, "%s: the run has no finite non-negative \"summary.%s\" (expected flashbed "
                           "run's run.json)", path, run_part_keys[k]);
        }
        out->part_ms[RUN_TOTAL] += out->part_ms[k] = v->valuedouble;
    }
    out->window_k = number_or_nan(sum, "window_k");
    out->capacity_rows = number_or_nan(sum, "capacity_rows_per_layer");
    out->predictor_ms = number_or_nan(sum, "predictor_ms");
    out->predictor_dram_bytes = number_or_nan(sum, "predictor_dram_bytes");
    for (int k = 0; k < RUN_DEVICE_KEYS; k++)
        out->device[k] = number_or_nan(sum, run_device_keys[k]);
    out->read_ms = number_or_nan(sum, "read_ms");
    copy_string(out->layout, sizeof out->layout, cJSON_GetObjectItemCaseSensitive(sum, "layout"), "");
    if (read_verify(sum, out, path, err, errlen) != 0) {
        cJSON_Delete(run);
        return -1;
    }
    copy_string(out->active_source, sizeof out->active_source, cJSON_GetObjectItemCaseSensitive(sum, "active_source"),
                "");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(run, "provenance"),
                                                           "parameters");
    copy_string(out->dram_budget, sizeof out->dram_budget, cJSON_GetObjectItemCaseSensitive(params, "dram-budget"),
                "none");
    out->provenance = cJSON_DetachItemFromObjectCaseSensitive(run, "provenance");
    cJSON_Delete(run);
    read_model(out->provenance, out);
    return 0;
}

int run_summary_check_shape(const struct run_summary *m, const char *path, const struct model_shape *shape,
                            const char *dtype, char *err, size_t errlen)
{
    const uint32_t priced[3] = {shape->n_layers, shape->d_model, shape->d_ff};
    bool same_shape = !m->shape[0] || !memcmp(priced, m->shape, sizeof priced);
    bool same_dtype = !m->dtype[0] || !strcmp(m->dtype, dtype);
    if (same_shape && same_dtype)
        return 0;
    char run_shape[96] = "";
    if (m->shape[0])
        snprintf(run_shape, sizeof run_shape, ": %u layers, d_model %u, d_ff %u", m->shape[0], m->shape[1],
                 m->shape[2]);
    return err_set(err, errlen, "%s is a run of %s (%s%s), but the prediction prices --model %s (%u layers, d_model "
                   "%u, d_ff %u) at --dtype %s: give the run's shape and dtype (a configs/models/ name or a .json "
                   "of that shape) so that the two describe the same model", path, m->model[0] ? m->model : "a model",
                   m->dtype[0] ? m->dtype : "dtype unrecorded", run_shape, shape->name, shape->n_layers,
                   shape->d_model, shape->d_ff, dtype);
}

int run_summary_check_comparable(const char *path, char *err, size_t errlen)
{
    struct run_summary m;
    if (run_summary_read(path, &m, err, errlen) != 0)
        return -1;
    bool transposed = !strcmp(m.layout, "transposed");
    run_summary_free(&m);
    if (transposed)
        return err_set(err, errlen, "%s is a run of input sparsity (--active teal, layout transposed), which the cost "
                       "model does not price as it ran yet: it has no stride for the two streams (the run read "
                       "ffn_t.bin's rows padded to %u bytes) nor the run's cache budget (summary.transposed."
                       "cache_budget_bytes); replay --trace (the run's --record) --layout transposed --row-stride "
                       "aligned --dram-budget that budget counts its reads exactly", path, FB_BUNDLE_ALIGN);
    return 0;
}

void run_summary_free(struct run_summary *s)
{
    cJSON_Delete(s->provenance);
    s->provenance = NULL;
}

const char *const run_device_keys[RUN_DEVICE_KEYS] = {"h2d_bytes", "d2h_bytes", "launches", "syncs", "h2d_ms"};

/* The device's counts, modelled beside measured. */
static void compare_device(const struct cost_prediction *p, const struct run_summary *m, struct run_comparison *out)
{
    out->has_device = p->device && !isnan(m->device[0]);
    if (!out->has_device)
        return;
    const double predicted[RUN_DEVICE_KEYS] = {p->dev_bytes_up, p->dev_bytes_down, p->dev_launches, p->dev_syncs,
                                               p->h2d_ms};
    for (int k = 0; k < RUN_DEVICE_KEYS; k++) {
        out->device[k][0] = predicted[k];
        out->device[k][1] = m->device[k];
        out->device[k][2] = cost_rel_err(predicted[k], m->device[k]);
    }
}

void run_compare(const struct cost_prediction *p, const struct run_summary *m, struct run_comparison *out)
{
    memset(out, 0, sizeof *out);
    const double predicted[RUN_TOTAL] = {p->io_ms, p->mem_ms, p->compute_ms};
    double parts[RUN_PARTS];
    memcpy(parts, m->part_ms, sizeof parts);
    out->overlapped = !isnan(m->read_ms) && m->read_ms > m->part_ms[RUN_IO];
    if (out->overlapped) { /* the model's serial reads against the reads' whole time */
        out->exposed_io_ms = m->part_ms[RUN_IO];
        out->overlapped_total_ms = m->part_ms[RUN_TOTAL];
        parts[RUN_TOTAL] += m->read_ms - parts[RUN_IO];
        parts[RUN_IO] = m->read_ms;
    }
    double mape = 0;
    int measured = 0;
    for (int k = 0; k < RUN_PARTS; k++) {
        out->predicted[k] = k < RUN_TOTAL ? predicted[k] : predicted[0] + predicted[1] + predicted[2];
        out->measured[k] = parts[k];
        out->rel_err[k] = cost_rel_err(out->predicted[k], out->measured[k]);
        if (k < RUN_TOTAL && out->measured[k] != 0) {
            mape += fabs(out->rel_err[k]);
            measured++;
        }
    }
    out->mape_pct = measured ? 100 * mape / measured : 0;
    compare_device(p, m, out);
    out->has_verify = m->verify && p->verify && !isnan(m->verify_ms);
    if (out->has_verify) {
        out->verify_ms[0] = p->verify_ms, out->verify_ms[1] = m->verify_ms;
        out->verify_ms[2] = cost_rel_err(p->verify_ms, m->verify_ms);
    }
    /* a deployable source (the predictor, the gate, gate-cal: what a deployment holds) is the
     * one a run records predictor DRAM for (engine/ffn: ffn_flash_predictor_bytes, 0 for the
     * oracle, teal and a trace); run.json has carried the key since --active predictor|gate came,
     * so the run's own number says it, not a list of names that missed gate-cal */
    out->has_predictor = m->predictor_dram_bytes > 0;
    if (!out->has_predictor)
        return;
    double me_ms = m->predictor_ms, me_dram = m->predictor_dram_bytes; /* NAN when the run lacks them */
    out->predictor_ms[0] = p->predictor_ms, out->predictor_ms[1] = me_ms;
    out->predictor_ms[2] = cost_rel_err(p->predictor_ms, me_ms);
    out->predictor_dram[0] = p->dram_predictor, out->predictor_dram[1] = me_dram;
    out->predictor_dram[2] = cost_rel_err(p->dram_predictor, me_dram);
}

const char *run_compare_verdict(const struct run_comparison *c, char *buf, size_t len)
{
    static const char *const names[RUN_TOTAL] = {"I/O", "memory management", "compute"};
    int worst = 0;
    for (int k = 1; k < RUN_TOTAL; k++)
        if (fabs(c->predicted[k] - c->measured[k]) > fabs(c->predicted[worst] - c->measured[worst]))
            worst = k;
    double err = c->rel_err[RUN_TOTAL], gap = 0; /* the components' gaps, whatever their signs */
    for (int k = 0; k < RUN_TOTAL; k++)
        gap += fabs(c->predicted[k] - c->measured[k]);
    bool holds = fabs(err) <= RUN_COMPARE_HOLDS;
    int n = snprintf(buf, len, "Verdict: the cost model %s on this run: %.3g ms a token predicted against %.3g "
                     "measured (%+.0f%%, %s ±%.0f%%). The largest gap is %s: %.3g against %.3g ms (%+.0f%%)",
                     holds ? "holds" : "misses", c->predicted[RUN_TOTAL], c->measured[RUN_TOTAL], 100 * err,
                     holds ? "within" : "beyond", 100 * RUN_COMPARE_HOLDS, names[worst], c->predicted[worst],
                     c->measured[worst], 100 * c->rel_err[worst]);
    if (n >= 0 && (size_t)n < len && gap > 0)
        n += snprintf(buf + n, len - (size_t)n, ", %.0f%% of the components' gaps in ms",
                      100 * fabs(c->predicted[worst] - c->measured[worst]) / gap);
    if (n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ".%s\n",
                      c->measured[RUN_TOTAL] < RUN_COMPARE_SHORT_MS
                          ? " A token this short is mostly fixed per-token costs; the model's figures at real "
                            "shapes are in docs/cost-model.md."
                          : "");
    return buf;
}
