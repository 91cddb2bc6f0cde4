/* predict.json, predict.md and predict.json's reader (sim/predict_report.h). */
#include "sim/predict_report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "common/strbuf.h"

/* The fixed costs inside io_ms and compute_ms (a profile with them). */
static void predict_fixed_json(cJSON *f, const struct cost_prediction *p)
{
    cJSON_AddNumberToObject(f, "read_batches", p->io_batches);
    cJSON_AddNumberToObject(f, "batch_ms", p->io_batch_ms);
    cJSON_AddNumberToObject(f, "read_tail_ms", p->io_tail_ms);
    cJSON_AddNumberToObject(f, "team_jobs", p->team_jobs);
    cJSON_AddNumberToObject(f, "team_cold_jobs", p->team_cold_jobs);
    cJSON_AddNumberToObject(f, "jobs_ms", p->jobs_ms);
    cJSON_AddNumberToObject(f, "token_ms", p->token_fixed_ms);
}

void predict_device_json(cJSON *d, const struct cost_prediction *p)
{
    cJSON_AddNumberToObject(d, "h2d_bytes", p->dev_bytes_up);
    cJSON_AddNumberToObject(d, "uploads", p->dev_uploads);
    cJSON_AddNumberToObject(d, "d2h_bytes", p->dev_bytes_down);
    cJSON_AddNumberToObject(d, "downloads", p->dev_downloads);
    cJSON_AddNumberToObject(d, "row_moves", p->dev_row_moves);
    cJSON_AddNumberToObject(d, "launches", p->dev_launches);
    cJSON_AddNumberToObject(d, "syncs", p->dev_syncs);
    cJSON_AddNumberToObject(d, "h2d_ms", p->h2d_ms);
    cJSON_AddNumberToObject(d, "d2h_ms", p->d2h_ms);
    cJSON_AddNumberToObject(d, "launch_ms", p->launch_ms);
    cJSON_AddNumberToObject(d, "sync_ms", p->sync_ms);
    cJSON_AddNumberToObject(d, "total_ms", p->device_total_ms);
}

/* One policy's "prediction": the cost model's numbers, every one of them, so
 * that a reader needs nothing else (DRAM also as a share of the model). */
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
    cJSON_AddNumberToObject(o, "predictor_bytes", p->dram_predictor);
    if (p->device)
        predict_device_json(cJSON_AddObjectToObject(o, "device"), p);
    if (p->fixed)
        predict_fixed_json(cJSON_AddObjectToObject(o, "fixed"), p);
    cJSON *v = cJSON_AddObjectToObject(o, "verify");
    cJSON_AddStringToObject(v, "requested", p->verify ? "on" : "off");
    cJSON_AddNumberToObject(v, "bytes_per_token", p->verify_bytes);
    cJSON_AddNumberToObject(v, "ms", p->verify_ms);
    cJSON_AddBoolToObject(v, "priced", p->verify && !p->verify_unpriced);
    return o;
}

/* Where the flash rate came from: a sequential read's, the profile's
 * measured points (interpolated), or its fitted closed form. */
static const char *throughput_kind(const struct cost_prediction *p)
{
    return p->chunk_bytes == 0 ? "sequential" : p->throughput_interpolated ? "interpolated" : "closed form";
}

/* The name of the policy priced. */
static const char *priced(const struct policy_prediction *it, char *buf, size_t len)
{
    cache_policy_name(&it->config.policy, buf, len);
    return buf;
}

/* The policy priced, and what was asked when they differ: "window:5 (window:auto)". */
static const char *policy_label(const struct policy_prediction *it, char *buf, size_t len)
{
    char name[POLICY_NAME_MAX], asked[POLICY_NAME_MAX];
    if (!it->window.k)
        return priced(it, buf, len);
    cache_policy_name(&it->asked, asked, sizeof asked);
    snprintf(buf, len, "%s (%s)", priced(it, name, sizeof name), asked);
    return buf;
}

/* window:auto's choices: K, the rows and tokens it was chosen for, and why. */
static void window_md(struct strbuf *b, const struct policy_prediction *it, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (it[i].window.k)
            strbuf_add(b, "\nwindow:auto chose K = %u for a layer cache of %llu rows over %llu tokens, from %s "
                          "(the cache: the budget less the non-FFN weights and the predictor, at the cost model's "
                          "dtype; run also holds its KV cache and staging, so its K may be smaller).\n",
                       it[i].window.k, (unsigned long long)it[i].window_rows,
                       (unsigned long long)it[i].window_tokens, it[i].window.from);
}

