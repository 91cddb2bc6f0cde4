/* The neuron cache (engine/neuron_cache.h): golden small cases with exact
 * rows, runs and deletions; bytes and biases that follow their neuron
 * through the swap-with-last deletions; and random steps compared with an
 * independent reference of the window and the gap coalescing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "common/rng.h"
#include "engine/neuron_cache.h"

static void check_ok(const struct neuron_cache *c, int line)
{
    char err[256] = "";
    int rc = neuron_cache_check(c, err, sizeof err);
    check_count++;
    if (rc != 0) {
        check_failures++;
        fprintf(stderr, "%s:%d: neuron_cache_check: %s\n", __FILE__, line, err);
    }
}
#define CHECK_OK(c) check_ok(c, __LINE__)

static void check_run(const struct neuron_run *r, uint32_t first, uint32_t count, uint32_t row, int line)
{
    check_count++;
    if (r->first != first || r->count != count || r->row != row) {
        check_failures++;
        fprintf(stderr, "%s:%d: run {%u, %u, row %u}, want {%u, %u, row %u}\n", __FILE__, line, r->first,
                r->count, r->row, first, count, row);
    }
}
#define CHECK_RUN(r, first, count, row) check_run(&(r), first, count, row, __LINE__)

/* The rows hold exactly ids[0..n), in that order. */
static void check_rows(const struct neuron_cache *c, const uint32_t *ids, uint32_t n, int line)
{
    bool same = c->num_used == n;
    for (uint32_t r = 0; same && r < n; r++)
        same = c->pointer[r] == ids[r];
    check_count++;
    if (!same) {
        check_failures++;
        fprintf(stderr, "%s:%d: rows hold", __FILE__, line);
        for (uint32_t r = 0; r < c->num_used; r++)
            fprintf(stderr, " %u", c->pointer[r]);
        fprintf(stderr, ", want");
        for (uint32_t r = 0; r < n; r++)
            fprintf(stderr, " %u", ids[r]);
        fprintf(stderr, "\n");
    }
}
#define CHECK_ROWS(c, ...)                                                                        \
    do {                                                                                          \
        const uint32_t want_[] = {__VA_ARGS__};                                                   \
        check_rows(c, want_, (uint32_t)(sizeof want_ / sizeof want_[0]), __LINE__);               \
    } while (0)

#define IDS(...) (const uint32_t[]){__VA_ARGS__}, (uint32_t)(sizeof((const uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t))

static struct neuron_cache make(uint32_t d_ff, uint32_t capacity, const float *bias)
{
    struct neuron_cache c;
    char err[256] = "";
    if (neuron_cache_init(&c, d_ff, capacity, NEURON_CACHE_ALIGN, bias, err, sizeof err) != 0) {
        fprintf(stderr, "neuron_cache_init: %s\n", err);
        exit(1);
    }
    return c;
}

