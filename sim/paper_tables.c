#include "sim/paper_tables.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache/cache.h"
#include "cache/mode.h"
#include "common/atomic_file.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "sim/predict_report.h"
#include "common/gnuplot.h"
#include "common/json_file.h"
#include "common/model_shape.h"
#include "common/strbuf.h"
#include "sim/cost_model.h"

static cJSON *load_json(const struct fb_settings *set, const char *rel, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", set->configs_dir, rel);
    cJSON *o = read_json_file(path);
    if (!o)
        err_set(err, errlen, "cannot read %s (missing or not JSON)", path);
    return o;
}

int paper_density(const struct fb_settings *set, const char *model, const char *key, double *value, char *source,
                  size_t srclen)
{
    cJSON *d = load_json(set, "paper/densities.json", NULL, 0); /* unreadable: no density */
    if (!d)
        return -1;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "models"), model), key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "value");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "source");
    int rc = -1;
    /* densities, fractions and window lengths: a NaN, an infinity or a
     * negative count would reach an integer conversion or a volume */
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 && v->valuedouble <= 1e6) {
        *value = v->valuedouble;
        if (source)
            snprintf(source, srclen, "%s", cJSON_IsString(s) ? s->valuestring : "");
        rc = 0;
    }
    cJSON_Delete(d);
    return rc;
}

int paper_densities_check(const struct fb_settings *set, char *err, size_t errlen)
{
    cJSON *d = load_json(set, "paper/densities.json", err, errlen);
    if (!d)
        return -1;
    bool ok = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(d, "models"));
    cJSON_Delete(d);
    if (!ok)
        err_set(err, errlen, "%s/paper/densities.json: no \"models\" object", set->configs_dir);
    return ok ? 0 : -1;
}

/* s_agg(k) = A k^B + C through App. C.1's three OPT-6.7B figures: 10% of the
 * FFN for one token, 24% held by a window of five, 2.4% new per token then
 * (s_agg(5) - s_agg(4)). Valid for k >= 1. */
#define S_AGG_A 0.20617346171308948
#define S_AGG_B 0.32198950841232166
#define S_AGG_C (-0.10617346171308947)

double paper_s_agg(double k)
{
    return S_AGG_A * pow(k, S_AGG_B) + S_AGG_C;
}

