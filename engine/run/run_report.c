/* flashbed run's result files (engine/run/run_report.h). */
#include "engine/run/run_report.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cache/cache.h"
#include "common/atomic_file.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/gnuplot.h"
#include "common/strbuf.h"
#include "engine/compute/activation.h"
#include "cache/transposed.h"
#include "engine/model/dtype.h"
#include "engine/model/ffn_transposed.h"
#include "engine/model/model_format.h"
#include "engine/predictor/predictor.h"
#include "io/io_fault.h"

/* The keys of run.json's token objects and summaries, with their place in
 * struct token_row: one table for the JSON, the means and the Markdown. */
static const struct {
    const char *key;
    size_t off;
} row_keys[] = {
#define K(k) {#k, offsetof(struct token_row, k)}
    K(total_ms), K(io_ms), K(mem_ms), K(compute_ms), K(ffn_ms), K(predictor_ms), K(attention_ms),
    K(bytes_read), K(reads), K(io_requests), K(dram_bytes_read), K(rows_inserted), K(rows_deleted), K(cache_rows),
    K(needed), K(overflow_rows), K(window_shrinks), K(check_ms), K(active), K(missed), K(extra),
    /* a device whose memory is not the host's only (run_report_extra.device): last */
    K(h2d_bytes), K(row_moves), K(d2h_bytes), K(launches), K(syncs), K(read_ms), K(h2d_ms),
    /* on the host with read-ahead only (read_ms too) */
    K(layers_ahead),
    /* the transposed layout only: last */
    K(chan_bytes), K(chan_reads), K(down_bytes), K(down_reads), K(kept_channels),
#undef K
};
#define N_STREAM_KEYS 5
#define N_KEYS (sizeof row_keys / sizeof row_keys[0])
#define N_HOST_KEYS (N_KEYS - N_STREAM_KEYS - 8) /* the keys of every run: a cpu run's files stay as they were */
#define N_DEVICE_KEYS (N_KEYS - N_STREAM_KEYS - 1)

/* Whether row key k is in x's files: every run's, a device's, and on the
 * host with read-ahead the reads' own time (io_ms the exposed part of it)
 * and the layers that went ahead. */
static bool key_shown(size_t k, const struct run_report_extra *x)
{
    if (k >= N_KEYS - N_STREAM_KEYS)
        return x->transposed;
    if (k < N_HOST_KEYS || (x->device && k < N_DEVICE_KEYS))
        return true;
    return x->read_ahead && (k == N_DEVICE_KEYS || row_keys[k].off == offsetof(struct token_row, read_ms));
}

static double *row_value(struct token_row *r, size_t k)
{
    return (double *)((char *)r + row_keys[k].off);
}

/* Means of tokens [lo, hi) that pass the filter (-1: all, 0: prompt, 1: generated). */
static void mean_rows(struct token_row *rows, int lo, int hi, int generated, struct token_row *out, int *count)
{
    memset(out, 0, sizeof *out);
    int n = 0;
    for (int i = lo; i < hi; i++) {
        if (generated >= 0 && rows[i].generated != (generated == 1))
            continue;
        for (size_t k = 0; k < N_KEYS; k++)
            *row_value(out, k) += *row_value(&rows[i], k);
        n++;
    }
    for (size_t k = 0; k < N_KEYS && n; k++)
        *row_value(out, k) /= n;
    *count = n;
}

static cJSON *row_json(struct token_row *r, const struct run_report_extra *x)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t k = 0; k < N_KEYS; k++)
        if (key_shown(k, x))
            cJSON_AddNumberToObject(o, row_keys[k].key, *row_value(r, k));
    return o;
}

static uint64_t peak_rss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
#ifdef __APPLE__
    return (uint64_t)ru.ru_maxrss;
#else
    return (uint64_t)ru.ru_maxrss * 1024;
#endif
}

/* The first tokens, summarized apart as the cold start (--cold, at most every token). */
static int cold_tokens(const struct run_outcome *r, const struct run_report_extra *x)
{
    return x->cold < r->n_rows ? x->cold : r->n_rows;
}

static const char *source_name(const struct run_setup *p)
{
    return select_label(&p->cfg.select);
}

/* What chose the neurons, what it held and cost, and with --check how its
 * choice compares with the true activations (steady-state means). */
static void chooser_json(cJSON *sum, const struct model *m, const struct run_setup *p, const struct run_report_extra *x,
                         const struct token_row *mean, const struct run_outcome *r)
{
    double all = (double)m->shape.n_layers * m->shape.d_ff;
    cJSON_AddStringToObject(sum, "active_source", source_name(p));
    cJSON_AddNumberToObject(sum, "predictor_dram_bytes", (double)x->predictor_bytes);
    cJSON_AddNumberToObject(sum, "predictor_madds_per_token", (double)x->predictor_madds);
    const struct neuron_source_ops *src = select_source(&p->cfg.select);
    if (src->report)
        src->report(&p->cfg.select, m->shape.n_layers, sum);
    cJSON_AddBoolToObject(sum, "check", p->cfg.neuron.check);
    if (!p->cfg.neuron.check)
        return;
    cJSON_AddNumberToObject(sum, "true_density", all > 0 ? mean->active / all : 0);
    cJSON_AddNumberToObject(sum, "recall", mean->active > 0 ? 1 - mean->missed / mean->active : 1);
    double missed = 0, with_miss = 0; /* every token, cold ones included: a miss anywhere is an error */
    for (int i = 0; i < r->n_rows; i++) {
        missed += r->rows[i].missed;
        with_miss += r->rows[i].missed > 0;
    }
    cJSON_AddNumberToObject(sum, "missed_all_tokens", missed);
    cJSON_AddNumberToObject(sum, "tokens_with_misses", with_miss);
}

/* provenance.policy.device of a flash run on a device whose memory is not
 * the host's: what the plan holds there and beside it in DRAM, and which
 * budget sized the caches. */
