/* Table 3's device rows in reproduce (harness/reproduce.h): planned on
 * every device backend that starts here (reproduce_plan.h), and their
 * section of REPORT.md (reproduce_tables.h): naive and all measured on each
 * device beside the price with that device's own calibrated profile, an
 * emulated device's rows labelled as such, and the paper's GPU and Metal
 * rows modelled (paper-table3/table3.json) beside them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache/mode.h"
#include "cache/policy.h"
#include "common/json_file.h"
#include "harness/reproduce_plan.h"
#include "harness/reproduce_tables.h"
#include "sim/run_summary.h"

#define EMULATED_LABEL "emulated device: a check of the pipeline, not a GPU timing"

/* Table 3's device modes (cache/mode.c's column: naive, all); NULL past
 * the last. */
static const struct cache_mode *device_mode(size_t i)
{
    return cache_mode_of_table(CACHE_MODE_TABLE3_DEVICE, i);
}

/* One measured run of mode on device d, round r: the CPU rows' run with
 * --backend (naive without a budget, all with the window of 5 tokens). */
static int add_device_run(struct repro_plan *p, const struct repro_device *d, const struct repro_device_sizes *z,
                          const struct cache_mode *mode, int r)
{
    char id[96], what[160], rel[200], model[4200], active[4300], out[4200];
    const char *m = mode->name;
    repro_plan_at(p, model, sizeof model, "models/%s", z->shape);
    snprintf(active, sizeof active, "trace:%s/traces/%s.trace", p->config.out, z->shape);
    snprintf(id, sizeof id, "run-%s-%s-trace-%s-r%d", z->shape, m, d->backend, r);
    snprintf(what, sizeof what, "%s %s on the %s backend, round %d of %d", z->shape, m, d->backend, r, z->rounds);
    snprintf(rel, sizeof rel, "runs/%s/%s-trace-%s-r%d", z->shape, m, d->backend, r);
    repro_plan_at(p, out, sizeof out, "%s", rel);
    if (mode->policy->reads_whole_layers && !mode->policy->keeps_resident_part) /* holds no part: no budget */
        STEP(p, "device", id, rel, what, "run", "--model", model, "--backend", d->backend, "--mode", m, "--active",
             active, "--prompt", p->prompt, "--prompt-tokens", z->base_prompt, "-n", z->base_tokens, "--cold", "1",
             "--ignore-eos", "--quiet", "--out", out);
    else
        STEP(p, "device", id, rel, what, "run", "--model", model, "--backend", d->backend, "--mode", m, "--window",
             "5", "--active", active, "--dram-budget", z->budget, "--prompt", p->prompt,
             "--prompt-tokens", z->run_prompt, "-n", z->run_tokens, "--cold", "5", "--ignore-eos", "--quiet", "--out",
             out);
    return 0;
}

/* The price of mode on the device's own profile (an emulated one allowed
 * only where the device is one). */
static int add_device_predict(struct repro_plan *p, const struct repro_device *d, const struct repro_device_sizes *z,
                              const struct cache_mode *mode)
{
    char id[96], what[160], rel[200], hw[4200], trace[4200], out[4200];
    const char *m = mode->name, *allow = d->emulated ? "--allow-emulated" : NULL;
    repro_plan_at(p, hw, sizeof hw, "calibration/hw-%s.json", d->backend);
    repro_plan_at(p, trace, sizeof trace, "traces/%s.trace", z->shape);
    snprintf(id, sizeof id, "predict-%s-%s-trace-%s", z->shape, m, d->backend);
    snprintf(what, sizeof what, "%s %s, the cost model on the %s device's profile", z->shape, m, d->backend);
    snprintf(rel, sizeof rel, "runs/%s/%s-trace-%s-predict", z->shape, m, d->backend);
    repro_plan_at(p, out, sizeof out, "%s", rel);
    const char *naive[] = {"predict", "--model", z->shape, "--hw", hw, "--dtype", "f16", "--policy", "naive",
                           "--dram-budget", z->budget, "--predictor-rank", "none", "--out", out,
                           allow, NULL};
    const char *all[] = {"predict", "--model", z->shape, "--hw", hw, "--dtype", "f16", "--policy", "window:5",
                         "--layout", "bundled", "--dram-budget", z->budget, "--trace", trace,
                         "--predictor-rank", "none", "--out", out, allow, NULL};
    return repro_plan_add(p, "device", id, rel, what, mode->policy->reads_whole_layers ? naive : all);
}

