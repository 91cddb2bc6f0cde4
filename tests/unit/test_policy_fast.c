/* The fast policies (cache/policy_*.c: window, lru and lfu on an
 * append-only log, belady's buckets as arrays filled from a next-use
 * table, hot ranked by a histogram of counts) against straightforward ones
 * written here: doubly-linked lists where a row needed again is unlinked
 * and moved (cache/bucket_list.h), lfu with a list per frequency, belady's
 * next use found by scanning the trace forward, hot ranked by sorting. On
 * random traces, every request of both gives the same step: the same
 * misses, rows read, rows deleted in the same order, overflow and rows
 * kept; and the same shrinks, in a replay's order (one layer through all
 * tokens) and a run's (token by token). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "cache/bucket_list.h"
#include "cache/cache.h"
#include "common/model_shape.h"
#include "common/rng.h"
#include "traces/trace.h"

/* ---- the straightforward policies ---- */

struct ref_state {
    struct bucket_list *b;  /* [n_layers] */
    uint64_t *last;         /* [n_layers * d_ff]: window's token of the last need */
    uint32_t *min_max;      /* [n_layers]: lfu's least bucket, belady's latest */
};

static int ref_init(struct policy *p, uint32_t n_buckets)
{
    struct ref_state *s = calloc(1, sizeof *s);
    p->state = s;
    s->b = calloc(p->n_layers, sizeof *s->b);
    s->last = calloc((size_t)p->n_layers * p->d_ff, sizeof *s->last);
    s->min_max = calloc(p->n_layers, sizeof *s->min_max);
    for (uint32_t l = 0; l < p->n_layers; l++)
        bl_init(&s->b[l], p->d_ff, n_buckets);
    return 0;
}

static int ref_init_one(struct policy *p, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    return ref_init(p, 1);
}

static void ref_free(struct policy *p)
{
    struct ref_state *s = p->state;
    for (uint32_t l = 0; l < p->n_layers; l++)
        bl_free(&s->b[l]);
    free(s->b);
    free(s->last);
    free(s->min_max);
    free(s);
}

static void ref_evict_head(struct policy *p, uint32_t l, struct bucket_list *b, uint32_t k)
{
    uint32_t id = b->head[k];
    bl_remove(b, id);
    policy_delete(p, l, id);
}

static void ref_lru_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                           const uint32_t *misses, uint32_t n_miss)
{
    (void)t, (void)misses, (void)n_miss;
    struct bucket_list *b = &((struct ref_state *)p->state)->b[l];
    for (uint32_t j = 0; j < n; j++)
        bl_push_tail(b, need[j], 0);
    while (p->n_resident[l] > p->capacity)
        ref_evict_head(p, l, b, 0);
}

/* Window's rows last needed at the head's token. */
static uint32_t ref_drop_oldest(struct policy *p, uint32_t l, struct bucket_list *b, const uint64_t *last)
{
    uint32_t n = 0;
    uint64_t token = last[b->head[0]];
    for (; b->head[0] != BL_NONE && last[b->head[0]] == token; n++)
        ref_evict_head(p, l, b, 0);
    return n;
}

static void ref_window_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                              const uint32_t *misses, uint32_t n_miss)
{
    (void)misses, (void)n_miss;
    struct ref_state *s = p->state;
    struct bucket_list *b = &s->b[l];
    uint64_t *last = s->last + (size_t)l * p->d_ff, K = p->arg;
    for (uint32_t j = 0; j < n; j++) {
        bl_push_tail(b, need[j], 0);
        last[need[j]] = t;
    }
    while (t + 1 >= K && b->head[0] != BL_NONE && last[b->head[0]] <= t + 1 - K)
        ref_drop_oldest(p, l, b, last);
    while (p->capped && p->n_resident[l] > p->capacity && b->head[0] != BL_NONE && last[b->head[0]] < t)
        if (ref_drop_oldest(p, l, b, last))
            p->shrinks++;
    while (p->capped && p->n_resident[l] > p->capacity) {
        uint32_t id = b->tail[0];
        bl_remove(b, id);
        policy_delete(p, l, id);
    }
}

#define REF_LFU_MAX 4095

static int ref_lfu_init(struct policy *p, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    return ref_init(p, REF_LFU_MAX + 1);
}

/* An LFU with a list per frequency: the least frequent, least recently
 * needed row leaves first, whatever its frequency. */
static void ref_lfu_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                           const uint32_t *misses, uint32_t n_miss)
{
    (void)t, (void)misses, (void)n_miss;
    struct ref_state *s = p->state;
    struct bucket_list *b = &s->b[l];
    for (uint32_t j = 0; j < n; j++) {
        uint32_t f = b->bucket[need[j]];
        f = f == BL_NONE ? 1 : f < REF_LFU_MAX ? f + 1 : f;
        bl_push_tail(b, need[j], f);
        if (f == 1)
            s->min_max[l] = 1;
    }
    while (p->n_resident[l] > p->capacity) {
        while (s->min_max[l] <= REF_LFU_MAX && b->head[s->min_max[l]] == BL_NONE)
            s->min_max[l]++;
        ref_evict_head(p, l, b, s->min_max[l]);
    }
}

