/* A text's negative log-likelihood under the model, summed by the scoring
 * loop (engine/forward/text_feed.h) under one of its rules: what
 * `flashbed perplexity` reports (perplexity = exp(nll / scored)) and what
 * a comparison with llama.cpp's perplexity tool needs (each window's sum,
 * as that tool prints its running figure per window). Each token's term
 * is text_feed_nll's: -log softmax in double over the float logits. */
#ifndef FLASHBED_ENGINE_TEXT_SCORE_H
#define FLASHBED_ENGINE_TEXT_SCORE_H

#include <stddef.h>

#include "engine/forward/engine.h"
#include "engine/forward/text_feed.h"

struct text_score_config {
    enum text_feed_rule rule;
    size_t max_windows;  /* 0: every window the text fills */
    /* Optional: after each window, done of n tokens fed (a progress bar). */
    void (*progress)(void *ctx, size_t done, size_t n);
    void *ctx;
};

struct text_score {
    double nll;          /* summed over the tokens scored */
    size_t scored;       /* tokens scored */
    size_t windows;      /* windows completed */
    size_t bad;          /* with -1: the token whose logits were not finite */
    /* Optional, the caller's: room for text_feed_plan's windows; window w's
     * summed nll at [w] once it completes. */
    double *window_nll;
};

/* Scores tokens[0..n) on engine e by c's rule, filling *out (its
 * window_nll pointer kept, the rest reset first). text_feed_run's codes:
 * 0, 1 when interrupted (the windows done are in *out), -1 when a token's
 * logits were not finite (NaN weights, overflow; out->bad names it),
 * TEXT_FEED_FAILED when a forward pass failed (the reason in e->err). */
int text_score_run(struct engine *e, const int *tokens, size_t n, const struct text_score_config *c,
                   struct text_score *out);

#endif