/* The window length (in tokens) whose union is `held` of the FFN. */
static double s_agg_tokens(double held)
{
    return pow((held - S_AGG_C) / S_AGG_A, 1 / S_AGG_B);
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Loads a profile (one of an emulated device only when g allows it) and
 * resolves its paper-derived rates. */
static int load_hw(const struct fb_settings *set, const struct paper_given *g, const char *name,
                   struct hw_profile *hw, char *err, size_t errlen)
{
    unsigned flags = g && g->allow_emulated ? HW_LOAD_ALLOW_EMULATED : 0;
    if (hw_profile_load_flags(set, name, flags, hw, err, errlen) != 0 ||
        cost_resolve_profile(hw, set, err, errlen) != 0)
        return -1;
    return 0;
}

static bool has_given(const struct paper_given *g)
{
    return g && g->hw;
}

/* Whether two profiles are one file (the paper's own profile given by
 * name or by path): then a row's modelled figure beside the paper's is the
 * model's error; a profile of any other file describes another machine,
 * and the difference from the paper is the machines'. */
static bool same_profile(const struct hw_profile *a, const struct hw_profile *b)
{
    struct stat sa, sb;
    if (stat(a->path, &sa) == 0 && stat(b->path, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return strcmp(a->path, b->path) == 0;
}

/* A modelled figure beside the paper's, "paper / model (+12%)", the
 * percentage marked "machines" when the model priced another machine. */
static void beside_paper(char *buf, size_t len, double paper, double model, bool machines)
{
    snprintf(buf, len, "%.0f / %.0f (%+.0f%%%s)", paper, model, 100 * cost_rel_err(model, paper),
             machines ? " machines" : "");
}

/* The profile a whole table prices with: the given one, else the paper's. */
static int table_hw(const struct fb_settings *set, const struct paper_given *g, const char *paper,
                    struct hw_profile *hw, char *err, size_t errlen)
{
    return load_hw(set, g, has_given(g) ? g->hw : paper, hw, err, errlen);
}

/* The cost model prices a dtype only where the profile has a compute rate
 * for it; said here, before any table is written, with what asks for it. */
static int need_rate(struct hw_profile *hw, const char *dtype, const char *what, char *err, size_t errlen)
{
    const struct compute_rate *r = hw_compute(hw, dtype);
    if (r && r->bw > 0)
        return 0;
    return err_set(err, errlen, "%s prices %s weights, and profile %s (%s) has no compute rate for %s", what, dtype,
                   hw->name, hw->path, dtype);
}

/* A Table 3 row's profile: its paper profile, or the given one
 * (*from_given) when that describes the same backend. */
static int row_hw(const struct fb_settings *set, const cJSON *r, const struct hw_profile *given, struct hw_profile *hw,
                  bool *from_given, bool *other_machine, char *err, size_t errlen)
{
    if (load_hw(set, NULL, str(r, "hw"), hw, err, errlen) != 0)
        return -1;
    *from_given = given && strcmp(given->backend, hw->backend) == 0;
    *other_machine = *from_given && !same_profile(given, hw);
    if (*from_given)
        *hw = *given;
    return 0;
}

/* The given profile describes the backend of some Table 3 rows and has a
 * compute rate for their dtypes. */
static int check_table3(const struct fb_settings *set, const struct hw_profile *given, char *err, size_t errlen)
{
    cJSON *t = load_json(set, "paper/table3.json", err, errlen);
    if (!t)
        return -1;
    struct hw_profile hw;
    char backends[128] = "";
    int matched = 0, rc = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "rows"))
    {
        bool from_given, other;
        if (row_hw(set, r, given, &hw, &from_given, &other, err, errlen) != 0 ||
            (from_given && need_rate(&hw, str(r, "dtype"), "Table 3's rows on its backend", err, errlen) != 0)) {
            rc = -1;
            break;
        }
        matched += from_given;
        if (!from_given && !strstr(backends, hw.backend)) {
            size_t n = strlen(backends);
            snprintf(backends + n, sizeof backends - n, "%s%s", n ? ", " : "", hw.backend);
        }
    }
    if (rc == 0 && !matched)
        rc = err_set(err, errlen, "profile %s (%s) describes the '%s' backend; Table 3's rows run on %s, so none "
                     "would be priced with it", given->name, given->path, given->backend, backends);
    cJSON_Delete(t);
    return rc;
}

static const char *fig7_dtype(const struct paper_given *g)
{
    return g && g->fig7_dtype ? g->fig7_dtype : "bf16";
}

int paper_check_given(const struct fb_settings *set, const char *what, const struct paper_given *g, char *err,
                      size_t errlen)
{
    bool all = strcmp(what, "all") == 0;
    struct hw_profile hw;
    if ((all || !strcmp(what, "fig7")) && g && (g->hw || g->fig7_dtype) &&
        (table_hw(set, g, "rtx4090-gpu", &hw, err, errlen) != 0 ||
         need_rate(&hw, fig7_dtype(g), "Fig. 7", err, errlen) != 0))
        return -1;
    if (!has_given(g))
        return 0;
    if (load_hw(set, g, g->hw, &hw, err, errlen) != 0)
        return -1;
    if (all || !strcmp(what, "table2")) {
        cJSON *t = load_json(set, "paper/table2.json", err, errlen);
        int rc = t ? need_rate(&hw, str(t, "dtype"), "Table 2", err, errlen) : -1;
        cJSON_Delete(t);
        if (rc != 0)
            return -1;
    }
    if ((all || !strcmp(what, "table3")) && check_table3(set, &hw, err, errlen) != 0)
        return -1;
    return 0;
}

/* The paper's configuration for one method: policy, layout and per-token volumes. */
int paper_cost_config(const struct fb_settings *set, struct cost_config *c, const struct model_shape *s,
                      const char *method, const struct layout_spec *layout, const char *density_suffix)
{
    char key[64], src[240];
    double loaded = 0, resident = 0, k = 0, pred = 0;
    c->layout = *layout;
    paper_density(set, s->name, "predictor_model_fraction", &pred, NULL, 0);
    c->predictor_fraction = pred;
    /* the method is one of the modes (cache/mode.h): its policy decides the volumes */
    const struct cache_mode *mode = cache_mode_find(method);
    const struct policy_ops *ops = mode ? mode->policy : NULL;
    if (!ops)
        return -1; /* not one of the paper's methods: the callers say what they lack */
    if (ops->reads_whole_layers) {
        c->policy = policy_spec_of(ops, 0);
    } else if (!ops->takes_arg) { /* the predictor: this token's rows */
        c->policy = policy_spec_of(ops, 0);
        snprintf(key, sizeof key, "predictor_fraction%s", density_suffix);
        if (paper_density(set, s->name, key, &loaded, src, sizeof src) != 0)
            return -1;
        volumes_from_fractions(s, &policy_predictor, loaded, 0, &c->vol);
        snprintf(c->vol.source, sizeof c->vol.source, "%s", src);
    } else { /* window / all */
        snprintf(key, sizeof key, "window_new_fraction%s", density_suffix);
        if (paper_density(set, s->name, key, &loaded, src, sizeof src) != 0 &&
            paper_density(set, s->name, "window_new_fraction", &loaded, src, sizeof src) != 0)
            return -1;
        paper_density(set, s->name, "window_resident_fraction", &resident, NULL, 0);
        paper_density(set, s->name, "window_k", &k, NULL, 0);
        /* the paper: k previous tokens + this one */
        c->policy = policy_spec_of(&policy_window, (uint64_t)k + 1);
        volumes_from_fractions(s, &policy_window, loaded, resident, &c->vol);
        snprintf(c->vol.source, sizeof c->vol.source, "%s", src);
    }
    return 0;
}

/* A table's Markdown to the caller (md_out not NULL) once it is written. */
static void hand_over(int rc, struct strbuf *md, char **md_out)
{
    if (rc != 0 || !md_out)
        return;
    *md_out = md->s ? md->s : strdup("");
    md->s = NULL;
}

static int write_outputs(struct out_manifest *folder, const char *dir, const char *name, cJSON *root, const char *md, char *err,
                         size_t errlen)
{
    char path[4200];
    if (mkdir_p(dir, 0755) != 0)
        return err_set(err, errlen, "cannot create %s", dir);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    if (atomic_write_json(folder, path, root, err, errlen) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/%s.md", dir, name);
    return atomic_write_text(folder, path, md, err, errlen);
}

/* One Table 2 row: priced with App. C.1's densities (p) and with those the
 * table's own byte column implies (p2), into its JSON and Markdown. */
static int table2_row(const struct fb_settings *set, const cJSON *t, const cJSON *r, const struct model_shape *s,
                      struct hw_profile *hw, bool machines, cJSON *rows, struct strbuf *md, char *err, size_t errlen)
{
    char why[512], name[LAYOUT_NAME_MAX];
    struct cost_config c = {.shape = s, .hw = hw, .dram_share = 0.5, .io_threads = hw->io_threads,
                            .context_tokens = 256};
    snprintf(c.dtype, sizeof c.dtype, "%s", str(t, "dtype"));
    struct cost_prediction p, p2;
    /* the table's file is an edge: its layout's name becomes a value here */
    struct layout_spec layout;
    if (cache_layout_parse(str(r, "layout"), &layout, why, sizeof why) != 0)
        return err_set(err, errlen, "table 2, %s: %s", str(r, "config"), why);
    cache_layout_name(&layout, name, sizeof name);
    snprintf(why, sizeof why, "no paper densities for %s", s->name);
    if (paper_cost_config(set, &c, s, str(r, "policy"), &layout, "") != 0 ||
        cost_predict(&c, &p, why, sizeof why) != 0)
        return err_set(err, errlen, "table 2, %s: %s", str(r, "config"), why);
    /* Same configuration with the densities Table 2's byte column implies. */
    struct cost_config c2 = c;
    if (paper_cost_config(set, &c2, s, str(r, "policy"), &layout, "_table2") != 0 ||
        cost_predict(&c2, &p2, why, sizeof why) != 0)
        p2 = p;
    double paper_io = num(r, "io_ms");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "config", str(r, "config"));
    cJSON_AddStringToObject(o, "policy", str(r, "policy"));
    cJSON_AddStringToObject(o, "layout", name);
    cJSON_AddNumberToObject(o, "paper_io_ms", paper_io);
    cJSON_AddNumberToObject(o, "model_io_ms", p.io_ms);
    cJSON_AddNumberToObject(o, "rel_err", cost_rel_err(p.io_ms, paper_io));
    cJSON_AddNumberToObject(o, "model_io_ms_table2_densities", p2.io_ms);
    cJSON_AddNumberToObject(o, "rel_err_table2_densities", cost_rel_err(p2.io_ms, paper_io));
    cJSON_AddNumberToObject(o, "paper_flash_gb", num(r, "flash_gb"));
    cJSON_AddNumberToObject(o, "model_flash_gb", p.bytes_per_token / 1e9);
    cJSON_AddNumberToObject(o, "paper_dram_gb", num(r, "dram_gb"));
    cJSON_AddNumberToObject(o, "model_dram_gb", p.dram_total / 1e9);
    cJSON_AddNumberToObject(o, "paper_throughput_gbps", num(r, "throughput_gbps"));
    cJSON_AddNumberToObject(o, "model_throughput_gbps", p.throughput / 1e9);
    cJSON_AddNumberToObject(o, "chunk_bytes", p.chunk_bytes);
    cJSON_AddStringToObject(o, "volume_source", c.vol.source);
    cJSON_AddItemToArray(rows, o);
    const char *mark = machines ? " machines" : "";
    strbuf_add(md, "| %s | %.1f | %.2f | %.1f | %.3f | %.2f | %.2f | %.0f | %.0f | %+.1f%%%s | %.0f | %+.1f%%%s |\n",
               str(r, "config"), num(r, "dram_gb"), p.dram_total / 1e9, num(r, "flash_gb"), p.bytes_per_token / 1e9,
               num(r, "throughput_gbps"), p.throughput / 1e9, paper_io, p.io_ms, 100 * cost_rel_err(p.io_ms, paper_io),
               mark, p2.io_ms, 100 * cost_rel_err(p2.io_ms, paper_io), mark);
    return 0;
}

int paper_write_table2(const struct fb_settings *set, struct out_manifest *folder, const char *out_dir, const struct paper_given *g,
                       cJSON *provenance, char **md_out, char *err, size_t errlen)
{
    if (paper_densities_check(set, err, errlen) != 0)
        return -1;
    cJSON *t = load_json(set, "paper/table2.json", err, errlen);
    if (!t)
        return -1;
    struct model_shape s;
    struct hw_profile hw, paper_hw;
    int rc = -1;
    struct strbuf md = {0};
    cJSON *root = cJSON_CreateObject();
    if (model_shape_load(set, str(t, "model"), &s, err, errlen) != 0 ||
        table_hw(set, g, str(t, "hw"), &hw, err, errlen) != 0 ||
        load_hw(set, NULL, str(t, "hw"), &paper_hw, err, errlen) != 0)
        goto out;
    bool machines = !same_profile(&hw, &paper_hw); /* the errors are then two machines' difference */
    cJSON_AddItemReferenceToObject(root, "provenance", provenance);
    cJSON_AddStringToObject(root, "table", "Table 2: I/O latency of OPT-6.7B, 16-bit, M1 Max, half the model in DRAM");
    cJSON_AddStringToObject(root, "hw", hw.name);
    cJSON_AddStringToObject(root, "hw_from", has_given(g) ? "given" : "paper");
    cJSON_AddStringToObject(root, "difference", machines ? "machines" : "model error");
    cJSON *rows = cJSON_AddArrayToObject(root, "rows");
    strbuf_add(&md, "# Table 2 — OPT-6.7B, 16-bit, M1 Max, half the model in DRAM%s\n\n", has_given(g) ? " — modelled with a given profile" : "");
    if (has_given(g))
        strbuf_add(&md, "Every row is priced with the given profile `%s` (%s) in place of the paper's `%s`.%s\n\n",
                   hw.name, hw.path, str(t, "hw"),
                   machines ? " It describes another machine than the paper's, so the percentages, marked *machines*, "
                              "are the difference between the two machines, not an error of the model." : "");
    strbuf_add(&md, "Model: the cost model with the `%s` profile and App. C.1's densities "
                "(predictor ~10%% of the FFN per token, window k = 4: 2.4%% new, 24%% held). "
                "The last column uses the densities implied by the table's own flash→DRAM column "
                "(0.9 GB and 0.2 GB of the 8.59 GB fp16 FFN).\n\n"
                "| configuration | DRAM GB paper | DRAM GB model | flash→DRAM GB paper | model | GB/s paper | model | I/O ms paper | I/O ms model | %s | I/O ms (Table 2 densities) | %s |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", hw.name, machines ? "difference" : "error",
                machines ? "difference" : "error");
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "rows"))
    {
        if (table2_row(set, t, r, &s, &hw, machines, rows, &md, err, errlen) != 0)
            goto out;
    }
    strbuf_add(&md, "\nThe paper's rows are bytes / throughput with both rounded: the same 8 KiB reads "
                "imply 1.17 GB/s in the +predictor row (0.9 GB, 738 ms) and 1.27 GB/s in the "
                "+windowing row (0.2 GB, 164 ms), so no single byte count lands every row exactly.\n");
    rc = write_outputs(folder, out_dir, "table2", root, md.s ? md.s : "", err, errlen);
    hand_over(rc, &md, md_out);