static int ref_belady_init(struct policy *p, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    return ref_init(p, (uint32_t)p->known->n_tokens + 1);
}

/* The first token after t whose set (of layer l) holds id: a scan forward. */
static uint32_t next_need(const struct policy *p, uint64_t t, uint32_t l, uint32_t id)
{
    for (uint64_t u = t + 1; u < p->known->n_tokens; u++) {
        uint32_t n;
        const uint32_t *ids = trace_set(p->known, p->predicted, u, l, &n);
        for (uint32_t j = 0; j < n; j++)
            if (ids[j] == id)
                return (uint32_t)u;
    }
    return (uint32_t)p->known->n_tokens;
}

static void ref_belady_update(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                              const uint32_t *misses, uint32_t n_miss)
{
    (void)misses, (void)n_miss;
    struct ref_state *s = p->state;
    struct bucket_list *b = &s->b[l];
    for (uint32_t j = 0; j < n; j++) {
        uint32_t k = next_need(p, t, l, need[j]);
        bl_push_tail(b, need[j], k);
        s->min_max[l] = k > s->min_max[l] ? k : s->min_max[l];
    }
    while (p->n_resident[l] > p->capacity) {
        while (b->head[s->min_max[l]] == BL_NONE)
            s->min_max[l]--;
        ref_evict_head(p, l, b, s->min_max[l]);
    }
}

struct rank {
    uint32_t count, id;
};