static void device_json(cJSON *pol, const struct run_setup *p)
{
    const struct run_plan_out *pl = &p->plan;
    cJSON *d = cJSON_AddObjectToObject(pol, "device");
    cJSON_AddStringToObject(d, "caches_sized_by", pl->device_sized ? "device budget" : p->budget ? "DRAM budget" : "no budget");
    cJSON_AddNumberToObject(d, "budget_bytes", (double)p->device_budget);
    cJSON_AddNumberToObject(d, "bytes_held", (double)pl->device_bytes);
    cJSON_AddNumberToObject(d, "weights_kv_bytes", (double)pl->device_fixed_bytes);
    cJSON_AddNumberToObject(d, "staging_bytes", (double)pl->device_stage_bytes);
    cJSON_AddNumberToObject(d, "cache_row_bytes", (double)pl->device_row_bytes);
    cJSON_AddNumberToObject(d, "pinned_bytes", (double)pl->pinned_bytes);
    cJSON_AddNumberToObject(d, "host_bytes_held", (double)pl->host_bytes);
    cJSON_AddNumberToObject(d, "pinned_ring_slots", RUN_PINNED_RING_SLOTS);
}

/* provenance.policy of a flash run: the policy run and the one asked for,
 * by their names, and what the plan gave it. */
static void policy_json(cJSON *prov, const struct model *m, const struct run_setup *p)
{
    char name[POLICY_NAME_MAX], layout[LAYOUT_NAME_MAX];
    cJSON *pol = cJSON_AddObjectToObject(prov, "policy");
    cache_policy_name(&p->plan.policy, name, sizeof name);
    cJSON_AddStringToObject(pol, "policy", name);
    cache_policy_name(&p->policy, name, sizeof name);
    cJSON_AddStringToObject(pol, "policy_requested", name);
    cache_layout_name(&p->layout, layout, sizeof layout);
    cJSON_AddStringToObject(pol, "layout", layout);
    if (p->plan.window_k)
        cJSON_AddNumberToObject(pol, "window_k", p->plan.window_k);
    if (p->plan.window_from)
        cJSON_AddStringToObject(pol, "window_chosen_from", p->plan.window_from);
    if (p->have_profile)
        cJSON_AddStringToObject(pol, "profile", p->profile_desc);
    cJSON_AddNumberToObject(pol, "capacity_rows_per_layer", (double)p->plan.capacity_rows);
    cJSON_AddNumberToObject(pol, "ffn_cache_bytes", (double)p->plan.ffn_cache_bytes);
    cJSON *lr = cJSON_AddArrayToObject(pol, "cache_rows_by_layer");
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        cJSON_AddItemToArray(lr, cJSON_CreateNumber(p->plan.layer_rows[l]));
    cJSON_AddNumberToObject(pol, "staging_rows", p->plan.staging_rows);
    cJSON_AddNumberToObject(pol, "bounce_rows", p->plan.bounce_rows);
    if (p->device)
        device_json(pol, p);
    cJSON_AddStringToObject(pol, "io_engine", p->cfg.stream.io_engine);
    cJSON_AddNumberToObject(pol, "io_threads", p->cfg.stream.io_threads);
    cJSON_AddNumberToObject(pol, "iodepth", p->cfg.stream.iodepth);
    cJSON_AddBoolToObject(pol, "read_ahead", ffn_flash_reads_ahead(&p->cfg, p->device));
}

/* --io-engine auto: each candidate's throughput on batches like the run's. */
static void reader_choice_json(cJSON *pol, const struct run_reader_choice *c)
{
    cJSON *o = cJSON_AddObjectToObject(pol, "io_engine_choice");
    cJSON_AddNumberToObject(o, "read_bytes", (double)c->read_bytes);
    cJSON_AddNumberToObject(o, "batch_reads", c->batch_reads);
    cJSON_AddNumberToObject(o, "rounds", RUN_READER_ROUNDS);
    cJSON *arr = cJSON_AddArrayToObject(o, "candidates");
    for (size_t i = 0; i < c->n; i++) {
        cJSON *k = cJSON_CreateObject();
        cJSON_AddStringToObject(k, "io_engine", c->c[i].engine);
        cJSON_AddNumberToObject(k, "io_threads", c->c[i].threads);
        cJSON_AddNumberToObject(k, "iodepth", c->c[i].iodepth);
        cJSON_AddNumberToObject(k, "bytes_per_second", c->c[i].bytes_per_s);
        cJSON_AddBoolToObject(k, "chosen", i == c->best);
        cJSON_AddItemToArray(arr, k);
    }
}

/* The summary's policy of a flash run: the policy run and its cache. */
static void summary_policy_json(cJSON *sum, const struct model *m, const struct run_setup *p,
                                const struct run_report_extra *x)
{
    char name[POLICY_NAME_MAX], layout[LAYOUT_NAME_MAX];
    cache_policy_name(&p->plan.policy, name, sizeof name);
    cJSON_AddStringToObject(sum, "policy", name);
    cache_layout_name(&p->layout, layout, sizeof layout);
    cJSON_AddStringToObject(sum, "layout", layout);
    if (p->plan.window_k)
        cJSON_AddNumberToObject(sum, "window_k", p->plan.window_k);
    cJSON_AddNumberToObject(sum, "ffn_cache_bytes", (double)p->plan.ffn_cache_bytes);
    cJSON_AddNumberToObject(sum, "capacity_rows_per_layer", (double)p->plan.capacity_rows);
    /* the cache at the stride it holds rows in (ffn.bin's, padded for
     * direct I/O): replay --row-stride S --dram-budget B reads what this
     * run read, bytes included */
    cJSON_AddNumberToObject(sum, "row_stride", (double)m->bundle_stride);
    cJSON_AddNumberToObject(sum, "ffn_cache_stride_bytes",
                            (double)p->plan.capacity_rows * m->shape.n_layers * (double)m->bundle_stride);
    /* the block a split read widens to: replay --read-align A counts it */
    cJSON_AddNumberToObject(sum, "read_align", (double)x->read_align);
}

