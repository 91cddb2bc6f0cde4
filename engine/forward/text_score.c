/* A text's summed NLL through the scoring loop (engine/forward/text_score.h). */
#include "engine/forward/text_score.h"

#include <math.h>

struct scoring {
    const int *tokens;
    int vocab;
    double window_start; /* out->nll when the current window began */
    const struct text_score_config *c;
    struct text_score *out;
};

static int add_token(void *ctx, size_t i, const float *logits)
{
    struct scoring *s = ctx;
    double term = text_feed_nll(logits, s->vocab, s->tokens[i], NULL);
    if (!isfinite(term)) {
        s->out->bad = i;
        return -1;
    }
    s->out->nll += term;
    s->out->scored++;
    return 0;
}

static void window_done(void *ctx, size_t done, size_t n)
{
    struct scoring *s = ctx;
    if (s->out->window_nll)
        s->out->window_nll[s->out->windows] = s->out->nll - s->window_start;
    s->out->windows++;
    s->window_start = s->out->nll;
    if (s->c->progress)
        s->c->progress(s->c->ctx, done, n);
}

int text_score_run(struct engine *e, const int *tokens, size_t n, const struct text_score_config *c,
                   struct text_score *out)
{
    *out = (struct text_score){.window_nll = out->window_nll};
    struct scoring s = {.tokens = tokens, .vocab = (int)e->m->shape.vocab_size, .c = c, .out = out};
    const struct text_feed f = {.scored = add_token, .progress = window_done, .ctx = &s, .rule = c->rule,
                                .max_windows = c->max_windows};
    return text_feed_run(e, tokens, n, &f);
}
