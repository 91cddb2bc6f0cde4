/* Per-architecture statistics of trace synth (traces/synth_profile.h),
 * measured on generated traces: each shape gets its architecture's profile,
 * Persimmon's early layers are sparser than its late ones by the chosen
 * contrast, Phi-2's and Llama 2's middle layers are densest, the means are
 * the paper's (or the documented choices), the header records the
 * statistics used, and OPT's traces are byte for byte what they were before
 * the profiles came. Counts are exact: each layer's active set holds
 * round(density * d_ff) neurons on every token. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"

#include "common/model_shape.h"
#include "traces/trace.h"
#include "traces/trace_stats.h"
#include "traces/trace_synth.h"

static char dir[] = "/tmp/flashbed-synth-profiles-XXXXXX";
static char err[1024];

/* The contrast the paper measures for OPT-6.7B (Table 6, last over first
 * layer), which the qualitative profiles reuse. */
#define CONTRAST (0.0536 / 0.0156)

static int synth(const char *shape_name, struct model_shape *shape, uint64_t tokens, struct trace *tr)
{
    const struct fb_settings set = fb_settings_defaults();
    char path[256];
    snprintf(path, sizeof path, "%s/%s.trace", dir, shape_name);
    if (model_shape_load(&set, shape_name, shape, err, sizeof err) != 0)
        return -1;
    struct synth_params p;
    synth_params_default(&p, shape);
    p.tokens = tokens;
    int rc = synth_write(&p, path, err, sizeof err) == 0 ? trace_load(path, tr, err, sizeof err) : -1;
    unlink(path);
    return rc;
}

/* Layer l's active count, the same on every token (or UINT32_MAX if not). */
static uint32_t layer_count(const struct trace *tr, uint32_t l, bool predicted)
{
    uint32_t first, n;
    trace_set(tr, predicted, 0, l, &first);
    for (uint64_t t = 1; t < tr->n_tokens; t++) {
        trace_set(tr, predicted, t, l, &n);
        if (n != first)
            return UINT32_MAX;
    }
    return first;
}

static double mean_density(const struct trace *tr)
{
    double sum = 0;
    for (uint32_t l = 0; l < tr->meta.n_layers; l++)
        sum += layer_count(tr, l, false);
    return sum / tr->meta.n_layers / tr->meta.d_ff;
}

static uint32_t want(double density, uint32_t d_ff)
{
    return (uint32_t)lround(density * d_ff);
}

/* Predicted sets are round(ratio * density * d_ff): exact multiples up to rounding. */
static void check_pred_ratio(const struct trace *tr, double ratio)
{
    for (uint32_t l = 0; l < tr->meta.n_layers; l++) {
        uint32_t a = layer_count(tr, l, false), p = layer_count(tr, l, true);
        CHECK(fabs(p - ratio * a) <= ratio / 2 + 0.5);
    }
}

static cJSON *header(const struct trace *tr)
{
    return cJSON_Parse(tr->meta.source);
}