static int by_count_desc(const void *a, const void *b)
{
    const struct rank *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

/* hot: the rows needed most often pinned, by sorting them. */
static int ref_hot_init(struct policy *p, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct rank *r = malloc(p->d_ff * sizeof *r);
    for (uint32_t l = 0; l < p->n_layers; l++) {
        for (uint32_t i = 0; i < p->d_ff; i++)
            r[i] = (struct rank){0, i};
        for (uint64_t t = 0; t < p->known->n_tokens; t++) {
            uint32_t n;
            const uint32_t *ids = trace_set(p->known, p->predicted, t, l, &n);
            for (uint32_t j = 0; j < n; j++)
                r[ids[j]].count++;
        }
        qsort(r, p->d_ff, sizeof *r, by_count_desc);
        for (uint64_t k = 0; k < p->capacity && k < p->d_ff && r[k].count > 0; k++)
            policy_preload(p, l, r[k].id);
    }
    free(r);
    return 0;
}

static void ref_hot_free(struct policy *p)
{
    (void)p;
}

/* The straightforward twin of a fast policy: its properties, the plain code. */
static struct policy_ops reference_of(const struct policy_ops *fast)
{
    struct policy_ops r = *fast;
    r.init = fast == &policy_lfu ? ref_lfu_init : fast == &policy_belady ? ref_belady_init
             : fast == &policy_hot ? ref_hot_init : ref_init_one;
    r.free = fast == &policy_hot ? ref_hot_free : ref_free;
    r.update = fast == &policy_lru      ? ref_lru_update
               : fast == &policy_window ? ref_window_update
               : fast == &policy_lfu    ? ref_lfu_update
               : fast == &policy_belady ? ref_belady_update
                                        : fast->update;
    return r;
}

/* ---- random traces ---- */

/* Sets with reuse and popular rows; some tokens need nothing, some a whole layer. */
static void random_trace(struct trace *tr, uint64_t seed, uint32_t L, uint32_t N, uint64_t T)
{
    struct rng r;
    rng_seed(&r, seed);
    memset(tr, 0, sizeof *tr);
    /* f16 at d_model 2: the rows of 1-byte weights at d_model 4 it had before the type table */
    tr->meta = (struct trace_meta){.n_layers = L, .d_model = 2, .d_ff = N, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                                   .source = strdup("{}")};
    trace_meta_set_units(&tr->meta);
    tr->n_tokens = T;
    tr->token_flags = calloc(T, 1);
    tr->token_flags[0] = TRACE_TOKEN_SEQ_START;
    tr->active_off = calloc(T * L + 1, sizeof(uint64_t));
    tr->active_ids = malloc((T * L * N + 1) * sizeof(uint32_t));
    uint8_t *prev = calloc((size_t)L * N, 1);
    uint64_t k = 0;
    for (uint64_t t = 0; t < T; t++)
        for (uint32_t l = 0; l < L; l++) {
            uint8_t *p = prev + (size_t)l * N;
            uint64_t mode = rng_below(&r, 16), keep = 1 + rng_below(&r, 4);
            for (uint32_t i = 0; i < N; i++) {
                bool on = mode == 0 ? false : mode == 1 ? true
                          : p[i] ? rng_below(&r, 4) < keep : rng_below(&r, 2 + i % 5 * 4) == 0;
                if (on)
                    tr->active_ids[k++] = i;
                p[i] = on;
            }
            tr->active_off[t * L + l + 1] = k;
        }
    free(prev);
}

/* ---- the comparison ---- */

static bool same_ids(const uint32_t *a, const uint32_t *b, uint32_t n)
{
    return n == 0 || memcmp(a, b, n * sizeof *a) == 0;
}

static int mismatches;

/* One request of both caches; reports the first few that differ. */
static void request_both(struct cache *fast, struct cache *ref, const struct trace *tr, uint64_t t, uint32_t l,
                         const char *what)
{
    uint32_t n;
    const uint32_t *need = trace_set(tr, 0, t, l, &n);
    struct cache_step a, b;
    cache_request(fast, t, l, need, n, true, NULL, &a);
    cache_request(ref, t, l, need, n, true, NULL, &b);
    bool same = a.n_misses == b.n_misses && same_ids(a.misses, b.misses, a.n_misses) && a.n_rows == b.n_rows &&
                same_ids(a.rows, b.rows, a.n_rows) && a.n_deleted == b.n_deleted &&
                same_ids(a.deleted, b.deleted, a.n_deleted) && a.overflow == b.overflow &&
                a.resident_after == b.resident_after && a.n_extra == b.n_extra && a.bytes == b.bytes &&
                fast->p.shrinks == ref->p.shrinks && fast->p.deleted == ref->p.deleted;
    if (!same && mismatches++ < 5)
        fprintf(stderr, "%s: token %llu layer %u: misses %u/%u deleted %u/%u overflow %u/%u kept %u/%u\n", what,
                (unsigned long long)t, l, a.n_misses, b.n_misses, a.n_deleted, b.n_deleted, a.overflow,
                b.overflow, a.resident_after, b.resident_after);
    CHECK(same);
}

/* Both policies over the whole trace, layer by layer or token by token. */
static void compare(const struct trace *tr, const struct policy_ops *fast_ops, uint64_t K, uint64_t capacity,
                    bool binds, bool token_major)
{
    struct policy_ops ref_ops = reference_of(fast_ops);
    struct cache_config cf = {policy_spec_of(fast_ops, K), layout_spec_of(&layout_bundled, 0), capacity, tr, false,
                              binds};
    struct cache_config cr = cf;
    cr.policy.ops = &ref_ops;
    struct cache_geometry g = {tr->meta.n_layers, tr->meta.d_ff, 2, 8, 8, 0, {{.bytes = 4}, {.offset = 4, .bytes = 4}}};
    struct cache fast, ref;
    char err[256] = "", what[96];
    snprintf(what, sizeof what, "%s:%llu capacity %llu%s %s", fast_ops->name, (unsigned long long)K,
             (unsigned long long)capacity, binds ? " (binds)" : "", token_major ? "token-major" : "layer-major");
    CHECK(cache_open(&fast, &cf, &g, err, sizeof err) == 0);
    CHECK(cache_open(&ref, &cr, &g, err, sizeof err) == 0);
    CHECK_U64(fast.p.preloaded, ref.p.preloaded);
    uint32_t L = tr->meta.n_layers;
    for (uint64_t i = 0; i < tr->n_tokens * L; i++) {
        uint64_t t = token_major ? i / L : i % tr->n_tokens;
        uint32_t l = (uint32_t)(token_major ? i % L : i / tr->n_tokens);
        request_both(&fast, &ref, tr, t, l, what);
    }
    CHECK(memcmp(fast.p.resident, ref.p.resident, (size_t)L * tr->meta.d_ff) == 0);
    cache_close(&fast);
    cache_close(&ref);
}

/* Every fast policy at capacities from none to the whole layer. */
static void compare_all(const struct trace *tr)
{
    uint32_t N = tr->meta.d_ff;
    const uint64_t caps[] = {0, 1, 2, 3, N / 8, N / 4, N / 2, N - 1, N};
    const uint64_t windows[] = {1, 2, 3, 5, 9, 1000000000};
    for (int major = 0; major < 2; major++)
        for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
            compare(tr, &policy_lru, 0, caps[c], true, major);
            compare(tr, &policy_lfu, 0, caps[c], true, major);
            compare(tr, &policy_belady, 0, caps[c], true, major);
            compare(tr, &policy_hot, 0, caps[c], true, major);
            for (size_t k = 0; k < sizeof windows / sizeof *windows; k++) {
                compare(tr, &policy_window, windows[k], caps[c], true, major);
                if (caps[c] == 0) /* no budget: every row its K tokens need */
                    compare(tr, &policy_window, windows[k], 0, false, major);
            }
        }
}

int main(void)
{
    const struct {
        uint64_t seed;
        uint32_t L, N;
        uint64_t T;
    } shapes[] = {{1, 1, 8, 30}, {2, 2, 40, 60}, {3, 3, 97, 45}, {4, 1, 300, 80}, {5, 2, 1, 20}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        struct trace tr;
        random_trace(&tr, shapes[s].seed, shapes[s].L, shapes[s].N, shapes[s].T);
        compare_all(&tr);
        trace_free(&tr);
    }
    /* the compaction of window's and lru's log: a long trace over few rows */
    struct trace tr;
    random_trace(&tr, 6, 1, 16, 2000);
    compare_all(&tr);
    trace_free(&tr);
    return check_report("test_policy_fast");
}
