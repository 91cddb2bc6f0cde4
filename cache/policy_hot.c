/* hot: PowerInfer-style static pinning. The rows needed most often over the
 * whole trace (an offline profile) are preloaded up to the layer's capacity
 * and never leave; the others are read on demand and dropped after use.
 * Ranked by count (most first), ties to the lower id; rows never needed are
 * not pinned. */
#include <stdlib.h>
#include <string.h>

#include "cache/policy.h"
#include "common/errbuf.h"

/* The count the pin-th row of the ranking has (*thr), and how many rows of
 * that count are pinned (*take, the lowest ids): a histogram of counts
 * instead of a sort, which the ranking's order does not need. thr 0: every
 * row counted at least once is pinned. */
static void pin_threshold(const uint32_t *hist, uint32_t max_count, uint64_t pin, uint32_t *thr, uint64_t *take)
{
    *thr = 0;
    *take = 0;
    for (uint32_t c = max_count; c > 0; c--) {
        if (hist[c] > pin) {
            *thr = c;
            *take = pin;
            return;
        }
        pin -= hist[c];
    }
}

static void pin_layer(struct policy *p, uint32_t l, uint32_t *count, uint32_t *hist)
{
    memset(count, 0, p->d_ff * sizeof *count);
    for (uint64_t t = 0; t < p->known->n_tokens; t++) {
        uint32_t n;
        const uint32_t *ids = trace_set(p->known, p->predicted, t, l, &n);
        for (uint32_t j = 0; j < n; j++)
            count[ids[j]]++;
    }
    uint32_t max_count = 0;
    for (uint32_t i = 0; i < p->d_ff; i++)
        max_count = count[i] > max_count ? count[i] : max_count;
    memset(hist, 0, ((size_t)max_count + 1) * sizeof *hist);
    for (uint32_t i = 0; i < p->d_ff; i++)
        hist[count[i]]++;
    uint32_t thr;
    uint64_t take;
    pin_threshold(hist, max_count, p->capacity < p->d_ff ? p->capacity : p->d_ff, &thr, &take);
    for (uint32_t i = 0; i < p->d_ff; i++) {
        if (count[i] > thr)
            policy_preload(p, l, i);
        else if (count[i] == thr && take > 0) {
            policy_preload(p, l, i);
            take--;
        }
    }
}

static int hot_init(struct policy *p, char *err, size_t errlen)
{
    /* a row's count is at most the number of tokens */
    uint64_t T = p->known->n_tokens;
    uint32_t *count = malloc(p->d_ff * sizeof *count);
    uint32_t *hist = T < UINT32_MAX ? malloc(((size_t)T + 1) * sizeof *hist) : NULL;
    if (!count || !hist) {
        free(count);
        free(hist);
        return err_set(err, errlen, "hot: out of memory");
    }
    for (uint32_t l = 0; l < p->n_layers; l++)
        pin_layer(p, l, count, hist);
    free(count);
    free(hist);
    return 0;
}

const struct policy_ops policy_hot = {
    .name = "hot",
    .uses_budget = true,
    .needs_known = true,
    .known_for = "pins the trace's most frequent neurons",
    .known_from_profile = true,
    .preload_is_read = true,
    .init = hot_init,
    .update = policy_drop_misses,
};