out:
    free(md.s);
    cJSON_Delete(root);
    cJSON_Delete(t);
    return rc;
}

/* A rate derived from this very row (a derive_from rule naming its model
 * and method: "naive" for the dense compute, "window" for the All row's
 * flash and memory management) reproduces the paper's cell by construction. */
static bool derived_from(const struct derive_rule *r, const char *model, const char *policy)
{
    return r->model[0] && !strcmp(r->model, model) && !strcmp(r->policy, policy);
}

/* Which of a Table 3 row's cells are calibrations rather than predictions,
 * from the rules of the profile that priced it (a measured profile has
 * none), into notes. */
static void calibrated_cells(struct hw_profile *hw, const char *model, const char *method, const char *dtype,
                             char *notes, size_t len)
{
    const struct compute_rate *rate = hw_compute(hw, dtype);
    bool all = !strcmp(method, "all");
    bool io = all && derived_from(&hw->flash_derive, model, "window"); /* its model stays once resolved */
    bool mem = all && derived_from(&hw->mem_derive, model, "window");
    bool comp = !strcmp(method, "naive") && rate && derived_from(&rate->derive, model, "naive");
    if (io || mem || comp)
        snprintf(notes, len, "calibrated here: %s%s%s", io ? "I/O " : "", mem ? "mem " : "", comp ? "compute" : "");
}

