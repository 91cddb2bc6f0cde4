/* DRAM caching policies behind one ops table (as libCacheSim's cache_t).
 * Decisions only: which rows of a layer stay in DRAM between tokens. The
 * one request path (cache/cache.h's cache_request) owns the resident-row
 * bookkeeping and is driven by the offline replay (sim/replay.c) and by the
 * engine's flash FFN (engine/ffn/ffn_flash.c) alike; each policy_*.c only
 * decides what to read besides the misses and what to delete afterwards.
 *
 * Policies see the needed sets as they come (token by token, one layer at a
 * time; layers are independent). Those that need more than the past (hot:
 * a frequency profile, belady: the future) read it from `known`, a trace of
 * the same sets, and refuse to start without one. Not thread-safe: one
 * policy object per replay or run. */
#ifndef FLASHBED_CACHE_POLICY_H
#define FLASHBED_CACHE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "traces/trace.h"

struct policy;

/* Rows of a layer a policy holds when no budget sizes its cache. */
enum policy_unbudgeted {
    UNBUDGETED_NONE,       /* keeps nothing between tokens (or always has a budget) */
    UNBUDGETED_HALF_LAYER, /* hybrid: the paper's half of each layer resident */
    UNBUDGETED_ALL_NEEDED, /* window: every row its K tokens need, up to the whole layer */
};

/* What callers outside cache/ may ask of a policy: properties, never its
 * name or identity, so that a new policy is its own file plus one line in
 * cache/policies.def. */
struct policy_ops {
    const char *name;
    bool takes_arg;          /* "window:K": the argument is a count of tokens */
    const char *arg_name;    /* how --help names the argument: "K" */
    bool uses_budget;        /* capacity-limited: needs a budget (lru, lfu, hot, belady) */
    bool honours_budget;     /* keeps within a budget when one is given (window shrinks) */
    bool keeps_reads;        /* keeps what it reads for later tokens (rows it drops at once
                              * because the layer is full are overflow) */
    bool needs_known;        /* needs the trace's sets (profile or future) */
    const char *known_for;   /* needs_known: what it reads them for, as a refusal says it */
    bool preload_is_read;    /* its preload is read from flash with the first token */
    bool reads_whole_layers; /* reads every row it does not hold, whatever the token needs (naive,
                              * hybrid): priced without a trace, streamed, nothing placed */
    bool keeps_resident_part;/* a fixed resident part of each layer beside the streamed rest
                              * (hybrid): the budget's rows after one layer's stream */
    bool keeps_recent;       /* holds exactly the rows the last K tokens need (predictor: K = 1,
                              * window:K): its volumes follow the paper's s_agg curve */
    bool known_from_profile; /* its known sets may be a frequency profile (a warm-up run's) */
    bool needs_future;       /* reads the sets to come: a trace must cover every token (belady) */
    enum policy_unbudgeted unbudgeted;
    /* Optional. Allocates state and preloads resident rows (policy_preload).
     * Called once before the first token. 0, or -1 with err. */
    int (*init)(struct policy *p, char *err, size_t errlen);
    /* Optional. Rows of layer l to read this token besides the misses
     * (naive: the whole layer, hybrid: its non-resident part): ascending,
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
    const struct trace *known;  /* the sets to come / a profile: NULL when not known */
    bool predicted;             /* which sets of `known` */
    uint32_t n_layers, d_ff;
    uint64_t arg;               /* window:K -> K */
    uint64_t capacity;          /* rows per layer; 0: none (policies without a budget) */
    bool capped;                /* capacity is a limit, 0 included (uses_budget policies always;
                                 * honours_budget ones when a budget was given) */
    uint8_t *resident;          /* [n_layers * d_ff] */
    uint32_t *n_resident;       /* [n_layers] */
    uint64_t deleted;           /* rows deleted so far (the request path reads it per step) */
    uint64_t preloaded;         /* rows preloaded by init */
    uint64_t shrinks;           /* window: tokens dropped early to stay within capacity */
    uint32_t *deleted_ids;      /* when not NULL: ids deleted in this step are appended; the request
                                 * path sets it for update, with room for d_ff + 1 (a branch-free
                                 * delete, cache/recency_log.h, writes one past the last) */
    uint32_t n_deleted_ids;
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
    if (p->deleted_ids)
        p->deleted_ids[p->n_deleted_ids++] = id;
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

/* Rows of one layer the policy's cache holds: its capacity (0 included,
 * for the policies that use a budget), else what `unbudgeted` says. */
uint64_t policy_layer_rows(const struct policy_ops *ops, uint64_t capacity, uint32_t d_ff);

#define POLICY(x) extern const struct policy_ops policy_##x;
#include "cache/policies.def"
#undef POLICY

#endif