/* The device's terms, when the profile has a device. */
static void device_md(struct strbuf *b, const struct policy_prediction *it, size_t n)
{
    char name[POLICY_NAME_MAX];
    if (!n || !it[0].prediction.device)
        return;
    strbuf_add(b, "\nOn the device (%s), per token, apart from the totals above:\n\n"
                  "| policy | MB up | MB down | launches | syncs | upload ms | download ms | launch ms | sync ms | "
                  "total ms (serial + device) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
               it[0].config.hw->device.name);
    for (size_t i = 0; i < n; i++) {
        const struct cost_prediction *p = &it[i].prediction;
        strbuf_add(b, "| %s | %.3f | %.3f | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.1f |\n",
                   priced(&it[i], name, sizeof name), p->dev_bytes_up / 1e6, p->dev_bytes_down / 1e6,
                   p->dev_launches, p->dev_syncs, p->h2d_ms, p->d2h_ms, p->launch_ms, p->sync_ms,
                   p->device_total_ms);
    }
}

/* What checking the reads costs (--verify), inside mem ms. */
static void verify_md(struct strbuf *b, const struct predict_setup *s, const struct policy_prediction *it, size_t n)
{
    char name[POLICY_NAME_MAX];
    if (!s->verify) {
        strbuf_add(b, "\nVerification off (--verify off): no CRC-32C of the reads priced.\n");
        return;
    }
    if (s->hw->crc_bw <= 0) {
        strbuf_add(b, "\nVerification (--verify on) unpriced: %s has no CRC-32C rate (dram.crc32c_bw_bytes; "
                      "calibrate measures it): mem ms leaves it out.\n", s->hw->path);
        return;
    }
    strbuf_add(b, "\nVerification (--verify on): the bundles read whole, CRC-32C at %.2f GB/s (the profile's, on %.0f-byte buffers), inside mem ms:\n\n"
                  "| policy | MB checked per token | verify ms |\n|---|---:|---:|\n", s->hw->crc_bw / 1e9,
               s->hw->crc_buffer_bytes);
    for (size_t i = 0; i < n; i++)
        strbuf_add(b, "| %s | %.3f | %.3f |\n", priced(&it[i], name, sizeof name), it[i].prediction.verify_bytes / 1e6,
                   it[i].prediction.verify_ms);
}

/* One table row per policy for each of: latency, compute and flash, DRAM. */
char *predict_report_md(const struct predict_setup *s, const struct policy_prediction *it, size_t n)
{
    char label[128], name[POLICY_NAME_MAX], layout[LAYOUT_NAME_MAX];
    struct strbuf b = {0};
    cache_layout_name(&s->layout, layout, sizeof layout);
    strbuf_add(&b, "# flashbed predict — %s, %s, %s, %s layout\n\n", s->shape->name, s->hw->name, s->dtype,
               layout);
    strbuf_add(&b, "| policy | I/O ms | mem ms | compute ms | total ms (serial) | total ms (I/O overlapped) |\n"
                   "|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < n; i++) {
        const struct cost_prediction *p = &it[i].prediction;
        strbuf_add(&b, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", policy_label(&it[i], label, sizeof label), p->io_ms, p->mem_ms,
                   p->compute_ms, p->serial_ms, p->overlapped_ms);
    }
    window_md(&b, it, n);
    verify_md(&b, s, it, n);
    strbuf_add(&b, "\nCompute, and flash reads with %u threads:\n\n"
                   "| policy | attention ms | predictor ms | FFN ms | output ms | GB per token | reads | "
                   "bytes per read | GB/s | throughput |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
               s->io_threads);
    for (size_t i = 0; i < n; i++) {
        const struct cost_prediction *p = &it[i].prediction;
        strbuf_add(&b, "| %s | %.1f | %.1f | %.1f | %.1f | %.3f | %.0f | %.0f | %.2f | %s |\n",
                   priced(&it[i], name, sizeof name),
                   p->attention_ms, p->predictor_ms, p->ffn_ms, p->other_ms, p->bytes_per_token / 1e9,
                   p->reads_per_token, p->chunk_bytes, p->throughput / 1e9, throughput_kind(p));
    }
    strbuf_add(&b, "\nDRAM, GB (%% of the model):\n\n"
                   "| policy | embeddings | attention | predictor | FFN cache | total |\n"
                   "|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < n; i++) {
        const struct cost_prediction *p = &it[i].prediction;
        const double parts[] = {p->dram_embeddings, p->dram_attention, p->dram_predictor, p->dram_ffn, p->dram_total};
        strbuf_add(&b, "| %s |", priced(&it[i], name, sizeof name));
        for (int k = 0; k < 5; k++)
            strbuf_add(&b, " %.2f (%.1f%%) |", parts[k] / 1e9, 100 * parts[k] / p->model_bytes);
        strbuf_add(&b, "\n");
    }
    device_md(&b, it, n);
    strbuf_add(&b, "\nPredictor (what chooses the neurons: held in DRAM, computed every token; the FFN cache gets "
                   "the budget less it):\n\n");
    for (size_t i = 0; i < n; i++)
        strbuf_add(&b, "- %s: %s\n", priced(&it[i], name, sizeof name),
                   it[i].config.predictor_source[0] ? it[i].config.predictor_source
                                                    : "none (the policy reads every neuron, or none asked for)");
    strbuf_add(&b, "\nVolumes:\n\n");
    for (size_t i = 0; i < n; i++)
        strbuf_add(&b, "- %s: %s\n", priced(&it[i], name, sizeof name),
                   it[i].config.vol.source[0] ? it[i].config.vol.source : "whole model (no sparsity)");
    return strbuf_take(&b);
}

