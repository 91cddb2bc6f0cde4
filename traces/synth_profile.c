#include "traces/synth_profile.h"

#include <math.h>
#include <string.h>

/* Table 6's middle layer is layer 16 of 32: relative depth 15/31. */
#define MIDDLE_DEPTH (15.0 / 31.0)

/* OPT-6.7B, Table 6: layer 1, layer 16, layer 32, average. */
#define OPT_FIRST 0.0156
#define OPT_MIDDLE 0.0266
#define OPT_LAST 0.0536
#define OPT_MEAN 0.0330

/* Where the paper says which layers are densest but not by how much, the
 * densest layers are this many times the sparsest: OPT-6.7B's last layer
 * over its first (Table 6), the one such contrast the paper measures. */
#define CONTRAST (OPT_LAST / OPT_FIRST)
#define MID_LEVEL ((1 + CONTRAST) / 2)

/* Phi-2 in groups of 4 layers (App. C.4): group g's middle layer is at
 * relative depth (4g + 1.5) / 31. */
#define PHI_GROUP(g) ((4 * (g) + 1.5) / 31.0)

/* Overall sparsity stated in §3.1: Falcon-7B relufied 95%, Llama 2 with
 * FATReLU 90%. */
#define FALCON_MEAN 0.05
#define LLAMA_MEAN 0.10

/* Persimmon: less sparse than OPT and Falcon (App. C.3), so above
 * Falcon's 5%; one token's predicted set, 3x its active one (App. B.1),
 * fits the FFN cache capped at 25% of the FFN (App. C.3), so at most 25%/3.
 * The paper gives no number in between: the middle of the two bounds. */
#define PERSIMMON_MEAN ((FALCON_MEAN + 0.25 / 3) / 2)

/* Phi-2: less sparse than the models run at 50% of DRAM (§4.2), so above
 * Llama's 10%; one token's predicted set, 2x its active one (App. B.1),
 * fits what 65% of the model (App. C.4) leaves for the FFN: 65% less the
 * non-FFN weights (39.6% of Phi-2) and the predictors at App. C.4's ranks
 * (5.6%) is 32.8% of the FFN, so at most 16.4%. The middle, rounded. */
#define PHI_MEAN 0.13