/* run.json: provenance, per-token rows, and the summaries (steady state:
 * every token after the cold ones; also cold, prompt and generated apart). */
/* run.json's tokens: a row per computed position. */
static void tokens_json(cJSON *root, const struct run_outcome *r, const struct run_report_extra *x)
{
    cJSON *toks = cJSON_AddArrayToObject(root, "tokens");
    for (int i = 0; i < r->n_rows; i++) {
        cJSON *t = row_json(&r->rows[i], x);
        cJSON_AddNumberToObject(t, "index", i);
        cJSON_AddNumberToObject(t, "id", r->rows[i].id);
        cJSON_AddStringToObject(t, "phase", r->rows[i].generated ? "generated" : "prompt");
        cJSON_AddItemToArray(toks, t);
    }
}

/* Where the flash FFN's memory is on a device. */
static void device_memory_json(cJSON *root, const struct run_report_extra *x)
{
    cJSON *dm = cJSON_AddObjectToObject(root, "device_memory");
    cJSON_AddNumberToObject(dm, "device_bytes", (double)x->device_bytes);
    cJSON_AddNumberToObject(dm, "ffn_dram_bytes", (double)x->held_bytes);
    cJSON_AddBoolToObject(dm, "staging_pinned", x->staging_pinned);
}

/* Input sparsity's two streams: the shares kept, each cache's shape and
 * capacity (the plan's cache_transposed_capacity split). */
static void transposed_json(cJSON *sum, const struct model *m, const struct run_setup *p, const struct token_row *mean)
{
    const struct model_shape *s = &m->shape;
    struct transposed_geometry g;
    char err[256];
    if (model_transposed_geometry(m, &g, err, sizeof err) != 0)
        memset(&g, 0, sizeof g); /* the run opened ffn_t.bin of this geometry */
    double layers = s->n_layers ? s->n_layers : 1;
    cJSON *o = cJSON_AddObjectToObject(sum, "transposed");
    cJSON_AddStringToObject(o, "file", MODEL_FFN_T_FILE);
    cJSON_AddNumberToObject(o, "input_density", mean->kept_channels / (layers * s->d_model));
    cJSON_AddNumberToObject(o, "down_density", (mean->needed - mean->kept_channels) / (layers * s->d_ff));
    cJSON_AddNumberToObject(o, "chan_row_bytes", (double)g.chan.row_bytes);
    cJSON_AddNumberToObject(o, "down_row_bytes", (double)g.down.row_bytes);
    cJSON_AddNumberToObject(o, "cache_budget_bytes", (double)p->plan.cache_budget);
    cJSON_AddNumberToObject(o, "chan_capacity_rows_per_layer", (double)p->plan.capacity_rows);
    cJSON_AddNumberToObject(o, "down_capacity_rows_per_layer", (double)p->plan.down_capacity_rows);
    cJSON_AddNumberToObject(o, "chan_staging_rows", p->plan.staging_rows);
    cJSON_AddNumberToObject(o, "down_staging_rows", p->plan.down_staging_rows);
}

/* What share of the FFN the steady state chose: its neurons, or input
 * sparsity's channels and rows of down. */
static void density_json(cJSON *sum, const struct model *m, const struct run_setup *p, const struct run_report_extra *x,
                         const struct token_row *mean)
{
    if (x->transposed)
        transposed_json(sum, m, p, mean);
    else if (p->policy.ops && !p->policy.ops->reads_whole_layers) /* a density of what was chosen */
        cJSON_AddNumberToObject(sum, "density", mean->needed / ((double)m->shape.n_layers * m->shape.d_ff));
    if (x->suggested_from > 0) { /* the oracle's threshold on values with no exact zeros */
        cJSON *o = cJSON_AddObjectToObject(sum, "threshold_suggestion");
        cJSON_AddNumberToObject(o, "threshold", x->suggested_threshold);
        cJSON_AddNumberToObject(o, "share_at_or_below", 0.5);
        cJSON_AddNumberToObject(o, "values", (double)x->suggested_from);
    }
}

/* How the run ended: stop_reason, status (complete, interrupted, failed:
 * the tokens before the failure are results all the same) and the error;
 * the reads tried again over every token, and what the fault engine
 * injected. */
static void outcome_json(cJSON *sum, const struct run_outcome *r, const struct run_setup *p)
{
    cJSON_AddStringToObject(sum, "stop_reason", r->stop);
    cJSON_AddStringToObject(sum, "status", r->error[0] ? "failed" : !strcmp(r->stop, "interrupted") ? "interrupted"
                                                                                                   : "complete");
    if (r->error[0])
        cJSON_AddStringToObject(sum, "error", r->error);
    if (p->dense)
        return;
    double retries = 0;
    for (int i = 0; i < r->n_rows; i++)
        retries += r->rows[i].read_retries;
    cJSON_AddNumberToObject(sum, "read_retries", retries);
    if (!p->cfg.stream.fault)
        return;
    struct io_fault_counts c;
    io_fault_counts(p->cfg.stream.fault, &c);
    cJSON *f = cJSON_AddObjectToObject(sum, "faults");
    cJSON_AddNumberToObject(f, "seed", (double)p->cfg.stream.fault->spec.seed);
    cJSON_AddNumberToObject(f, "rules", p->cfg.stream.fault->spec.n_rules);
    cJSON_AddNumberToObject(f, "attempts", (double)c.attempts);
    for (int k = 0; k < IO_FAULT_KINDS; k++)
        cJSON_AddNumberToObject(f, io_fault_kind_name((enum io_fault_kind)k), (double)c.injected[k]);
}