/* Table 3's introduction: where the profiles come from. */
static void table3_intro(struct strbuf *md, const struct hw_profile *given)
{
    strbuf_add(md, "# Table 3 — latency per token (ms): paper / model (error)\n\n");
    if (given)
        strbuf_add(md, "Rows on the `%s` backend are priced with the given profile `%s` (%s), marked *given*; "
                       "the others are modelled from the paper's profiles in configs/hw/, marked *paper*. "
                       "Where the given profile is not the row's paper profile, the row compares two machines: "
                       "its percentages, marked *machines*, are the difference between the given machine and "
                       "the paper's, not an error of the model. ",
                   given->backend, given->name, given->path);
    else
        strbuf_add(md, "Paper profiles in configs/hw/. ");
    strbuf_add(md, "Rates marked *calibrated* were derived from that "
                   "very cell (the paper publishes nothing else to derive them from), so those cells "
                   "are not predictions. Naive and hybrid I/O use 16-bit bytes on every backend, as "
                   "the paper's best-case baselines do.\n\n"
                   "| model | method | backend | profile | I/O | mem | compute | total | notes |\n"
                   "|---|---|---|---|---|---|---|---|---|\n");
}

/* One Table 3 row priced: its configuration, prediction, hardware and notes. */
struct table3_cell {
    struct model_shape s;
    struct hw_profile hw;
    bool from_given;
    bool other_machine; /* priced with a profile of another machine than the paper's */
    struct cost_config c;
    struct cost_prediction p;
    char notes[400];
};

