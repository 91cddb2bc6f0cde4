/* Intrusive doubly-linked lists of neuron ids, grouped in numbered buckets:
 * one array of links per layer, no allocation per operation; a row needed
 * again is unlinked and moved. The straightforward form of the policies'
 * orders (LRU: one bucket in recency order, LFU: one per frequency,
 * Belady: one per next-use token), which the policies no longer use
 * (cache/recency_log.h, policy_belady.c's arrays are faster) and
 * tests/unit/test_policy_fast.c checks them against. Internal to cache/. */
#ifndef FLASHBED_CACHE_BUCKET_LIST_H
#define FLASHBED_CACHE_BUCKET_LIST_H

#include <stdint.h>
#include <stdlib.h>

#define BL_NONE UINT32_MAX

struct bucket_list {
    uint32_t *prev, *next;   /* [n_ids] */
    uint32_t *bucket;        /* [n_ids]: bucket of id, BL_NONE when in none */
    uint32_t *head, *tail;   /* [n_buckets] */
    uint32_t n_buckets;
};

static inline int bl_init(struct bucket_list *b, uint32_t n_ids, uint32_t n_buckets)
{
    b->prev = malloc(n_ids * sizeof(uint32_t));
    b->next = malloc(n_ids * sizeof(uint32_t));
    b->bucket = malloc(n_ids * sizeof(uint32_t));
    b->head = malloc(n_buckets * sizeof(uint32_t));
    b->tail = malloc(n_buckets * sizeof(uint32_t));
    b->n_buckets = n_buckets;
    if (!b->prev || !b->next || !b->bucket || !b->head || !b->tail)
        return -1;
    for (uint32_t i = 0; i < n_ids; i++)
        b->bucket[i] = BL_NONE;
    for (uint32_t k = 0; k < n_buckets; k++)
        b->head[k] = b->tail[k] = BL_NONE;
    return 0;
}

static inline void bl_free(struct bucket_list *b)
{
    free(b->prev);
    free(b->next);
    free(b->bucket);
    free(b->head);
    free(b->tail);
}

static inline void bl_remove(struct bucket_list *b, uint32_t id)
{
    uint32_t k = b->bucket[id];
    if (k == BL_NONE)
        return;
    uint32_t p = b->prev[id], n = b->next[id];
    if (p != BL_NONE)
        b->next[p] = n;
    else
        b->head[k] = n;
    if (n != BL_NONE)
        b->prev[n] = p;
    else
        b->tail[k] = p;
    b->bucket[id] = BL_NONE;
}

/* Appends id at the tail of bucket k (removing it from its bucket first). */
static inline void bl_push_tail(struct bucket_list *b, uint32_t id, uint32_t k)
{
    bl_remove(b, id);
    b->bucket[id] = k;
    b->prev[id] = b->tail[k];
    b->next[id] = BL_NONE;
    if (b->tail[k] != BL_NONE)
        b->next[b->tail[k]] = id;
    else
        b->head[k] = id;
    b->tail[k] = id;
}

#endif
