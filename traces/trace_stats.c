#include "traces/trace_stats.h"

#include "common/atomic_file.h"
#include "common/gnuplot.h"
#include "common/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The union of the sets of tokens [start, start+k) is the sum over those
 * tokens of the neurons whose previous use lies before start: a neuron of
 * token start+j counts when its gap to its previous use (within the
 * sequence) exceeds j. So one pass recording, per token, how many of its
 * neurons have gap > j for j < TRACE_SAGG_MAX gives every window's union. */
static void sagg_kind(const struct trace *tr, int predicted, uint32_t *last_seen, uint32_t *over,
                      double *sagg)
{
    const uint32_t L = tr->meta.n_layers, N = tr->meta.d_ff, J = TRACE_SAGG_MAX;
    const uint64_t T = tr->n_tokens;
    double sum[TRACE_SAGG_MAX] = {0};
    uint64_t windows[TRACE_SAGG_MAX] = {0};
    for (uint32_t l = 0; l < L; l++) {
        uint64_t seq_start = 0;
        for (uint32_t i = 0; i < N; i++)
            last_seen[i] = UINT32_MAX;
        for (uint64_t t = 0; t < T; t++) {
            if (tr->token_flags[t] & TRACE_TOKEN_SEQ_START)
                seq_start = t;
            uint32_t *o = over + t * J;
            memset(o, 0, J * sizeof *o);
            uint32_t n;
            const uint32_t *ids = trace_set(tr, predicted, t, l, &n);
            for (uint32_t a = 0; a < n; a++) {
                uint32_t prev = last_seen[ids[a]];
                uint64_t gap = prev == UINT32_MAX || prev < seq_start ? J : t - prev;
                /* counts for j < gap: neuron new to windows starting up to gap-1 tokens back */
                o[gap - 1 < J ? gap - 1 : J - 1]++;
                last_seen[ids[a]] = (uint32_t)t;
            }
            /* turn "gap == j+1" counts into "gap > j" counts */
            for (int j = (int)J - 2; j >= 0; j--)
                o[j] += o[j + 1];
        }
        seq_start = 0;
        for (uint64_t start = 0; start < T; start++) {
            if (tr->token_flags[start] & TRACE_TOKEN_SEQ_START)
                seq_start = start;
            (void)seq_start;
            uint64_t uni = 0;
            for (uint32_t k = 1; k <= J && start + k <= T; k++) {
                uint64_t t = start + k - 1;
                if (k > 1 && (tr->token_flags[t] & TRACE_TOKEN_SEQ_START))
                    break;
                uni += over[t * J + (k - 1)];
                sum[k - 1] += (double)uni / N;
                windows[k - 1]++;
            }
        }
    }
    for (uint32_t k = 0; k < J; k++)
        sagg[k] = windows[k] ? sum[k] / windows[k] : 0;
}

/* The active events of a layer's most used tenth of its N neurons: a
 * counting sort over use counts, which are at most T (a neuron is in a
 * token's set once), instead of sorting N counts: N log N was seconds for a
 * header claiming 2^23 neurons (fuzz_trace). count holds T + 1. */
static uint64_t top_tenth_events(const uint32_t *freq, uint32_t N, uint64_t T, uint32_t *count)
{
    memset(count, 0, (T + 1) * sizeof *count);
    for (uint32_t i = 0; i < N; i++)
        count[freq[i]]++;
    uint64_t want = ((uint64_t)N + 9) / 10, top = 0;
    for (uint64_t v = T; v > 0 && want; v--) {
        uint64_t take = count[v] < want ? count[v] : want;
        top += take * v;
        want -= take;
    }
    return top;
}

/* Sequences, prompt and generated tokens, from the flags; the longest
 * sequence's length. */
static uint64_t count_tokens(const struct trace *tr, struct trace_stats *s)
{
    uint64_t seq_len = 0, longest = 0;
    for (uint64_t t = 0; t < tr->n_tokens; t++) {
        if (tr->token_flags[t] & TRACE_TOKEN_SEQ_START) {
            s->n_sequences++;
            seq_len = 0;
        }
        seq_len++;
        longest = seq_len > longest ? seq_len : longest;
        if (tr->token_flags[t] & TRACE_TOKEN_GENERATED)
            s->n_generated_tokens++;
        else
            s->n_prompt_tokens++;
    }
    return longest;
}

