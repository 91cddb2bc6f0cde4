#include "traces/trace_synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/interrupt.h"
#include "common/progress.h"
#include "common/provenance.h"
#include "common/rng.h"
#include "traces/trace.h"

/* Table 6's middle layer is layer 16 of 32: relative depth 15/31. */
#define MIDDLE_DEPTH (15.0 / 31.0)

void synth_params_default(struct synth_params *p, const struct model_shape *shape)
{
    memset(p, 0, sizeof *p);
    p->shape = shape;
    p->tokens = 256;
    p->prompts = 1;
    p->prompt_share = 1.0 / 3.0;
    p->seed = 1;
    p->bytes_per_weight = 2;
    /* calibrated with flashbed trace info on OPT-6.7B, 256 tokens; plain
     * persistence ended at 0: reuse from the last token (age 1) covers it */
    p->persist = 0.0;
    p->zipf = 0.30;
    p->recur = 0.75;
    p->recur_decay = 0.52;
    p->targets = (struct synth_targets){
        .density_first = 0.0156,
        .density_middle = 0.0266,
        .density_last = 0.0536,
        .density_mean = 0.0330,
        .pred_over_active = 3.0,
        .recall = 0.95,
        .pred_density = 0.10,
        .window5_pred = 0.24,
        .new_per_token_pred = 0.024,
    };
}

/* Linear from the first to the middle layer, then (u)^a up to the last,
 * with a chosen so that 32 layers average the reported mean. */
static double profile(const struct synth_targets *t, double depth, double a)
{
    if (depth <= MIDDLE_DEPTH)
        return t->density_first + (t->density_middle - t->density_first) * depth / MIDDLE_DEPTH;
    double u = (depth - MIDDLE_DEPTH) / (1 - MIDDLE_DEPTH);
    return t->density_middle + (t->density_last - t->density_middle) * pow(u, a);
}

static double profile_exponent(const struct synth_targets *t)
{
    double lo = 0.05, hi = 20;
    for (int it = 0; it < 60; it++) {
        double a = sqrt(lo * hi), mean = 0;
        for (int l = 0; l < 32; l++)
            mean += profile(t, l / 31.0, a) / 32;
        if (mean > t->density_mean)
            lo = a; /* larger a bends the curve down */
        else
            hi = a;
    }
    return sqrt(lo * hi);
}

double synth_layer_density(const struct synth_targets *t, uint32_t l, uint32_t n_layers)
{
    double depth = n_layers > 1 ? (double)l / (n_layers - 1) : 0;
    return profile(t, depth, profile_exponent(t));
}

/* Per-layer generator state. */
struct layer_gen {
    double *cdf;        /* [d_ff] cumulative popularity */
    uint32_t *pred;     /* [d_ff] current predicted set (unordered) */
    uint32_t n_pred, want_pred, want_active;
    uint32_t *recent;   /* [SYNTH_RECENT * want_pred]: the last tokens' predicted sets */
    uint32_t n_recent[SYNTH_RECENT];
    uint32_t recent_filled, recent_next;
};