static int price_table3_row(const struct fb_settings *set, const cJSON *r, const cJSON *shares,
                            const struct hw_profile *given, struct table3_cell *x, char *err, size_t errlen)
{
    char why[512];
    if (model_shape_load(set, str(r, "model"), &x->s, err, errlen) != 0 ||
        row_hw(set, r, given, &x->hw, &x->from_given, &x->other_machine, err, errlen) != 0)
        return -1;
    const char *method = str(r, "method");
    x->c = (struct cost_config){.shape = &x->s, .hw = &x->hw, .io_threads = x->hw.io_threads, .context_tokens = 256};
    x->c.dram_share = num(shares, x->s.name);
    snprintf(x->c.dtype, sizeof x->c.dtype, "%s", str(r, "dtype"));
    snprintf(x->c.baseline_io_dtype, sizeof x->c.baseline_io_dtype, "f16");
    const struct layout_spec bundled = layout_spec_of(&layout_bundled, 0);
    if (paper_cost_config(set, &x->c, &x->s, method, &bundled, "") != 0)
        return err_set(err, errlen, "table 3: no paper densities for %s", x->s.name);
    if (cost_predict(&x->c, &x->p, why, sizeof why) != 0)
        return err_set(err, errlen, "table 3, %s %s %s: %s", x->s.name, method, str(r, "backend"), why);
    x->notes[0] = '\0';
    calibrated_cells(&x->hw, x->s.name, method, x->c.dtype, x->notes, sizeof x->notes);
    if (strcmp(method, "all") == 0 && strstr(x->c.vol.source, "assumed")) {
        size_t n = strlen(x->notes);
        snprintf(x->notes + n, sizeof x->notes - n, "%sdensities assumed (paper gives none)", n ? "; " : "");
    }
    return 0;
}

/* A row whose profile has a device (hw_profile.h: struct hw_device): the
 * cost model's device terms per token (sim/device_terms.h), apart from the
 * serial total, as predict prices them; total_ms adds them to it. */
static cJSON *table3_device_json(const struct table3_cell *x)
{
    const struct cost_prediction *p = &x->p;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "name", x->hw.device.name);
    cJSON_AddBoolToObject(d, "host_visible", x->hw.device.host_visible);
    predict_device_json(d, p);
    return d;
}

/* The row's device terms as a Markdown line (device rows only): on unified
 * memory the copies are none, said so rather than priced. */