/* The scratch the per-layer counts share. */
struct stats_scratch {
    uint32_t *freq, *count, *stamp;
    uint8_t *in_pred;
    uint64_t hits;   /* active neurons that were also predicted, all layers */
    double hot_sum;  /* per layer, the top tenth's share of its events */
    double hot_uniform_sum; /* the same of uniform draws of the same set sizes */
};

/* freq: how often each of layer l's neurons would be used were every
 * token's set drawn uniformly (as many distinct neurons as the trace's set
 * holds; Floyd's sampling, seeded by the layer: deterministic), so that
 * the hot tenth's share is judged against what chance alone gives with
 * these counts: few tokens of small sets put well over 10% in the most
 * used tenth without any popularity. stamp: N words, stamp[i] = t + 1
 * once neuron i is drawn for token t (no clearing between tokens). */
static void uniform_draws(const struct trace *tr, uint32_t l, uint32_t *freq, uint32_t *stamp)
{
    const uint32_t N = tr->meta.d_ff;
    struct rng r;
    rng_seed(&r, 0x5eed0000u + l);
    memset(freq, 0, N * sizeof *freq);
    memset(stamp, 0, N * sizeof *stamp);
    for (uint64_t t = 0; t < tr->n_tokens; t++) {
        uint32_t k, now = (uint32_t)(t + 1);
        trace_set(tr, 0, t, l, &k);
        for (uint32_t j = N - k; j < N; j++) {
            uint32_t pick = (uint32_t)rng_below(&r, (uint64_t)j + 1);
            pick = stamp[pick] == now ? j : pick;
            stamp[pick] = now;
            freq[pick]++;
        }
    }
}

/* Layer l: its densities, events, the active neurons predicted, the hot
 * tenth's share. */
static void layer_counts(const struct trace *tr, uint32_t l, struct trace_stats *s, struct stats_scratch *x)
{
    const uint32_t N = tr->meta.d_ff;
    const uint64_t T = tr->n_tokens;
    memset(x->freq, 0, N * sizeof *x->freq);
    uint64_t la = 0, lp = 0;
    for (uint64_t t = 0; t < T; t++) {
        uint32_t na, np = 0;
        const uint32_t *a = trace_set(tr, 0, t, l, &na);
        const uint32_t *p = tr->meta.has_predicted ? trace_set(tr, 1, t, l, &np) : NULL;
        for (uint32_t j = 0; j < na; j++)
            x->freq[a[j]]++;
        for (uint32_t j = 0; j < np; j++)
            x->in_pred[p[j]] = 1;
        for (uint32_t j = 0; j < na && p; j++)
            x->hits += x->in_pred[a[j]];
        for (uint32_t j = 0; j < np; j++)
            x->in_pred[p[j]] = 0;
        la += na;
        lp += np;
    }
    s->active_events += la;
    s->pred_events += lp;
    s->density_active[l] = T ? (double)la / ((double)T * N) : 0;
    if (s->density_pred)
        s->density_pred[l] = T ? (double)lp / ((double)T * N) : 0;
    uint64_t top = top_tenth_events(x->freq, N, T, x->count);
    x->hot_sum += la ? (double)top / la : 0;
    uniform_draws(tr, l, x->freq, x->stamp);
    x->hot_uniform_sum += la ? (double)top_tenth_events(x->freq, N, T, x->count) / la : 0;
}

/* The kept channels' density per layer and on average (issue 33). */
static void channel_density(const struct trace *tr, struct trace_stats *s)
{
    const uint32_t L = tr->meta.n_layers;
    for (uint32_t l = 0; l < L; l++) {
        uint64_t kept = 0;
        for (uint64_t t = 0; t < tr->n_tokens; t++) {
            uint32_t n;
            trace_channels(tr, t, l, &n);
            kept += n;
        }
        s->chan_events += kept;
        s->density_channels[l] = tr->n_tokens ? (double)kept / ((double)tr->n_tokens * tr->meta.d_model) : 0;
        s->mean_density_channels += s->density_channels[l] / L;
    }
}

