/* Window peaks (trace_window.h). Per layer, every neuron is counted at the
 * run token of its last use: after token t the window of length k holds
 * the neurons last used in (t-k, t], so its size is a sum over the last k
 * counts, and all k come from one running sum. O(tokens * (need + kmax))
 * per layer. */
#include "traces/trace_window.h"

#include <stdlib.h>
#include <string.h>

static void layer_peaks(const struct trace *tr, bool predicted, uint64_t tokens, uint32_t l, uint32_t kmax,
                        uint64_t *last, uint32_t *at, uint32_t *most)
{
    const uint64_t never = UINT64_MAX;
    for (uint32_t i = 0; i < tr->meta.d_ff; i++)
        last[i] = never;
    memset(at, 0, tokens * sizeof *at);
    for (uint64_t t = 0; t < tokens; t++) {
        uint32_t n;
        const uint32_t *ids = trace_set(tr, predicted, t % tr->n_tokens, l, &n);
        for (uint32_t j = 0; j < n; j++) {
            if (last[ids[j]] != never)
                at[last[ids[j]]]--;
            last[ids[j]] = t;
            at[t]++;
        }
        uint32_t held = 0;
        for (uint32_t k = 1; k <= kmax; k++) {
            if (k <= t + 1)
                held += at[t + 1 - k];
            most[k - 1] = held > most[k - 1] ? held : most[k - 1];
        }
    }
}

int trace_window_peaks(const struct trace *tr, bool predicted, uint64_t tokens, uint32_t kmax, uint32_t *most)
{
    memset(most, 0, kmax * sizeof *most);
    if (tokens == 0 || tr->n_tokens == 0)
        return 0;
    uint64_t *last = malloc(tr->meta.d_ff * sizeof *last);
    uint32_t *at = malloc(tokens * sizeof *at);
    if (!last || !at) {
        free(last);
        free(at);
        return -1;
    }
    for (uint32_t l = 0; l < tr->meta.n_layers; l++)
        layer_peaks(tr, predicted, tokens, l, kmax, last, at, most);
    free(last);
    free(at);
    return 0;
}