static const struct synth_profile profiles[] = {
    {
        .name = "opt-6.7b",
        .arch = "opt",
        .label = "OPT-6.7B",
        .cite = "paper Table 6, App. C.1",
        .source = "paper Table 6 and App. C.1 (OPT-6.7B)",
        .ref_layers = 32,
        .curve = SYNTH_CURVE_TABLE6,
        .targets = {
            .density_first = OPT_FIRST,
            .density_middle = OPT_MIDDLE,
            .density_last = OPT_LAST,
            .density_mean = OPT_MEAN,
            .pred_over_active = 3.0,
            .recall = 0.95,
            .pred_density = 0.10,
            .window5_pred = 0.24,
            .new_per_token_pred = 0.024,
        },
    },
    {
        .name = "falcon-7b",
        .arch = "falcon",
        .activation = "relu", /* relufied; GELU Falcon is not sparse */
        .label = "Falcon-7B (relufied)",
        .cite = "paper §3.1, App. C.2",
        .source = "Falcon-7B relufied. Paper: mean density 5% (§3.1: 95% sparsity); a window of 5 "
                  "tokens holds 33% of the FFN, 3.1% new per token (App. C.2). Chosen: OPT-6.7B's "
                  "Table 6 curve scaled to that mean (later layers denser: Falcon, like OPT, gets "
                  "larger predictors for its last 4 layers, App. C.2, and the denser layers get the "
                  "larger predictors, App. C.4); predicted sets 3x the active ones with 95% recall, "
                  "as OPT's (§3.1, App. C.1)",
        .ref_layers = 32,
        .curve = SYNTH_CURVE_TABLE6,
        .targets = {
            .density_first = OPT_FIRST * FALCON_MEAN / OPT_MEAN,
            .density_middle = OPT_MIDDLE * FALCON_MEAN / OPT_MEAN,
            .density_last = OPT_LAST * FALCON_MEAN / OPT_MEAN,
            .density_mean = FALCON_MEAN,
            .pred_over_active = 3.0,
            .recall = 0.95,
            .window5_pred = 0.33,
            .new_per_token_pred = 0.031,
        },
    },
    {
        .name = "persimmon-8b",
        .arch = "persimmon",
        .activation = "squared_relu",
        .label = "Persimmon-8B",
        .cite = "paper Fig. 9b, App. B.1, C.3",
        .source = "Persimmon-8B. Paper: earlier layers sparser, later layers denser (Fig. 9b, App. "
                  "B.1); less sparse than OPT and Falcon (App. C.3); predicted sets 3x the active "
                  "ones (App. B.1); FFN cache capped at 25% of the FFN (App. C.3). Chosen: a linear "
                  "ramp over depth, last layer 3.44x the first (OPT-6.7B's Table 6 contrast); mean "
                  "6.67%, the middle of Falcon's 5% and 25%/3 (one token's predicted set within the "
                  "cap); 95% recall as OPT's",
        .ref_layers = 36,
        .curve = SYNTH_CURVE_KNOTS,
        .knots = {{0, 1}, {1, CONTRAST}},
        .n_knots = 2,
        .targets = {
            .density_mean = PERSIMMON_MEAN,
            .pred_over_active = 3.0,
            .recall = 0.95,
        },
    },
    {
        .name = "phi-2",
        .arch = "phi",
        .activation = "relu", /* relufied */
        .label = "Phi-2 (relufied)",
        .cite = "paper Fig. 9c, App. B.1, C.4",
        .source = "Phi-2 relufied. Paper: middle layers densest (Fig. 9c, App. C.4); less sparse "
                  "than the other models (§4.2); predicted sets 2x the active ones (App. B.1); 65% "
                  "of the model in DRAM (App. C.4). Chosen: groups of 4 layers ranked as App. C.4's "
                  "predictor sizes (160, 160, 480, 800, 800, 480, 160, none) at levels low, low, mid, "
                  "high, high, mid, low, low, high 3.44x low (OPT-6.7B's Table 6 contrast), linear "
                  "between group middles; mean 13%, the middle of Llama 2's 10% and 16.4% (one "
                  "token's predicted set within the 32.8% of the FFN that 65% leaves); 95% recall as "
                  "OPT's",
        .ref_layers = 32,
        .curve = SYNTH_CURVE_KNOTS,
        .knots = {{PHI_GROUP(0), 1}, {PHI_GROUP(1), 1}, {PHI_GROUP(2), MID_LEVEL},
                  {PHI_GROUP(3), CONTRAST}, {PHI_GROUP(4), CONTRAST}, {PHI_GROUP(5), MID_LEVEL},
                  {PHI_GROUP(6), 1}, {PHI_GROUP(7), 1}},
        .n_knots = 8,
        .targets = {
            .density_mean = PHI_MEAN,
            .pred_over_active = 2.0,
            .recall = 0.95,
        },
    },
    {
        .name = "llama-2-7b-fatrelu",
        .arch = "llama",
        .activation = "fatrelu",
        .label = "Llama-2-7B with FATReLU",
        .cite = "paper §3.1, App. C.5",
        .source = "Llama-2-7B with FATReLU. Paper: mean density 10% (§3.1: 90% sparsity); the 4 "
                  "middle layers denser (App. C.5: predictors of 1024 there, 256 elsewhere). Derived: "
                  "a window of 2 tokens holds 18.3% of the FFN (App. C.5: the gate as an exact "
                  "predictor with window 1 needs 65% of the model; less 35.8% non-FFN weights and "
                  "21.4% gate leaves 7.8% of the 42.8% in up and down rows). Chosen: layers 15-18 "
                  "of 32 at 3.44x the others (OPT-6.7B's Table 6 contrast); predicted sets 3x the "
                  "active ones with 95% recall, as OPT's and Persimmon's (App. B.1, C.1)",
        .ref_layers = 32,
        .curve = SYNTH_CURVE_KNOTS,
        .knots = {{13 / 31.0, 1}, {14 / 31.0, CONTRAST}, {17 / 31.0, CONTRAST}, {18 / 31.0, 1}},
        .n_knots = 4,
        .targets = {
            .density_mean = LLAMA_MEAN,
            .pred_over_active = 3.0,
            .recall = 0.95,
            .window2_active = 0.183,
        },
    },
};

