/* A layer's rows in the order of their last need, as an append-only log:
 * a row needed again is appended anew and its older entry goes stale (an
 * entry is live while pos[id] is its index), instead of being unlinked from
 * a list. Each append is a group (lru, window: one token's rows), its first
 * entry marked. The oldest live rows are deleted from the head, skipping
 * stale entries without a branch on them; the log is compacted (live
 * entries moved to the front, order and groups kept) when an append would
 * not fit. Every operation is O(1) amortised and touches sequential memory
 * but for one pos[] access per row: no branch on whether a row was listed
 * (a hit) or not (a miss), which a linked list pays per need, and none per
 * stale entry. The order is exactly a list's where a row needed again
 * moves to the tail. Internal to cache/; not thread-safe (one per layer of
 * one policy). */
#ifndef FLASHBED_CACHE_RECENCY_LOG_H
#define FLASHBED_CACHE_RECENCY_LOG_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/policy.h"

#define RL_NONE UINT32_MAX
#define RL_GROUP 0x80000000u /* on an entry: the first of its group (ids < 2^31: d_ff is far below) */

struct recency_log {
    uint32_t *ids;        /* [cap]: entries (id | RL_GROUP), oldest first; [head, len) may hold live ones */
    uint32_t *pos;        /* [n_ids]: index of the id's live entry, RL_NONE when not listed */
    uint32_t head, len, cap, n_ids;
};

/* Room for 4 * n_ids entries: at most n_ids are live, so a compaction
 * leaves room for the next append (at most n_ids) and then some, which
 * keeps its cost at a few entries per append. 0, or -1 (memory). */
static inline int rl_init(struct recency_log *r, uint32_t n_ids)
{
    memset(r, 0, sizeof *r);
    r->n_ids = n_ids;
    r->cap = 4 * (n_ids ? n_ids : 1);
    r->ids = malloc((size_t)r->cap * sizeof(uint32_t));
    r->pos = malloc((size_t)(n_ids ? n_ids : 1) * sizeof(uint32_t));
    if (!r->ids || !r->pos)
        return -1;
    memset(r->pos, 0xff, (size_t)n_ids * sizeof(uint32_t)); /* RL_NONE */
    return 0;
}

static inline void rl_free(struct recency_log *r)
{
    free(r->ids);
    free(r->pos);
}

/* p->state: a log per layer, each for p->d_ff ids (lru's and lfu's
 * state). 0, or -1 (memory; rl_free_layers frees what was made). */
static inline int rl_init_layers(struct policy *p)
{
    struct recency_log *r = calloc(p->n_layers, sizeof *r);
    p->state = r;
    for (uint32_t l = 0; r && l < p->n_layers; l++)
        if (rl_init(&r[l], p->d_ff) != 0)
            return -1;
    return r ? 0 : -1;
}

static inline void rl_free_layers(struct policy *p)
{
    struct recency_log *r = p->state;
    for (uint32_t l = 0; r && l < p->n_layers; l++)
        rl_free(&r[l]);
    free(r);
}

/* The live entries moved to the front, in order; a group's mark moves to
 * its first live entry, and a group without one is gone. */
static inline void rl_compact(struct recency_log *r)
{
    uint32_t k = 0, mark = 0;
    for (uint32_t i = r->head; i < r->len; i++) {
        uint32_t id = r->ids[i] & ~RL_GROUP;
        mark |= r->ids[i] & RL_GROUP;
        if (r->pos[id] == i) {
            r->ids[k] = id | mark;
            r->pos[id] = k++;
            mark = 0;
        }
    }
    r->head = 0;
    r->len = k;
}

/* Lists ids[0..n) (distinct, below 2^31) at the tail in this order as one
 * group, each leaving its older place; with stamp, also stamp[id] = t for
 * each (window's token of the last need, in the same pass). */