/* Whether the reads were checked (--verify, a model with checksums), and
 * what the checks found and cost: every result says it (issue 34). */
static void verify_json(cJSON *sum, const struct model *m, const struct run_outcome *r, const struct run_setup *p)
{
    cJSON *v = cJSON_AddObjectToObject(sum, "verify");
    cJSON_AddStringToObject(v, "requested", p->cfg.stream.verify ? "on" : "off");
    cJSON_AddBoolToObject(v, "model_has_checksums", m->checked);
    bool teal = !p->dense && select_source(&p->cfg.select)->reads_channels; /* reads ffn_t.bin, checked by ffn_t.crc32c */
    if (teal)
        cJSON_AddBoolToObject(v, "ffn_t_has_checksums", p->ffn_t_checked);
    cJSON_AddStringToObject(v, "reads", !p->cfg.stream.verify                 ? "not checked (--verify off)"
                                        : teal && !p->ffn_t_checked    ? "not checked (ffn_t.bin has no checksums)"
                                        : teal                         ? "checked against ffn_t.crc32c"
                                        : !m->checked                  ? "not checked (the model has no checksums)"
                                                                       : "checked against ffn.crc32c");
    double rows = 0, retries = 0, ms = 0;
    for (int i = 0; i < r->n_rows; i++) {
        rows += r->rows[i].rows_verified;
        retries += r->rows[i].verify_retries;
        ms += r->rows[i].verify_ms;
    }
    cJSON_AddNumberToObject(v, "rows_verified", rows);
    cJSON_AddNumberToObject(v, "verify_retries", retries);
    cJSON_AddNumberToObject(v, "verify_ms_per_token", r->n_rows ? ms / r->n_rows : 0);
}

/* The model: its name, folder, dtype and dimensions (what predict --compare
 * checks the shape it prices against). */
static void model_json(cJSON *prov, const struct model *m)
{
    cJSON_AddStringToObject(prov, "model", m->shape.name);
    cJSON_AddStringToObject(prov, "model_dir", m->dir);
    cJSON_AddStringToObject(prov, "dtype", wtype_name(m->dtype));
    cJSON *shape = cJSON_AddObjectToObject(prov, "shape");
    cJSON_AddNumberToObject(shape, "n_layers", m->shape.n_layers);
    cJSON_AddNumberToObject(shape, "d_model", m->shape.d_model);
    cJSON_AddNumberToObject(shape, "d_ff", m->shape.d_ff);
}

static cJSON *run_json(const struct model *m, const struct run_setup *p, const struct run_outcome *r,
                       const struct run_report_extra *x, cJSON *prov)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "provenance", prov);
    model_json(prov, m);
    cJSON_AddStringToObject(prov, "mode", x->mode);
    cJSON_AddStringToObject(prov, "active", p->dense ? "all (dense)" : p->active_desc);
    cJSON_AddNumberToObject(prov, "dram_budget_bytes", (double)p->budget);
    if (p->device) /* a cpu run's files keep their keys */
        cJSON_AddNumberToObject(prov, "device_budget_bytes", (double)p->device_budget);
    cJSON_AddNumberToObject(prov, "model_bytes", (double)p->model_bytes);
    cJSON_AddBoolToObject(prov, "page_cache_bypassed", !p->dense && p->cfg.stream.direct);
    if (!p->dense)
        policy_json(prov, m, p);
    if (!p->dense && x->reader)
        reader_choice_json(cJSON_GetObjectItemCaseSensitive(prov, "policy"), x->reader);
    tokens_json(root, r, x);
    int cold = cold_tokens(r, x), n;
    struct token_row mean;
    mean_rows(r->rows, cold, r->n_rows, -1, &mean, &n);
    cJSON *sum = row_json(&mean, x);
    cJSON_AddItemToObject(root, "summary", sum);
    cJSON_AddNumberToObject(sum, "tokens", n);
    cJSON_AddNumberToObject(sum, "cold_tokens_excluded", cold);
    if (!p->dense)
        summary_policy_json(sum, m, p, x);
    density_json(sum, m, p, x, &mean);
    cJSON_AddNumberToObject(sum, "peak_rss_bytes", (double)peak_rss_bytes());
    cJSON_AddNumberToObject(sum, "engine_dram_bytes", (double)(m->dram_bytes + (p->dense ? m->ffn_bytes : 0) + p->kv_bytes + x->held_bytes));
    cJSON_AddNumberToObject(sum, "oracle_dram_bytes", (double)x->oracle_bytes);
    if (x->device && !p->dense)
        device_memory_json(root, x);
    if (!p->dense)
        chooser_json(sum, m, p, x, &mean, r);
    cJSON_AddNumberToObject(sum, "tokens_per_second", mean.total_ms > 0 ? 1e3 / mean.total_ms : 0);
    /* with a device or read-ahead io_ms is the exposed part only */
    double read_ms = x->device || x->read_ahead ? mean.read_ms : mean.io_ms;
    cJSON_AddNumberToObject(sum, "read_throughput_bytes",
                            read_ms > 0 ? (mean.bytes_read + mean.dram_bytes_read) / (read_ms * 1e-3) : 0);
    cJSON_AddNumberToObject(sum, "mean_read_bytes", mean.reads > 0 ? mean.bytes_read / mean.reads : 0);
    cJSON_AddNumberToObject(sum, "prompt_tokens", r->n_prompt);
    cJSON_AddNumberToObject(sum, "generated_tokens", r->n_gen);
    outcome_json(sum, r, p);
    if (!p->dense)
        verify_json(sum, m, r, p);
    const char *names[] = {"cold", "prompt", "generated"};
    for (int k = 0; k < 3; k++) {
        if (k == 0)
            mean_rows(r->rows, 0, cold, -1, &mean, &n);
        else
            mean_rows(r->rows, cold, r->n_rows, k == 2, &mean, &n);
        cJSON *part = row_json(&mean, x);
        cJSON_AddNumberToObject(part, "tokens", n);
        cJSON_AddItemToObject(root, names[k], part);
    }
    return root;
}