static void table3_device_md(struct strbuf *md, const cJSON *r, const struct table3_cell *x)
{
    const struct cost_prediction *p = &x->p;
    char up[64], down[64];
    if (x->hw.device.host_visible) {
        snprintf(up, sizeof up, "none (unified memory)");
        snprintf(down, sizeof down, "none");
    } else {
        snprintf(up, sizeof up, "%.1f MB: %.2f ms", p->dev_bytes_up / 1e6, p->h2d_ms);
        snprintf(down, sizeof down, "%.2f ms", p->d2h_ms);
    }
    char total[96];
    beside_paper(total, sizeof total, num(r, "total_ms"), p->device_total_ms, x->other_machine);
    strbuf_add(md, "| %s | %s | %s | %s | %s | %s | %.0f: %.2f ms | %.0f: %.2f ms | %.0f | %s |\n", x->s.name,
               str(r, "method"), str(r, "backend"), x->hw.name, up, down, p->dev_launches, p->launch_ms, p->dev_syncs,
               p->sync_ms, p->serial_ms, total);
}

/* The row's JSON: paper and model per component, and their errors. */
static cJSON *table3_row_json(const cJSON *r, const struct table3_cell *x)
{
    const struct cost_prediction *p = &x->p;
    const char *keys[] = {"io", "mem", "compute", "total"}, *paper[] = {"io_ms", "mem_ms", "compute_ms", "total_ms"};
    double model[] = {p->io_ms, p->mem_ms, p->compute_ms, p->serial_ms};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", x->s.name);
    cJSON_AddStringToObject(o, "method", str(r, "method"));
    cJSON_AddStringToObject(o, "backend", str(r, "backend"));
    cJSON_AddStringToObject(o, "hw", x->hw.name);
    cJSON_AddStringToObject(o, "hw_from", x->from_given ? "given" : "paper");
    /* what the *_rel_err say: the model's error, or two machines' difference */
    cJSON_AddStringToObject(o, "difference", x->other_machine ? "machines" : "model error");
    cJSON_AddStringToObject(o, "dtype", x->c.dtype);
    for (int k = 0; k < 4; k++) {
        char key[40];
        double pv = num(r, paper[k]);
        snprintf(key, sizeof key, "paper_%s_ms", keys[k]);
        cJSON_AddNumberToObject(o, key, pv);
        snprintf(key, sizeof key, "model_%s_ms", keys[k]);
        cJSON_AddNumberToObject(o, key, model[k]);
        snprintf(key, sizeof key, "%s_rel_err", keys[k]);
        cJSON_AddNumberToObject(o, key, cost_rel_err(model[k], pv));
    }
    cJSON_AddStringToObject(o, "notes", x->notes);
    cJSON_AddStringToObject(o, "volume_source", x->c.vol.source);
    if (p->device)
        cJSON_AddItemToObject(o, "device", table3_device_json(x));
    return o;
}

/* The row's Markdown line. */
static void table3_row_md(struct strbuf *md, const cJSON *r, const struct table3_cell *x)
{
    const struct cost_prediction *p = &x->p;
    bool mach = x->other_machine;
    char io[96], mem[96], comp[96], total[96];
    beside_paper(io, sizeof io, num(r, "io_ms"), p->io_ms, mach);
    if (num(r, "mem_ms") == 0 && p->mem_ms == 0)
        snprintf(mem, sizeof mem, "0 / 0");
    else
        beside_paper(mem, sizeof mem, num(r, "mem_ms"), p->mem_ms, mach);
    beside_paper(comp, sizeof comp, num(r, "compute_ms"), p->compute_ms, mach);
    beside_paper(total, sizeof total, num(r, "total_ms"), p->serial_ms, mach);
    strbuf_add(md, "| %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s%s%s |\n", x->s.name, str(r, "method"),
               str(r, "backend"), x->hw.name, x->from_given ? "*given*" : "paper", io, mem, comp, total, x->notes,
               mach && x->notes[0] ? "; " : "", mach ? "another machine than the paper's: a difference, not an error" : "");
}

/* Every row of Table 3 priced into rows and md; the rows on a device
 * (their profile has one) also into dev, a second table. */
static int table3_rows(const struct fb_settings *set, const cJSON *t, const struct hw_profile *given, cJSON *rows,
                       struct strbuf *md, struct strbuf *dev, char *err, size_t errlen)
{
    const cJSON *shares = cJSON_GetObjectItemCaseSensitive(t, "dram_share"), *r;
    struct table3_cell *x = malloc(sizeof *x);
    int rc = x ? 0 : err_set(err, errlen, "table 3: out of memory");
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "rows"))
    {
        if (rc != 0 || (rc = price_table3_row(set, r, shares, given, x, err, errlen)) != 0)
            break;
        cJSON_AddItemToArray(rows, table3_row_json(r, x));
        table3_row_md(md, r, x);
        if (x->p.device)
            table3_device_md(dev, r, x);
    }
    free(x);
    return rc;
}

