/* The replay: one shared request path per (token, layer) for every policy
 * and layout. Needed rows already resident are hits; the misses (plus any
 * extra rows the policy reads) go through the layout into reads; misses are
 * inserted; the policy then deletes what it does not keep. */
#include "sim/replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/model_shape.h"
#include "sim/layout.h"
#include "sim/policy.h"

static const struct policy_ops *const policies[] = {
    &policy_naive, &policy_hybrid, &policy_predictor, &policy_window,
    &policy_lru,   &policy_lfu,    &policy_hot,       &policy_belady,
};
static const struct layout_ops *const layouts[] = {
    &layout_split, &layout_bundled, &layout_friends, &layout_coalesce,
};
#define COUNT(a) (sizeof a / sizeof a[0])

/* "name" or "name:N": finds the entry and its argument. */
static int parse_named(const char *spec, const char *what, const char *const *names, const bool *takes_arg,
                       size_t n, size_t *index, uint64_t *arg, char *err, size_t errlen)
{
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    char list[256] = "";
    for (size_t i = 0; i < n; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        strncat(list, takes_arg[i] ? (strcmp(names[i], "window") == 0 ? ":K" : ":G") : "",
                sizeof list - strlen(list) - 1);
        if (strlen(names[i]) != len || strncmp(names[i], spec, len) != 0)
            continue;
        *index = i;
        *arg = 0;
        if (!takes_arg[i] && colon) {
            snprintf(err, errlen, "%s '%s' takes no argument", what, spec);
            return -1;
        }
        if (takes_arg[i]) {
            char *end;
            if (!colon || !colon[1] || colon[1] == '-' || (*arg = strtoull(colon + 1, &end, 10), *end)) {
                snprintf(err, errlen, "%s '%s' needs a whole number after ':' (e.g. %s:4)", what, spec,
                         names[i]);
                return -1;
            }
        }
        return 0;
    }
    snprintf(err, errlen, "unknown %s '%s' (available: %s)", what, spec, list);
    return -1;
}

static int find_policy(const char *spec, const struct policy_ops **ops, uint64_t *arg, char *err,
                       size_t errlen)
{
    const char *names[COUNT(policies)];
    bool args[COUNT(policies)];
    for (size_t i = 0; i < COUNT(policies); i++) {
        names[i] = policies[i]->name;
        args[i] = policies[i]->takes_arg;
    }
    size_t k;
    if (parse_named(spec, "policy", names, args, COUNT(policies), &k, arg, err, errlen) != 0)
        return -1;
    if (policies[k] == &policy_window && *arg == 0) {
        snprintf(err, errlen, "policy '%s': a window holds at least the current token (K >= 1)", spec);
        return -1;
    }
    *ops = policies[k];
    return 0;
}

static int find_layout(const char *spec, const struct layout_ops **ops, uint64_t *arg, char *err,
                       size_t errlen)
{
    const char *names[COUNT(layouts)];
    bool args[COUNT(layouts)];
    for (size_t i = 0; i < COUNT(layouts); i++) {
        names[i] = layouts[i]->name;
        args[i] = layouts[i]->takes_arg;
    }
    size_t k;
    if (parse_named(spec, "layout", names, args, COUNT(layouts), &k, arg, err, errlen) != 0)
        return -1;
    *ops = layouts[k];
    return 0;
}

int replay_check_policy(const char *policy, char *err, size_t errlen)
{
    const struct policy_ops *ops;
    uint64_t arg;
    return find_policy(policy, &ops, &arg, err, errlen);
}

int replay_check_layout(const char *layout, char *err, size_t errlen)
{
    const struct layout_ops *ops;
    uint64_t arg;
    return find_layout(layout, &ops, &arg, err, errlen);
}

bool replay_policy_uses_budget(const char *policy)
{
    const struct policy_ops *ops;
    uint64_t arg;
    char err[256];
    return find_policy(policy, &ops, &arg, err, sizeof err) == 0 && ops->uses_budget;
}

uint64_t replay_row_bytes(const struct trace_meta *m)
{
    return (uint64_t)(m->ffn_kind == FFN_GLU ? 3 : 2) * m->d_model * m->bytes_per_weight;
}