/* Every neuron active under the oracle's threshold: why (no exact zeros),
 * what it costs (and a trace recorded so holds every neuron), and a
 * threshold from the run's own values that leaves about half active. */
static void all_active_lines(struct strbuf *t, const struct model *m, const struct run_setup *p, const cJSON *suggest)
{
    const char *value = m->arch.glu ? "|act(gate)·up|" : "|act(up)|";
    strbuf_add(t, "- **every neuron is active** at --threshold %g: a %s FFN has no exact zeros, so each token needs "
                  "the whole FFN and no policy saves a read%s\n",
               p->cfg.neuron.threshold, m->shape.ffn_activation,
               p->cfg.record ? "; the recorded trace holds every neuron of every token" : "");
    if (!suggest)
        return;
    strbuf_add(t, "- suggested: --threshold %.4g, the median %s of %.0f values this run computed (its first tokens, "
                  "every layer): about half the neurons active; a higher quantile gives a sparser run. flashbed "
                  "sparsify calibrate chooses thresholds on a calibration text (--active gate-cal, teal)\n",
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(suggest, "threshold")), value,
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(suggest, "values")));
}

/* The share of FFN neurons the steady-state tokens needed; for a SiLU or
 * GELU FFN under the oracle that share is set by --threshold, and a threshold
 * that makes every neuron active leaves nothing for the policy to save. */
static void density_line(struct strbuf *t, const struct model *m, const struct run_setup *p, const cJSON *sum)
{
    double needed = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "needed"));
    if (p->policy.ops && p->policy.ops->reads_whole_layers) {
        char name[POLICY_NAME_MAX];
        cache_policy_name(&p->plan.policy, name, sizeof name);
        strbuf_add(t, "- density: not measured (policy %s computes every neuron)\n", name);
        return;
    }
    double all = (double)m->shape.n_layers * m->shape.d_ff;
    double density = all > 0 ? needed / all : 0;
    /* the ReLU family is sparse at exactly zero; the others' density is the threshold's */
    bool thresholded = select_source(&p->cfg.select)->truth && !activation_sparse(m->arch.act);
    strbuf_add(t, "- density: %.2f%% of the FFN's neurons needed per token (steady state)", 100 * density);
    if (thresholded)
        strbuf_add(t, ", from --threshold %g on %s", p->cfg.neuron.threshold, m->arch.glu ? "|act(gate)·up|" : "|act(up)|");
    strbuf_add(t, "\n");
    if (thresholded && density >= 0.999)
        all_active_lines(t, m, p, cJSON_GetObjectItemCaseSensitive(sum, "threshold_suggestion"));
}

/* The predictor's (or gate's) share of DRAM and time, and --check's comparison. */
static void chooser_lines(struct strbuf *t, const struct run_setup *p, const cJSON *sum)
{
#define NUM(k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, k))
    const struct neuron_source_ops *src = select_source(&p->cfg.select);
    if (src->deployable)
        strbuf_add(t, "- %s: %.2f MB held in DRAM (inside the budget and the engine's DRAM), %.2f M multiply-adds "
                      "per token, %.3f ms per token = %.2f%% of the token's time\n",
                   src->held_as, NUM("predictor_dram_bytes") / 1e6,
                   NUM("predictor_madds_per_token") / 1e6, NUM("predictor_ms"),
                   NUM("total_ms") > 0 ? 100 * NUM("predictor_ms") / NUM("total_ms") : 0);
    if (p->cfg.neuron.check)
        strbuf_add(t, "- check (true activations computed beside, %.3f ms per token, not counted as the predictor's): "
                      "%.2f%% truly active per token; %.1f active neurons missed per token (recall %.4f), %.1f read "
                      "without need; %.0f tokens with a miss, %.0f misses in all\n",
                   NUM("check_ms"), 100 * NUM("true_density"), NUM("missed"), NUM("recall"), NUM("extra"),
                   NUM("tokens_with_misses"), NUM("missed_all_tokens"));
#undef NUM
}

/* How much of the reads' own time (read_ms) the token did not wait for
 * (io_ms, the exposed part): what overlapped `overlapped`, the wait
 * counted from `waited_after` ("" or " after ..."). */
static void overlap_sentence(struct strbuf *t, const cJSON *sum, const char *waited_after, const char *overlapped)
{
    double exposed = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "io_ms"));
    double reads = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "read_ms"));
    double hidden = reads > exposed ? reads - exposed : 0;
    strbuf_add(t, "The reads took %.2f ms per token (from their hand-off to the reader threads to their last "
                  "completion); the token waited %.2f ms for them%s (its I/O, exposed), so %.2f ms (%.0f%%) "
                  "overlapped %s.\n",
               reads, exposed, waited_after, hidden, reads > 0 ? 100 * hidden / reads : 0, overlapped);
}

/* A device run: what crossed to the device, from which staging, and how
 * much of the reads the device's work hid. */
static void device_lines(struct strbuf *t, const cJSON *root, const cJSON *sum)
{
#define NUM(o, k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k))
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device_memory");
    strbuf_add(t, "Uploaded to the device: %.3f MB per token (rows read and the row moves lists), in %.3f ms of the "
                  "device's time from %s staging; %.1f rows moved there per token; %.3f MB downloaded, %.1f launches "
                  "and %.1f synchronisations per token.\n",
               NUM(sum, "h2d_bytes") / 1e6, NUM(sum, "h2d_ms"),
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "staging_pinned")) ? "pinned" : "ordinary (unpinned)",
               NUM(sum, "row_moves"), NUM(sum, "d2h_bytes") / 1e6, NUM(sum, "launches"), NUM(sum, "syncs"));
    /* what the device holds is the plan's "- device memory" line above */
    overlap_sentence(t, sum, " after the device had finished its work", "the device's work");
