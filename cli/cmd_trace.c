/* flashbed trace info|synth|export: look into a trace, generate a calibrated one,
 * or export one as rows for other tools (traces/trace_export.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "common/atomic_file.h"
#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/gnuplot.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/model_shape.h"
#include "common/options.h"
#include "common/out_path.h"
#include "common/provenance.h"
#include "common/unit_kind.h"
#include "common/wtype.h"
#include "traces/trace.h"
#include "traces/trace_export.h"
#include "traces/trace_info.h"
#include "traces/trace_stats.h"
#include "traces/trace_synth.h"

/* ---- trace synth ---- */
struct synth_opts {
    char *shape;
    uint64_t tokens, prompts, seed;
    char *dtype;
    double persist, zipf, recur, recur_decay, channel_density, active_density;
    char *like;
    bool fit;
    char *out;
};

#define O(f) offsetof(struct synth_opts, f)
static const struct opt_def synth_options[] = {
    {"shape", OPT_STRING, O(shape), "opt-6.7b", "NAME", "model shape (configs/models/NAME.json) or a .json path"},
    {"tokens", OPT_UINT, O(tokens), "256", "N", "tokens in all", .min = 1, .max = OPT_NO_MAX},
    {"prompts", OPT_UINT, O(prompts), "1", "N", "sequences (each a prompt, then generated tokens)",
     .min = 1, .max = OPT_NO_MAX},
    {"seed", OPT_UINT, O(seed), "1", "S", "random seed"},
    {"dtype", OPT_STRING, O(dtype), "f16", "TYPE", "weight type recorded in the header", .allowed = WTYPE_ALLOWED},
    {"persist", OPT_DOUBLE, O(persist), "0", "P", "chance a predicted neuron stays for the next token (calibrated)",
     .max = 1, .max_open = true},
    {"zipf", OPT_DOUBLE, O(zipf), "0.30", "A", "power-law exponent of neuron popularity (calibrated)", .max = 4},
    {"recur", OPT_DOUBLE, O(recur), "0.75", "R", "share of refills drawn from earlier tokens' sets (calibrated)", .max = 1},
    {"recur-decay", OPT_DOUBLE, O(recur_decay), "0.52", "D", "chance such a draw reaches one token further back (calibrated)",
     .max = 1, .max_open = true},
    {"channel-density", OPT_DOUBLE, O(channel_density), "0", "D",
     "input sparsity (the neuron source teal; replay --layout transposed): also record each token's kept input "
     "channels, this share of d_model per layer; 0: no channel sets", .max = 1},
    {"active-density", OPT_DOUBLE, O(active_density), "0", "D",
     "every layer's active density (the rows of down kept under teal), instead of the profile's curve; 0: the "
     "profile's", .max = 1},
    {"like", OPT_STRING, O(like), NULL, "TRACE",
     "a twin of this recorded trace (of --shape's model): its active density per layer, its tokens, sequences "
     "and prompt share (--tokens, --prompts and --active-density do not apply); reuse and popularity stay the "
     "generator's, so replaying the two side by side shows what a density alone misses"},
    {"fit", OPT_FLAG, O(fit), NULL, NULL,
     "with --like: also fit --zipf, --recur and --recur-decay to the recorded trace's reuse (its s_agg(k), "
     "k = 2..8, and its hottest 10%'s share; a coordinate search over about 30 twins built in memory, minutes "
     "at SmolLM2's shape) and print the fit"},
    {"out", OPT_STRING, O(out), NULL, "FILE", "trace file to write"},
    OPT_END,
};
#undef O

static const struct opt_command synth_command = {
    .name = "trace synth",
    .usage = "--out FILE [--shape NAME] [--tokens N] [--prompts N] [--seed S]",
    .summary = "Generates a synthetic activation trace whose statistics match what the paper\n"
               "reports for the shape's architecture: OPT-6.7B (Table 6 densities, ~3x predicted\n"
               "sets with 95% recall, App. C.1 window usage), Falcon-7B relufied, Persimmon-8B,\n"
               "Phi-2 relufied and Llama-2-7B with FATReLU (§3.1, Fig. 9b/9c, App. B.1, C),\n"
               "with power-law popularity; a profile holds by relative layer depth, and shapes\n"
               "the paper has nothing for get OPT-6.7B's. The header names the statistics used.\n"
               "Check it with flashbed trace info.",
    .opts = synth_options,
    .max_positional = 0,
};

/* --like (and --fit): p made a twin of the recorded trace, its reuse
 * fitted when asked, the fit printed. */