uint64_t read_size_hist_percentile(const struct read_size_hist *h, double p)
{
    uint64_t total = 0;
    for (int b = 0; b < 64; b++)
        total += h->count[b];
    if (!total)
        return 0;
    uint64_t want = (uint64_t)(p / 100 * (double)total + 0.999999), seen = 0;
    for (int b = 0; b < 64; b++) {
        seen += h->count[b];
        if (seen >= want && h->count[b])
            return 1ull << b;
    }
    return UINT64_MAX;
}

void replay_result_free(struct replay_result *res)
{
    free(res->per_token);
    res->per_token = NULL;
}

void policy_drop_misses(struct policy *p, uint64_t t, uint32_t l, const uint32_t *need, uint32_t n,
                        const uint32_t *misses, uint32_t n_miss)
{
    (void)t, (void)need, (void)n;
    policy_delete_list(p, l, misses, n_miss);
}

/* Scratch for one (token, layer): misses, extra rows and their merge. */
struct request_buf {
    uint32_t *misses, *extra, *rows;   /* [d_ff] each */
    uint8_t *is_miss;                  /* [d_ff], zero between requests */
};

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

/* The shared request path of one token of one layer. */
static void request(struct policy *p, struct layout *lo, struct request_buf *rb, uint64_t t, uint32_t l,
                    struct replay_token *tok, struct read_tally *tally)
{
    uint32_t n;
    const uint32_t *need = trace_set(p->tr, p->predicted, t, l, &n);
    uint8_t *res = policy_row(p, l);
    uint32_t n_miss = 0;
    for (uint32_t j = 0; j < n; j++)
        if (!res[need[j]])
            rb->misses[n_miss++] = need[j];
    tok->needed += n;
    tok->hits += n - n_miss;
    uint32_t n_extra = 0;
    const uint32_t *rows = rb->misses;
    uint32_t n_rows = n_miss;
    if (p->ops->extra_reads && !lo->ops->needs_rows) {
        n_extra = p->ops->extra_reads(p, l, NULL, n_miss, NULL);
        n_rows += n_extra;
        rows = NULL;
    } else if (p->ops->extra_reads) {
        for (uint32_t j = 0; j < n_miss; j++)
            rb->is_miss[rb->misses[j]] = 1;
        n_extra = p->ops->extra_reads(p, l, rb->is_miss, n_miss, rb->extra);
        for (uint32_t j = 0; j < n_miss; j++)
            rb->is_miss[rb->misses[j]] = 0;
        n_rows = merge_sorted(rb->misses, n_miss, rb->extra, n_extra, rb->rows);
        rows = rb->rows;
    }
    lo->ops->read(lo, l, rows, n_rows, tally);
    for (uint32_t j = 0; j < n_miss; j++)
        res[rb->misses[j]] = 1;
    p->n_resident[l] += n_miss;
    tok->inserted += n_rows;
    tok->peak_rows += p->n_resident[l] + n_extra;
    /* extra rows are used for this token only */
    p->deleted += n_extra;
    p->ops->update(p, t, l, need, n, rb->misses, n_miss);
    tok->kept_rows += p->n_resident[l];
}

static void summarize(struct replay_result *res)
{
    struct replay_token *s = &res->total;
    memset(s, 0, sizeof *s);
    double peak_sum = 0, kept_sum = 0;
    for (uint64_t t = 0; t < res->n_tokens; t++) {
        const struct replay_token *k = &res->per_token[t];
        s->bytes += k->bytes;
        s->reads += k->reads;
        s->needed += k->needed;
        s->hits += k->hits;
        s->inserted += k->inserted;
        s->deleted += k->deleted;
        if (k->peak_rows > s->peak_rows)
            s->peak_rows = k->peak_rows;
        if (k->kept_rows > s->kept_rows)
            s->kept_rows = k->kept_rows;
        peak_sum += (double)k->peak_rows;
        kept_sum += (double)k->kept_rows;
    }
    double T = res->n_tokens ? (double)res->n_tokens : 1;
    res->bytes_per_token = s->bytes / T;
    res->reads_per_token = s->reads / T;
    res->hit_ratio = s->needed ? (double)s->hits / s->needed : 0;
    res->rows_inserted_per_token = s->inserted / T;
    res->rows_deleted_per_token = s->deleted / T;
    res->dram_peak_bytes = s->peak_rows * res->row_bytes;
    res->dram_mean_bytes = peak_sum / T * res->row_bytes;
    res->dram_kept_mean_bytes = kept_sum / T * res->row_bytes;
    res->events = s->needed;
}