#undef NUM
}

/* The flash reader, and how --io-engine auto chose it (run.json's
 * provenance.policy.io_engine_choice). */
static void reader_line(struct strbuf *t, const struct run_setup *p, const cJSON *root)
{
#define GET(o, k) cJSON_GetObjectItemCaseSensitive(o, k)
#define NUM(o, k) cJSON_GetNumberValue(GET(o, k))
    strbuf_add(t, "- reads: %s, %u threads x %u in flight", p->cfg.stream.io_engine, p->cfg.stream.io_threads, p->cfg.stream.iodepth);
    const cJSON *c = GET(GET(GET(root, "provenance"), "policy"), "io_engine_choice"), *k;
    if (c) {
        strbuf_add(t, ", the fastest on batches like this run's (%.0f reads of %.0f bytes from ffn.bin, median of %.0f):",
                   NUM(c, "batch_reads"), NUM(c, "read_bytes"), NUM(c, "rounds"));
        const char *sep = "";
        cJSON_ArrayForEach(k, GET(c, "candidates")) {
            strbuf_add(t, "%s %s %.0f x %.0f %.2f GB/s", sep, cJSON_GetStringValue(GET(k, "io_engine")),
                       NUM(k, "io_threads"), NUM(k, "iodepth"), NUM(k, "bytes_per_second") / 1e9);
            sep = ";";
        }
    }
    strbuf_add(t, "\n");
#undef NUM
#undef GET
}

/* Read-ahead on the host: how much of the reads the compute hid. */
static void ahead_lines(struct strbuf *t, const cJSON *sum, uint32_t n_layers)
{
    strbuf_add(t, "Read-ahead: %.1f of %u layers per token had their reads issued while the layer before them "
                  "computed. ",
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "layers_ahead")), n_layers);
    overlap_sentence(t, sum, "", "compute");
}

/* On a device whose memory is not the host's: what the run holds there,
 * which budget sized the caches, and the host's pinned part. */
static void device_line(struct strbuf *t, const struct model *m, const struct run_setup *p)
{
    const struct run_plan_out *pl = &p->plan;
    char by[96] = "no budget (the policy's default rows)";
    if (p->device_budget)
        snprintf(by, sizeof by, "the device budget of %.2f MB", (double)p->device_budget / 1e6);
    else if (p->budget)
        snprintf(by, sizeof by, "the DRAM budget (no device budget)");
    if (p->dense) {
        strbuf_add(t, "- device memory: the whole model and the KV cache, %.2f MB (%s)\n",
                   (double)(m->dram_bytes + m->ffn_bytes + p->kv_bytes) / 1e6,
                   p->device_budget ? by : "no device budget");
        return;
    }
    strbuf_add(t, "- device memory: %.2f MB held (weights and KV cache %.2f MB, neuron caches %.2f MB, staging %.2f MB), "
                  "the caches sized by %s; beside it in DRAM %.2f MB, of it %.2f MB pinned\n",
               (double)pl->device_bytes / 1e6, (double)pl->device_fixed_bytes / 1e6,
               (double)(pl->device_bytes - pl->device_fixed_bytes - pl->device_stage_bytes) / 1e6,
               (double)pl->device_stage_bytes / 1e6, by, (double)pl->host_bytes / 1e6, (double)pl->pinned_bytes / 1e6);
}

/* Input sparsity's shares kept and each stream's reads (steady state). */
static void transposed_line(struct strbuf *t, const cJSON *sum)
{
#define NUM(o, k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k))
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(sum, "transposed");
    strbuf_add(t, "- density: %.2f%% of input channels and %.2f%% of rows of down kept per token (steady state)\n",
               100 * NUM(o, "input_density"), 100 * NUM(o, "down_density"));
    strbuf_add(t, "- streams (ffn_t.bin): channel bundles %.3f MB in %.0f reads, down rows %.3f MB in %.0f reads per "
                  "token; caches of %.0f and %.0f rows per layer\n", NUM(sum, "chan_bytes") / 1e6,
               NUM(sum, "chan_reads"), NUM(sum, "down_bytes") / 1e6, NUM(sum, "down_reads"),
               NUM(o, "chan_capacity_rows_per_layer"), NUM(o, "down_capacity_rows_per_layer"));
#undef NUM
}

/* A failed run's error, the reads tried again, what the fault engine
 * injected (run.json's summary: outcome_json). */
static void outcome_lines(struct strbuf *t, const cJSON *sum)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sum, "verify");
    if (v)
        strbuf_add(t, "- reads: %s (%.0f bundles, %.0f read again, %.3f ms per token)\n",
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "reads")),
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "rows_verified")),
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "verify_retries")),
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "verify_ms_per_token")));
    const char *error = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sum, "error"));
    if (error)
        strbuf_add(t, "- **failed**: %s; the figures cover the tokens before it and the failed one\n", error);
    double retries = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "read_retries"));
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(sum, "faults");
    if (retries > 0 || f)
        strbuf_add(t, "- reads tried again after a failed or short read: %.0f\n", retries);
    if (f)
        strbuf_add(t, "- faults injected (--io-engine fault, seed %.0f): %.0f EIO, %.0f short, %.0f delayed in %.0f "
                   "attempts\n", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(f, "seed")),
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(f, "eio")),
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(f, "short")),
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(f, "delay")),
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(f, "attempts")));
}