static int synth_like(struct synth_params *p, const char *like, bool fit, double **density, char *err, size_t errlen)
{
    struct synth_reuse reuse;
    if (synth_params_like(p, like, density, &reuse, err, errlen) != 0)
        return -1;
    if (!fit)
        return 0;
    double rms, before;
    struct cli_progress bar;
    struct progress_report report = cli_progress_report(&bar);
    p->progress = &report;
    int rc = synth_fit_reuse(p, &reuse, &rms, &before, err, errlen);
    cli_progress_end(&bar);
    p->progress = NULL;
    if (rc == 0)
        fb_info("fitted to %s's reuse: --zipf %.2f --recur %.2f --recur-decay %.2f; s_agg(2..8) and the hottest "
                "10%%'s share now %.4f from it (root mean square), %.4f with the knobs given",
                like, p->zipf, p->recur, p->recur_decay, rms, before);
    return rc;
}

/* p from the options (the knobs, then --like's twin): 0, or the exit status. */
static int synth_setup(const struct synth_opts *o, struct synth_params *p, double **like_density, char *err,
                       size_t errlen)
{
    p->tokens = o->tokens;
    p->prompts = o->prompts;
    p->seed = o->seed;
    wtype_parse(o->dtype, &p->dtype); /* one of the allowed names */
    p->persist = o->persist;
    p->zipf = o->zipf;
    p->recur = o->recur;
    p->recur_decay = o->recur_decay;
    p->channel_density = o->channel_density;
    p->active_density = o->active_density;
    if (o->fit && !o->like) {
        fb_error("trace synth --fit: needs --like TRACE (the recorded trace to fit)");
        return 2;
    }
    if (o->like && synth_like(p, o->like, o->fit, like_density, err, errlen) != 0) {
        fb_error("%s", err);
        return interrupted() ? 130 : 1;
    }
    return 0;
}

/* The trace written, reported: the exit status. */
static int synth_run(const struct synth_opts *o, struct synth_params *p, const char *shape_name)
{
    char err[512];
    int tmp_handle = atomic_tmp_watch(o->out); /* a second Ctrl-C removes the unfinished trace */
    struct cli_progress bar;
    struct progress_report report = cli_progress_report(&bar);
    p->progress = &report;
    int src = synth_write(p, o->out, err, sizeof err);
    cli_progress_end(&bar);
    cleanup_forget(tmp_handle);
    if (src != 0) {
        atomic_err_name_path(err, sizeof err, o->out);
        fb_error("%s", err);
        return interrupted() ? 130 : 1;
    }
    fb_info("wrote %s (%llu tokens, %s%s%s)", o->out, (unsigned long long)p->tokens, shape_name,
            o->like ? ", a twin of " : "", o->like ? o->like : "");
    return 0;
}