static inline void rl_append(struct recency_log *r, const uint32_t *ids, uint32_t n, uint64_t *stamp, uint64_t t)
{
    if (!n)
        return;
    if (r->cap - r->len < n)
        rl_compact(r);
    uint32_t *out = r->ids + r->len, *pos = r->pos, at = r->len;
    if (stamp)
        for (uint32_t j = 0; j < n; j++) {
            out[j] = ids[j];
            pos[ids[j]] = at + j;
            stamp[ids[j]] = t;
        }
    else
        for (uint32_t j = 0; j < n; j++) {
            out[j] = ids[j];
            pos[ids[j]] = at + j;
        }
    out[0] |= RL_GROUP;
    r->len += n;
}

/* The oldest listed id, RL_NONE when none; the head moves to it. */
static inline uint32_t rl_head(struct recency_log *r)
{
    while (r->head < r->len && r->pos[r->ids[r->head] & ~RL_GROUP] != r->head)
        r->head++;
    return r->head < r->len ? r->ids[r->head] & ~RL_GROUP : RL_NONE;
}

/* The newest listed id, RL_NONE when none, and unlisting it. */
static inline uint32_t rl_tail(struct recency_log *r)
{
    while (r->len > r->head && r->pos[r->ids[r->len - 1] & ~RL_GROUP] != r->len - 1)
        r->len--;
    return r->len > r->head ? r->ids[r->len - 1] & ~RL_GROUP : RL_NONE;
}

static inline void rl_pop_tail(struct recency_log *r)
{
    r->pos[r->ids[--r->len] & ~RL_GROUP] = RL_NONE;
}

/* Unlists entry i when it is live (pos[id] is i) and then deletes its
 * row from layer res (policy_delete's work but the counts, which the
 * caller adds: returns 1 when deleted). Branch-free: most entries a scan
 * passes are stale, and which is a coin toss. The id goes to *out either
 * way; the caller keeps it by advancing out by the result. */
static inline uint32_t rl_delete_entry(uint32_t *pos, uint8_t *res, uint32_t raw, uint32_t i, uint32_t *out)
{
    uint32_t id = raw & ~RL_GROUP, live = pos[id] == i;
    *out = id;
    res[id] &= (uint8_t)(live - 1);   /* live: 0, else as it was */
    pos[id] |= (uint32_t)0 - live;    /* live: RL_NONE */
    return live;
}

/* The counts of k rows deleted from p's layer l (policy_delete's). */
static inline void rl_deleted(struct policy *p, uint32_t l, uint32_t k)
{
    p->n_resident[l] -= k;
    p->deleted += k;
    p->n_deleted_ids += k;
}

/* Unlists the max oldest live entries (fewer when the log runs out) and
 * deletes their rows from p's layer l, appending the ids to
 * p->deleted_ids in order. Returns how many. p->deleted_ids has room for
 * one id past the step's deletions (rl_delete_entry writes every entry). */
static inline uint32_t rl_delete_oldest(struct recency_log *r, struct policy *p, uint32_t l, uint32_t max)
{
    uint8_t *res = policy_row(p, l);
    uint32_t *ids = r->ids, *pos = r->pos, *out = p->deleted_ids + p->n_deleted_ids;
    uint32_t i = r->head, end = r->len, k = 0;
    for (; i < end && k < max; i++)
        k += rl_delete_entry(pos, res, ids[i], i, out + k);
    r->head = i;
    rl_deleted(p, l, k);
    return k;
}

/* As rl_delete_oldest, for the live entries of the head's group: up to
 * the next group's first entry. Returns how many. */
static inline uint32_t rl_delete_group(struct recency_log *r, struct policy *p, uint32_t l)
{
    uint8_t *res = policy_row(p, l);
    uint32_t *ids = r->ids, *pos = r->pos, *out = p->deleted_ids + p->n_deleted_ids;
    uint32_t i = r->head, end = r->len, k = 0;
    if (i < end)
        k += rl_delete_entry(pos, res, ids[i++], r->head, out);
    for (; i < end && !(ids[i] & RL_GROUP); i++)
        k += rl_delete_entry(pos, res, ids[i], i, out + k);
    r->head = i;
    rl_deleted(p, l, k);
    return k;
}

#endif