int repro_plan_devices(struct repro_plan *p, const struct repro_device_sizes *z)
{
    char sweep[4200], hw[4200], id[96], rel[200], what[160], name[64];
    repro_plan_at(p, sweep, sizeof sweep, "%s", repro_engine_sweep(p));
    snprintf(p->device_shape, sizeof p->device_shape, "%s", z->shape);
    snprintf(p->device_budget, sizeof p->device_budget, "%s", z->budget);
    for (size_t i = 0; i < p->config.n_devices; i++) {
        const struct repro_device *d = &p->config.devices[i];
        snprintf(id, sizeof id, "calibration-%s", d->backend);
        snprintf(rel, sizeof rel, "calibration/hw-%s.json", d->backend);
        snprintf(name, sizeof name, "reproduce-%s", d->backend);
        snprintf(what, sizeof what, "the %s device's profile: its copies, waits and matvec (flash from Fig. 2b)%s",
                 d->backend, d->emulated ? ", an emulated device" : "");
        STEP(p, "device", id, rel, what, "calibrate", "--quick", "--backend", d->backend, "--sweep", sweep, "--name",
             name, "--out", repro_plan_at(p, hw, sizeof hw, "%s", rel));
    }
    for (int r = 1; r <= z->rounds; r++)
        for (size_t i = 0; i < p->config.n_devices; i++)
            for (size_t m = 0; device_mode(m); m++)
                if (add_device_run(p, &p->config.devices[i], z, device_mode(m), r) != 0)
                    return -1;
    for (size_t i = 0; i < p->config.n_devices; i++)
        for (size_t m = 0; device_mode(m); m++)
            if (add_device_predict(p, &p->config.devices[i], z, device_mode(m)) != 0)
                return -1;
    return 0;
}

/* A number under keys (NULL-terminated) of o; NAN when absent. */
static double json_num(const cJSON *o, const char *const *keys)
{
    for (; *keys && o; keys++)
        o = cJSON_GetObjectItemCaseSensitive(o, *keys);
    return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

/* What the price of one device row says: predict.json's first prediction's
 * device terms, and whether the profile it priced with is emulated. */
struct device_price {
    double total_ms, h2d_ms, wait_ms, h2d_bytes, launches, syncs;
    bool emulated;
};

static void read_device_price(const struct repro_plan *p, const char *prefix, const char *backend,
                              struct device_price *o)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s-predict/predict.json", p->config.out, prefix);
    cJSON *j = read_json_file(path);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "predictions"), 0),
                                         "prediction"),
        "device");
    const char *k[][2] = {{"total_ms", NULL}, {"h2d_ms", NULL}, {"launch_ms", NULL}, {"sync_ms", NULL},
                          {"h2d_bytes", NULL}, {"launches", NULL}, {"syncs", NULL}};
    o->total_ms = json_num(d, k[0]);
    o->h2d_ms = json_num(d, k[1]);
    o->wait_ms = json_num(d, k[2]) + json_num(d, k[3]);
    o->h2d_bytes = json_num(d, k[4]), o->launches = json_num(d, k[5]), o->syncs = json_num(d, k[6]);
    cJSON_Delete(j);
    snprintf(path, sizeof path, "%s/calibration/hw-%s.json", p->config.out, backend);
    j = read_json_file(path);
    o->emulated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "emulated"));
    cJSON_Delete(j);
}

/* "measured / modelled" of a count. */
static void add_pair(struct strbuf *b, double measured, double modelled, double scale)
{
    strbuf_add(b, isfinite(measured) ? " %.1f" : " —", measured / scale);
    strbuf_add(b, isfinite(modelled) ? " / %.1f |" : " / — |", modelled / scale);
}

/* "a / b" of two times in ms. */
static void add_ms_pair(struct strbuf *b, double x, double y)
{
    strbuf_add(b, isfinite(x) ? " %.3f" : " —", x);
    strbuf_add(b, isfinite(y) ? " / %.3f |" : " / — |", y);
}

/* One device row: measured (medians of the rounds, the first round's
 * counts, exact) beside the price with the device's profile. */
static void device_row(struct strbuf *b, const struct repro_plan *p, const struct repro_device *d,
                       const struct cache_mode *mode)
{
    char prefix[400], path[4400], err[4400];
    snprintf(prefix, sizeof prefix, "runs/%s/%s-trace-%s", p->device_shape, mode->name, d->backend);
    struct repro_cell c;
    if (!repro_read_cell(p, prefix, &c))
        return;
    struct device_price m;
    read_device_price(p, prefix, d->backend, &m);
    struct run_summary s = {.device = {NAN, NAN, NAN, NAN, NAN}, .read_ms = NAN};
    snprintf(path, sizeof path, "%s/%s-r1/run.json", p->config.out, prefix);
    bool counted = run_summary_read(path, &s, err, sizeof err) == 0;
    strbuf_add(b, "| %s | %s | %s | %s | %d | %.1f (%.1f–%.1f) |", d->backend, d->device, p->device_shape,
               mode->name, c.rounds, c.median[REPRO_TOTAL], c.lo, c.hi);
    repro_add_ms(b, m.total_ms);
    repro_add_error(b, m.total_ms, c.median[REPRO_TOTAL]);
    add_ms_pair(b, counted ? s.device[4] : NAN, m.h2d_ms);
    add_ms_pair(b, counted ? s.part_ms[RUN_IO] : NAN, counted ? s.read_ms : NAN);
    repro_add_ms(b, m.wait_ms);
    add_pair(b, counted ? s.device[0] : NAN, m.h2d_bytes, 1e6);
    add_pair(b, counted ? s.device[2] : NAN, m.launches, 1);
    add_pair(b, counted ? s.device[3] : NAN, m.syncs, 1);
    strbuf_add(b, " — | %s |\n", m.emulated || d->emulated ? EMULATED_LABEL : "measured on this machine's GPU");
    if (counted)
        run_summary_free(&s);
}

