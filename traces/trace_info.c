/* trace info's figures: calibration against the profile's targets, bits
 * per neuron, trace_info.json (trace_info.h). */
#include "traces/trace_info.h"

/* source's targets object, NULL without one */
static const cJSON *targets_of(const cJSON *source)
{
    return cJSON_GetObjectItemCaseSensitive(source, "targets");
}

/* A synthetic trace's target, -1 when its header has none. */
static double target(const cJSON *targets, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(targets, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

double trace_layer_target(const cJSON *source, uint32_t l)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(targets_of(source), "density_layers");
    const cJSON *v = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, (int)l) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The predictor's rows: only a trace with predicted sets has them. -1
 * (printed "-", null in JSON) where no sequence has 5 tokens. */
static int predicted_rows(const struct trace_stats *s, struct trace_calib_row *r)
{
    int n = 0;
    r[n++] = (struct trace_calib_row){"predicted / active", "pred_over_active", -1, s->pred_over_active, false};
    r[n++] = (struct trace_calib_row){"recall (active that were predicted)", "recall", -1, s->recall, true};
    r[n++] = (struct trace_calib_row){"predicted density (predictor alone)", "pred_density", -1,
                                      s->mean_density_pred, true};
    r[n++] = (struct trace_calib_row){"window of 5 tokens holds (predicted)", "window5_pred", -1,
                                      s->sagg_k_max >= 5 ? s->sagg_pred[4] : -1, true};
    r[n++] = (struct trace_calib_row){"new per token, window k=4 (predicted)", "new_per_token_pred", -1,
                                      s->sagg_k_max >= 5 ? trace_stats_new_per_token(s->sagg_pred, 4) : -1, true};
    return n;
}

int trace_calibration_rows(const struct trace *tr, const struct trace_stats *s, const cJSON *source,
                           struct trace_calib_row *r)
{
    const cJSON *targets = targets_of(source);
    uint32_t L = s->n_layers, mid = trace_middle_layer(L);
    int n = 0;
    r[n++] = (struct trace_calib_row){"active density, first layer", "density_first", -1, s->density_active[0], true};
    r[n++] = (struct trace_calib_row){"active density, middle layer", "density_middle", -1, s->density_active[mid],
                                      true};
    r[n++] = (struct trace_calib_row){"active density, last layer", "density_last", -1, s->density_active[L - 1],
                                      true};
    r[n++] = (struct trace_calib_row){"active density, mean", "density_mean", -1, s->mean_density_active, true};
    /* only Llama 2's profile has it (App. C.5): no row of dashes elsewhere */
    if (target(targets, "window2_active") >= 0)
        r[n++] = (struct trace_calib_row){"window of 2 tokens holds (active)", "window2_active", -1,
                                          s->sagg_k_max >= 2 ? s->sagg_active[1] : -1, true};
    if (tr->meta.has_predicted)
        n += predicted_rows(s, r + n);
    if (s->density_channels)
        r[n++] = (struct trace_calib_row){"kept input channels, mean", "channel_density", -1, s->mean_density_channels,
                                          true};
    for (int i = 0; i < n; i++)
        r[i].target = target(targets, r[i].key);
    return n;
}

double trace_bits_per_neuron(const struct trace_stats *s, uint64_t bytes)
{
    uint64_t events = s->active_events + s->pred_events + s->chan_events;
    return events ? 8.0 * (double)bytes / (double)events : 0;
}

/* v, or null where it is -1 (no value) */
static void add_value(cJSON *o, const char *key, double v)
{
    if (v >= 0)
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *calibration_json(const struct trace *tr, const struct trace_stats *s, const cJSON *source)
{
    struct trace_calib_row rows[TRACE_CALIB_MAX_ROWS];
    int n = trace_calibration_rows(tr, s, source, rows);
    cJSON *cal = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "statistic", rows[i].key);
        add_value(o, "target", rows[i].target);
        add_value(o, "achieved", rows[i].achieved);
        cJSON_AddItemToArray(cal, o);
    }
    return cal;
}

cJSON *trace_info_json(const struct trace *tr, const struct trace_stats *s, const cJSON *source, cJSON *prov)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "provenance", prov);
    cJSON_AddItemToObject(root, "source", source ? cJSON_Duplicate(source, 1) : cJSON_CreateNull());
    cJSON_AddNumberToObject(root, "n_layers", tr->meta.n_layers);
    cJSON_AddNumberToObject(root, "d_model", tr->meta.d_model);
    cJSON_AddNumberToObject(root, "d_ff", tr->meta.d_ff);
    cJSON_AddStringToObject(root, "dtype", wtype_name(tr->meta.dtype));
    cJSON_AddStringToObject(root, "unit_kind", unit_kind_name(tr->meta.unit_kind));
    cJSON_AddNumberToObject(root, "units_per_layer", tr->meta.units);
    cJSON_AddNumberToObject(root, "tokens", (double)s->n_tokens);
    cJSON_AddNumberToObject(root, "sequences", (double)s->n_sequences);
    cJSON_AddNumberToObject(root, "file_bytes", (double)tr->file_bytes);
    cJSON_AddNumberToObject(root, "format_version", tr->version);
    cJSON_AddBoolToObject(root, "checked", tr->version >= TRACE_VERSION_CHECKED);
    cJSON_AddNumberToObject(root, "bits_per_neuron", trace_bits_per_neuron(s, tr->file_bytes));
    cJSON_AddNumberToObject(root, "check_bits_per_neuron", trace_bits_per_neuron(s, tr->check_bytes));
    cJSON_AddItemToObject(root, "density_active", cJSON_CreateDoubleArray(s->density_active, (int)s->n_layers));
    if (s->density_pred)
        cJSON_AddItemToObject(root, "density_predicted", cJSON_CreateDoubleArray(s->density_pred, (int)s->n_layers));
    if (s->density_channels) {
        cJSON_AddItemToObject(root, "density_channels", cJSON_CreateDoubleArray(s->density_channels, (int)s->n_layers));
        cJSON_AddNumberToObject(root, "mean_density_channels", s->mean_density_channels);
    }
    /* k = 1..sagg_k_max: [k-1] is s_agg(k) */
    cJSON_AddItemToObject(root, "sagg_active", cJSON_CreateDoubleArray(s->sagg_active, (int)s->sagg_k_max));
    if (tr->meta.has_predicted)
        cJSON_AddItemToObject(root, "sagg_predicted", cJSON_CreateDoubleArray(s->sagg_pred, (int)s->sagg_k_max));
    cJSON_AddNumberToObject(root, "hot10_share", s->hot10_share);
    cJSON_AddItemToObject(root, "calibration", calibration_json(tr, s, source));
    return root;
}