int replay_run(const struct trace *tr, const struct replay_spec *spec, struct replay_result *res,
               char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    const struct policy_ops *pops;
    const struct layout_ops *lops;
    uint64_t parg, larg;
    if (find_policy(spec->policy, &pops, &parg, err, errlen) != 0 ||
        find_layout(spec->layout, &lops, &larg, err, errlen) != 0)
        return -1;
    if (spec->use_predicted && !tr->meta.has_predicted) {
        snprintf(err, errlen, "replay --use predicted: the trace has no predicted sets");
        return -1;
    }
    const uint32_t L = tr->meta.n_layers, N = tr->meta.d_ff;
    snprintf(res->policy, sizeof res->policy, "%s", spec->policy);
    snprintf(res->layout, sizeof res->layout, "%s", spec->layout);
    res->use_predicted = spec->use_predicted;
    res->n_tokens = tr->n_tokens;
    res->n_layers = L;
    res->d_ff = N;
    res->row_bytes = replay_row_bytes(&tr->meta);
    struct policy p = {
        .ops = pops, .tr = tr, .predicted = spec->use_predicted, .n_layers = L, .d_ff = N, .arg = parg,
    };
    if (pops->uses_budget) {
        p.capacity = spec->dram_budget / res->row_bytes / L;
        if (p.capacity > N)
            p.capacity = N;
        res->capacity_rows = p.capacity;
    }
    struct layout lo = {
        .ops = lops, .tr = tr, .predicted = spec->use_predicted, .n_layers = L, .d_ff = N,
        .vec_bytes = (uint64_t)tr->meta.d_model * tr->meta.bytes_per_weight,
        .vecs_per_row = tr->meta.ffn_kind == FFN_GLU ? 3 : 2, .arg = larg,
    };
    struct request_buf rb = {
        .misses = malloc(N * sizeof(uint32_t)), .extra = malloc(N * sizeof(uint32_t)),
        .rows = malloc(N * sizeof(uint32_t)), .is_miss = calloc(N, 1),
    };
    p.resident = calloc((size_t)L * N, 1);
    p.n_resident = calloc(L, sizeof(uint32_t));
    res->per_token = calloc(tr->n_tokens ? tr->n_tokens : 1, sizeof *res->per_token);
    int rc = -1;
    if (!rb.misses || !rb.extra || !rb.rows || !rb.is_miss || !p.resident || !p.n_resident || !res->per_token) {
        snprintf(err, errlen, "replay: out of memory");
        goto out;
    }
    uint64_t start = now_ns();
    if (pops->init && pops->init(&p, err, errlen) != 0)
        goto out;
    if (lops->init && lops->init(&lo, err, errlen) != 0)
        goto out;
    res->preload_bytes = p.preloaded * res->row_bytes;
    res->friends_tokens = lo.info;
    /* Layers are independent (each has its own matrix, window and share of
     * the budget), so the replay walks one layer through all tokens at a
     * time: that layer's policy state stays in cache. */
    for (uint32_t l = 0; l < L; l++)
        for (uint64_t t = 0; t < tr->n_tokens; t++) {
            struct replay_token *tok = &res->per_token[t];
            struct read_tally tally = {0, 0, &res->read_sizes};
            uint64_t deleted_before = p.deleted;
            request(&p, &lo, &rb, t, l, tok, &tally);
            tok->bytes += tally.bytes;
            tok->reads += tally.reads;
            tok->deleted += p.deleted - deleted_before;
        }
    res->seconds = (double)(now_ns() - start) * 1e-9;
    summarize(res);
    res->events_per_second = res->seconds > 0 ? (double)res->events / res->seconds : 0;
    rc = 0;
out:
    /* free hooks cope with half-initialised state */
    if (pops->free)
        pops->free(&p);
    if (lops->free)
        lops->free(&lo);
    free(rb.misses);
    free(rb.extra);
    free(rb.rows);
    free(rb.is_miss);
    free(p.resident);
    free(p.n_resident);
    if (rc != 0)
        replay_result_free(res);
    return rc;
}