/* The paper's device rows (their profiles have a device), modelled by
 * paper-table3's step: nothing measured here, the paper's total beside. */
static void paper_rows(struct strbuf *b, const struct repro_plan *p)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/paper-table3/table3.json", p->config.out);
    cJSON *t = read_json_file(path);
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "rows"))
    {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(r, "device");
        if (!d)
            continue;
        const char *total[] = {"total_ms", NULL}, *h2d[] = {"h2d_ms", NULL}, *launch[] = {"launch_ms", NULL},
                   *sync[] = {"sync_ms", NULL}, *bytes[] = {"h2d_bytes", NULL}, *n_l[] = {"launches", NULL},
                   *n_s[] = {"syncs", NULL}, *paper[] = {"paper_total_ms", NULL};
        bool unified = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "host_visible"));
        strbuf_add(b, "| %s (the paper's) | %s | %s | %s | — | — |", cJSON_GetStringValue(cJSON_GetObjectItem(r, "backend")),
                   cJSON_GetStringValue(cJSON_GetObjectItem(r, "hw")), cJSON_GetStringValue(cJSON_GetObjectItem(r, "model")),
                   cJSON_GetStringValue(cJSON_GetObjectItem(r, "method")));
        repro_add_ms(b, json_num(d, total));
        strbuf_add(b, " n/a |");
        if (unified)
            strbuf_add(b, " none (unified memory) |");
        else
            add_ms_pair(b, NAN, json_num(d, h2d));
        strbuf_add(b, " — |");
        repro_add_ms(b, json_num(d, launch) + json_num(d, sync));
        add_pair(b, NAN, unified ? 0 : json_num(d, bytes), 1e6);
        add_pair(b, NAN, json_num(d, n_l), 1);
        add_pair(b, NAN, json_num(d, n_s), 1);
        repro_add_ms(b, json_num(r, paper));
        strbuf_add(b, " the paper's machine, modelled from public specifications |\n");
    }
    cJSON_Delete(t);
}

void repro_section_devices(struct strbuf *b, const struct repro_plan *p)
{
    strbuf_add(b, "## Table 3's device rows: measured beside modelled\n\n");
    if (!p->device_shape[0]) {
        strbuf_add(b, "Not planned: %s.\n\n", p->config.n_devices ? "--models leaves opt out (the rows are OPT's)"
                                                                  : "no device backend starts here");
        return;
    }
    strbuf_add(b, "The flash FFN with its neuron cache on each device backend that starts here (`run --backend B`, "
                  "%s, neurons from its calibrated trace, naive without a budget, all = window of 5 tokens at %s of "
                  "the model), measured beside `flashbed predict` with that device's own profile (`calibrate "
                  "--backend B`, `calibration/hw-B.json`): total = I/O + mem + compute + the device terms (uploads, "
                  "downloads, launches, waits). Measured: median over the rounds (min–max); counts per token from "
                  "the first round's run.json, exact. A row on an emulated device (sim, OpenCL on a CPU) is a check "
                  "of the pipeline, not a GPU timing. The paper's GPU and Metal rows follow, modelled from their "
                  "profiles' public specifications (`paper-table3/`).%s%s\n\n",
               p->device_shape, p->device_budget, p->config.devices_absent[0] ? " Not here: " : "",
               p->config.devices_absent);
    strbuf_add(b, "| backend | device | model | mode | rounds | measured ms/token | modelled ms/token | error | "
                  "h2d ms measured (device time) / modelled | I/O ms exposed / reads' whole time (measured) | modelled launch + "
                  "sync ms | uploaded MB/token measured / modelled | launches measured / modelled | syncs measured / "
                  "modelled | paper ms/token | what it is |\n"
                  "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < p->config.n_devices; i++)
        for (size_t m = 0; device_mode(m); m++)
            device_row(b, p, &p->config.devices[i], device_mode(m));
    paper_rows(b, p);
    strbuf_add(b, "\n(from `runs/%s/<mode>-trace-<backend>-r<round>/run.json`, `<mode>-trace-<backend>-predict/"
                  "predict.json`, `calibration/hw-<backend>.json`, `paper-table3/table3.json`)\n\n",
               p->device_shape);
}