static const char *header_str(const cJSON *h, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double header_target(const cJSON *h, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(h, "targets"), key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The table itself: every entry complete, its curve averaging its mean
 * over the paper model's layers, its predicted sets fitting in d_ff. */
static void table_is_complete(void)
{
    uint32_t n;
    const struct synth_profile *p = synth_profiles(&n);
    CHECK_U64(n, 5);
    for (uint32_t i = 0; i < n; i++) {
        CHECK(p[i].name && p[i].arch && p[i].label && p[i].cite && p[i].source);
        CHECK(strstr(p[i].source, "aper") != NULL); /* cites the paper */
        CHECK(synth_profile_named(p[i].name) == &p[i]);
        struct synth_targets t;
        synth_profile_targets(&p[i], &t);
        double sum = 0, lo = 1, hi = 0;
        for (uint32_t l = 0; l < p[i].ref_layers; l++) {
            double d = synth_profile_density(&p[i], &t, l / (double)(p[i].ref_layers - 1));
            sum += d;
            lo = fmin(lo, d);
            hi = fmax(hi, d);
        }
        CHECK_NEAR(sum / p[i].ref_layers, t.density_mean, 1e-9);
        CHECK(lo > 0 && hi * t.pred_over_active < 1);
        CHECK(t.recall > 0 && t.recall <= 1);
        for (uint32_t k = 1; k < p[i].n_knots; k++)
            CHECK(p[i].knots[k].depth > p[i].knots[k - 1].depth);
    }
    CHECK(synth_profile_named("gpt-2") == NULL);
}

/* Which profile each shape in configs/models gets, and its paper_statistics
 * naming that profile first. */
static void shapes_pick_profiles(void)
{
    const struct fb_settings set = fb_settings_defaults();
    static const char *const expect[][2] = {
        {"opt-6.7b", "opt-6.7b"}, {"opt-1.3b", "opt-6.7b"}, {"opt-125m", "opt-6.7b"},
        {"opt-tiny", "opt-6.7b"}, {"falcon-7b", "falcon-7b"}, {"falcon-tiny", "falcon-7b"},
        {"persimmon-8b", "persimmon-8b"}, {"persimmon-tiny", "persimmon-8b"}, {"phi-2", "phi-2"},
        {"phi-tiny", "phi-2"}, {"llama-2-7b-fatrelu", "llama-2-7b-fatrelu"},
        {"llama-relu-tiny", "llama-2-7b-fatrelu"}, {"llama-2-7b", "opt-6.7b"},
        {"llama-1.1b", "opt-6.7b"}, {"llama-tiny", "opt-6.7b"}, {"llama-1.1b-fatrelu", "llama-2-7b-fatrelu"},
    };
    struct model_shape s;
    bool fallback;
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        CHECK(model_shape_load(&set, expect[i][0], &s, err, sizeof err) == 0);
        CHECK_STR(synth_profile_for(&s, &fallback)->name, expect[i][1]);
        CHECK(fallback == (strncmp(expect[i][0], "llama", 5) == 0 && strcmp(s.ffn_activation, "swiglu") == 0));
    }
    /* every shape there, listed above or not */
    char path[4200];
    snprintf(path, sizeof path, "%s/models", set.configs_dir);
    DIR *d = opendir(path);
    CHECK(d != NULL);
    int seen = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
        CHECK(model_shape_load(&set, name, &s, err, sizeof err) == 0);
        const char *picked = synth_profile_for(&s, &fallback)->name;
        if (strncmp(s.paper_statistics, picked, strlen(picked)) != 0)
            fprintf(stderr, "%s: paper_statistics \"%s\" does not name %s\n", name, s.paper_statistics, picked);
        CHECK(strncmp(s.paper_statistics, picked, strlen(picked)) == 0);
        seen++;
    }
    if (d)
        closedir(d);
    CHECK(seen >= 16);
}

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* FNV-1a of a trace file's body (what follows the header's source JSON) as
 * format version 1 wrote it: from version 2, the header's CRC and each
 * block's length and CRC and the end marker's CRC are left out, so the
 * hash still compares the encoded sets with those of older flashbeds. */
