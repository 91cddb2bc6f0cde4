#include "traces/trace_synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/errbuf.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "common/provenance.h"
#include "common/rng.h"
#include "traces/trace.h"

void synth_params_default(struct synth_params *p, const struct model_shape *shape)
{
    memset(p, 0, sizeof *p);
    p->shape = shape;
    p->tokens = 256;
    p->prompts = 1;
    p->prompt_share = 1.0 / 3.0;
    p->seed = 1;
    p->dtype = DTYPE_F16;
    /* calibrated with flashbed trace info on OPT-6.7B, 256 tokens; plain
     * persistence ended at 0: reuse from the last token (age 1) covers it */
    p->persist = 0.0;
    p->zipf = 0.30;
    p->recur = 0.75;
    p->recur_decay = 0.52;
    p->profile = synth_profile_for(shape, &p->profile_fallback);
    synth_profile_targets(p->profile, &p->targets);
}

double synth_layer_density(const struct synth_params *p, uint32_t l, uint32_t n_layers)
{
    if (p->layer_density)
        return p->layer_density[l];
    if (p->active_density > 0)
        return p->active_density;
    double depth = n_layers > 1 ? (double)l / (n_layers - 1) : 0;
    return synth_profile_density(p->profile, &p->targets, depth);
}

void synth_statistics_text(const struct synth_params *p, char *buf, size_t len)
{
    const struct synth_profile *pr = p->profile;
    const struct model_shape *s = p->shape;
    if (!p->profile_fallback && strcmp(s->name, pr->name) == 0 && s->n_layers == pr->ref_layers)
        snprintf(buf, len, "%s", pr->source);
    else
        snprintf(buf, len, "%s profile (%s) scaled by relative layer depth: %s", pr->label, pr->cite,
                 p->profile_fallback ? "no paper statistics for this shape"
                                     : "the paper's statistics for this architecture, not this shape");
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

/* The predicted set's next token: each neuron stays with probability
 * persist (none at a sequence's start), and the set is refilled to its size
 * from the neurons of the last tokens (recur) or by popularity. Every
 * predicted neuron is left marked 1 in mark; returns how many there are. */
static uint32_t evolve_predicted(struct layer_gen *g, uint32_t n, const struct synth_params *p, bool seq_start,
                                 struct rng *r, uint8_t *mark)
{
    uint32_t kept = 0;
    if (seq_start)
        g->recent_filled = 0;
    if (g->want_pred >= n) { /* every neuron (a dense active density): no draws, which would take n ln n */
        for (uint32_t id = 0; id < n; id++) {
            g->pred[id] = id;
            mark[id] = 1;
        }
        return n;
    }
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
    return kept;
}

/* The predicted set becomes the newest of the recent tokens' sets, which
 * the next tokens' refills draw from. */
static void remember_predicted(struct layer_gen *g, uint32_t kept)
{
    g->n_pred = kept;
    memcpy(g->recent + (size_t)g->recent_next * g->want_pred, g->pred, kept * sizeof *g->pred);
    g->n_recent[g->recent_next] = kept;
    g->recent_next = (g->recent_next + 1) % SYNTH_RECENT;
    if (g->recent_filled < SYNTH_RECENT)
        g->recent_filled++;
}

/* Active: a recall share of the predicted set drawn by popularity without
 * replacement (exponential keys -ln(u)/w, smallest first), the rest drawn
 * by popularity from outside it: hot neurons fire whenever predicted.
 * Leaves mark zeroed again; returns how many are active (unsorted). */
static uint32_t draw_active(const struct layer_gen *g, uint32_t n, const struct synth_params *p, struct rng *r,
                            uint8_t *mark, uint32_t *active, struct keyed *keys)
{
    uint32_t kept = g->n_pred;
    uint32_t from_pred = (uint32_t)lround(g->want_active * p->targets.recall);
    if (from_pred > kept)
        from_pred = kept;
    for (uint32_t j = 0; j < kept; j++) {
        uint32_t id = g->pred[j];
        double w = g->cdf[id] - (id ? g->cdf[id - 1] : 0);
        keys[j] = (struct keyed){-log(1 - rng_unit(r)) / w, id};
    }
    qsort(keys, kept, sizeof *keys, by_key);
    uint32_t outside = g->want_active - from_pred;
    if (outside > n - kept) { /* the predicted set is nearly all: the rest of the active set is in it */
        from_pred += outside - (n - kept);
        outside = n - kept;
    }
    for (uint32_t j = 0; j < from_pred; j++)
        active[j] = keys[j].id;
    uint32_t na = from_pred;
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
    return na;
}

/* One token of one layer: evolve the predicted set, then draw the active one.
 * mark is a zeroed [d_ff] scratch (left zeroed). */
static void layer_step(struct layer_gen *g, uint32_t n, const struct synth_params *p, bool seq_start,
                       struct rng *r, uint8_t *mark, uint32_t *active, uint32_t *n_active,
                       uint32_t *pred_sorted, struct keyed *keys)
{
    uint32_t kept = evolve_predicted(g, n, p, seq_start, r, mark);
    remember_predicted(g, kept);
    uint32_t na = draw_active(g, n, p, r, mark, active, keys);
    memcpy(pred_sorted, g->pred, kept * sizeof *pred_sorted);
    qsort(pred_sorted, kept, sizeof *pred_sorted, cmp_u32);
    qsort(active, na, sizeof *active, cmp_u32);
    *n_active = na;
}

/* Targets the profile leaves out stay out of the header (trace info: "-"). */
static void add_target(cJSON *tg, const char *key, double v)
{
    if (v > SYNTH_NOT_GIVEN)
        cJSON_AddNumberToObject(tg, key, v);
}

/* The density targets: the profile's, one level (active_density) or a
 * twin's layers (first, middle, last and their mean). */
static void add_density_targets(cJSON *tg, const struct synth_params *p)
{
    const struct synth_targets *t = &p->targets;
    uint32_t L = p->shape->n_layers;
    double first = t->density_first, middle = t->density_middle, last = t->density_last, mean = t->density_mean;
    if (p->layer_density) {
        first = p->layer_density[0], middle = p->layer_density[trace_middle_layer(L)], last = p->layer_density[L - 1], mean = 0;
        for (uint32_t l = 0; l < L; l++)
            mean += p->layer_density[l] / L;
    } else if (p->active_density > 0) {
        first = middle = last = mean = p->active_density;
    }
    add_target(tg, "density_first", first);
    add_target(tg, "density_middle", middle);
    add_target(tg, "density_last", last);
    add_target(tg, "density_mean", mean);
}

static char *source_json(const struct synth_params *p)
{
    const struct model_shape *s = p->shape;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "source", "synthetic");
    cJSON_AddStringToObject(o, "model", s->name);
    /* the code that generated it; no date, so a seed gives the same file */
    cJSON_AddStringToObject(o, "flashbed_commit", provenance_git_commit());
    char stat[2048];
    synth_statistics_text(p, stat, sizeof stat);
    cJSON_AddStringToObject(o, "statistics", stat);
    cJSON_AddStringToObject(o, "profile", p->profile->name);
    cJSON_AddStringToObject(o, "profile_source", p->profile->source);
    cJSON *g = cJSON_AddObjectToObject(o, "generator");
    cJSON_AddNumberToObject(g, "seed", (double)p->seed);
    cJSON_AddNumberToObject(g, "tokens", (double)p->tokens);
    cJSON_AddNumberToObject(g, "prompts", (double)p->prompts);
    cJSON_AddNumberToObject(g, "prompt_share", p->prompt_share);
    cJSON_AddNumberToObject(g, "persist", p->persist);
    cJSON_AddNumberToObject(g, "zipf", p->zipf);
    cJSON_AddNumberToObject(g, "recur", p->recur);
    cJSON_AddNumberToObject(g, "recur_decay", p->recur_decay);
    if (p->active_density > 0)
        cJSON_AddNumberToObject(g, "active_density", p->active_density);
    if (p->channel_density > 0)
        cJSON_AddNumberToObject(g, "channel_density", p->channel_density);
    if (p->like)
        cJSON_AddStringToObject(g, "like", p->like);
    if (p->fitted)
        cJSON_AddBoolToObject(g, "reuse_fitted", true);
    cJSON *tg = cJSON_AddObjectToObject(o, "targets");
    add_density_targets(tg, p);
    if (p->channel_density > 0)
        add_target(tg, "channel_density", p->channel_density);
    const struct synth_targets *t = &p->targets;
    if (!p->active_only) {
        add_target(tg, "pred_over_active", t->pred_over_active);
        add_target(tg, "recall", t->recall);
    }
    if (!p->like) { /* the paper's window statistics: a twin's targets are its trace's densities alone */
        add_target(tg, "pred_density", t->pred_density);
        add_target(tg, "window5_pred", t->window5_pred);
        add_target(tg, "new_per_token_pred", t->new_per_token_pred);
        add_target(tg, "window2_active", t->window2_active);
    }
    cJSON *dl = cJSON_AddArrayToObject(tg, "density_layers");
    for (uint32_t l = 0; l < s->n_layers; l++)
        cJSON_AddItemToArray(dl, cJSON_CreateNumber(synth_layer_density(p, l, s->n_layers)));
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* The generator's state: one per layer, and the scratch every layer shares. */
struct synth_state {
    struct layer_gen *g; /* [n_layers] */
    struct layer_gen *chan; /* [n_layers] over d_model channels; NULL without channel sets */
    uint8_t *chan_mark;     /* [d_model] */
    uint8_t *mark;       /* [d_ff] */
    uint32_t *active, *pred;
    struct keyed *keys;
    struct rng r;
};

static void synth_state_free(struct synth_state *st, uint32_t n_layers)
{
    if (st->g)
        for (uint32_t l = 0; l < n_layers; l++) {
            free(st->g[l].cdf);
            free(st->g[l].pred);
            free(st->g[l].recent);
        }
    if (st->chan)
        for (uint32_t l = 0; l < n_layers; l++) {
            free(st->chan[l].cdf);
            free(st->chan[l].pred);
            free(st->chan[l].recent);
        }
    free(st->g);
    free(st->chan);
    free(st->chan_mark);
    free(st->mark);
    free(st->active);
    free(st->pred);
    free(st->keys);
}

/* The channel generators: one per layer over d_model, at the channel density. */
static int channel_init(struct synth_state *st, const struct synth_params *p, char *err, size_t errlen)
{
    uint32_t L = p->shape->n_layers, D = p->shape->d_model;
    st->chan = calloc(L, sizeof *st->chan);
    st->chan_mark = calloc(D, 1);
    if (!st->chan || !st->chan_mark)
        return err_set(err, errlen, "synth: out of memory");
    for (uint32_t l = 0; l < L; l++)
        if (layer_init(&st->chan[l], D, p->channel_density, 1.0, p->zipf, &st->r) != 0)
            return err_set(err, errlen, "synth: out of memory");
    return 0;
}

/* Layer l's kept channels of the current token, sorted, to the writer: the
 * same evolution as a predicted set, over the layer's channels. */
static int channel_step(struct synth_state *st, const struct synth_params *p, uint32_t l, bool seq_start,
                        const struct trace_sink *w, char *err, size_t errlen)
{
    struct layer_gen *g = &st->chan[l];
    uint32_t D = p->shape->d_model;
    uint32_t kept = evolve_predicted(g, D, p, seq_start, &st->r, st->chan_mark);
    remember_predicted(g, kept);
    for (uint32_t j = 0; j < kept; j++)
        st->chan_mark[g->pred[j]] = 0;
    memcpy(st->active, g->pred, kept * sizeof *st->active); /* active is free until the layer's step */
    qsort(st->active, kept, sizeof *st->active, cmp_u32);
    return w->channels(w->impl, l, st->active, kept, err, errlen);
}

static int synth_state_init(struct synth_state *st, const struct synth_params *p, char *err, size_t errlen)
{
    uint32_t L = p->shape->n_layers, N = p->shape->d_ff;
    rng_seed(&st->r, p->seed);
    st->g = calloc(L, sizeof *st->g);
    st->mark = calloc(N, 1);
    uint32_t D = p->shape->d_model;
    st->active = malloc((N > D ? N : D) * sizeof(uint32_t)); /* a layer's active set, or its kept channels */
    st->pred = malloc(N * sizeof(uint32_t));
    st->keys = malloc(N * sizeof *st->keys);
    if (!st->g || !st->mark || !st->active || !st->pred || !st->keys)
        return err_set(err, errlen, "synth: out of memory");
    for (uint32_t l = 0; l < L; l++)
        if (layer_init(&st->g[l], N, synth_layer_density(p, l, L), p->targets.pred_over_active, p->zipf,
                       &st->r) != 0)
            return err_set(err, errlen, "synth: out of memory");
    return p->channel_density > 0 ? channel_init(st, p, err, errlen) : 0;
}

/* Token t's flags: a sequence starts every tokens/prompts tokens (the
 * last takes the rest), its first prompt_share of it is the prompt. */
static unsigned token_flags(const struct synth_params *p, uint64_t t)
{
    uint64_t per_seq = p->tokens / p->prompts;
    uint64_t seq = t / per_seq < p->prompts ? t / per_seq : p->prompts - 1;
    uint64_t pos = t - seq * per_seq;
    uint64_t len = seq == p->prompts - 1 ? p->tokens - seq * per_seq : per_seq;
    return (pos == 0 ? TRACE_TOKEN_SEQ_START : 0) |
           (pos >= (uint64_t)(len * p->prompt_share) ? TRACE_TOKEN_GENERATED : 0);
}

/* Every token through the writer, reported as it goes. */
static int synth_tokens(const struct synth_params *p, struct synth_state *st, const struct trace_sink *w,
                        const char *path, char *err, size_t errlen)
{
    uint32_t L = p->shape->n_layers, N = p->shape->d_ff;
    progress_report(p->progress, "synth", 0, p->tokens, NULL);
    for (uint64_t t = 0; t < p->tokens; t++) {
        unsigned flags = token_flags(p, t);
        if (w->begin_token(w->impl, flags, err, errlen) != 0)
            return -1;
        for (uint32_t l = 0; l < L; l++) {
            uint32_t na;
            if (st->chan && channel_step(st, p, l, flags & TRACE_TOKEN_SEQ_START, w, err, errlen) != 0)
                return -1;
            layer_step(&st->g[l], N, p, flags & TRACE_TOKEN_SEQ_START, &st->r, st->mark, st->active, &na, st->pred,
                       st->keys);
            if (w->layer(w->impl, l, st->active, na, st->pred, st->g[l].n_pred, err, errlen) != 0)
                return -1;
        }
        progress_report(p->progress, "synth", t + 1, p->tokens, NULL);
        if (interrupted())
            return err_set(err, errlen, "synth: interrupted; %s not written", path);
    }
    return 0;
}

/* The header of p's trace (its source JSON on the heap: NULL when out of memory). */
static struct trace_meta synth_meta(const struct synth_params *p)
{
    const struct model_shape *s = p->shape;
    struct trace_meta m = {
        .n_layers = s->n_layers, .d_model = s->d_model, .d_ff = s->d_ff, .dtype = p->dtype,
        .ffn_kind = s->ffn_kind, .source = source_json(p),
        /* input sparsity runs no predictor: a trace of it has its sets alone */
        .has_predicted = !(p->channel_density > 0) && !p->active_only, .has_channels = p->channel_density > 0,
    };
    trace_meta_set_units(&m);
    return m;
}

static int check_counts(const struct synth_params *p, char *err, size_t errlen)
{
    if (p->tokens == 0 || p->prompts == 0 || p->prompts > p->tokens)
        return err_set(err, errlen, "synth: need at least one token per prompt (tokens %llu, prompts %llu)",
                       (unsigned long long)p->tokens, (unsigned long long)p->prompts);
    return 0;
}

int synth_write(const struct synth_params *p, const char *path, char *err, size_t errlen)
{
    if (check_counts(p, err, errlen) != 0)
        return -1;
    struct trace_meta m = synth_meta(p);
    struct synth_state st = {0};
    struct trace_writer *w = NULL;
    int rc = -1;
    if (!m.source)
        err_set(err, errlen, "synth: out of memory");
    else if (synth_state_init(&st, p, err, errlen) == 0 && (w = trace_writer_open(NULL, path, &m, err, errlen))) {
        struct trace_sink sink = trace_writer_sink(w);
        if (synth_tokens(p, &st, &sink, path, err, errlen) == 0) {
            rc = trace_writer_close(w, err, errlen);
            w = NULL;
        }
    }
    trace_writer_abort(w);
    synth_state_free(&st, p->shape->n_layers);
    free(m.source);
    return rc;
}

int synth_build(const struct synth_params *p, struct trace *out, char *err, size_t errlen)
{
    if (check_counts(p, err, errlen) != 0)
        return -1;
    struct trace_meta m = synth_meta(p);
    struct synth_state st = {0};
    struct trace_builder *b = NULL;
    int rc = -1;
    if (!m.source)
        err_set(err, errlen, "synth: out of memory");
    else if (synth_state_init(&st, p, err, errlen) == 0 && (b = trace_builder_new(&m, err, errlen))) {
        struct trace_sink sink = trace_builder_sink(b);
        if (synth_tokens(p, &st, &sink, "the trace in memory", err, errlen) == 0) {
            rc = trace_builder_finish(b, out, err, errlen);
            b = NULL;
        }
    }
    trace_builder_free(b);
    synth_state_free(&st, p->shape->n_layers);
    free(m.source);
    return rc;
}
