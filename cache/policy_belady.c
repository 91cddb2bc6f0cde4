/* belady: offline optimal eviction (MIN) at the same capacity, the lower
 * bound for the capacity-limited policies: after each token keep the rows
 * whose next need comes soonest. A layer's next uses are computed from the
 * trace in one backward pass over its sets, when its first token comes.
 * Rows wait in one bucket per next-use token, in the order they were put
 * there (a token's rows in id order); the victim is the first row of the
 * latest bucket.
 *
 * A bucket is an array, not a list: the rows put into bucket k are all
 * needed at token k, each once (a row put there at token a is not needed
 * between a and k), so k's bucket fits in the room the trace's set of k
 * takes, and a row leaves it only from its front (an eviction) or at token
 * k, after which the bucket is never looked at again. So a bucket is its
 * rows in order with a count put in and a count taken out, and a push or an
 * eviction is one array access without a branch on the row.
 *
 * Memory: each layer's next uses and buckets take 8 bytes per neuron event
 * of the layer, reserved for every layer up front (nothing can fail once
 * requests come) but only touched while the layer is replayed: a layer
 * done with its last token hands its arrays to the next layer that starts,
 * so a replay that walks one layer through all tokens at a time (sim/replay.c)
 * keeps one layer's arrays in cache, where a run (token by token) uses all. */
#include <stdlib.h>

#include "cache/policy.h"
#include "common/errbuf.h"

struct belady_bucket {
    uint64_t at;            /* where its rows are in its layer's rows[] */
    uint32_t room;          /* rows it can hold: its token's set's size (d_ff for never) */
    uint32_t put, taken;    /* rows put into it / evicted from its front so far */
};

struct belady_layer {
    uint32_t *next_use;     /* the layer's sets' next uses, set after set (n_tokens: never); NULL before
                             * its first token and after its last */
    uint32_t *rows;         /* its buckets' rows: bucket k < n_tokens where next_use holds (k, l)'s,
                             * then bucket n_tokens (never) */
    uint32_t max;           /* no bucket above holds a row */
};

struct belady_state {
    struct belady_bucket *buckets; /* [n_layers][n_tokens + 1]: at is also where next_use holds (k, l)'s */
    struct belady_layer *layers;
    uint32_t *arena;        /* [n_layers][per_layer]: each layer's next uses then rows, untouched until used */
    uint64_t per_layer;
    uint32_t **spare;       /* arenas of layers done with their last token, for layers to come */
    uint32_t n_spare;
    uint32_t *seen;         /* [d_ff] scratch for the backward pass */
};

/* Where each layer's sets and buckets lie in its arrays; returns the most
 * events one layer has. */
static uint64_t place_buckets(struct policy *p, struct belady_state *s, const uint64_t *off)
{
    uint64_t T = p->known->n_tokens, most = 0;
    for (uint32_t l = 0; l < p->n_layers; l++) {
        struct belady_bucket *b = s->buckets + (size_t)l * (T + 1);
        uint64_t at = 0;
        for (uint64_t k = 0; k < T; k++) {
            uint64_t i = k * p->n_layers + l;
            b[k].at = at;
            b[k].room = (uint32_t)(off[i + 1] - off[i]);
            at += b[k].room;
        }
        b[T].at = at;
        b[T].room = p->d_ff;
        most = at > most ? at : most;
    }
    return most;
}