static int cmd_trace_synth(int argc, char **argv, const struct fb_settings *set)
{
    struct synth_opts o;
    int rc;
    if (!cli_start(&synth_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    char err[512];
    struct model_shape shape;
    rc = 2;
    if (!o.out) {
        fb_error("trace synth: needs --out FILE");
    } else if (out_file_ok("trace synth --out", o.out, 0) != 0) {
        rc = 1;
    } else if (model_shape_load(set, o.shape, &shape, err, sizeof err) != 0) {
        fb_error("trace synth --shape: %s", err);
        rc = FB_EXIT_FAILURE;
    } else if (o.prompts > o.tokens) {
        /* each sequence needs a token: a relation the table cannot declare */
        fb_error("trace synth: --tokens %llu is not at least --prompts %llu", (unsigned long long)o.tokens,
                 (unsigned long long)o.prompts);
    } else {
        struct synth_params p;
        synth_params_default(&p, &shape);
        double *like_density = NULL;
        interrupt_install();
        rc = synth_setup(&o, &p, &like_density, err, sizeof err);
        if (rc == 0)
            rc = synth_run(&o, &p, shape.name);
        free(like_density);
    }
    opts_free(&synth_command, &o);
    return rc;
}

/* ---- trace info ---- */
struct info_opts {
    char *out;
    bool plot, force;
};

#define O(f) offsetof(struct info_opts, f)
static const struct opt_def info_options[] = {
    {"out", OPT_STRING, O(out), NULL, "DIR", "also write trace_info.json and sagg.csv to DIR"},
    {"plot", OPT_FLAG, O(plot), NULL, NULL, "draw fig4a.png/svg (s_agg(k), the paper's Fig. 4a) in --out"},
    {"force", OPT_FLAG, O(force), NULL, NULL, FORCE_HELP},
    OPT_END,
};
#undef O

static const struct opt_command info_command = {
    .name = "trace info",
    .usage = "FILE [--out DIR [--plot]]",
    .summary = "Prints a trace's header and statistics: density per layer, predictor recall,\n"
               "the aggregated-usage curve s_agg(k) for k = 1..16 (Fig. 4a) and, for\n"
               "synthetic traces, each calibration target beside the value reached. Reading\n"
               "the trace checks every checksum (format version 2; version 1 has none).",
    .opts = info_options,
    .max_positional = 1,
};

static void fmt_value(char *buf, size_t len, double v, bool percent)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else if (percent)
        snprintf(buf, len, "%.2f%%", 100 * v);
    else
        snprintf(buf, len, "%.2fx", v);
}

/* s_agg(k) for k = 1..sagg_k_max: beyond the longest sequence there is no
 * window to measure, so no row (rather than 0% and a negative increment). */
static void print_sagg(const struct trace_meta *m, const struct trace_stats *s)
{
    printf("\naggregated usage s_agg(k) (Fig. 4a): share of a layer's neurons used by k consecutive tokens\n");
    if (s->sagg_k_max < 16)
        printf("(k up to %u: no sequence of this trace is longer)\n", s->sagg_k_max);
    printf("| k | active | new per token (active) | predicted | new per token (predicted) |\n|---:|---:|---:|---:|---:|\n");
    for (int k = 1; k <= (int)s->sagg_k_max; k++) {
        printf("| %d | %.2f%% | %.2f%% |", k, 100 * s->sagg_active[k - 1],
               100 * trace_stats_new_per_token(s->sagg_active, k - 1));
        if (m->has_predicted)
            printf(" %.2f%% | %.2f%% |\n", 100 * s->sagg_pred[k - 1],
                   100 * trace_stats_new_per_token(s->sagg_pred, k - 1));
        else
            printf(" - | - |\n");
    }
}

/* The density table: per layer, target, active, predicted and (with
 * channel sets) kept channels. */
static void print_densities(const struct trace_meta *m, const struct trace_stats *s, const cJSON *source)
{
    printf("\ndensity per layer\n| layer | target | active | predicted |%s\n|---:|---:|---:|---:|%s\n",
           s->density_channels ? " channels |" : "", s->density_channels ? "---:|" : "");
    for (uint32_t l = 0; l < m->n_layers; l++) {
        char tv[32];
        fmt_value(tv, sizeof tv, trace_layer_target(source, l), true);
        printf("| %u | %s | %.2f%% |", l, tv, 100 * s->density_active[l]);
        if (s->density_pred)
            printf(" %.2f%% |", 100 * s->density_pred[l]);
        else
            printf(" - |");
        if (s->density_channels)
            printf(" %.2f%% |", 100 * s->density_channels[l]);
        printf("\n");
    }
}

static void print_info(const char *path, const struct trace *tr, const struct trace_stats *s,
                       const cJSON *source)
{
    const struct trace_meta *m = &tr->meta;
    printf("trace %s\n", path);
    if (tr->version >= TRACE_VERSION_CHECKED)
        printf("  format version %u (CRC-32C per token and layer: checked), %llu bytes (%.2f bits per recorded "
               "neuron, %.3f of them checksums and block lengths)\n",
               tr->version, (unsigned long long)tr->file_bytes, trace_bits_per_neuron(s, tr->file_bytes),
               trace_bits_per_neuron(s, tr->check_bytes));
    else
        printf("  format version %u (no checksums: unchecked), %llu bytes (%.2f bits per recorded neuron)\n",
               tr->version, (unsigned long long)tr->file_bytes, trace_bits_per_neuron(s, tr->file_bytes));
    printf("  shape: %u layers, d_model %u, d_ff %u, %s weights, %s FFN\n", m->n_layers, m->d_model, m->d_ff,
           wtype_name(m->dtype), m->ffn_kind == FFN_GLU ? "glu" : "relu");
    printf("  units: %s, %u per layer%s\n", unit_kind_name(m->unit_kind), m->units,
           m->has_channels ? " (and channel bundles, d_model per layer)" : "");
    printf("  tokens: %llu (%llu prompt, %llu generated) in %llu sequence(s)\n",
           (unsigned long long)s->n_tokens, (unsigned long long)s->n_prompt_tokens,
           (unsigned long long)s->n_generated_tokens, (unsigned long long)s->n_sequences);
    printf("  predicted sets: %s\n", m->has_predicted ? "yes" : "no");
    if (s->density_channels)
        printf("  channel sets: yes (input channels kept: %.2f%% of d_model %u on average)\n",
               100 * s->mean_density_channels, m->d_model);
    else
        printf("  channel sets: no\n");
    printf("  source: %s\n", m->source);
    const cJSON *stat = cJSON_GetObjectItemCaseSensitive(source, "statistics");
    if (cJSON_IsString(stat))
        printf("  statistics from: %s\n", stat->valuestring);
    const cJSON *prof = cJSON_GetObjectItemCaseSensitive(source, "profile");
    const cJSON *prof_src = cJSON_GetObjectItemCaseSensitive(source, "profile_source");
    if (cJSON_IsString(prof))
        printf("  profile: %s\n", prof->valuestring);
    /* a shape the paper did not measure: also what the profile rests on */
    if (cJSON_IsString(prof_src) && !(cJSON_IsString(stat) && strcmp(stat->valuestring, prof_src->valuestring) == 0))
        printf("  profile statistics: %s\n", prof_src->valuestring);
    print_densities(m, s, source);
    printf("\nhottest 10%% of a layer's neurons take %.1f%% of its activations; uniform draws of the same set sizes "
           "give %.1f%%: %s\n",
           100 * s->hot10_share, 100 * s->hot10_uniform, trace_stats_hot10_verdict(s));
    struct trace_calib_row rows[TRACE_CALIB_MAX_ROWS];
    int n = trace_calibration_rows(tr, s, source, rows);
    printf("\ncalibration (the profile's target vs achieved)\n| statistic | target | achieved |\n|---|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        char tv[32], av[32];
        fmt_value(tv, sizeof tv, rows[i].target, rows[i].percent);
        fmt_value(av, sizeof av, rows[i].achieved, rows[i].percent);
        printf("| %s | %s | %s |\n", rows[i].name, tv, av);
    }
    print_sagg(m, s);
}

static int write_info_files(struct out_manifest *folder, const char *dir, bool plot, const struct fb_settings *set,
                            const struct trace *tr, const struct trace_stats *s, const cJSON *source, cJSON *params)
{
    if (mkdir_p(dir, 0755) != 0) {
        fb_error("trace info --out: %s: cannot create: %s", dir, strerror(errno));
        cJSON_Delete(params);
        return -1;
    }
    char path[4200];
    cJSON *prov = provenance_new();
    cJSON_AddItemToObject(prov, "parameters", params);
    cJSON *j = trace_info_json(tr, s, source, prov);
    snprintf(path, sizeof path, "%s/trace_info.json", dir);
    int rc = write_json_file(folder, path, j);
    cJSON_Delete(j);
    char err[4400];
    if (rc == 0 && (rc = trace_stats_write_sagg(folder, dir, s, tr, plot, set, err, sizeof err)) != 0)
        fb_error("%s", err);
    return rc;
}

static const char *const info_files[] = {"trace_info.json", "sagg.csv", NULL};

static int cmd_trace_info(int argc, char **argv, const struct fb_settings *set)
{
    struct info_opts o;
    char *pos[1] = {NULL};
    int npos = 0;
    int rc;
    if (!cli_start(&info_command, &o, sizeof o, argc, argv, pos, &npos, &rc))
        return rc;
    if (npos != 1) {
        fb_error("trace info: needs a trace FILE");
        opts_free(&info_command, &o);
        return 2;
    }
    if (o.plot && !o.out) {
        fb_error("trace info: --plot needs --out DIR");
        opts_free(&info_command, &o);
        return 2;
    }
    struct out_manifest *folder = NULL;
    if (o.out && out_result_dir_ok("trace info --out", o.out, o.force, false, info_files, &folder) != 0) {
        opts_free(&info_command, &o);
        return 1;
    }
    char err[1024];
    struct trace tr;
    if (trace_load(pos[0], &tr, err, sizeof err) != 0) {
        fb_error("%s", err);
        opts_free(&info_command, &o);
        return out_result_dir_close(folder, 1);
    }
    struct trace_stats s;
    rc = 0;
    if (trace_stats_compute(&tr, &s) != 0) {
        fb_error("%s: out of memory computing statistics", pos[0]);
        rc = 1;
    } else {
        cJSON *source = cJSON_Parse(tr.meta.source);
        print_info(pos[0], &tr, &s, source);
        if (o.out) {
            cJSON *params = opts_to_json(&info_command, &o);
            cJSON_AddStringToObject(params, "trace", pos[0]);
            rc = write_info_files(folder, o.out, o.plot, set, &tr, &s, source, params) == 0 ? 0 : 1;
        }
        cJSON_Delete(source);
        trace_stats_free(&s);
    }
    trace_free(&tr);
    opts_free(&info_command, &o);
    return out_result_dir_close(folder, rc);
}

/* ---- trace export ---- */
struct export_opts {
    char *format;
    char *out;
};

#define O(f) offsetof(struct export_opts, f)
static const struct opt_def export_options[] = {
    {"format", OPT_STRING, O(format), "csv", "FORMAT", "csv (neurons.csv, tokens.csv) or npz-friendly (flat <u4/u1 arrays)",
     .allowed = "csv|npz-friendly"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "new folder to write (must not exist)"},
    OPT_END,
};
#undef O

static const struct opt_command export_command = {
    .name = "trace export",
    .usage = "FILE --out DIR [--format csv|npz-friendly]",
    .summary = "Writes a trace as one row per (token, layer, neuron), active and (when the\n"
               "trace has them) predicted, for tools that read neither flashbed nor its Python\n"
               "module: csv gives DIR/neurons.csv (token,layer,neuron,kind) and DIR/tokens.csv\n"
               "(token,flags,generated,sequence_start); npz-friendly gives little-endian arrays\n"
               "for numpy's np.fromfile (active_token/layer/neuron.u32, predicted_*.u32,\n"
               "tokens_flags.u8). Both write DIR/export.json: the files, the trace's header\n"
               "and the provenance. The trace is streamed and every checksum checked; DIR\n"
               "appears only when all of it was written.",
    .opts = export_options,
    .max_positional = 1,
};

static int cmd_trace_export(int argc, char **argv)
{
    struct export_opts o;
    char *pos[1] = {NULL};
    int npos = 0;
    int rc;
    if (!cli_start(&export_command, &o, sizeof o, argc, argv, pos, &npos, &rc))
        return rc;
    if (o.out)
        out_path_trim(o.out); /* "d/" names the folder d */
    enum trace_export_format fmt = TRACE_EXPORT_CSV;
    struct out_parents made;
    char err[4400];
    rc = 2;
    if (npos != 1)
        fb_error("trace export: needs a trace FILE");
    else if (!o.out)
        fb_error("trace export: needs --out DIR");
    else if (trace_export_format_parse(o.format, &fmt) != 0) /* the table's .allowed refuses it first */
        fb_error("trace export --format: unknown format '%s' (csv or npz-friendly)", o.format);
    else if (out_new_dir_ok("trace export --out", o.out) != 0)
        rc = 1;
    else if (out_parents_ok("trace export --out", o.out, &made) != 0)
        rc = 1;
    else {
        cJSON *prov = provenance_new();
        cJSON *params = opts_to_json(&export_command, &o);
        cJSON_AddStringToObject(params, "trace", pos[0]);
        cJSON_AddItemToObject(prov, "parameters", params);
        struct trace_export_counts c;
        if (trace_export(pos[0], o.out, fmt, prov, &c, err, sizeof err) != 0) {
            fb_error("%s", err);
            out_parents_undo(&made); /* folders made above --out go again */
            rc = 1;
        } else {
            out_parents_keep(&made);
            fb_info("wrote %s (%s: %llu tokens, %llu active, %llu predicted and %llu channel rows)", o.out, o.format,
                    (unsigned long long)c.tokens, (unsigned long long)c.active_rows,
                    (unsigned long long)c.predicted_rows, (unsigned long long)c.channel_rows);
            rc = 0;
        }
    }
    opts_free(&export_command, &o);
    return rc;
}

static int trace_export_run(int argc, char **argv, const struct fb_settings *set)
{
    (void)set; /* exporting reads no setting */
    return cmd_trace_export(argc, argv);
}

const struct subcommand trace_subcommands[] = {
    {"info", "density per layer, predictor recall and s_agg(k) of a trace (Fig. 4a)", &info_command, NULL,
     cmd_trace_info},
    {"synth", "a synthetic trace calibrated to the paper's statistics", &synth_command, NULL, cmd_trace_synth},
    {"export", "a trace as CSV or flat numpy-readable arrays, one row per token, layer, neuron", &export_command,
     NULL, trace_export_run},
    {NULL, NULL, NULL, NULL, NULL},
};

int cmd_trace(int argc, char **argv, const struct fb_settings *set)
{
    return cli_subcommands_run("trace", trace_subcommands, argc, argv, set);
}
