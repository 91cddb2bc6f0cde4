/* The one scoring loop (engine/forward/text_feed.h). */
#include "engine/forward/text_feed.h"

#include <math.h>

#include "common/interrupt.h"
#include "engine/forward/sampler.h"

int text_feed_run(struct engine *e, const int *tokens, size_t n, const struct text_feed *f)
{
    size_t window = (size_t)e->max_seq - 1;
    for (size_t start = 0; start < n; start += window) {
        size_t end = start + window < n ? start + window : n;
        int prev = e->m->bos_id;
        for (size_t i = start; i < end; i++) {
            if (interrupted())
                return 1;
            if (f->before)
                f->before(f->ctx, i);
            engine_forward(e, prev, (int)(i - start));
            if (f->scored && f->scored(f->ctx, i, e->s.logits) != 0)
                return -1;
            prev = tokens[i];
        }
        if (f->progress)
            f->progress(f->ctx, end, n);
    }
    return 0;
}

double text_feed_nll(const float *logits, int vocab, int target, int *top)
{
    int best = argmax(logits, vocab);
    double sum = 0;
    for (int v = 0; v < vocab; v++)
        sum += exp((double)logits[v] - logits[best]);
    if (top)
        *top = best;
    return log(sum) + logits[best] - logits[target];
}