static uint64_t body_hash(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n);
    size_t got = b ? fread(b, 1, n, f) : 0;
    fclose(f);
    if (got != n || n < 48) {
        free(b);
        return 0;
    }
    uint32_t version = b[8] | b[9] << 8, layers = b[12] | b[13] << 8;
    size_t fixed = version >= 3 ? 56 : 48; /* version 3 added the unit kind and count */
    uint32_t slen = b[fixed - 4] | b[fixed - 3] << 8 | b[fixed - 2] << 16 | (uint32_t)b[fixed - 1] << 24;
    uint64_t tokens = 0;
    for (int i = 7; i >= 0; i--)
        tokens = tokens << 8 | b[fixed - 12 + i];
    size_t pos = fixed + slen;
    uint64_t h = 0xcbf29ce484222325ull;
    if (version == 1) {
        h = fnv1a(h, b + pos, n - pos);
        free(b);
        return h;
    }
    pos += 4;
    for (uint64_t t = 0; t < tokens && pos + 2 <= n; t++) {
        h = fnv1a(h, b + pos, 2);
        pos += 2;
        for (uint32_t l = 0; l < layers && pos < n; l++) {
            uint64_t len = 0;
            for (int shift = 0; pos < n; shift += 7) {
                len |= (uint64_t)(b[pos] & 0x7f) << shift;
                if (!(b[pos++] & 0x80))
                    break;
            }
            if (len + 4 > n - pos)
                break;
            h = fnv1a(h, b + pos, len);
            pos += len + 4;
        }
    }
    if (pos + 32 <= n)
        h = fnv1a(h, b + pos, 32);
    free(b);
    return h;
}

/* OPT: Table 6 exactly, and the same trace bodies as before per-architecture
 * profiles (hashes of traces written by that flashbed: trace synth --tokens
 * 40 --prompts 2 --seed 7). */
static void opt_unchanged(void)
{
    const struct fb_settings set = fb_settings_defaults();
    static const struct {
        const char *shape;
        uint64_t hash;
    } golden[] = {{"opt-tiny", 0xeee8f82cc5cb1a07ull}, {"opt-1.3b", 0xe0de110aa03f731dull}};
    for (size_t i = 0; i < 2; i++) {
        struct model_shape s;
        CHECK(model_shape_load(&set, golden[i].shape, &s, err, sizeof err) == 0);
        struct synth_params p;
        synth_params_default(&p, &s);
        p.tokens = 40;
        p.prompts = 2;
        p.seed = 7;
        char path[256];
        snprintf(path, sizeof path, "%s/golden.trace", dir);
        CHECK(synth_write(&p, path, err, sizeof err) == 0);
        uint64_t h = body_hash(path);
        if (h != golden[i].hash)
            fprintf(stderr, "%s: body hash 0x%016llx\n", golden[i].shape, (unsigned long long)h);
        CHECK(h == golden[i].hash);
        unlink(path);
    }
    struct model_shape s;
    struct trace tr;
    CHECK(synth(("opt-6.7b"), &s, 4, &tr) == 0);
    CHECK_U64(layer_count(&tr, 0, false), want(0.0156, 16384));
    CHECK_U64(layer_count(&tr, 15, false), want(0.0266, 16384));
    CHECK_U64(layer_count(&tr, 31, false), want(0.0536, 16384));
    CHECK_NEAR(mean_density(&tr), 0.033, 0.5 / 16384);
    check_pred_ratio(&tr, 3);
    cJSON *h = header(&tr);
    CHECK_STR(header_str(h, "profile"), "opt-6.7b");
    CHECK_STR(header_str(h, "statistics"), "paper Table 6 and App. C.1 (OPT-6.7B)");
    CHECK_NEAR(header_target(h, "window5_pred"), 0.24, 0);
    CHECK_NEAR(header_target(h, "new_per_token_pred"), 0.024, 0);
    CHECK(header_target(h, "window2_active") < 0); /* Llama 2's alone */
    cJSON_Delete(h);
    trace_free(&tr);
}