#define N_PROFILES (sizeof profiles / sizeof profiles[0])

const struct synth_profile *synth_profiles(uint32_t *n)
{
    *n = N_PROFILES;
    return profiles;
}

const struct synth_profile *synth_profile_named(const char *name)
{
    for (size_t i = 0; i < N_PROFILES; i++)
        if (strcmp(profiles[i].name, name) == 0)
            return &profiles[i];
    return NULL;
}

const struct synth_profile *synth_profile_for(const struct model_shape *s, bool *fallback)
{
    for (size_t i = 0; i < N_PROFILES; i++) {
        const struct synth_profile *p = &profiles[i];
        if (strcmp(p->arch, s->arch) == 0 &&
            (!p->activation || strcmp(p->activation, s->ffn_activation) == 0)) {
            *fallback = false;
            return p;
        }
    }
    /* e.g. Llama with SwiGLU: not sparse, and the paper reports nothing */
    *fallback = true;
    return &profiles[0];
}

/* Table 6's curve: linear from the first to the middle layer, then (u)^a
 * up to the last. */
static double table6(const struct synth_targets *t, double depth, double a)
{
    if (depth <= MIDDLE_DEPTH)
        return t->density_first + (t->density_middle - t->density_first) * depth / MIDDLE_DEPTH;
    double u = (depth - MIDDLE_DEPTH) / (1 - MIDDLE_DEPTH);
    return t->density_middle + (t->density_last - t->density_middle) * pow(u, a);
}

/* The exponent a with which the reference model's layers average the mean
 * (bisection in log a: a larger a bends the curve down). */
static double table6_exponent(const struct synth_targets *t, uint32_t n)
{
    double lo = 0.05, hi = 20;
    for (int it = 0; it < 60; it++) {
        double a = sqrt(lo * hi), mean = 0;
        for (uint32_t l = 0; l < n; l++)
            mean += table6(t, l / (double)(n - 1), a) / n;
        if (mean > t->density_mean)
            lo = a;
        else
            hi = a;
    }
    return sqrt(lo * hi);
}

static double knot_level(const struct synth_profile *p, double depth)
{
    const struct synth_knot *k = p->knots;
    if (depth <= k[0].depth)
        return k[0].level;
    for (uint32_t i = 1; i < p->n_knots; i++)
        if (depth <= k[i].depth)
            return k[i - 1].level +
                   (k[i].level - k[i - 1].level) * (depth - k[i - 1].depth) / (k[i].depth - k[i - 1].depth);
    return k[p->n_knots - 1].level;
}

static double knot_mean_level(const struct synth_profile *p)
{
    uint32_t n = p->ref_layers;
    double sum = 0;
    for (uint32_t l = 0; l < n; l++)
        sum += knot_level(p, l / (double)(n - 1));
    return sum / n;
}

double synth_profile_density(const struct synth_profile *p, const struct synth_targets *t, double depth)
{
    if (p->curve == SYNTH_CURVE_TABLE6)
        return table6(t, depth, table6_exponent(t, p->ref_layers));
    return t->density_mean * knot_level(p, depth) / knot_mean_level(p);
}

void synth_profile_targets(const struct synth_profile *p, struct synth_targets *t)
{
    *t = p->targets;
    if (p->curve == SYNTH_CURVE_TABLE6)
        return;
    t->density_first = synth_profile_density(p, t, 0);
    t->density_middle = synth_profile_density(p, t, MIDDLE_DEPTH);
    t->density_last = synth_profile_density(p, t, 1);
}
