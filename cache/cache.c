/* The FFN cache's request path (cache.h): one for every policy and layout,
 * serving the replay and the engine. */
#include "cache/cache.h"

#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

uint64_t cache_capacity_rows(uint64_t budget_bytes, uint64_t row_bytes, uint32_t n_layers, uint32_t d_ff)
{
    if (!row_bytes || !n_layers)
        return 0;
    uint64_t rows = budget_bytes / row_bytes / n_layers;
    return rows < d_ff ? rows : d_ff;
}

uint64_t policy_layer_rows(const struct policy_ops *ops, uint64_t capacity, uint32_t d_ff)
{
    uint64_t cap = capacity < d_ff ? capacity : d_ff;
    if (ops->uses_budget || (cap && ops->unbudgeted != UNBUDGETED_NONE))
        return cap;
    if (ops->unbudgeted == UNBUDGETED_HALF_LAYER)
        return d_ff / 2;
    return ops->unbudgeted == UNBUDGETED_ALL_NEEDED ? d_ff : 0;
}

void policy_drop_misses(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                        const uint32_t *misses, uint32_t n_miss)
{
    (void)t, (void)need, (void)n;
    policy_delete_list(p, l, misses, n_miss);
}

static int check_config(const struct cache_config *cfg, char *err, size_t errlen)
{
    const struct policy_ops *pops = cfg->policy.ops;
    const struct layout_ops *lops = cfg->layout.ops;
    if (!pops || cfg->policy.arg_auto)
        return err_set(err, errlen, "the cache needs a policy%s", pops ? " with its K chosen" : "");
    if (!lops)
        return err_set(err, errlen, "the cache needs a layout");
    char name[POLICY_NAME_MAX], layout[LAYOUT_NAME_MAX];
    cache_policy_name(&cfg->policy, name, sizeof name);
    cache_layout_name(&cfg->layout, layout, sizeof layout);
    const char *who = pops->needs_known ? name : lops->needs_known ? layout : NULL;
    if (who && !cfg->known)
        return err_set(err, errlen, "%s needs the sets to come (a trace): %s %s", who,
                       pops->needs_known ? pops->name : lops->name,
                       pops->needs_known ? pops->known_for : lops->known_for);
    return 0;
}

static int alloc_buffers(struct cache *c, uint32_t L, uint32_t N)
{
    c->misses = malloc(N * sizeof(uint32_t));
    c->extra = malloc(N * sizeof(uint32_t));
    c->rows = malloc(N * sizeof(uint32_t));
    c->deleted = malloc((N + 1) * sizeof(uint32_t)); /* one past: policy.h's deleted_ids */
    c->preload = malloc(N * sizeof(uint32_t));
    c->is_miss = calloc(N, 1);
    c->reads = malloc(3 * (size_t)N * sizeof *c->reads);
    c->p.resident = calloc((size_t)L * N, 1);
    c->p.n_resident = calloc(L, sizeof(uint32_t));
    return c->misses && c->extra && c->rows && c->deleted && c->preload && c->is_miss && c->reads &&
                   c->p.resident && c->p.n_resident
               ? 0
               : -1;
}

void cache_shared_capacity(uint64_t budget_bytes, const struct unit_geometry *u, uint32_t n, uint64_t *rows)
{
    long double total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += (long double)u[i].stride * u[i].units;
    uint64_t left = budget_bytes;
    for (uint32_t i = 0; i < n; i++) {
        long double size = (long double)u[i].stride * u[i].units;
        uint64_t share = i + 1 == n ? left : total > 0 ? (uint64_t)((long double)budget_bytes * size / total) : 0;
        rows[i] = cache_capacity_rows(share, u[i].stride, u[i].n_layers, u[i].units);
        left -= share;
    }
}