/* The device rows' table, when there is one. */
static void table3_device_section(struct strbuf *md, const struct strbuf *dev)
{
    if (dev->s)
        strbuf_add(md, "\nOn the device, per token, apart from the totals above: the cost model's device terms "
                       "(sim/device_terms.h) with the device object of each row's profile (its sources there): "
                       "the FFN rows read from flash uploaded to the device, the logits (and x, for a host-side "
                       "selector) downloaded, every launch and every wait. Public specifications, not measurements; "
                       "on unified memory nothing is copied.\n\n"
                       "| model | method | backend | profile | uploaded (h2d) | d2h | launches | waits (sync) | "
                       "serial total | paper / model + device (error) |\n|---|---|---|---|---|---|---|---|---|---|\n%s",
                   dev->s);
}

int paper_write_table3(const struct fb_settings *set, struct out_manifest *folder, const char *out_dir, const struct paper_given *g,
                       cJSON *provenance, char **md_out, char *err, size_t errlen)
{
    if (paper_densities_check(set, err, errlen) != 0)
        return -1;
    struct hw_profile given;
    if (has_given(g) && load_hw(set, g, g->hw, &given, err, errlen) != 0)
        return -1;
    cJSON *t = load_json(set, "paper/table3.json", err, errlen);
    if (!t)
        return -1;
    int rc = -1;
    struct strbuf md = {0}, dev = {0};
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(root, "provenance", provenance);
    cJSON_AddStringToObject(root, "table", "Table 3: end-to-end latency per token (ms)");
    if (has_given(g))
        cJSON_AddStringToObject(root, "hw_given", given.path);
    cJSON *rows = cJSON_AddArrayToObject(root, "rows");
    table3_intro(&md, has_given(g) ? &given : NULL);
    if (table3_rows(set, t, has_given(g) ? &given : NULL, rows, &md, &dev, err, errlen) != 0)
        goto out;
    strbuf_add(&md, "\nNot derivable from what the paper publishes: its Metal \"All\" compute (438 and "
                "271 ms) is slower than its dense compute (193 and 125 ms); a bandwidth model of the "
                "same kernels cannot produce that, so those cells show the model's bandwidth-bound "
                "figure. Falcon's memory management is a real prediction (rate fitted on OPT's row).\n");
    table3_device_section(&md, &dev);
    rc = write_outputs(folder, out_dir, "table3", root, md.s ? md.s : "", err, errlen);
    hand_over(rc, &md, md_out);
out:
    free(dev.s);
    free(md.s);
    cJSON_Delete(root);
    cJSON_Delete(t);
    return rc;
}

/* One DRAM share of Fig. 7: the window the FFN cache holds there, priced,
 * into rows, md and csv. 0 (a share too small is a row saying so), or -1
 * with err. */
static int fig7_point(const struct model_shape *s, struct hw_profile *hw, const char *dtype, double pred, int pct,
                      cJSON *rows, struct strbuf *md, struct strbuf *csv, char *err, size_t errlen)
{
    double share = pct / 100.0;
    struct cost_config c = {.shape = s, .hw = hw, .policy = policy_spec_of(&policy_window, 1),
                            .layout = layout_spec_of(&layout_bundled, 0),
                            .io_threads = hw->io_threads, .context_tokens = 256, .predictor_fraction = pred,
                            .dram_share = share};
    snprintf(c.dtype, sizeof c.dtype, "%s", dtype);
    /* DRAM left for the FFN cache at this share, from an empty-cache prediction. */
    struct cost_prediction p0, p;
    volumes_from_fractions(s, &policy_window, 0, 0, &c.vol);
    if (cost_predict(&c, &p0, err, errlen) != 0)
        return -1;
    double ffn_bytes = (double)cost_row_bytes(dtype, unit_neuron_weights(s)) * s->d_ff * s->n_layers;
    double held = (share * p0.model_bytes - p0.dram_total) / ffn_bytes;
    if (held < paper_s_agg(1)) {
        strbuf_add(md, "| %d%% | — | — | — | the FFN cache cannot hold one token's neurons | | | |\n", pct);
        return 0;
    }
    if (held > 1)
        held = 1;
    double tokens = s_agg_tokens(held);
    double fresh = paper_s_agg(tokens) - paper_s_agg(tokens > 2 ? tokens - 1 : 1);
    if (tokens < 2)
        fresh = held; /* a one-token window reloads everything it holds */
    c.policy = policy_spec_of(&policy_window, (uint64_t)lround(tokens)); /* a label: volumes given */
    volumes_from_fractions(s, &policy_window, fresh, held, &c.vol);
    if (cost_predict(&c, &p, err, errlen) != 0)
        return -1;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "dram_share", share);
    cJSON_AddNumberToObject(o, "window_tokens", tokens);
    cJSON_AddNumberToObject(o, "ffn_held", held);
    cJSON_AddNumberToObject(o, "ffn_new_per_token", fresh);
    cJSON_AddNumberToObject(o, "io_ms", p.io_ms);
    cJSON_AddNumberToObject(o, "mem_ms", p.mem_ms);
    cJSON_AddNumberToObject(o, "compute_ms", p.compute_ms);
    cJSON_AddNumberToObject(o, "total_ms", p.serial_ms);
    cJSON_AddItemToArray(rows, o);
    strbuf_add(md, "| %d%% | %.1f | %.1f%% | %.2f%% | %.1f | %.1f | %.1f | %.1f |\n", pct, tokens, 100 * held,
               100 * fresh, p.io_ms, p.mem_ms, p.compute_ms, p.serial_ms);
    strbuf_add(csv, "%.2f,%.3f,%.5f,%.6f,%.4f,%.4f,%.4f,%.4f\n", share, tokens, held, fresh, p.io_ms, p.mem_ms,
               p.compute_ms, p.serial_ms);
    return 0;
}