/* run.md's title and what ran: the command, the commit, the neurons. */
static void title_lines(struct strbuf *t, const struct model *m, const struct run_setup *p, const cJSON *prov)
{
    char name[POLICY_NAME_MAX], layout[LAYOUT_NAME_MAX];
    cache_policy_name(&p->plan.policy, name, sizeof name);
    cache_layout_name(&p->layout, layout, sizeof layout);
    if (p->dense)
        strbuf_add(t, "# flashbed run: %s (%s), dense\n\n", m->shape.name, wtype_name(m->dtype));
    else
        strbuf_add(t, "# flashbed run: %s (%s), policy %s%s, layout %s\n\n", m->shape.name, wtype_name(m->dtype),
                   name, p->plan.window_from ? " (window:auto)" : "", layout);
    strbuf_add(t, "- command: `%s`\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prov, "command_line")));
    strbuf_add(t, "- commit: %s, date: %s\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prov, "git_commit")),
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prov, "date")));
    strbuf_add(t, "- neurons: %s\n", p->dense ? "all (dense, everything in DRAM)" : p->active_desc);
    const char *backend = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prov, "backend"));
    const char *device = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prov, "device"));
    if (backend && strcmp(backend, "cpu") != 0) /* issue 47: only run.json named the device */
        strbuf_add(t, "- backend: %s on %s%s\n", backend, device ? device : "an unnamed device",
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(prov, "emulated"))
                       ? " (emulated: a CPU device, its times are not a GPU's)"
                       : "");
    if (!p->dense && m->has_ffn_matrices) /* a GGUF's blocks: the flash FFN is not what dense computes on */
        strbuf_add(t, "- FFN on flash: %s bundles of ffn.bin, decoded from the matrices the source stored "
                      "(ffn_matrices.bin, what dense computes on): tokens may part from dense's at near ties\n",
                   wtype_name(m->dtype));
}

static char *run_markdown(const struct model *m, const struct run_setup *p, const cJSON *root)
{
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(root, "summary");
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(root, "provenance");
#define NUM(o, k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k))
    struct strbuf t = {0};
    title_lines(&t, m, p, prov);
    if (p->have_profile)
        strbuf_add(&t, "- profile: %s\n", p->profile_desc);
    if (p->plan.window_from)
        strbuf_add(&t, "- window:auto chose K = %u from %s\n", p->plan.window_k, p->plan.window_from);
    if (!p->dense && p->layout.ops->transposed)
        transposed_line(&t, sum);
    else if (!p->dense) {
        density_line(&t, m, p, sum);
        chooser_lines(&t, p, sum);
    }
    if (p->device)
        device_line(&t, m, p);
    if (!p->dense)
        reader_line(&t, p, root);
    outcome_lines(&t, sum);
    strbuf_add(&t, "- page cache %s; DRAM budget %s\n\n", !p->dense && p->cfg.stream.direct ? "bypassed (direct I/O)" : "used",
               p->budget ? "set" : "none");
    bool steady = NUM(sum, "tokens") > 0;
    if (steady)
        strbuf_add(&t, "Steady state (%.0f tokens after %.0f cold ones), per token — as the paper's Table 3:\n\n",
                   NUM(sum, "tokens"), NUM(sum, "cold_tokens_excluded"));
    else /* issue 47: "0 tokens after 5 cold ones" then a throughput of 0 */
        strbuf_add(&t, "No steady state: all %.0f tokens were cold ones (--cold); run more tokens (-n) or lower "
                       "--cold for steady-state figures. Per token:\n\n",
                   NUM(sum, "cold_tokens_excluded"));
    strbuf_add(&t, "| | I/O ms | mem ms | compute ms | (FFN ms) | (predictor ms) | total ms | MB read | reads | rows in | rows out | cache rows |\n"
                   "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    const char *parts[] = {"summary", "cold", "prompt", "generated"};
    const char *labels[] = {"steady state", "cold tokens", "prompt (steady)", "generated (steady)"};
    for (int k = 0; k < 4; k++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, parts[k]);
        if (NUM(o, "tokens") <= 0)
            continue;
        strbuf_add(&t, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f |\n", labels[k],
                   NUM(o, "io_ms"), NUM(o, "mem_ms"), NUM(o, "compute_ms"), NUM(o, "ffn_ms"), NUM(o, "predictor_ms"),
                   NUM(o, "total_ms"), NUM(o, "bytes_read") / 1e6, NUM(o, "reads"), NUM(o, "rows_inserted"),
                   NUM(o, "rows_deleted"), NUM(o, "cache_rows"));
    }
    if (steady)
        strbuf_add(&t, "\nRead throughput %.2f GB/s in reads of %.0f bytes; %.2f tokens/s; ",
                   NUM(sum, "read_throughput_bytes") / 1e9, NUM(sum, "mean_read_bytes"), NUM(sum, "tokens_per_second"));
    else
        strbuf_add(&t, "\nNo steady-state throughput (no steady token); ");
    strbuf_add(&t, "peak RSS %.2f GB (engine holds %.2f GB, oracle rows %.2f GB).\n", NUM(sum, "peak_rss_bytes") / 1e9,
               NUM(sum, "engine_dram_bytes") / 1e9, NUM(sum, "oracle_dram_bytes") / 1e9);
    if (cJSON_GetObjectItemCaseSensitive(sum, "h2d_bytes")) /* a device run only */
        device_lines(&t, root, sum);
    else if (cJSON_GetObjectItemCaseSensitive(sum, "layers_ahead")) /* read-ahead on the host */
        ahead_lines(&t, sum, m->shape.n_layers);
#undef NUM
    return strbuf_take(&t);
}

/* tokens.csv: a row per token with every per-token field of run.json, its
 * phase, and whether it is one of the cold tokens the summary leaves out
 * (so that fig8_token_latency.gp needs nothing but this file). */