void cache_geometry_of_unit(const struct unit_geometry *u, uint64_t read_align, struct cache_geometry *g)
{
    *g = (struct cache_geometry){.n_layers = u->n_layers,
                                 .d_ff = u->units,
                                 .vecs_per_row = u->n_extents,
                                 .unit_bytes = u->bytes,
                                 .row_bytes = u->stride,
                                 .read_align = read_align};
    memcpy(g->vec, u->ext, sizeof g->vec);
}

int cache_open(struct cache *c, const struct cache_config *cfg, const struct cache_geometry *g, char *err,
               size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (check_config(cfg, err, errlen) != 0)
        return -1;
    struct policy *p = &c->p;
    struct layout *lo = &c->lo;
    lo->ops = cfg->layout.ops;
    lo->arg = cfg->layout.arg;
    p->ops = cfg->policy.ops;
    p->arg = cfg->policy.arg;
    p->known = lo->known = cfg->known;
    p->predicted = lo->predicted = cfg->known_predicted;
    p->n_layers = lo->n_layers = g->n_layers;
    p->d_ff = lo->d_ff = g->d_ff;
    if (p->ops->uses_budget || p->ops->honours_budget) {
        p->capacity = cfg->capacity_rows < g->d_ff ? cfg->capacity_rows : g->d_ff;
        p->capped = p->ops->uses_budget || cfg->capacity_rows > 0 || cfg->capacity_binds;
    }
    lo->vecs_per_row = g->vecs_per_row;
    memcpy(lo->vec, g->vec, sizeof lo->vec);
    lo->row_bytes = g->row_bytes;
    lo->read_align = g->read_align;
    if (alloc_buffers(c, g->n_layers, g->d_ff) != 0) {
        err_set(err, errlen, "cache: out of memory");
        cache_close(c);
        return -1;
    }
    if ((p->ops->init && p->ops->init(p, err, errlen) != 0) ||
        (lo->ops->init && lo->ops->init(lo, err, errlen) != 0)) {
        cache_close(c);
        return -1;
    }
    return 0;
}

void cache_close(struct cache *c)
{
    /* free hooks cope with half-initialised state */
    if (c->p.ops && c->p.ops->free)
        c->p.ops->free(&c->p);
    if (c->lo.ops && c->lo.ops->free)
        c->lo.ops->free(&c->lo);
    free(c->misses);
    free(c->extra);
    free(c->rows);
    free(c->deleted);
    free(c->preload);
    free(c->is_miss);
    free(c->reads);
    free(c->p.resident);
    free(c->p.n_resident);
    memset(c, 0, sizeof *c);
}

uint32_t cache_preloaded_rows(const struct cache *c, uint32_t l, uint32_t *out)
{
    const uint8_t *res = c->p.resident + (size_t)l * c->p.d_ff;
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->p.d_ff; i++)
        if (res[i])
            out[n++] = i;
    return n;
}

static uint32_t merge_sorted(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb, uint32_t *out)
{
    uint32_t i = 0, j = 0, n = 0;
    while (i < na && j < nb)
        out[n++] = a[i] < b[j] ? a[i++] : b[j++];
    while (i < na)
        out[n++] = a[i++];
    while (j < nb)
        out[n++] = b[j++];
    return n;
}

/* The rows read: the misses, the policy's extra rows and, with a first
 * token, a preload that counts as reads. Sets step's lists. */