/* Falcon: 95% sparse (§3.1), OPT's shape scaled; App. C.2's window usage. */
static void falcon(void)
{
    struct model_shape s;
    struct trace tr;
    CHECK(synth("falcon-7b", &s, 64, &tr) == 0);
    double k = 0.05 / 0.033;
    CHECK_U64(layer_count(&tr, 0, false), want(0.0156 * k, 18176));
    CHECK_U64(layer_count(&tr, 31, false), want(0.0536 * k, 18176));
    CHECK_NEAR(mean_density(&tr), 0.05, 0.5 / 18176);
    for (uint32_t l = 1; l < 32; l++)
        CHECK(layer_count(&tr, l, false) >= layer_count(&tr, l - 1, false));
    check_pred_ratio(&tr, 3);
    struct trace_stats st;
    CHECK(trace_stats_compute(&tr, &st) == 0);
    CHECK_NEAR(st.sagg_pred[4], 0.33, 0.01);                           /* a 5-token window holds 33% */
    CHECK_NEAR(trace_stats_new_per_token(st.sagg_pred, 4), 0.031, 0.002); /* 3.1% new per token */
    CHECK_NEAR(st.recall, 0.95, 0.01);
    trace_stats_free(&st);
    cJSON *h = header(&tr);
    CHECK_STR(header_str(h, "profile"), "falcon-7b");
    CHECK(strstr(header_str(h, "statistics"), "95% sparsity") != NULL);
    CHECK_NEAR(header_target(h, "window5_pred"), 0.33, 0);
    CHECK_NEAR(header_target(h, "density_mean"), 0.05, 0);
    cJSON_Delete(h);
    trace_free(&tr);
}

/* Persimmon: a linear ramp, the last layer CONTRAST times the first, mean
 * the middle of 5% and 25%/3 (the choice its source states). */
static void persimmon(void)
{
    struct model_shape s;
    struct trace tr;
    CHECK(synth("persimmon-8b", &s, 4, &tr) == 0);
    double mean = (0.05 + 0.25 / 3) / 2, first = 2 * mean / (1 + CONTRAST), last = first * CONTRAST;
    for (uint32_t l = 0; l < 36; l++)
        CHECK_U64(layer_count(&tr, l, false), want(first + (last - first) * l / 35.0, 16384));
    for (uint32_t l = 1; l < 36; l++)
        CHECK(layer_count(&tr, l, false) > layer_count(&tr, l - 1, false)); /* denser with depth */
    /* the first quarter of the layers against the last: as the ramp says, about 2.5x */
    double early = 0, late = 0;
    for (uint32_t l = 0; l < 9; l++) {
        early += layer_count(&tr, l, false);
        late += layer_count(&tr, 35 - l, false);
    }
    CHECK_NEAR(late / early, (last - 4 * (last - first) / 35) / (first + 4 * (last - first) / 35), 0.01);
    CHECK(late / early > 2.4);
    CHECK_NEAR(mean_density(&tr), mean, 0.5 / 16384);
    CHECK(mean_density(&tr) > 0.05); /* less sparse than Falcon (App. C.3) */
    check_pred_ratio(&tr, 3);        /* App. B.1 */
    cJSON *h = header(&tr);
    CHECK_STR(header_str(h, "profile"), "persimmon-8b");
    CHECK(strstr(header_str(h, "statistics"), "Fig. 9b") != NULL);
    CHECK(header_target(h, "window5_pred") < 0); /* the paper gives none */
    cJSON_Delete(h);
    trace_free(&tr);
}

/* Phi-2: groups of 4 layers; the middle two groups densest, symmetric,
 * the outer groups CONTRAST times sparser; mean 13%; predictor 2x. */