static uint32_t draw_popular(const struct layer_gen *g, uint32_t n, struct rng *r)
{
    double x = rng_unit(r) * g->cdf[n - 1];
    uint32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (g->cdf[mid] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int layer_init(struct layer_gen *g, uint32_t n, double density, double ratio, double zipf,
                      struct rng *r)
{
    g->cdf = malloc(n * sizeof(double));
    g->pred = malloc(n * sizeof(uint32_t));
    uint32_t *perm = malloc(n * sizeof(uint32_t));
    if (!g->cdf || !g->pred || !perm) {
        free(perm);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = (uint32_t)rng_below(r, i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* neuron perm[rank] gets weight (rank+1)^-zipf */
    double *w = g->cdf;
    for (uint32_t rank = 0; rank < n; rank++)
        w[perm[rank]] = pow(rank + 1.0, -zipf);
    for (uint32_t i = 1; i < n; i++)
        w[i] += w[i - 1];
    free(perm);
    g->want_active = (uint32_t)lround(density * n);
    if (g->want_active == 0)
        g->want_active = 1;
    g->want_pred = (uint32_t)lround(density * ratio * n);
    if (g->want_pred > n)
        g->want_pred = n;
    if (g->want_pred < g->want_active)
        g->want_pred = g->want_active;
    g->n_pred = 0;
    g->recent = malloc((size_t)SYNTH_RECENT * g->want_pred * sizeof(uint32_t));
    return g->recent ? 0 : -1;
}

struct keyed {
    double key;
    uint32_t id;
};

static int by_key(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* One token of one layer: evolve the predicted set, then draw the active one.
 * mark is a zeroed [d_ff] scratch (left zeroed). */
static void layer_step(struct layer_gen *g, uint32_t n, const struct synth_params *p, bool seq_start,
                       struct rng *r, uint8_t *mark, uint32_t *active, uint32_t *n_active,
                       uint32_t *pred_sorted, struct keyed *keys)
{
    uint32_t kept = 0;
    if (seq_start)
        g->recent_filled = 0;
    if (!seq_start)
        for (uint32_t j = 0; j < g->n_pred; j++)
            if (rng_unit(r) < p->persist)
                g->pred[kept++] = g->pred[j];
    for (uint32_t j = 0; j < kept; j++)
        mark[g->pred[j]] = 1;
    uint32_t tries = 0;
    while (kept < g->want_pred) {
        uint32_t id;
        /* Neurons the last tokens used come back first (bounded tries: a
         * recent pool can be exhausted). */
        if (g->recent_filled && tries < 4 * g->want_pred && rng_unit(r) < p->recur) {
            tries++;
            /* age 1 (last token) most likely, older ones geometrically less */
            uint32_t age = 1;
            while (age < g->recent_filled && rng_unit(r) < p->recur_decay)
                age++;
            uint32_t h = (g->recent_next + SYNTH_RECENT - age) % SYNTH_RECENT;
            if (!g->n_recent[h])
                continue;
            id = g->recent[(size_t)h * g->want_pred + rng_below(r, g->n_recent[h])];
        } else {
            id = draw_popular(g, n, r);
        }
        if (mark[id])
            continue;
        mark[id] = 1;
        g->pred[kept++] = id;
    }
    g->n_pred = kept;
    memcpy(g->recent + (size_t)g->recent_next * g->want_pred, g->pred, kept * sizeof *g->pred);
    g->n_recent[g->recent_next] = kept;
    g->recent_next = (g->recent_next + 1) % SYNTH_RECENT;
    if (g->recent_filled < SYNTH_RECENT)
        g->recent_filled++;
    /* Active: a recall share of the predicted set drawn by popularity without
     * replacement (exponential keys -ln(u)/w, smallest first), the rest drawn
     * by popularity from outside it: hot neurons fire whenever predicted. */
    uint32_t from_pred = (uint32_t)lround(g->want_active * p->targets.recall);
    if (from_pred > kept)
        from_pred = kept;
    for (uint32_t j = 0; j < kept; j++) {
        uint32_t id = g->pred[j];
        double w = g->cdf[id] - (id ? g->cdf[id - 1] : 0);
        keys[j] = (struct keyed){-log(1 - rng_unit(r)) / w, id};
    }
    qsort(keys, kept, sizeof *keys, by_key);
    for (uint32_t j = 0; j < from_pred; j++)
        active[j] = keys[j].id;
    uint32_t na = from_pred;
    uint32_t outside = g->want_active - from_pred;
    if (outside > n - kept)
        outside = n - kept;
    while (outside) {
        uint32_t id = draw_popular(g, n, r);
        if (mark[id])
            continue;
        mark[id] = 2;
        active[na++] = id;
        outside--;
    }
    for (uint32_t j = 0; j < kept; j++)
        mark[g->pred[j]] = 0;
    for (uint32_t j = from_pred; j < na; j++)
        mark[active[j]] = 0;
    memcpy(pred_sorted, g->pred, kept * sizeof *pred_sorted);
    qsort(pred_sorted, kept, sizeof *pred_sorted, cmp_u32);
    qsort(active, na, sizeof *active, cmp_u32);
    *n_active = na;
}

static char *source_json(const struct synth_params *p)
{
    const struct model_shape *s = p->shape;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "source", "synthetic");
    cJSON_AddStringToObject(o, "model", s->name);
    /* the code that generated it; no date, so a seed gives the same file */
    cJSON_AddStringToObject(o, "flashbed_commit", provenance_git_commit());
    bool paper = strstr(s->paper_statistics, "scaled") == NULL && strcmp(s->name, "opt-6.7b") == 0;
    cJSON_AddStringToObject(o, "statistics",
                            paper ? "paper Table 6 and App. C.1 (OPT-6.7B)"
                                  : "OPT-6.7B profile (paper Table 6, App. C.1) scaled by relative "
                                    "layer depth: no paper statistics for this shape");
    cJSON *g = cJSON_AddObjectToObject(o, "generator");
    cJSON_AddNumberToObject(g, "seed", (double)p->seed);
    cJSON_AddNumberToObject(g, "tokens", (double)p->tokens);
    cJSON_AddNumberToObject(g, "prompts", (double)p->prompts);
    cJSON_AddNumberToObject(g, "prompt_share", p->prompt_share);
    cJSON_AddNumberToObject(g, "persist", p->persist);
    cJSON_AddNumberToObject(g, "zipf", p->zipf);
    cJSON_AddNumberToObject(g, "recur", p->recur);
    cJSON_AddNumberToObject(g, "recur_decay", p->recur_decay);
    const struct synth_targets *t = &p->targets;
    cJSON *tg = cJSON_AddObjectToObject(o, "targets");
    cJSON_AddNumberToObject(tg, "density_first", t->density_first);
    cJSON_AddNumberToObject(tg, "density_middle", t->density_middle);
    cJSON_AddNumberToObject(tg, "density_last", t->density_last);
    cJSON_AddNumberToObject(tg, "density_mean", t->density_mean);
    cJSON_AddNumberToObject(tg, "pred_over_active", t->pred_over_active);
    cJSON_AddNumberToObject(tg, "recall", t->recall);
    cJSON_AddNumberToObject(tg, "pred_density", t->pred_density);
    cJSON_AddNumberToObject(tg, "window5_pred", t->window5_pred);
    cJSON_AddNumberToObject(tg, "new_per_token_pred", t->new_per_token_pred);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

int synth_write(const struct synth_params *p, const char *path, char *err, size_t errlen)
{
    const struct model_shape *s = p->shape;
    if (p->tokens == 0 || p->prompts == 0 || p->prompts > p->tokens) {
        snprintf(err, errlen, "synth: need at least one token per prompt (tokens %llu, prompts %llu)",
                 (unsigned long long)p->tokens, (unsigned long long)p->prompts);
        return -1;
    }
    uint32_t L = s->n_layers, N = s->d_ff;
    struct trace_meta m = {
        .n_layers = L, .d_model = s->d_model, .d_ff = N, .bytes_per_weight = p->bytes_per_weight,
        .ffn_kind = s->ffn_kind, .has_predicted = true, .source = source_json(p),
    };
    struct rng r;
    rng_seed(&r, p->seed);
    struct layer_gen *g = calloc(L, sizeof *g);
    uint8_t *mark = calloc(N, 1);
    uint32_t *active = malloc(N * sizeof(uint32_t));
    uint32_t *pred = malloc(N * sizeof(uint32_t));
    struct keyed *keys = malloc(N * sizeof *keys);
    int rc = -1;
    struct trace_writer *w = NULL;
    if (!m.source || !g || !mark || !active || !pred || !keys) {
        snprintf(err, errlen, "synth: out of memory");
        goto out;
    }
    double a = profile_exponent(&p->targets);
    for (uint32_t l = 0; l < L; l++) {
        double depth = L > 1 ? (double)l / (L - 1) : 0;
        if (layer_init(&g[l], N, profile(&p->targets, depth, a), p->targets.pred_over_active, p->zipf,
                       &r) != 0) {
            snprintf(err, errlen, "synth: out of memory");
            goto out;
        }
    }
    w = trace_writer_open(path, &m, err, errlen);
    if (!w)
        goto out;
    struct progress prog;
    progress_begin(&prog, "synth", p->tokens);
    uint64_t per_seq = p->tokens / p->prompts;
    for (uint64_t t = 0; t < p->tokens; t++) {
        uint64_t seq = t / per_seq < p->prompts ? t / per_seq : p->prompts - 1;
        uint64_t pos = t - seq * per_seq;
        uint64_t len = seq == p->prompts - 1 ? p->tokens - seq * per_seq : per_seq;
        bool start = pos == 0;
        unsigned flags = (start ? TRACE_TOKEN_SEQ_START : 0) |
                         (pos >= (uint64_t)(len * p->prompt_share) ? TRACE_TOKEN_GENERATED : 0);
        if (trace_writer_begin_token(w, flags, err, errlen) != 0)
            goto out;
        for (uint32_t l = 0; l < L; l++) {
            uint32_t na;
            layer_step(&g[l], N, p, start, &r, mark, active, &na, pred, keys);
            if (trace_writer_layer(w, l, active, na, pred, g[l].n_pred, err, errlen) != 0)
                goto out;
        }
        progress_update(&prog, t + 1, NULL);
        if (interrupted()) {
            snprintf(err, errlen, "synth: interrupted; %s not written", path);
            goto out;
        }
    }
    progress_end(&prog);
    rc = trace_writer_close(w, err, errlen);
    w = NULL;
out:
    trace_writer_abort(w);
    if (g)
        for (uint32_t l = 0; l < L; l++) {
            free(g[l].cdf);
            free(g[l].pred);
            free(g[l].recent);
        }
    free(g);
    free(mark);
    free(active);
    free(pred);
    free(keys);
    free(m.source);
    return rc;
}