int paper_write_fig7(const struct fb_settings *set, struct out_manifest *folder, const char *out_dir, const struct paper_given *g,
                     cJSON *provenance, char **md_out, char *err, size_t errlen)
{
    if (paper_densities_check(set, err, errlen) != 0)
        return -1;
    struct model_shape s;
    struct hw_profile hw;
    if (model_shape_load(set, "opt-6.7b", &s, err, errlen) != 0 ||
        table_hw(set, g, "rtx4090-gpu", &hw, err, errlen) != 0)
        return -1;
    const char *dtype = fig7_dtype(g);
    char what[256]; /* the figure's subject, in its title, JSON and Markdown */
    snprintf(what, sizeof what, "OPT-6.7B, %s, %s profile%s", dtype, hw.name,
             has_given(g) ? " (given in place of the paper's rtx4090-gpu)" : "");
    int rc = -1;
    struct strbuf md = {0}, csv = {0};
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(root, "provenance", provenance);
    char figure[400];
    snprintf(figure, sizeof figure, "Fig. 7: latency per token against the DRAM share, %s", what);
    cJSON_AddStringToObject(root, "figure", figure);
    cJSON_AddStringToObject(root, "hw", hw.name);
    cJSON_AddStringToObject(root, "hw_from", has_given(g) ? "given" : "paper");
    cJSON_AddStringToObject(root, "dtype", dtype);
    cJSON_AddStringToObject(root, "s_agg", "s_agg(k) = 0.2062 k^0.322 - 0.1062, through App. C.1: 10% at k=1, 24% at k=5, 2.4% new at k=5");
    cJSON *rows = cJSON_AddArrayToObject(root, "rows");
    strbuf_add(&md, "# Fig. 7 (modelled) — %s\n\n", what);
    strbuf_add(&md, "The window grows with the DRAM share: the FFN cache gets what the share leaves after "
                "embeddings, attention and predictor; the window length follows from s_agg(k) = "
                "0.2062·k^0.322 − 0.1062, the curve through App. C.1's three figures (10%% of the FFN "
                "for one token, 24%% over five, 2.4%% new per token there).\n\n"
                "| DRAM share | window tokens | FFN held | FFN new per token | I/O ms | mem ms | compute ms | total ms |\n"
                "|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    strbuf_add(&csv, "dram_share,window_tokens,ffn_held,ffn_new,io_ms,mem_ms,compute_ms,total_ms\n");
    double pred = 0;
    paper_density(set, "opt-6.7b", "predictor_model_fraction", &pred, NULL, 0);
    for (int pct = 35; pct <= 80; pct += 5)
        if (fig7_point(&s, &hw, dtype, pred, pct, rows, &md, &csv, err, errlen) != 0)
            goto out;
    if (write_outputs(folder, out_dir, "fig7", root, md.s ? md.s : "", err, errlen) != 0)
        goto out;
    char path[4200], stem[4200];
    snprintf(path, sizeof path, "%s/fig7.csv", out_dir);
    if (atomic_write_text(folder, path, csv.s ? csv.s : "", err, errlen) != 0)
        goto out;
    snprintf(stem, sizeof stem, "%s/fig7", out_dir);
    snprintf(figure, sizeof figure, "%s (modelled)", what);
    const struct gnuplot_arg args[] = {GP_TEXT("csv", path), GP_TEXT("plot_title", figure)};
    rc = gnuplot_draw(set, folder, "fig7_dram_share.gp", args, 2, stem, err, errlen);
    hand_over(rc, &md, md_out);
out:
    free(md.s);
    free(csv.s);
    cJSON_Delete(root);
    return rc;
}