static void test_bad_init(void)
{
    struct {
        uint32_t d_ff, capacity;
        uint64_t stride;
        const char *says;
    } bad[] = {
        {0, 1, 4096, "d_ff"},
        {16, 0, 4096, "capacity"},
        {16, 17, 4096, "capacity"},
        {16, 4, 0, "stride"},
        {16, 4, 4095, "stride"},
        {16, 4, 6144, "stride"},
        {UINT32_MAX, 8, (UINT64_MAX / 4) & ~(uint64_t)(NEURON_CACHE_ALIGN - 1), "address space"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        struct neuron_cache c;
        memset(&c, 0xab, sizeof c);
        char err[256] = "";
        CHECK(neuron_cache_init(&c, bad[k].d_ff, bad[k].capacity, bad[k].stride, NULL, err, sizeof err) == -1);
        CHECK(strstr(err, bad[k].says) != NULL);
        CHECK(c.rows == NULL && c.pointer == NULL && c.row_of == NULL);
        neuron_cache_free(&c); /* safe after a failed init */
    }

    /* A good one: aligned rows, nothing resident, no bias arrays. */
    struct neuron_cache c = make(16, 16, NULL);
    CHECK((uintptr_t)c.rows % NEURON_CACHE_ALIGN == 0);
    CHECK(c.up_bias == NULL);
    CHECK_U64(c.num_used, 0);
    for (uint32_t i = 0; i < 16; i++)
        CHECK(c.row_of[i] == -1 && c.last_active[i] == -1);
    CHECK_OK(&c);
    neuron_cache_free(&c);
    neuron_cache_free(&c);
}

/* d_ff 16, window 2, no gap: the window keeps the last two tokens' neurons,
 * a deletion moves the last row into the hole. */
static void test_golden_window(void)
{
    float bias[16];
    for (int i = 0; i < 16; i++)
        bias[i] = 0.5f * (float)i - 3.0f;
    struct neuron_cache c = make(16, 16, bias);
    struct neuron_run runs[8];
    uint32_t added = 99;

    CHECK_U64(neuron_cache_evict(&c, IDS(1, 2, 3), 0, 2), 0);
    CHECK_U64(neuron_cache_reserve(&c, IDS(1, 2, 3), 0, runs, &added), 1);
    CHECK_U64(added, 3);
    CHECK_RUN(runs[0], 1, 3, 0);
    CHECK_ROWS(&c, 1, 2, 3);
    CHECK_OK(&c);

    /* token 1: token 0's neurons are still in the window; only 4 is new */
    CHECK_U64(neuron_cache_evict(&c, IDS(3, 4), 1, 2), 0);
    CHECK_U64(neuron_cache_reserve(&c, IDS(3, 4), 0, runs, &added), 1);
    CHECK_U64(added, 1);
    CHECK_RUN(runs[0], 4, 1, 3);
    CHECK_ROWS(&c, 1, 2, 3, 4);
    CHECK_OK(&c);

    /* token 2: 1 and 2 (last active at 0) leave; 4 moves into row 0, then 3
     * into row 1; 5 is appended at row 2 */
    CHECK_U64(neuron_cache_evict(&c, IDS(5), 2, 2), 2);
    CHECK_ROWS(&c, 4, 3);
    CHECK(c.row_of[1] == -1 && c.row_of[2] == -1 && c.row_of[4] == 0 && c.row_of[3] == 1);
    CHECK(c.up_bias[0] == bias[4] && c.up_bias[1] == bias[3]);
    CHECK_U64(neuron_cache_reserve(&c, IDS(5), 0, runs, &added), 1);
    CHECK_RUN(runs[0], 5, 1, 2);
    CHECK_ROWS(&c, 4, 3, 5);
    CHECK_OK(&c);

    /* token 3 needs nothing: 3 and 4 (token 1) leave, 5 (token 2) stays */
    CHECK_U64(neuron_cache_evict(&c, NULL, 0, 3, 2), 2);
    CHECK_U64(neuron_cache_reserve(&c, NULL, 0, 0, runs, &added), 0);
    CHECK_U64(added, 0);
    CHECK_ROWS(&c, 5);

    /* token 4 needs 5 again and 4: 5 stays resident, 4 is read again */
    CHECK_U64(neuron_cache_evict(&c, IDS(4, 5), 4, 2), 0);
    CHECK_U64(neuron_cache_reserve(&c, IDS(4, 5), 0, runs, &added), 1);
    CHECK_RUN(runs[0], 4, 1, 1);
    CHECK_ROWS(&c, 5, 4);
    CHECK_U64(c.deleted_total, 4);
    CHECK_U64(c.inserted_total, 6);
    CHECK(c.last_active[5] == 4 && c.last_active[3] == 1 && c.last_active[0] == -1);
    CHECK_OK(&c);
    neuron_cache_free(&c);
}

/* A resident neuron, needed or not, ends a run. */
static void test_runs_break_at_resident(void)
{
    struct neuron_cache c = make(16, 16, NULL);
    struct neuron_run runs[8];
    uint32_t added;
    neuron_cache_evict(&c, IDS(2, 9), 0, 3);
    CHECK_U64(neuron_cache_reserve(&c, IDS(2, 9), 0, runs, &added), 2);
    CHECK_RUN(runs[0], 2, 1, 0);
    CHECK_RUN(runs[1], 9, 1, 1);

    /* 1..4 and 8..10 are needed; 2 and 9 are resident */
    neuron_cache_evict(&c, IDS(1, 2, 3, 4, 8, 9, 10), 1, 3);
    CHECK_U64(neuron_cache_reserve(&c, IDS(1, 2, 3, 4, 8, 9, 10), 0, runs, &added), 4);
    CHECK_U64(added, 5);
    CHECK_RUN(runs[0], 1, 1, 2);
    CHECK_RUN(runs[1], 3, 2, 3);
    CHECK_RUN(runs[2], 8, 1, 5);
    CHECK_RUN(runs[3], 10, 1, 6);
    CHECK_ROWS(&c, 2, 9, 1, 3, 4, 8, 10);
    CHECK_OK(&c);
    neuron_cache_free(&c);
}

static void test_gap_coalescing(void)
{
    struct neuron_run runs[8];
    uint32_t added;

    /* gap 1: 2 fills the hole between 1 and 3; 7 is 3 away from 3 */
    struct neuron_cache c = make(16, 16, NULL);
    neuron_cache_evict(&c, IDS(1, 3, 7), 0, 3);
    CHECK_U64(neuron_cache_reserve(&c, IDS(1, 3, 7), 1, runs, &added), 2);
    CHECK_U64(added, 4);
    CHECK_RUN(runs[0], 1, 3, 0);
    CHECK_RUN(runs[1], 7, 1, 3);
    CHECK_ROWS(&c, 1, 2, 3, 7);
    CHECK(c.last_active[2] == -1); /* a gap row was not needed */
    CHECK_OK(&c);

    /* The next token needs nothing, window 3: 1, 3, 7 stay in the window;
     * gap row 2 never was active and goes, even this early in the sequence. */
    CHECK_U64(neuron_cache_evict(&c, NULL, 0, 1, 3), 1);
    CHECK_ROWS(&c, 1, 7, 3);
    neuron_cache_free(&c);

    /* gap 3 spans 4..6 too: one run of seven rows */
    c = make(16, 16, NULL);
    neuron_cache_evict(&c, IDS(1, 3, 7), 0, 3);
    CHECK_U64(neuron_cache_reserve(&c, IDS(1, 3, 7), 3, runs, &added), 1);
    CHECK_U64(added, 7);
    CHECK_RUN(runs[0], 1, 7, 0);
    CHECK_ROWS(&c, 1, 2, 3, 4, 5, 6, 7);
    CHECK_OK(&c);
    neuron_cache_free(&c);

    /* with 2 resident (from the token before) the run breaks at it */
    c = make(16, 16, NULL);
    neuron_cache_evict(&c, IDS(2), 0, 2);
    neuron_cache_reserve(&c, IDS(2), 1, runs, &added);
    CHECK_U64(neuron_cache_evict(&c, IDS(1, 3, 7), 1, 2), 0);
    CHECK_U64(neuron_cache_reserve(&c, IDS(1, 3, 7), 1, runs, &added), 3);
    CHECK_U64(added, 3);
    CHECK_RUN(runs[0], 1, 1, 1);
    CHECK_RUN(runs[1], 3, 1, 2);
    CHECK_RUN(runs[2], 7, 1, 3);
    CHECK_ROWS(&c, 2, 1, 3, 7);
    CHECK_OK(&c);

    /* a resident neuron inside the gap (5, needed earlier) also breaks it */
    CHECK_U64(neuron_cache_evict(&c, IDS(5), 2, 2), 1); /* 2 leaves */
    neuron_cache_reserve(&c, IDS(5), 1, runs, &added);
    CHECK_U64(neuron_cache_evict(&c, IDS(4, 6, 9, 11), 3, 2), 3); /* 1, 3, 7 leave */
    CHECK_ROWS(&c, 5);
    CHECK_U64(neuron_cache_reserve(&c, IDS(4, 6, 9, 11), 1, runs, &added), 3);
    CHECK_U64(added, 5);
    CHECK_RUN(runs[0], 4, 1, 1);
    CHECK_RUN(runs[1], 6, 1, 2);
    CHECK_RUN(runs[2], 9, 3, 3);
    CHECK_ROWS(&c, 5, 4, 6, 9, 10, 11);
    CHECK_OK(&c);
    neuron_cache_free(&c);
}

/* window 0 keeps nothing, not even what this token needs again. */
static void test_window_zero(void)
{
    struct neuron_cache c = make(16, 16, NULL);
    struct neuron_run runs[8];
    uint32_t added;
    CHECK_U64(neuron_cache_evict(&c, IDS(1, 2), 0, 0), 0);
    CHECK_U64(neuron_cache_reserve(&c, IDS(1, 2), 0, runs, &added), 1);
    CHECK_U64(neuron_cache_evict(&c, IDS(2, 3), 1, 0), 2);
    CHECK_U64(c.num_used, 0);
    CHECK_U64(neuron_cache_reserve(&c, IDS(2, 3), 0, runs, &added), 1);
    CHECK_U64(added, 2);
    CHECK_RUN(runs[0], 2, 2, 0);
    CHECK_U64(c.deleted_total, 2);
    CHECK_U64(c.inserted_total, 4);
    CHECK_OK(&c);
    neuron_cache_free(&c);
}

struct snapshot {
    uint32_t num_used, pointer[16];
    int32_t row_of[16];
    uint64_t inserted;
};

static void snap(const struct neuron_cache *c, struct snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->num_used = c->num_used;
    memcpy(s->pointer, c->pointer, c->capacity * sizeof *c->pointer);
    memcpy(s->row_of, c->row_of, c->d_ff * sizeof *c->row_of);
    s->inserted = c->inserted_total;
}

static bool same_snapshot(const struct snapshot *a, const struct snapshot *b)
{
    return a->num_used == b->num_used && a->inserted == b->inserted &&
           memcmp(a->pointer, b->pointer, sizeof a->pointer) == 0 &&
           memcmp(a->row_of, b->row_of, sizeof a->row_of) == 0;
}

/* Past capacity, reserve fails and changes nothing; gap rows count. */
static void test_capacity(void)
{
    struct neuron_cache c = make(16, 4, NULL);
    struct neuron_run runs[8];
    uint32_t added;
    neuron_cache_evict(&c, IDS(1, 2, 3), 0, 3);
    CHECK_U64(neuron_cache_reserve(&c, IDS(1, 2, 3), 0, runs, &added), 1);

    neuron_cache_evict(&c, IDS(5, 6), 1, 3);
    struct snapshot before, after;
    snap(&c, &before);
    memset(runs, 0xee, sizeof runs);
    CHECK(neuron_cache_reserve(&c, IDS(5, 6), 0, runs, &added) == -1);
    CHECK_U64(added, 2); /* what it would have needed */
    snap(&c, &after);
    CHECK(same_snapshot(&before, &after));
    CHECK(runs[0].first == 0xeeeeeeeeu);
    CHECK_OK(&c);

    /* exactly to capacity is fine */
    CHECK_U64(neuron_cache_reserve(&c, IDS(5), 0, runs, &added), 1);
    CHECK_U64(c.num_used, 4);
    CHECK_OK(&c);
    neuron_cache_free(&c);

    /* two misses fit, but not with the gap row between them */
    c = make(16, 2, NULL);
    neuron_cache_evict(&c, IDS(1, 3), 0, 1);
    CHECK(neuron_cache_reserve(&c, IDS(1, 3), 1, runs, &added) == -1);
    CHECK_U64(added, 3);
    CHECK_U64(c.num_used, 0);
    CHECK_U64(c.inserted_total, 0);
    CHECK(c.row_of[1] == -1 && c.row_of[2] == -1 && c.row_of[3] == -1);
    CHECK_U64(neuron_cache_reserve(&c, IDS(1, 3), 0, runs, &added), 2);
    CHECK_ROWS(&c, 1, 3);
    CHECK_OK(&c);
    neuron_cache_free(&c);
}

/* A random ascending set: neurons of the previous token come back often (so
 * windows hit), others at a random density. Returns the count. */
static uint32_t random_set(struct rng *r, uint32_t d_ff, const uint8_t *prev, double density, uint32_t *out)
{
    uint32_t n = 0;
    if (rng_below(r, 16) == 0)
        return 0; /* now and then a token needs nothing */
    for (uint32_t i = 0; i < d_ff; i++)
        if (prev[i] ? rng_below(r, 2) == 0 : rng_unit(r) < density)
            out[n++] = i;
    return n;
}

/* What a flash read would put in neuron id's bundle: 32-bit words that
 * differ from neuron to neuron and along the row. */
static uint32_t pattern_word(uint32_t id, size_t w)
{
    return (id + 1) * 0x9e3779b1u ^ (uint32_t)w * 0x85ebca77u;
}

static void fill_row(struct neuron_cache *c, uint32_t r, uint32_t id)
{
    uint8_t *row = c->rows + (size_t)r * c->row_stride;
    for (size_t w = 0; w < c->row_stride / 4; w++) {
        uint32_t v = pattern_word(id, w);
        memcpy(row + 4 * w, &v, 4);
    }
}

static bool row_matches(const struct neuron_cache *c, uint32_t r)
{
    const uint8_t *row = c->rows + (size_t)r * c->row_stride;
    for (size_t w = 0; w < c->row_stride / 4; w++) {
        uint32_t v;
        memcpy(&v, row + 4 * w, 4);
        if (v != pattern_word(c->pointer[r], w))
            return false;
    }
    return true;
}

/* Fill each new row as the reads would, then, after each step, every row
 * still holds its own neuron's bytes and bias. */
static void test_bytes_follow_neurons(void)
{
    struct rng r;
    rng_seed(&r, 6);
    for (int round = 0; round < 6; round++) {
        uint32_t d_ff = 64 + (uint32_t)rng_below(&r, 200), window = 1 + (uint32_t)rng_below(&r, 5);
        uint32_t gap = (uint32_t)rng_below(&r, 3);
        uint64_t stride = NEURON_CACHE_ALIGN * (1 + rng_below(&r, 2));
        float *bias = malloc(d_ff * sizeof *bias);
        uint32_t *need = malloc(d_ff * sizeof *need);
        uint8_t *prev = calloc(d_ff, 1);
        struct neuron_run *runs = malloc(d_ff * sizeof *runs);
        for (uint32_t i = 0; i < d_ff; i++)
            bias[i] = (float)i * 0.25f - 7.0f;
        struct neuron_cache c;
        char err[256];
        CHECK(neuron_cache_init(&c, d_ff, d_ff, stride, bias, err, sizeof err) == 0);
        uint8_t *rows = c.rows;
        bool bytes_ok = true, bias_ok = true, pointer_ok = true;
        for (int64_t t = 0; t < 120; t++) {
            uint32_t n = random_set(&r, d_ff, prev, 0.05 + 0.2 * rng_unit(&r), need);
            neuron_cache_evict(&c, need, n, t, window);
            uint32_t added;
            int nr = neuron_cache_reserve(&c, need, n, gap, runs, &added);
            CHECK(nr >= 0);
            for (int k = 0; k < nr; k++)
                for (uint32_t j = 0; j < runs[k].count; j++) {
                    pointer_ok &= c.pointer[runs[k].row + j] == runs[k].first + j;
                    fill_row(&c, runs[k].row + j, runs[k].first + j);
                }
            for (uint32_t row = 0; row < c.num_used; row++) {
                bytes_ok &= row_matches(&c, row);
                bias_ok &= c.up_bias[row] == bias[c.pointer[row]];
            }
            memset(prev, 0, d_ff);
            for (uint32_t j = 0; j < n; j++)
                prev[need[j]] = 1;
        }
        CHECK(bytes_ok);
        CHECK(bias_ok);
        CHECK(pointer_ok);
        CHECK(c.rows == rows); /* never reallocated */
        CHECK(c.deleted_total > 0);
        CHECK_OK(&c);
        neuron_cache_free(&c);
        free(bias);
        free(need);
        free(prev);
        free(runs);
    }
}

/* The reference: after evict, the resident neurons are the ones that were
 * resident and are needed now or were last needed inside the window. The
 * reserve adds the misses and, with a gap, every block of at most `gap`
 * non-resident neurons lying between two misses; its runs are the maximal
 * blocks of adjacent appended ids, in rows from the old num_used on. */
struct reference {
    uint32_t d_ff, window, gap;
    int64_t *last_needed; /* -1: never */
    uint8_t *resident, *needed, *appended;
};

static uint32_t ref_evict(struct reference *ref, const uint32_t *need, uint32_t n, int64_t t)
{
    memset(ref->needed, 0, ref->d_ff);
    for (uint32_t j = 0; j < n; j++) {
        ref->needed[need[j]] = 1;
        ref->last_needed[need[j]] = t;
    }
    uint32_t deleted = 0;
    for (uint32_t i = 0; i < ref->d_ff; i++) {
        bool keep = ref->window > 0 && ref->last_needed[i] >= 0 &&
                    ref->last_needed[i] > t - (int64_t)ref->window;
        if (ref->resident[i] && !keep) {
            ref->resident[i] = 0;
            deleted++;
        }
    }
    return deleted;
}

static bool is_miss(const struct reference *ref, uint32_t i)
{
    return ref->needed[i] && !ref->resident[i];
}

/* Marks the rows reserve should append; returns how many. */
static uint32_t ref_appended(struct reference *ref)
{
    uint32_t n = 0;
    memset(ref->appended, 0, ref->d_ff);
    for (uint32_t i = 0; i < ref->d_ff; i++)
        if (is_miss(ref, i)) {
            ref->appended[i] = 1;
            n++;
        }
    /* free blocks: maximal stretches of neither needed nor resident */
    for (uint32_t i = 0; i < ref->d_ff;) {
        if (ref->needed[i] || ref->resident[i]) {
            i++;
            continue;
        }
        uint32_t end = i;
        while (end < ref->d_ff && !ref->needed[end] && !ref->resident[end])
            end++;
        if (end - i <= ref->gap && i > 0 && end < ref->d_ff && is_miss(ref, i - 1) && is_miss(ref, end))
            for (uint32_t k = i; k < end; k++, n++)
                ref->appended[k] = 1;
        i = end;
    }
    return n;
}

static bool runs_match(const struct reference *ref, const struct neuron_run *runs, int nr, uint32_t row0)
{
    int k = 0;
    uint32_t row = row0;
    for (uint32_t i = 0; i < ref->d_ff;) {
        if (!ref->appended[i]) {
            i++;
            continue;
        }
        uint32_t end = i;
        while (end < ref->d_ff && ref->appended[end])
            end++;
        if (k >= nr || runs[k].first != i || runs[k].count != end - i || runs[k].row != row)
            return false;
        row += end - i;
        k++;
        i = end;
    }
    return k == nr;
}

static bool resident_matches(const struct neuron_cache *c, const uint8_t *resident)
{
    for (uint32_t i = 0; i < c->d_ff; i++)
        if ((c->row_of[i] >= 0) != (resident[i] != 0))
            return false;
    return true;
}

static void random_case(uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed);
    uint32_t d_ff = 64 + (uint32_t)rng_below(&r, 1985);
    struct reference ref = {d_ff, (uint32_t)rng_below(&r, 7), (uint32_t)rng_below(&r, 4),
                            malloc(d_ff * sizeof(int64_t)), calloc(d_ff, 1), calloc(d_ff, 1), calloc(d_ff, 1)};
    for (uint32_t i = 0; i < d_ff; i++)
        ref.last_needed[i] = -1;
    uint32_t *need = malloc(d_ff * sizeof *need);
    struct neuron_run *runs = malloc(d_ff * sizeof *runs);
    double density = 0.01 + 0.3 * rng_unit(&r);
    struct neuron_cache c = make(d_ff, d_ff, NULL);
    char err[256] = "";
    int bad = 0;
    for (int64_t t = 0; t < 250 && !bad; t++) {
        uint32_t n = random_set(&r, d_ff, ref.needed, density * (0.5 + rng_unit(&r)), need);
        uint32_t want_deleted = ref_evict(&ref, need, n, t);
        uint32_t deleted = neuron_cache_evict(&c, need, n, t, ref.window);
        if (deleted != want_deleted || !resident_matches(&c, ref.resident))
            bad = 1;
        else if (neuron_cache_check(&c, err, sizeof err) != 0)
            bad = 2;
        if (bad)
            break;

        uint32_t row0 = c.num_used, want_added = ref_appended(&ref), added = 0;
        int nr = neuron_cache_reserve(&c, need, n, ref.gap, runs, &added);
        for (uint32_t i = 0; i < d_ff; i++)
            ref.resident[i] |= ref.appended[i];
        if (nr < 0 || added != want_added || !runs_match(&ref, runs, nr, row0))
            bad = 3;
        else if (!resident_matches(&c, ref.resident))
            bad = 4;
        else if (neuron_cache_check(&c, err, sizeof err) != 0)
            bad = 5;
        for (uint32_t j = 0; j < n && !bad; j++)
            if (c.row_of[need[j]] < 0)
                bad = 6;
        /* The same set said the paper's way: the union of the window's
         * needed sets, plus this token's gap rows. */
        for (uint32_t i = 0; i < d_ff && !bad; i++) {
            bool in_window = ref.window == 0 ? ref.needed[i] != 0
                                             : ref.last_needed[i] >= 0 && ref.last_needed[i] > t - (int64_t)ref.window;
            if ((c.row_of[i] >= 0) != (in_window || ref.appended[i]))
                bad = 7;
        }
        if (bad)
            fprintf(stderr, "seed %llu (d_ff %u window %u gap %u) token %lld: failure %d %s\n",
                    (unsigned long long)seed, d_ff, ref.window, ref.gap, (long long)t, bad, err);
    }
    CHECK(bad == 0);
    neuron_cache_free(&c);
    free(ref.last_needed);
    free(ref.resident);
    free(ref.needed);
    free(ref.appended);
    free(need);
    free(runs);
}

static void test_random_against_reference(void)
{
    for (uint64_t seed = 1; seed <= 40; seed++)
        random_case(seed);
}

int main(void)
{
    test_bad_init();
    test_golden_window();
    test_runs_break_at_resident();
    test_gap_coalescing();
    test_window_zero();
    test_capacity();
    test_bytes_follow_neurons();
    test_random_against_reference();
    return check_report("test_neuron_cache");
}