static int belady_init(struct policy *p, char *err, size_t errlen)
{
    const struct trace *tr = p->known;
    uint64_t T = tr->n_tokens;
    if (T >= UINT32_MAX - 1)
        return err_set(err, errlen, "belady: trace too long (%llu tokens)", (unsigned long long)T);
    struct belady_state *s = calloc(1, sizeof *s);
    p->state = s;
    if (!s)
        return err_set(err, errlen, "belady: out of memory");
    s->buckets = calloc((size_t)p->n_layers * (T + 1), sizeof *s->buckets);
    s->layers = calloc(p->n_layers + 1, sizeof *s->layers);
    s->spare = calloc(p->n_layers + 1, sizeof *s->spare);
    s->seen = malloc(((size_t)p->d_ff + 1) * sizeof *s->seen);
    if (!s->buckets || !s->layers || !s->spare || !s->seen)
        return err_set(err, errlen, "belady: out of memory");
    uint64_t most = place_buckets(p, s, p->predicted ? tr->pred_off : tr->active_off);
    s->per_layer = 2 * most + p->d_ff;
    s->arena = malloc(((size_t)p->n_layers * s->per_layer + 1) * sizeof *s->arena);
    if (!s->arena)
        return err_set(err, errlen, "belady: out of memory");
    return 0;
}

/* Layer l's first token: its arrays (a spare layer's, else its own) and its
 * next uses, in one backward pass over its sets. */
static void start_layer(struct policy *p, struct belady_state *s, uint32_t l)
{
    const struct trace *tr = p->known;
    const uint64_t *off = p->predicted ? tr->pred_off : tr->active_off;
    const uint32_t *all = p->predicted ? tr->pred_ids : tr->active_ids;
    uint64_t T = tr->n_tokens;
    const struct belady_bucket *b = s->buckets + (size_t)l * (T + 1);
    struct belady_layer *ly = &s->layers[l];
    ly->next_use = s->n_spare ? s->spare[--s->n_spare] : s->arena + (size_t)l * s->per_layer;
    ly->rows = ly->next_use + b[T].at;
    uint32_t *seen = s->seen;
    for (uint32_t i = 0; i < p->d_ff; i++)
        seen[i] = (uint32_t)T;
    for (uint64_t t = T; t-- > 0;) {
        const uint32_t *ids = all + off[t * p->n_layers + l];
        uint32_t *next = ly->next_use + b[t].at, n = b[t].room;
        for (uint32_t j = 0; j < n; j++) {
            uint32_t id = ids[j];
            next[j] = seen[id];
            seen[id] = (uint32_t)t;
        }
    }
}

static void belady_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                          const uint32_t *misses, uint32_t n_miss)
{
    (void)misses, (void)n_miss;
    struct belady_state *s = p->state;
    uint64_t T = p->known->n_tokens;
    if (t >= T) /* refused before a run (needs_future): nothing is known */
        return;
    struct belady_layer *ly = &s->layers[l];
    if (!ly->next_use) /* its first token */
        start_layer(p, s, l);
    struct belady_bucket *b = s->buckets + (size_t)l * (T + 1);
    /* the next uses are the trace's set's: a request of another size reads no further than it */
    uint32_t m = n < b[t].room ? n : b[t].room, max = ly->max;
    const uint32_t *next = ly->next_use + b[t].at;
    uint32_t *rows = ly->rows;
    for (uint32_t j = 0; j < m; j++) {
        uint32_t nu = next[j];
        struct belady_bucket *k = &b[nu];
        if (k->put < k->room)
            rows[k->at + k->put++] = need[j];
        max = nu > max ? nu : max;
    }
    /* a resident row waits in a bucket after t: the buckets up to t are spent */
    while (p->n_resident[l] > p->capacity) {
        while (max > t + 1 && b[max].taken == b[max].put)
            max--;
        if (max <= t || b[max].taken == b[max].put)
            break;
        policy_delete(p, l, ly->rows[b[max].at + b[max].taken++]);
    }
    ly->max = max;
    if (t + 1 == T) { /* the layer is done: its arrays serve the next to start */
        s->spare[s->n_spare++] = ly->next_use;
        ly->next_use = ly->rows = NULL;
    }
}

static void belady_free(struct policy *p)
{
    struct belady_state *s = p->state;
    if (!s)
        return;
    free(s->buckets);
    free(s->layers);
    free(s->arena);
    free(s->spare);
    free(s->seen);
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