static char *tokens_csv(const struct run_outcome *r, int cold, const struct run_report_extra *x)
{
    struct strbuf b = {0};
    strbuf_add(&b, "index,id,phase,cold");
    for (size_t k = 0; k < N_KEYS; k++)
        if (key_shown(k, x))
            strbuf_add(&b, ",%s", row_keys[k].key);
    strbuf_add(&b, "\n");
    for (int i = 0; i < r->n_rows; i++) {
        strbuf_add(&b, "%d,%d,%s,%d", i, r->rows[i].id, r->rows[i].generated ? "generated" : "prompt", i < cold);
        for (size_t k = 0; k < N_KEYS; k++) /* 12 digits: byte counts of a 13 GB model stay exact */
            if (key_shown(k, x))
                strbuf_add(&b, ",%.12g", *row_value(&r->rows[i], k));
        strbuf_add(&b, "\n");
    }
    return strbuf_take(&b);
}

static void bytes_text(double bytes, char *buf, size_t len)
{
    if (bytes >= 1e9)
        snprintf(buf, len, "%.2f GB", bytes / 1e9);
    else
        snprintf(buf, len, "%.2f MB", bytes / 1e6);
}

/* Fig. 8's title: what ran (model, mode, policy and layout, budget, what
 * chose the neurons). */
static void fig8_title(const struct model *m, const struct run_setup *p, const struct run_report_extra *x, char *buf,
                       size_t len)
{
    char budget[96] = "no DRAM budget", name[POLICY_NAME_MAX], layout[LAYOUT_NAME_MAX];
    cache_policy_name(&p->plan.policy, name, sizeof name);
    cache_layout_name(&p->layout, layout, sizeof layout);
    if (p->budget) {
        char bytes[32];
        bytes_text((double)p->budget, bytes, sizeof bytes);
        snprintf(budget, sizeof budget, "DRAM budget %s (%.0f%% of the model)", bytes,
                 p->model_bytes ? 100.0 * (double)p->budget / (double)p->model_bytes : 0);
    }
    if (p->dense)
        snprintf(buf, len, "%s (%s), mode dense (every weight in DRAM), %s", m->shape.name, wtype_name(m->dtype), budget);
    else
        snprintf(buf, len, "%s (%s), mode %s: %s + %s, %s, %s neurons", m->shape.name, wtype_name(m->dtype), x->mode,
                 name, layout, budget, source_name(p));
}

/* Fig. 8's second line: the machine and the disk the FFN was read from. */
static void fig8_machine(const struct run_setup *p, const cJSON *prov, char *buf, size_t len)
{
    const cJSON *mj = cJSON_GetObjectItemCaseSensitive(prov, "machine");
    const cJSON *dj = cJSON_GetObjectItemCaseSensitive(prov, "disk");
    const char *host = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mj, "hostname"));
    const char *cpu = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mj, "cpu"));
    const char *dev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dj, "device"));
    const char *fs = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dj, "file_system"));
    int n = snprintf(buf, len, "on %s (%s)", host ? host : "?", cpu ? cpu : "?");
    if (!p->dense && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", flash: %s (%s), %s", dev && *dev ? dev : "?", fs ? fs : "?",
                 p->cfg.stream.direct ? "direct I/O" : "page cache");
}

/* fig8.png and fig8.svg from dir/tokens.csv (plots/fig8_token_latency.gp). */
static int write_fig8(const struct model *m, const struct run_setup *p, const struct run_report_extra *x,
                      const char *dir, const cJSON *prov, char *err, size_t errlen)
{
    char csv[4200], stem[4200], title[600], machine[600];
    snprintf(csv, sizeof csv, "%s/tokens.csv", dir);
    snprintf(stem, sizeof stem, "%s/fig8", dir);
    fig8_title(m, p, x, title, sizeof title);
    fig8_machine(p, prov, machine, sizeof machine);
    const struct gnuplot_arg args[] = {GP_TEXT("csv", csv), GP_TEXT("plot_title", title),
                                       GP_TEXT("machine", machine), GP_NUMBER("device", x->device ? 1 : 0)};
    return gnuplot_draw(x->settings, x->folder, "fig8_token_latency.gp", args, 4, stem, err, errlen);
}

/* dir/run.json, dir/run.md and dir/tokens.csv, in that order, each only
 * when the one before it was written. run.md's text is made from run.json's
 * numbers into *md even when run.json could not be written: the caller
 * still shows the measurements. 0, or -1 with err. */
/* run.json, run.md and tokens.csv appear together or, when one cannot be
 * written, none of them changes (common/atomic_file.h's set). */
static int write_files(const char *dir, const struct model *m, const struct run_setup *p, const struct run_outcome *r,
                       const struct run_report_extra *x, const cJSON *root, char **md, char *err, size_t errlen)
{
    char path[4200];
    struct atomic_set set = {.n = 0, .folder = x->folder};
    char *csv = tokens_csv(r, cold_tokens(r, x), x);
    *md = run_markdown(m, p, root);
    snprintf(path, sizeof path, "%s/run.json", dir);
    int rc = atomic_set_json(&set, path, root, err, errlen);
    snprintf(path, sizeof path, "%s/run.md", dir);
    rc = rc ? rc : atomic_set_text(&set, path, *md, err, errlen);
    snprintf(path, sizeof path, "%s/tokens.csv", dir);
    rc = rc ? rc : atomic_set_text(&set, path, csv, err, errlen);
    if (rc == 0)
        rc = atomic_set_commit(&set, err, errlen);
    else
        atomic_set_abort(&set);
    free(csv);
    return rc;
}

int run_report_write(const char *dir, const struct model *m, const struct run_setup *p, const struct run_outcome *r,
                     const struct run_report_extra *x, cJSON *prov, char **md, char *err, size_t errlen)
{
    *md = NULL;
    if (mkdir_p(dir, 0755) != 0) {
        err_set(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        cJSON_Delete(prov);
        return -1;
    }
    cJSON *root = run_json(m, p, r, x, prov); /* takes prov */
    int rc = write_files(dir, m, p, r, x, root, md, err, errlen);
    if (rc == 0 && x->plot && write_fig8(m, p, x, dir, prov, err, errlen) != 0)
        rc = -2;
    cJSON_Delete(root);
    return rc;
}