static void phi(void)
{
    struct model_shape s;
    struct trace tr;
    CHECK(synth("phi-2", &s, 4, &tr) == 0);
    uint32_t c[32], top = 0;
    for (uint32_t l = 0; l < 32; l++) {
        c[l] = layer_count(&tr, l, false);
        top = c[l] > top ? c[l] : top;
    }
    for (uint32_t l = 0; l < 32; l++) {
        CHECK(c[l] == c[31 - l]);             /* symmetric about the middle */
        CHECK((c[l] == top) == (l >= 14 && l <= 17)); /* layers 15-18 densest */
    }
    for (uint32_t l = 1; l < 15; l++)
        CHECK(c[l] >= c[l - 1]);
    for (uint32_t l = 0; l < 6; l++)
        CHECK(c[l] == c[0]);                  /* groups 1 and 2 (to their middles) flat */
    CHECK_NEAR((double)top / c[0], CONTRAST, 0.002);
    CHECK_NEAR(mean_density(&tr), 0.13, 0.5 / 10240);
    check_pred_ratio(&tr, 2); /* App. B.1 */
    cJSON *h = header(&tr);
    CHECK_STR(header_str(h, "profile"), "phi-2");
    CHECK(strstr(header_str(h, "statistics"), "Fig. 9c") != NULL);
    const cJSON *dl = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(h, "targets"), "density_layers");
    CHECK(cJSON_GetArraySize(dl) == 32);
    for (uint32_t l = 0; l < 32; l++)
        CHECK_U64(want(cJSON_GetArrayItem(dl, (int)l)->valuedouble, 10240), c[l]);
    cJSON_Delete(h);
    trace_free(&tr);
}

/* Llama 2 with FATReLU: 90% sparse (§3.1), the 4 middle layers CONTRAST
 * times the rest (App. C.5), and a 2-token window of active sets near the
 * 18.3% App. C.5 implies. */
static void llama(void)
{
    struct model_shape s;
    struct trace tr;
    CHECK(synth("llama-2-7b-fatrelu", &s, 48, &tr) == 0);
    double lo = 0.10 * 32 / (28 + 4 * CONTRAST);
    for (uint32_t l = 0; l < 32; l++)
        CHECK_U64(layer_count(&tr, l, false), want(l >= 14 && l <= 17 ? lo * CONTRAST : lo, 11008));
    CHECK_NEAR(mean_density(&tr), 0.10, 0.5 / 11008);
    check_pred_ratio(&tr, 3);
    struct trace_stats st;
    CHECK(trace_stats_compute(&tr, &st) == 0);
    CHECK_NEAR(st.sagg_active[1], 0.183, 0.01);
    trace_stats_free(&st);
    cJSON *h = header(&tr);
    CHECK_STR(header_str(h, "profile"), "llama-2-7b-fatrelu");
    CHECK_NEAR(header_target(h, "window2_active"), 0.183, 0);
    cJSON_Delete(h);
    trace_free(&tr);
}

/* Small shapes: the profile over their own layers, and a header saying whose. */
static void small_shapes(void)
{
    struct model_shape s;
    struct trace tr;
    CHECK(synth("persimmon-tiny", &s, 8, &tr) == 0);
    double mean = (0.05 + 0.25 / 3) / 2, first = 2 * mean / (1 + CONTRAST);
    CHECK_U64(layer_count(&tr, 0, false), want(first, 256));
    CHECK_U64(layer_count(&tr, 1, false), want(first * CONTRAST, 256));
    cJSON *h = header(&tr);
    CHECK_STR(header_str(h, "profile"), "persimmon-8b");
    CHECK(strstr(header_str(h, "statistics"), "Persimmon-8B profile (paper Fig. 9b") == header_str(h, "statistics"));
    CHECK(strstr(header_str(h, "statistics"), "scaled by relative layer depth") != NULL);
    CHECK(strstr(header_str(h, "profile_source"), "Fig. 9b") != NULL);
    cJSON_Delete(h);
    trace_free(&tr);

    CHECK(synth("llama-tiny", &s, 8, &tr) == 0); /* SwiGLU: nothing in the paper */
    h = header(&tr);
    CHECK_STR(header_str(h, "profile"), "opt-6.7b");
    CHECK(strstr(header_str(h, "statistics"), "no paper statistics for this shape") != NULL);
    CHECK_U64(layer_count(&tr, 0, false), want(0.0156, 172));
    cJSON_Delete(h);
    trace_free(&tr);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    table_is_complete();
    shapes_pick_profiles();
    opt_unchanged();
    falcon();
    persimmon();
    phi();
    llama();
    small_shapes();
    rmdir(dir);
    return check_report("test_synth_profiles");
}
