/* How large a sliding window a trace needs: for each window length k, the
 * most rows window:k (cache/policy_window.c) holds at once in any layer
 * over a run that replays the trace cyclically (token t uses the sets of
 * trace token t mod n_tokens, as flashbed run does). The engine's
 * `--window auto` takes the largest k whose peak fits a layer's cache; the
 * run then never shrinks its window. Pure arithmetic on a loaded trace;
 * thread-compatible. */
#ifndef FLASHBED_TRACES_TRACE_WINDOW_H
#define FLASHBED_TRACES_TRACE_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "traces/trace.h"

/* most[k-1], k = 1..kmax: the largest union, in any layer, of the sets of k
 * consecutive run tokens among the first `tokens` (the window does not
 * restart at a sequence start, so neither does this). 0, or -1 when out of
 * memory. */
int trace_window_peaks(const struct trace *tr, bool predicted, uint64_t tokens, uint32_t kmax, uint32_t *most);

#endif
