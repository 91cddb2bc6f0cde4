/* belady: offline optimal eviction (MIN) at the same capacity, the lower
 * bound for the capacity-limited policies: after each token keep the rows
 * whose next need comes soonest. Next uses are precomputed from the trace in
 * one backward pass; rows wait in one list per next-use token. */
#include <stdlib.h>

#include "cache/bucket_list.h"
#include "cache/policy.h"
#include "common/errbuf.h"

struct belady_layer {
    struct bucket_list b;   /* bucket = token of the next need; n_tokens = never */
    uint32_t max;           /* no resident row has a later next use */
};

struct belady_state {
    struct belady_layer *layers;
    uint32_t *next_use;     /* parallel to the replayed ids: token of the next need */
};

static int belady_init(struct policy *p, char *err, size_t errlen)
{
    const struct trace *tr = p->known;
    uint64_t T = tr->n_tokens;
    if (T >= UINT32_MAX - 1) {
        err_set(err, errlen, "belady: trace too long (%llu tokens)", (unsigned long long)T);
        return -1;
    }
    const uint64_t *off = p->predicted ? tr->pred_off : tr->active_off;
    uint64_t total = off[T * p->n_layers];
    struct belady_state *s = calloc(1, sizeof *s);
    uint32_t *seen = malloc(p->d_ff * sizeof(uint32_t));
    p->state = s;
    if (s) {
        s->layers = calloc(p->n_layers, sizeof *s->layers);
        s->next_use = malloc((total ? total : 1) * sizeof(uint32_t));
    }
    int ok = s && seen && s->layers && s->next_use;
    for (uint32_t l = 0; ok && l < p->n_layers; l++) {
        if (bl_init(&s->layers[l].b, p->d_ff, (uint32_t)T + 1) != 0) {
            ok = 0;
            break;
        }
        for (uint32_t i = 0; i < p->d_ff; i++)
            seen[i] = (uint32_t)T;
        for (uint64_t t = T; t-- > 0;) {
            uint64_t k = t * p->n_layers + l;
            const uint32_t *ids = (p->predicted ? tr->pred_ids : tr->active_ids) + off[k];
            for (uint64_t j = 0; j < off[k + 1] - off[k]; j++) {
                s->next_use[off[k] + j] = seen[ids[j]];
                seen[ids[j]] = (uint32_t)t;
            }
        }
    }
    free(seen);
    if (!ok) {
        err_set(err, errlen, "belady: out of memory");
        return -1;
    }
    return 0;
}

static void belady_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                          const uint32_t *misses, uint32_t n_miss)
{
    (void)misses, (void)n_miss;
    struct belady_state *s = p->state;
    struct belady_layer *bl = &s->layers[l];
    const uint64_t *off = p->predicted ? p->known->pred_off : p->known->active_off;
    const uint32_t *next = s->next_use + off[t * p->n_layers + l];
    for (uint32_t j = 0; j < n; j++) {
        bl_push_tail(&bl->b, need[j], next[j]);
        if (next[j] > bl->max)
            bl->max = next[j];
    }
    while (p->n_resident[l] > p->capacity) {
        while (bl->b.head[bl->max] == BL_NONE)
            bl->max--;
        uint32_t victim = bl->b.head[bl->max];
        bl_remove(&bl->b, victim);
        policy_delete(p, l, victim);
    }
}

static void belady_free(struct policy *p)
{
    struct belady_state *s = p->state;
    if (!s)
        return;
    for (uint32_t l = 0; s->layers && l < p->n_layers; l++)
        bl_free(&s->layers[l].b);
    free(s->layers);
    free(s->next_use);
    free(s);
}

const struct policy_ops policy_belady = {
    .name = "belady",
    .uses_budget = true,
    .keeps_reads = true,
    .needs_known = true,
    .known_for = "looks into the future",
    .needs_future = true,
    .init = belady_init,
    .update = belady_update,
    .free = belady_free,
};
