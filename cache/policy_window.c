/* window:K: the paper's sliding window (§3.1). DRAM holds the neurons needed
 * by any of the last K tokens, the current one included (the paper's k = 4
 * is window:5); per token only neurons new to the window are read. After
 * token t the rows last needed at token t+1-K leave. window:1 is predictor.
 *
 * Rows wait in one list per token of their last need (token mod K), so the
 * rows leaving the window are one list, found without looking back at the
 * sets. With a capacity (a DRAM budget) the window shrinks for the layer
 * while it does not fit: the oldest tokens' rows leave first, and when even
 * the current token's rows do not fit, the first of them in id order stay
 * and the rest are dropped after use (overflow). */
#include <stdlib.h>

#include "cache/bucket_list.h"
#include "cache/policy.h"

static int window_init(struct policy *p, char *err, size_t errlen)
{
    if (p->arg == 0 || p->arg > UINT32_MAX - 1) {
        snprintf(err, errlen, "window: K must be 1 to %u tokens", UINT32_MAX - 1);
        return -1;
    }
    struct bucket_list *b = calloc(p->n_layers, sizeof *b);
    p->state = b;
    for (uint32_t l = 0; b && l < p->n_layers; l++)
        if (bl_init(&b[l], p->d_ff, (uint32_t)p->arg) != 0)
            b = NULL;
    if (!b) {
        snprintf(err, errlen, "window: out of memory");
        return -1;
    }
    return 0;
}

/* Deletes every row of bucket k; returns how many. */
static uint32_t drop_bucket(struct policy *p, uint32_t l, struct bucket_list *b, uint32_t k)
{
    uint32_t n = 0;
    for (uint32_t id; (id = b->head[k]) != BL_NONE; n++) {
        bl_remove(b, id);
        policy_delete(p, l, id);
    }
    return n;
}

static void window_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need,
                          uint32_t n, const uint32_t *misses, uint32_t n_miss)
{
    (void)misses, (void)n_miss;
    struct bucket_list *b = (struct bucket_list *)p->state + l;
    uint64_t K = p->arg;
    uint32_t now = (uint32_t)(t % K);
    for (uint32_t j = 0; j < n; j++)
        bl_push_tail(b, need[j], now);
    /* tokens t+1-K, t+2-K, ... (oldest first) sit in buckets t+1, t+2, ... mod K */
    uint64_t oldest = t + 1 >= K ? t + 1 - K : 0;
    if (t + 1 >= K)
        drop_bucket(p, l, b, (uint32_t)(oldest % K));
    for (uint64_t s = oldest + 1; p->capacity && p->n_resident[l] > p->capacity && s < t; s++)
        if (drop_bucket(p, l, b, (uint32_t)(s % K)))
            p->shrinks++;
    while (p->capacity && p->n_resident[l] > p->capacity) {
        uint32_t id = b->tail[now]; /* the current token's highest ids go first */
        bl_remove(b, id);
        policy_delete(p, l, id);
    }
}

static void window_free(struct policy *p)
{
    struct bucket_list *b = p->state;
    for (uint32_t l = 0; b && l < p->n_layers; l++)
        bl_free(&b[l]);
    free(b);
}

const struct policy_ops policy_window = {
    .name = "window",
    .takes_arg = true,
    .honours_budget = true,
    .keeps_reads = true,
    .init = window_init,
    .update = window_update,
    .free = window_free,
};
