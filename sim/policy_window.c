/* window:K: the paper's sliding window (§3.1). DRAM holds the neurons needed
 * by any of the last K tokens, the current one included (the paper's k = 4
 * is window:5); per token only neurons new to the window are read. After
 * token t the rows last needed at token t+1-K leave. Not capacity-limited:
 * the replay reports the memory the window needs. window:1 is predictor. */
#include <stdlib.h>

#include "sim/policy.h"

struct window_state {
    uint32_t *last_used; /* [n_layers * d_ff]: token + 1 of the last need; 0 never */
};

static int window_init(struct policy *p, char *err, size_t errlen)
{
    struct window_state *s = calloc(1, sizeof *s);
    if (s)
        s->last_used = calloc((size_t)p->n_layers * p->d_ff, sizeof(uint32_t));
    if (!s || !s->last_used) {
        free(s);
        snprintf(err, errlen, "window: out of memory");
        return -1;
    }
    p->state = s;
    return 0;
}

static void window_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need,
                          uint32_t n, const uint32_t *misses, uint32_t n_miss)
{
    (void)misses, (void)n_miss;
    struct window_state *s = p->state;
    uint32_t *last = s->last_used + (size_t)l * p->d_ff;
    for (uint32_t j = 0; j < n; j++)
        last[need[j]] = (uint32_t)t + 1;
    if (t + 1 < p->arg)
        return;
    uint64_t leaving = t + 1 - p->arg; /* token whose rows now fall out of the window */
    uint32_t nl;
    const uint32_t *old = trace_set(p->tr, p->predicted, leaving, l, &nl);
    const uint8_t *res = policy_row(p, l);
    for (uint32_t j = 0; j < nl; j++)
        if (last[old[j]] == leaving + 1 && res[old[j]])
            policy_delete(p, l, old[j]);
}

static void window_free(struct policy *p)
{
    struct window_state *s = p->state;
    if (s)
        free(s->last_used);
    free(s);
}

const struct policy_ops policy_window = {
    .name = "window",
    .takes_arg = true,
    .init = window_init,
    .update = window_update,
    .free = window_free,
};