static void rows_to_read(struct cache *c, uint64_t t, uint32_t l, bool want_ids, struct cache_step *s)
{
    struct policy *p = &c->p;
    s->rows = c->misses;
    s->n_rows = s->n_misses;
    s->extra = c->extra;
    s->n_extra = 0;
    if (p->ops->extra_reads && !want_ids) {
        s->n_extra = p->ops->extra_reads(p, l, NULL, s->n_misses, NULL);
        s->n_rows += s->n_extra;
        s->rows = NULL;
        return;
    }
    if (p->ops->extra_reads) {
        for (uint32_t j = 0; j < s->n_misses; j++)
            c->is_miss[c->misses[j]] = 1;
        s->n_extra = p->ops->extra_reads(p, l, c->is_miss, s->n_misses, c->extra);
        for (uint32_t j = 0; j < s->n_misses; j++)
            c->is_miss[c->misses[j]] = 0;
        s->n_rows = merge_sorted(c->misses, s->n_misses, c->extra, s->n_extra, c->rows);
        s->rows = c->rows;
    }
    if (t == 0 && p->ops->preload_is_read) {
        /* the misses are not resident, the preload is: the two never overlap */
        uint32_t n_pre = cache_preloaded_rows(c, l, c->preload);
        s->n_rows = merge_sorted(s->rows, s->n_rows, c->preload, n_pre, c->deleted);
        memcpy(c->rows, c->deleted, s->n_rows * sizeof(uint32_t));
        s->rows = c->rows;
        s->preloaded_read = n_pre;
    }
}

/* The needed rows not resident, into c->misses in order; returns how
 * many. Branch-free: whether a needed row is resident is a coin toss for
 * the policies that keep rows, and a mispredicted branch per row costs more
 * than the store. With insert, the misses are also inserted as they are
 * found (one pass over the set instead of two), which only the policies
 * whose decisions before the update do not look at residency allow. */
static uint32_t find_misses(struct cache *c, uint8_t *res, const uint32_t *need, uint32_t n, bool insert)
{
    uint32_t *misses = c->misses, n_miss = 0;
    if (insert)
        for (uint32_t j = 0; j < n; j++) {
            uint32_t id = need[j];
            misses[n_miss] = id;
            n_miss += !res[id];
            res[id] = 1;
        }
    else
        for (uint32_t j = 0; j < n; j++) {
            misses[n_miss] = need[j];
            n_miss += !res[need[j]];
        }
    return n_miss;
}

/* Needed rows the policy did not keep after the update. */
static uint32_t count_overflow(const uint8_t *res, const uint32_t *need, uint32_t n)
{
    uint32_t over = 0;
    for (uint32_t j = 0; j < n; j++)
        over += !res[need[j]];
    return over;
}

void cache_request(struct cache *c, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n, bool list_reads,
                   struct read_size_hist *sizes, struct cache_step *s)
{
    struct policy *p = &c->p;
    struct layout *lo = &c->lo;
    memset(s, 0, sizeof *s);
    uint8_t *res = policy_row(p, l);
    /* rows_to_read looks at residency for extra rows and a first token's
     * counted preload; otherwise nothing before the update does */
    bool early_insert = !p->ops->extra_reads && !(t == 0 && p->ops->preload_is_read);
    uint32_t n_miss = find_misses(c, res, need, n, early_insert);
    s->n_misses = n_miss;
    s->misses = c->misses;
    s->needed = n;
    s->hits = n - n_miss;
    bool want_ids = lo->ops->needs_rows || list_reads || (t == 0 && p->ops->preload_is_read);
    rows_to_read(c, t, l, want_ids, s);
    struct read_tally tally = {0, 0, sizes};
    s->n_reads = lo->ops->read(lo, l, s->rows, s->n_rows, &tally, list_reads ? c->reads : NULL);
    s->reads = c->reads;
    s->bytes = tally.bytes;
    s->n_flash_reads = tally.reads;
    if (!early_insert) {
        const uint32_t *misses = c->misses;
        for (uint32_t j = 0; j < n_miss; j++)
            res[misses[j]] = 1;
    }
    p->n_resident[l] += n_miss;
    p->deleted_ids = c->deleted;
    p->n_deleted_ids = 0;
    p->ops->update(p, t, l, need, n, c->misses, n_miss);
    p->deleted_ids = NULL;
    s->deleted = c->deleted;
    s->n_deleted = p->n_deleted_ids;
    /* extra rows are used for this token only */
    p->deleted += s->n_extra;
    if (p->ops->keeps_reads)
        s->overflow = count_overflow(res, need, n);
    s->resident_after = p->n_resident[l];
}
