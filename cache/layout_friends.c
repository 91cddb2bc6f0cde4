/* friends: the co-activation bundling of App. D. Each neuron is stored with
 * its "closest friend", the neuron most often needed together with it in the
 * trace, so one read of twice the bundle brings both; a needed neuron that
 * came along as a friend costs no read of its own. (The paper found it a
 * negative result: hot neurons are everyone's friend and get read many times.)
 * Co-activation counts cost the sum over tokens of |set|^2, so long or dense
 * traces count over an evenly spaced subset of tokens (reported). */
#include <stdlib.h>
#include <string.h>

#include "cache/layout.h"
#include "common/errbuf.h"

#define FRIENDS_PAIR_BUDGET 200000000ull /* pair updates over all layers */

struct friends_state {
    uint32_t *friend_of;    /* [n_layers * d_ff] */
    uint8_t *got;           /* [d_ff] scratch: fetched this token */
};

/* friend_of[i] for one layer from the sets of the chosen tokens: for each
 * neuron, count co-occurrences over the tokens it appears in. */
static int layer_friends(struct layout *lo, uint32_t l, uint64_t step, uint32_t *friend_of)
{
    const struct trace *tr = lo->known;
    uint32_t N = lo->d_ff;
    uint64_t *start = calloc((size_t)N + 1, sizeof *start);
    uint32_t *count = calloc(N, sizeof *count);
    uint64_t occurrences = 0;
    for (uint64_t t = 0; t < tr->n_tokens; t += step) {
        uint32_t n;
        const uint32_t *ids = trace_set(tr, lo->predicted, t, l, &n);
        occurrences += n;
        for (uint32_t j = 0; start && j < n; j++)
            start[ids[j] + 1]++;
    }
    uint32_t *tokens = malloc((occurrences ? occurrences : 1) * sizeof *tokens);
    uint64_t *fill = malloc(((size_t)N + 1) * sizeof *fill);
    if (!start || !count || !tokens || !fill) {
        free(start), free(count), free(tokens), free(fill);
        return -1;
    }
    for (uint32_t i = 0; i < N; i++)
        start[i + 1] += start[i];
    memcpy(fill, start, ((size_t)N + 1) * sizeof *fill);
    for (uint64_t t = 0; t < tr->n_tokens; t += step) {
        uint32_t n;
        const uint32_t *ids = trace_set(tr, lo->predicted, t, l, &n);
        for (uint32_t j = 0; j < n; j++)
            tokens[fill[ids[j]]++] = (uint32_t)t;
    }
    for (uint32_t i = 0; i < N; i++) {
        uint32_t best = i, best_count = 0;
        for (uint64_t k = start[i]; k < start[i + 1]; k++) {
            uint32_t n;
            const uint32_t *ids = trace_set(tr, lo->predicted, tokens[k], l, &n);
            for (uint32_t j = 0; j < n; j++)
                count[ids[j]]++;
        }
        for (uint64_t k = start[i]; k < start[i + 1]; k++) {
            uint32_t n;
            const uint32_t *ids = trace_set(tr, lo->predicted, tokens[k], l, &n);
            for (uint32_t j = 0; j < n; j++) {
                uint32_t c = count[ids[j]];
                if (ids[j] != i && (c > best_count || (c == best_count && ids[j] < best))) {
                    best = ids[j];
                    best_count = c;
                }
                count[ids[j]] = 0;
            }
        }
        friend_of[i] = best_count ? best : i;
    }
    free(start), free(count), free(tokens), free(fill);
    return 0;
}

static int friends_init(struct layout *lo, char *err, size_t errlen)
{
    const struct trace *tr = lo->known;
    struct friends_state *s = calloc(1, sizeof *s);
    if (s) {
        s->friend_of = malloc((size_t)lo->n_layers * lo->d_ff * sizeof(uint32_t));
        s->got = calloc(lo->d_ff, 1);
    }
    lo->state = s;
    if (!s || !s->friend_of || !s->got) {
        err_set(err, errlen, "friends: out of memory");
        return -1;
    }
    /* pair updates if every token were counted: sum of squared set sizes */
    uint64_t pairs = 0;
    for (uint64_t t = 0; t < tr->n_tokens; t++)
        for (uint32_t l = 0; l < lo->n_layers; l++) {
            uint32_t n;
            trace_set(tr, lo->predicted, t, l, &n);
            pairs += (uint64_t)n * n;
        }
    uint64_t step = pairs > FRIENDS_PAIR_BUDGET ? (pairs + FRIENDS_PAIR_BUDGET - 1) / FRIENDS_PAIR_BUDGET : 1;
    lo->info = (tr->n_tokens + step - 1) / step;
    for (uint32_t l = 0; l < lo->n_layers; l++)
        if (layer_friends(lo, l, step, s->friend_of + (size_t)l * lo->d_ff) != 0) {
            err_set(err, errlen, "friends: out of memory");
            return -1;
        }
    return 0;
}

static uint32_t friends_read(struct layout *lo, uint32_t l, const uint32_t *rows, uint32_t n,
                             struct read_tally *t, struct layout_read *out)
{
    (void)out; /* friends' reads are not contiguous ranges: no list (lists_reads false) */
    struct friends_state *s = lo->state;
    const uint32_t *f = s->friend_of + (size_t)l * lo->d_ff;
    uint64_t reads = 0;
    for (uint32_t j = 0; j < n; j++) {
        if (s->got[rows[j]])
            continue;
        s->got[rows[j]] = 1;
        s->got[f[rows[j]]] = 1;
        reads++;
    }
    for (uint32_t j = 0; j < n; j++) {
        s->got[rows[j]] = 0;
        s->got[f[rows[j]]] = 0;
    }
    tally_reads(t, reads, 2 * lo->row_bytes);
    return 0;
}

static void friends_free(struct layout *lo)
{
    struct friends_state *s = lo->state;
    if (s) {
        free(s->friend_of);
        free(s->got);
    }
    free(s);
}

const struct layout_ops layout_friends = {
    .name = "friends",
    .needs_rows = true,
    .needs_known = true,
    .known_for = "counts co-activation over the trace",
    .structure = "co-activation",
    .reads_unneeded = true,
    .init = friends_init,
    .read = friends_read,
    .free = friends_free,
};
