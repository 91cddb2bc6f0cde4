/* window:K: the paper's sliding window (§3.1). DRAM holds the neurons needed
 * by any of the last K tokens, the current one included (the paper's k = 4
 * is window:5); per token only neurons new to the window are read. After
 * token t the rows last needed at token t+1-K leave. window:1 is predictor.
 *
 * Rows wait in one list in the order of their last need (a row needed again
 * moves to its tail; cache/recency_log.h), each with the token of that
 * need: the rows leaving the window are a run at the head, found without
 * looking back at the sets, and memory does not grow with K (window:1000000000 is a window longer
 * than any run). With a capacity (a DRAM budget) the window shrinks for the
 * layer while it does not fit: the oldest tokens' rows leave first, and
 * when even the current token's rows do not fit, the first of them in id
 * order stay and the rest are dropped after use (overflow). A capacity of
 * 0 given as a limit (cache_config.capacity_binds) keeps nothing. */
#include <stdlib.h>

#include "cache/policy.h"
#include "cache/recency_log.h"
#include "common/errbuf.h"

struct window_layer {
    struct recency_log order; /* rows by last need, oldest at the head */
    uint64_t *last_need;      /* [d_ff]: token of each listed row's last need */
};

static int window_init(struct policy *p, char *err, size_t errlen)
{
    if (p->arg == 0 || p->arg > UINT32_MAX - 1) {
        err_set(err, errlen, "window: K must be 1 to %u tokens", UINT32_MAX - 1);
        return -1;
    }
    struct window_layer *w = calloc(p->n_layers, sizeof *w);
    p->state = w;
    bool ok = w != NULL;
    for (uint32_t l = 0; ok && l < p->n_layers; l++) {
        w[l].last_need = malloc((size_t)p->d_ff * sizeof *w[l].last_need);
        ok = w[l].last_need && rl_init(&w[l].order, p->d_ff) == 0;
    }
    if (!ok) {
        err_set(err, errlen, "window: out of memory");
        return -1;
    }
    return 0;
}

/* Deletes the rows at the head last needed at the head's token (one
 * group of the log: they were listed together); returns how many. */
static uint32_t drop_oldest_token(struct policy *p, uint32_t l, struct window_layer *w)
{
    return rl_head(&w->order) == RL_NONE ? 0 : rl_delete_group(&w->order, p, l);
}

static void window_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need,
                          uint32_t n, const uint32_t *misses, uint32_t n_miss)
{
    (void)misses, (void)n_miss;
    struct window_layer *w = (struct window_layer *)p->state + l;
    uint64_t K = p->arg;
    rl_append(&w->order, need, n, w->last_need, t);
    /* the rows last needed at token t+1-K leave: the window after t holds
     * tokens t+2-K .. t+1 */
    uint32_t head;
    while (t + 1 >= K && (head = rl_head(&w->order)) != RL_NONE && w->last_need[head] <= t + 1 - K)
        drop_oldest_token(p, l, w);
    while (p->capped && p->n_resident[l] > p->capacity && (head = rl_head(&w->order)) != RL_NONE &&
           w->last_need[head] < t)
        if (drop_oldest_token(p, l, w))
            p->shrinks++;
    while (p->capped && p->n_resident[l] > p->capacity) {
        uint32_t id = rl_tail(&w->order); /* the current token's highest ids go first */
        if (id == RL_NONE)
            break;
        rl_pop_tail(&w->order);
        policy_delete(p, l, id);
    }
}

static void window_free(struct policy *p)
{
    struct window_layer *w = p->state;
    for (uint32_t l = 0; w && l < p->n_layers; l++) {
        rl_free(&w[l].order);
        free(w[l].last_need);
    }
    free(w);
}

const struct policy_ops policy_window = {
    .name = "window",
    .takes_arg = true,
    .arg_name = "K",
    .honours_budget = true,
    .keeps_recent = true,
    .unbudgeted = UNBUDGETED_ALL_NEEDED,
    .keeps_reads = true,
    .init = window_init,
    .update = window_update,
    .free = window_free,
};