int trace_stats_compute(const struct trace *tr, struct trace_stats *s)
{
    memset(s, 0, sizeof *s);
    const uint32_t L = tr->meta.n_layers, N = tr->meta.d_ff;
    const uint64_t T = tr->n_tokens;
    s->n_layers = L;
    s->n_tokens = T;
    s->density_active = calloc(L, sizeof(double));
    if (tr->meta.has_predicted)
        s->density_pred = calloc(L, sizeof(double));
    if (tr->meta.has_channels)
        s->density_channels = calloc(L, sizeof(double));
    uint32_t *last_seen = malloc(N * sizeof(uint32_t));
    uint32_t *over = malloc((T ? T : 1) * TRACE_SAGG_MAX * sizeof(uint32_t));
    struct stats_scratch x = {.freq = calloc(N, sizeof(uint32_t)), .count = malloc((T + 1) * sizeof(uint32_t)),
                              .stamp = malloc(N * sizeof(uint32_t)), .in_pred = calloc(N, 1)};
    int rc = 0;
    if (!s->density_active || (tr->meta.has_predicted && !s->density_pred) ||
        (tr->meta.has_channels && !s->density_channels) || !last_seen || !over || !x.freq ||
        !x.in_pred || !x.count || !x.stamp) {
        trace_stats_free(s);
        rc = -1;
        goto out;
    }
    uint64_t longest = count_tokens(tr, s);
    for (uint32_t l = 0; l < L; l++)
        layer_counts(tr, l, s, &x);
    for (uint32_t l = 0; l < L; l++) {
        s->mean_density_active += s->density_active[l] / L;
        if (s->density_pred)
            s->mean_density_pred += s->density_pred[l] / L;
    }
    if (s->density_channels)
        channel_density(tr, s);
    s->hot10_share = x.hot_sum / L;
    s->hot10_uniform = x.hot_uniform_sum / L;
    s->sagg_k_max = (uint32_t)(longest < 16 ? longest : 16);
    if (tr->meta.has_predicted) {
        s->recall = s->active_events ? (double)x.hits / s->active_events : 0;
        s->pred_over_active = s->active_events ? (double)s->pred_events / s->active_events : 0;
    }
    sagg_kind(tr, 0, last_seen, over, s->sagg_active);
    if (tr->meta.has_predicted)
        sagg_kind(tr, 1, last_seen, over, s->sagg_pred);
out:
    free(last_seen);
    free(over);
    free(x.freq);
    free(x.in_pred);
    free(x.count);
    free(x.stamp);
    return rc;
}

const char *trace_stats_hot10_verdict(const struct trace_stats *s)
{
    double ratio = s->hot10_uniform > 0 ? s->hot10_share / s->hot10_uniform : 0;
    return ratio >= 1.5 ? "concentrated" : ratio >= 1.1 ? "mildly concentrated" : "no more than chance";
}

void trace_stats_free(struct trace_stats *s)
{
    free(s->density_active);
    free(s->density_pred);
    free(s->density_channels);
    s->density_active = s->density_pred = s->density_channels = NULL;
}

int trace_stats_write_sagg(struct out_manifest *folder, const char *dir, const struct trace_stats *s,
                           const struct trace *tr, bool plot, const struct fb_settings *set, char *err, size_t errlen)
{
    bool has_pred = tr->meta.has_predicted;
    char csv[2048], path[4200];
    size_t len = (size_t)snprintf(csv, sizeof csv, "k,sagg_active,sagg_predicted\n");
    for (int k = 1; k <= (int)s->sagg_k_max; k++)
        len += (size_t)snprintf(csv + len, sizeof csv - len, "%d,%.6f,%.6f\n", k, s->sagg_active[k - 1],
                                has_pred ? s->sagg_pred[k - 1] : 0.0);
    snprintf(path, sizeof path, "%s/sagg.csv", dir);
    if (atomic_write_text(folder, path, csv, err, errlen) != 0)
        return -1;
    if (!plot)
        return 0;
    char stem[4200];
    snprintf(stem, sizeof stem, "%s/fig4a", dir);
    char subtitle[160];
    snprintf(subtitle, sizeof subtitle, "%u layers, d_ff %u, %llu tokens%s", tr->meta.n_layers, tr->meta.d_ff,
             (unsigned long long)tr->n_tokens, has_pred ? "; actual and predicted sets" : "");
    const struct gnuplot_arg args[] = {GP_TEXT("csv", path), GP_NUMBER("has_pred", has_pred ? 1 : 0),
                                       GP_TEXT("plot_subtitle", subtitle)};
    return gnuplot_draw(set, folder, "fig4a_sagg.gp", args, 3, stem, err, errlen);
}