/* A list of one keeps the top-level keys predict.json had before lists,
 * which scripts still read (d['prediction']). */
cJSON *predict_report_json(const struct policy_prediction *it, size_t n, cJSON *prov)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(root, "provenance", prov);
    if (n == 1) { /* one policy: the shape predict.json always had */
        cJSON_AddStringToObject(root, "volume_source", it[0].config.vol.source);
        cJSON_AddStringToObject(root, "predictor_source", it[0].config.predictor_source);
        cJSON_AddItemToObject(root, "prediction", prediction_json(&it[0].prediction));
    }
    cJSON *list = cJSON_AddArrayToObject(root, "predictions");
    for (size_t i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        char name[POLICY_NAME_MAX], layout[LAYOUT_NAME_MAX];
        cJSON_AddStringToObject(e, "policy", priced(&it[i], name, sizeof name));
        if (it[i].window.k) {
            cJSON *w = cJSON_AddObjectToObject(e, "window_auto");
            cache_policy_name(&it[i].asked, name, sizeof name);
            cJSON_AddStringToObject(w, "asked", name);
            cJSON_AddNumberToObject(w, "window_k", it[i].window.k);
            cJSON_AddNumberToObject(w, "capacity_rows", (double)it[i].window_rows);
            cJSON_AddNumberToObject(w, "tokens", (double)it[i].window_tokens);
            cJSON_AddStringToObject(w, "chosen_from", it[i].window.from);
        }
        cache_layout_name(&it[i].config.layout, layout, sizeof layout);
        cJSON_AddStringToObject(e, "layout", layout);
        cJSON_AddStringToObject(e, "volume_source", it[i].config.vol.source);
        cJSON_AddStringToObject(e, "predictor_source", it[i].config.predictor_source);
        cJSON_AddItemToObject(e, "prediction", prediction_json(&it[i].prediction));
        cJSON_AddItemToArray(list, e);
    }
    return root;
}

static double number_or_nan(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int predict_report_read_first(const char *path, struct predict_first *out, char *err, size_t errlen)
{
    *out = (struct predict_first){.predicted = false, .window_k = NAN, .capacity_rows = NAN};
    for (int k = 0; k < RUN_TOTAL; k++)
        out->part_ms[k] = NAN;
    cJSON *root = read_json_file(path);
    if (!root)
        return err_set(err, errlen, "%s: cannot read it as JSON (expected flashbed predict's predict.json)", path);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "predictions"), 0);
    if (!first) {
        cJSON_Delete(root);
        return err_set(err, errlen, "%s: no \"predictions\" entry (expected flashbed predict's predict.json)", path);
    }
    const cJSON *window = cJSON_GetObjectItemCaseSensitive(first, "window_auto");
    out->window_k = number_or_nan(window, "window_k");
    out->capacity_rows = number_or_nan(window, "capacity_rows");
    /* Any "prediction" member counts as predicted, its numbers NAN where
     * missing, as reproduce's tables have always read it. */
    const cJSON *pred = cJSON_GetObjectItemCaseSensitive(first, "prediction");
    out->predicted = pred != NULL;
    for (int k = 0; pred && k < RUN_TOTAL; k++)
        out->part_ms[k] = number_or_nan(pred, run_part_keys[k]);
    cJSON_Delete(root);
    return 0;
}
