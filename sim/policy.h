/* DRAM caching policies behind one ops table (as libCacheSim's cache_t):
 * sim/replay.c owns the request path and the resident-row bookkeeping;
 * each policy_*.c only decides what to read besides the misses and what to
 * delete afterwards. Internal to sim/. */
#ifndef FLASHBED_SIM_POLICY_H
#define FLASHBED_SIM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "traces/trace.h"

struct policy;

struct policy_ops {
    const char *name;
    bool takes_arg;          /* "window:K" */
    bool uses_budget;        /* capacity-limited: p->capacity rows per layer */
    /* Optional. Allocates state and preloads resident rows (policy_preload).
     * Called once before the first token. 0, or -1 with err. */
    int (*init)(struct policy *p, char *err, size_t errlen);
    /* Optional. Rows of layer l to read this token besides the misses
     * (naive: the whole layer, hybrid: its non-resident half): ascending,
     * none of them resident nor a miss; written to out (room for d_ff) unless
     * out is NULL (the layout needs only the count); returns how many. They
     * are read and dropped again after the token. n_miss: misses of the layer. */
    uint32_t (*extra_reads)(struct policy *p, uint32_t l, const uint8_t *is_miss, uint32_t n_miss,
                           uint32_t *out);
    /* After the misses of (t, l) were inserted: update recency/frequency of
     * the needed rows and delete rows (policy_delete) until the layer holds
     * what the policy keeps for later tokens. need: ascending, n of them. */
    void (*update)(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                   const uint32_t *misses, uint32_t n_miss);
    void (*free)(struct policy *p);
};

struct policy {
    const struct policy_ops *ops;
    const struct trace *tr;
    bool predicted;           /* which sets of tr are replayed */
    uint32_t n_layers, d_ff;
    uint64_t arg;             /* window:K -> K */
    uint64_t capacity;        /* rows per layer, for uses_budget policies */
    uint8_t *resident;        /* [n_layers * d_ff] */
    uint32_t *n_resident;     /* [n_layers] */
    uint64_t deleted;         /* rows deleted so far (the replay reads it per token) */
    uint64_t preloaded;       /* rows preloaded by init */
    void *state;
};

static inline uint8_t *policy_row(struct policy *p, uint32_t l)
{
    return p->resident + (size_t)l * p->d_ff;
}

static inline void policy_delete(struct policy *p, uint32_t l, uint32_t id)
{
    p->resident[(size_t)l * p->d_ff + id] = 0;
    p->n_resident[l]--;
    p->deleted++;
}

static inline void policy_preload(struct policy *p, uint32_t l, uint32_t id)
{
    uint8_t *r = &p->resident[(size_t)l * p->d_ff + id];
    if (!*r) {
        *r = 1;
        p->n_resident[l]++;
        p->preloaded++;
    }
}

/* Deletes the rows of a list that are resident (the policies that keep nothing). */
static inline void policy_delete_list(struct policy *p, uint32_t l, const uint32_t *ids, uint32_t n)
{
    const uint8_t *r = policy_row(p, l);
    for (uint32_t j = 0; j < n; j++)
        if (r[ids[j]])
            policy_delete(p, l, ids[j]);
}

/* The update of the policies that keep nothing they read (naive, hybrid,
 * predictor, hot): the misses leave again after the token. */
void policy_drop_misses(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                        const uint32_t *misses, uint32_t n_miss);

extern const struct policy_ops policy_naive, policy_hybrid, policy_predictor, policy_window,
    policy_lru, policy_lfu, policy_hot, policy_belady;

#endif
