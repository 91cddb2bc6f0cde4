/* The neuron cache storage (engine/ffn/neuron_cache.h) through its API alone:
 * init's refusals; golden cases with exact rows, where a delete moves the
 * last row's bytes, pointer, row_of and up bias into the hole and appends in
 * ascending id order take adjacent rows that one read fills; the refusals
 * that keep num_used within capacity; check() naming each broken invariant;
 * and long random append/delete sequences against a plain array, with
 * check() and every row's bytes verified after each step. Row bytes come
 * from a stand-in for ffn.bin whose every word is tagged with its neuron id
 * and position, so a row that moved whole, in part or not at all shows.
 * Kept in place (neuron_cache_keep_in_place): holes reused, nothing moved. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "common/rng.h"
#include "engine/ffn/neuron_cache.h"

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

/* check() fails and its message contains `says`. */
static void check_broken(const struct neuron_cache *c, const char *says, int line)
{
    char err[256] = "";
    int rc = neuron_cache_check(c, err, sizeof err);
    check_count++;
    if (rc != -1 || strstr(err, says) == NULL) {
        check_failures++;
        fprintf(stderr, "%s:%d: neuron_cache_check = %d \"%s\", want -1 with \"%s\"\n", __FILE__, line, rc, err,
                says);
    }
}
#define CHECK_BROKEN(c, says) check_broken(c, says, __LINE__)

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
#define CHECK_EMPTY(c) check_rows(c, NULL, 0, __LINE__)

/* A stand-in for one layer of ffn.bin: d_ff bundles of `stride` bytes in
 * neuron order, each 32-bit word tagged with its neuron and its position. */
static uint32_t tag_word(uint32_t id, size_t w)
{
    return (id + 1) * 0x9e3779b1u ^ (uint32_t)w * 0x85ebca77u;
}

static uint8_t *make_image(uint32_t d_ff, uint64_t stride)
{
    uint8_t *image = malloc((size_t)d_ff * stride);
    if (!image) {
        fprintf(stderr, "out of memory for the image\n");
        exit(1);
    }
    for (uint32_t id = 0; id < d_ff; id++)
        for (size_t w = 0; w < stride / 4; w++) {
            uint32_t v = tag_word(id, w);
            memcpy(image + id * stride + 4 * w, &v, 4);
        }
    return image;
}

/* What the engine's load_rows does: one read of `count` adjacent bundles
 * from neuron `first` on into the rows from `row` on. */
static void read_run(struct neuron_cache *c, const uint8_t *image, uint32_t first, uint32_t count, uint32_t row)
{
    memcpy(c->rows + (size_t)row * c->row_stride, image + (size_t)first * c->row_stride,
           (size_t)count * c->row_stride);
}

/* Every used row holds its own neuron's bytes. */
static bool bytes_follow(const struct neuron_cache *c, const uint8_t *image)
{
    for (uint32_t r = 0; r < c->num_used; r++)
        if (memcmp(c->rows + (size_t)r * c->row_stride, image + (size_t)c->pointer[r] * c->row_stride,
                   c->row_stride) != 0)
            return false;
    return true;
}

static struct neuron_cache make(uint32_t d_ff, uint32_t capacity, uint64_t stride, const float *bias)
{
    struct neuron_cache c;
    char err[256] = "";
    if (neuron_cache_init(&c, d_ff, capacity, stride, bias, true, err, sizeof err) != 0) {
        fprintf(stderr, "neuron_cache_init: %s\n", err);
        exit(1);
    }
    return c;
}

/* Everything the API could change, copied, to show a refusal changed
 * nothing. */
struct snapshot {
    uint32_t num_used;
    uint32_t *pointer;
    int32_t *row_of;
    float *up_bias;
    uint8_t *rows;
};

static struct snapshot snap(const struct neuron_cache *c)
{
    struct snapshot s = {c->num_used, malloc(c->capacity * sizeof *s.pointer), malloc(c->d_ff * sizeof *s.row_of),
                         malloc(c->capacity * sizeof *s.up_bias), malloc((size_t)c->capacity * c->row_stride)};
    memcpy(s.pointer, c->pointer, c->capacity * sizeof *s.pointer);
    memcpy(s.row_of, c->row_of, c->d_ff * sizeof *s.row_of);
    if (c->up_bias)
        memcpy(s.up_bias, c->up_bias, c->capacity * sizeof *s.up_bias);
    memcpy(s.rows, c->rows, (size_t)c->capacity * c->row_stride);
    return s;
}

/* Compares with the cache and frees the snapshot. */
static bool unchanged(const struct neuron_cache *c, struct snapshot s)
{
    bool same = s.num_used == c->num_used && memcmp(s.pointer, c->pointer, c->capacity * sizeof *s.pointer) == 0 &&
                memcmp(s.row_of, c->row_of, c->d_ff * sizeof *s.row_of) == 0 &&
                (!c->up_bias || memcmp(s.up_bias, c->up_bias, c->capacity * sizeof *s.up_bias) == 0) &&
                memcmp(s.rows, c->rows, (size_t)c->capacity * c->row_stride) == 0;
    free(s.pointer);
    free(s.row_of);
    free(s.up_bias);
    free(s.rows);
    return same;
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
        CHECK(neuron_cache_init(&c, bad[k].d_ff, bad[k].capacity, bad[k].stride, NULL, true, err, sizeof err) == -1);
        CHECK(strstr(err, bad[k].says) != NULL);
        CHECK(c.rows == NULL && c.pointer == NULL && c.row_of == NULL && c.num_used == 0);
        neuron_cache_free(&c); /* safe after a failed init */
    }

    /* A good one: aligned rows, nothing resident, no bias array. */
    struct neuron_cache c = make(16, 16, NEURON_CACHE_ALIGN, NULL);
    CHECK((uintptr_t)c.rows % NEURON_CACHE_ALIGN == 0);
    CHECK(c.up_bias == NULL);
    CHECK_EMPTY(&c);
    for (uint32_t i = 0; i < 16; i++)
        CHECK(c.row_of[i] == -1);
    CHECK_OK(&c);
    neuron_cache_free(&c);
    neuron_cache_free(&c);
}

/* The golden sequence's steps share one cache of d_ff 16 and 8 rows, the
 * flash image its rows are read from, and the up biases. */

/* 1..3 then 7, 8: each run of adjacent ids one read into the next rows. */
static void golden_fill(struct neuron_cache *c, const uint8_t *image, const float *bias)
{
    CHECK_U64(neuron_cache_append(c, 1), 0);
    CHECK_U64(neuron_cache_append(c, 2), 1);
    CHECK_U64(neuron_cache_append(c, 3), 2);
    read_run(c, image, 1, 3, 0);
    CHECK_U64(neuron_cache_append(c, 7), 3);
    CHECK_U64(neuron_cache_append(c, 8), 4);
    read_run(c, image, 7, 2, 3);
    CHECK_ROWS(c, 1, 2, 3, 7, 8);
    CHECK(c->row_of[1] == 0 && c->row_of[2] == 1 && c->row_of[3] == 2 && c->row_of[7] == 3 && c->row_of[8] == 4);
    CHECK(c->up_bias[0] == bias[1] && c->up_bias[3] == bias[7] && c->up_bias[4] == bias[8]);
    CHECK(bytes_follow(c, image));
    CHECK_OK(c);
}

/* Deletes: the last row moves into the hole (bytes, id and bias), the
 * last row itself moves nothing, and what is not resident changes nothing. */
static void golden_deletes(struct neuron_cache *c, const uint8_t *image, const float *bias, uint64_t stride)
{
    /* 2 leaves row 1: the last row (8) moves in, bytes, id and bias */
    CHECK(neuron_cache_delete(c, 2));
    CHECK_ROWS(c, 1, 8, 3, 7);
    CHECK(c->row_of[2] == -1 && c->row_of[8] == 1);
    CHECK(c->up_bias[1] == bias[8]);
    CHECK(memcmp(c->rows + stride, image + 8 * stride, stride) == 0);
    CHECK(bytes_follow(c, image));
    CHECK_OK(c);

    /* 7 is the last row: nothing moves */
    CHECK(neuron_cache_delete(c, 7));
    CHECK_ROWS(c, 1, 8, 3);
    CHECK(c->row_of[7] == -1);
    CHECK(bytes_follow(c, image));
    CHECK_OK(c);

    /* not resident, or not a neuron: nothing changes */
    struct snapshot s = snap(c);
    CHECK(!neuron_cache_delete(c, 7));
    CHECK(!neuron_cache_delete(c, 0));
    CHECK(!neuron_cache_delete(c, 16));
    CHECK(!neuron_cache_delete(c, UINT32_MAX));
    CHECK(unchanged(c, s));

    /* 1 leaves row 0: 3 moves in */
    CHECK(neuron_cache_delete(c, 1));
    CHECK_ROWS(c, 3, 8);
    CHECK(c->row_of[3] == 0 && c->up_bias[0] == bias[3]);
}

static void golden_refill(struct neuron_cache *c, const uint8_t *image, const float *bias)
{
    /* appends go on from num_used: 10..12 into rows 2..4, one read */
    CHECK_U64(neuron_cache_append(c, 10), 2);
    CHECK_U64(neuron_cache_append(c, 11), 3);
    CHECK_U64(neuron_cache_append(c, 12), 4);
    read_run(c, image, 10, 3, 2);
    CHECK_ROWS(c, 3, 8, 10, 11, 12);
    CHECK(c->up_bias[2] == bias[10] && c->up_bias[4] == bias[12]);
    CHECK(bytes_follow(c, image));
    CHECK_OK(c);
}

static void golden_drain(struct neuron_cache *c, const uint8_t *image)
{
    /* down to empty, from the front: each time the last row moves to 0 */
    const uint32_t order[] = {3, 12, 11, 10, 8};
    const uint32_t moved[] = {12, 11, 10, 8, UINT32_MAX};
    for (int k = 0; k < 5; k++) {
        CHECK(neuron_cache_delete(c, order[k]));
        CHECK(c->row_of[order[k]] == -1);
        if (moved[k] != UINT32_MAX)
            CHECK(c->pointer[0] == moved[k] && c->row_of[moved[k]] == 0);
        CHECK(bytes_follow(c, image));
        CHECK_OK(c);
    }
    CHECK_EMPTY(c);
    for (uint32_t i = 0; i < 16; i++)
        CHECK(c->row_of[i] == -1);
}

/* d_ff 16, 8 rows: appends take the next rows, a run of adjacent ids is one
 * read, and each delete moves exactly the last row into the hole. */
static void test_golden(void)
{
    const uint64_t stride = NEURON_CACHE_ALIGN;
    float bias[16];
    for (int i = 0; i < 16; i++)
        bias[i] = 0.5f * (float)i - 3.0f;
    uint8_t *image = make_image(16, stride);
    struct neuron_cache c = make(16, 8, stride, bias);
    uint8_t *rows = c.rows;
    golden_fill(&c, image, bias);
    golden_deletes(&c, image, bias, stride);
    golden_refill(&c, image, bias);
    golden_drain(&c, image);
    CHECK(c.rows == rows); /* never reallocated */
    neuron_cache_free(&c);
    free(image);
}

/* num_used never passes capacity: a full cache refuses, and so does a
 * resident or out-of-range id; each refusal changes nothing. */
static void test_capacity(void)
{
    uint8_t *image = make_image(16, NEURON_CACHE_ALIGN);
    struct neuron_cache c = make(16, 3, NEURON_CACHE_ALIGN, NULL);
    CHECK_U64(neuron_cache_append(&c, 4), 0);
    CHECK_U64(neuron_cache_append(&c, 5), 1);
    CHECK_U64(neuron_cache_append(&c, 6), 2);
    read_run(&c, image, 4, 3, 0);

    struct snapshot s = snap(&c);
    CHECK_U64(neuron_cache_append(&c, 9), NEURON_CACHE_NO_ROW); /* full */
    CHECK_U64(neuron_cache_append(&c, 4), NEURON_CACHE_NO_ROW); /* full and resident */
    CHECK(unchanged(&c, s));
    CHECK_ROWS(&c, 4, 5, 6);
    CHECK_OK(&c);

    CHECK(neuron_cache_delete(&c, 5));
    CHECK_ROWS(&c, 4, 6);
    s = snap(&c);
    CHECK_U64(neuron_cache_append(&c, 4), NEURON_CACHE_NO_ROW); /* resident */
    CHECK_U64(neuron_cache_append(&c, 6), NEURON_CACHE_NO_ROW);
    CHECK_U64(neuron_cache_append(&c, 16), NEURON_CACHE_NO_ROW); /* not a neuron */
    CHECK_U64(neuron_cache_append(&c, UINT32_MAX), NEURON_CACHE_NO_ROW);
    CHECK(unchanged(&c, s));

    /* the room a delete made is taken again */
    CHECK_U64(neuron_cache_append(&c, 9), 2);
    CHECK_ROWS(&c, 4, 6, 9);
    CHECK_U64(neuron_cache_append(&c, 10), NEURON_CACHE_NO_ROW);
    CHECK_OK(&c);
    neuron_cache_free(&c);

    /* capacity d_ff holds every neuron */
    c = make(16, 16, NEURON_CACHE_ALIGN, NULL);
    for (uint32_t i = 0; i < 16; i++)
        CHECK_U64(neuron_cache_append(&c, 15 - i), i);
    CHECK_U64(c.num_used, 16);
    CHECK_U64(neuron_cache_append(&c, 0), NEURON_CACHE_NO_ROW);
    CHECK_OK(&c);
    neuron_cache_free(&c);

    /* a cleared cache (a layer given no rows) holds nothing */
    CHECK_U64(neuron_cache_append(&c, 0), NEURON_CACHE_NO_ROW);
    CHECK(!neuron_cache_delete(&c, 0));
    CHECK_U64(c.num_used, 0);
    free(image);
}

/* Each invariant check() guards, broken by hand and restored. */
static void test_check_reports(void)
{
    float bias[16];
    for (int i = 0; i < 16; i++)
        bias[i] = (float)i;
    struct neuron_cache c = make(16, 4, NEURON_CACHE_ALIGN, bias);
    neuron_cache_append(&c, 3);
    neuron_cache_append(&c, 5);
    neuron_cache_append(&c, 9);
    CHECK_OK(&c);

    c.num_used = 5;
    CHECK_BROKEN(&c, "num_used 5 > capacity 4");
    c.num_used = 3;

    c.pointer[1] = 21;
    CHECK_BROKEN(&c, "row 1 holds neuron 21, d_ff is 16");
    c.pointer[1] = 5;

    c.pointer[0] = 5; /* 5 in rows 0 and 1, 3 in none */
    CHECK_BROKEN(&c, "row 0 holds neuron 5 but row_of says 1");
    c.pointer[0] = 3;

    c.row_of[7] = 0; /* 7 claims row 0, which holds 3 */
    CHECK_BROKEN(&c, "row_of[7] = 0 does not hold it (num_used 3)");
    c.row_of[7] = -1;

    c.row_of[7] = 3; /* a row past num_used */
    CHECK_BROKEN(&c, "row_of[7] = 3 does not hold it (num_used 3)");
    c.row_of[7] = -1;

    c.up_bias[2] = 99.0f;
    CHECK_BROKEN(&c, "row 2 has the up bias 99, neuron 9's is 9");
    c.up_bias[2] = 9.0f;

    float *up = c.up_bias;
    c.up_bias = NULL;
    CHECK_BROKEN(&c, "up_bias and bias_src disagree");
    c.up_bias = up;

    CHECK_OK(&c);
    neuron_cache_free(&c);
}

/* The reference: the ids row by row in a plain array. A delete finds the id
 * by search (not through row_of) and moves the last entry into its place. */
struct model {
    uint32_t n, cap, *ids;
};

static int64_t model_find(const struct model *m, uint32_t id)
{
    for (uint32_t r = 0; r < m->n; r++)
        if (m->ids[r] == id)
            return r;
    return -1;
}

static uint32_t model_append(struct model *m, uint32_t id, uint32_t d_ff)
{
    if (m->n == m->cap || id >= d_ff || model_find(m, id) >= 0)
        return NEURON_CACHE_NO_ROW;
    m->ids[m->n] = id;
    return m->n++;
}

static bool model_delete(struct model *m, uint32_t id)
{
    int64_t r = model_find(m, id);
    if (r < 0)
        return false;
    m->ids[r] = m->ids[--m->n];
    return true;
}

/* The cache equals the model: the same ids row by row, row_of their
 * inverse, each row's bias and bytes its neuron's, and check() passes. */
static bool matches(const struct neuron_cache *c, const struct model *m, const float *bias, const uint8_t *image,
                    char *why, size_t whylen)
{
    if (neuron_cache_check(c, why, whylen) != 0)
        return false;
    if (c->num_used != m->n) {
        snprintf(why, whylen, "num_used %u, the model has %u rows", c->num_used, m->n);
        return false;
    }
    for (uint32_t r = 0; r < m->n; r++) {
        if (c->pointer[r] != m->ids[r] || (bias && c->up_bias[r] != bias[m->ids[r]])) {
            snprintf(why, whylen, "row %u holds %u, the model %u", r, c->pointer[r], m->ids[r]);
            return false;
        }
    }
    for (uint32_t i = 0; i < c->d_ff; i++)
        if (c->row_of[i] != (int32_t)model_find(m, i)) {
            snprintf(why, whylen, "row_of[%u] = %d, the model %lld", i, c->row_of[i], (long long)model_find(m, i));
            return false;
        }
    if (!bytes_follow(c, image)) {
        snprintf(why, whylen, "a row's bytes are not its neuron's");
        return false;
    }
    return true;
}

/* Appends first, first+1, ... (at most `len`, within d_ff) to both, as the
 * engine appends a run, and fills the rows the cache took with one read.
 * The run stops at the first refusal, which must be the model's too.
 * false when cache and model disagree. */
static bool step_append_run(struct neuron_cache *c, struct model *m, const uint8_t *image, uint32_t first,
                            uint32_t len)
{
    uint32_t row0 = c->num_used, k = 0;
    for (; k < len && first + k < c->d_ff; k++) {
        uint32_t want = model_append(m, first + k, c->d_ff), got = neuron_cache_append(c, first + k);
        if (got != want)
            return false;
        if (got == NEURON_CACHE_NO_ROW)
            break;
        if (got != row0 + k)
            return false; /* not adjacent: one read would not fill them */
    }
    if (k > 0)
        read_run(c, image, first, k, row0);
    return true;
}

/* One random step: appends lean to filling (so the cache is often full and
 * refuses) or draining, as `filling` says. false on a disagreement. */
static bool random_step(struct rng *r, struct neuron_cache *c, struct model *m, const uint8_t *image, bool filling)
{
    uint32_t d_ff = c->d_ff, pick = (uint32_t)rng_below(r, 8);
    if (pick < (filling ? 6u : 2u)) {
        uint32_t len = pick == 0 ? 1 : 1 + (uint32_t)rng_below(r, 6);
        return step_append_run(c, m, image, (uint32_t)rng_below(r, d_ff), len);
    }
    if (pick == 7) { /* any id, often not resident, sometimes not a neuron */
        uint32_t id = (uint32_t)rng_below(r, d_ff + 4);
        return neuron_cache_delete(c, id) == model_delete(m, id);
    }
    if (m->n == 0)
        return !neuron_cache_delete(c, (uint32_t)rng_below(r, d_ff));
    uint32_t id = m->ids[rng_below(r, m->n)];
    return neuron_cache_delete(c, id) && model_delete(m, id);
}

static void random_case(uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed);
    uint32_t d_ff = 8 + (uint32_t)rng_below(&r, 120);
    uint32_t cap = 1 + (uint32_t)rng_below(&r, d_ff);
    uint64_t stride = NEURON_CACHE_ALIGN * (1 + rng_below(&r, 2));
    float *bias = NULL;
    if (rng_below(&r, 2)) {
        bias = malloc(d_ff * sizeof *bias);
        for (uint32_t i = 0; i < d_ff; i++)
            bias[i] = (float)i * 0.25f - 7.0f;
    }
    uint8_t *image = make_image(d_ff, stride);
    struct neuron_cache c = make(d_ff, cap, stride, bias);
    uint8_t *rows = c.rows;
    struct model m = {0, cap, malloc(cap * sizeof *m.ids)};
    bool filling = true;
    char why[256] = "";
    int step = 0;
    for (; step < 1000; step++) {
        if (m.n == cap || m.n == 0 || rng_below(&r, 32) == 0)
            filling = m.n < cap && (m.n == 0 || !filling);
        if (!random_step(&r, &c, &m, image, filling)) {
            snprintf(why, sizeof why, "an append or delete returned what the model did not");
            break;
        }
        if (!matches(&c, &m, bias, image, why, sizeof why))
            break;
    }
    if (step < 1000)
        fprintf(stderr, "seed %llu (d_ff %u, %u rows of %llu bytes) step %d: %s\n", (unsigned long long)seed, d_ff,
                cap, (unsigned long long)stride, step, why);
    CHECK(step == 1000);
    CHECK(c.rows == rows);
    neuron_cache_free(&c);
    free(m.ids);
    free(image);
    free(bias);
}

static void test_random_against_model(void)
{
    for (uint64_t seed = 1; seed <= 24; seed++)
        random_case(seed);
}

/* Without host rows (a device holds them): the same bookkeeping as a
 * cache with rows under the same appends and deletes, and no rows. */
static void test_bookkeeping_only(void)
{
    float bias[16];
    for (int i = 0; i < 16; i++)
        bias[i] = (float)i + 0.5f;
    struct neuron_cache with = make(16, 6, NEURON_CACHE_ALIGN, bias), books;
    char err[256] = "";
    CHECK(neuron_cache_init(&books, 16, 6, NEURON_CACHE_ALIGN, bias, false, err, sizeof err) == 0);
    CHECK(books.rows == NULL);
    static const int ops[] = {3, 7, 9, 11, -7, 2, -3, 5, 14, -11, 1};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        if (ops[k] >= 0)
            CHECK_U64(neuron_cache_append(&books, (uint32_t)ops[k]), neuron_cache_append(&with, (uint32_t)ops[k]));
        else
            CHECK(neuron_cache_delete(&books, (uint32_t)-ops[k]) == neuron_cache_delete(&with, (uint32_t)-ops[k]));
    }
    CHECK_U64(books.num_used, with.num_used);
    CHECK(memcmp(books.pointer, with.pointer, with.num_used * sizeof *with.pointer) == 0);
    CHECK(memcmp(books.up_bias, with.up_bias, with.num_used * sizeof *with.up_bias) == 0);
    CHECK(memcmp(books.row_of, with.row_of, 16 * sizeof *with.row_of) == 0);
    CHECK(neuron_cache_check(&books, err, sizeof err) == 0);
    neuron_cache_free(&books);
    neuron_cache_free(&with);
}

/* Kept in place (input sparsity's caches): a delete leaves a hole and
 * moves nothing (the other rows' bytes and indices stay), an append takes
 * the hole freed last, a fresh cache hands out rows 0, 1, ... in order;
 * check() holds throughout; keeping in place is refused once rows are held. */
static void test_in_place(void)
{
    const uint64_t stride = 4096;
    uint8_t *image = make_image(16, stride);
    struct neuron_cache c = make(16, 4, stride, NULL);
    char err[256] = "";
    CHECK(neuron_cache_keep_in_place(&c, err, sizeof err) == 0);
    const uint32_t first[] = {3, 7, 8, 12};
    for (uint32_t k = 0; k < 4; k++) {
        CHECK_U64(neuron_cache_append(&c, first[k]), k);
        read_run(&c, image, first[k], 1, k);
    }
    CHECK_U64(neuron_cache_append(&c, 1), NEURON_CACHE_NO_ROW); /* full */
    CHECK(neuron_cache_delete(&c, 7));
    CHECK(neuron_cache_delete(&c, 3));
    CHECK_OK(&c);
    CHECK_U64(c.num_used, 2);
    CHECK(c.pointer[0] == NEURON_CACHE_FREE && c.pointer[1] == NEURON_CACHE_FREE);
    CHECK(c.pointer[2] == 8 && c.pointer[3] == 12 && c.row_of[12] == 3); /* nothing moved */
    CHECK(memcmp(c.rows + 3 * stride, image + 12 * stride, stride) == 0);
    CHECK_U64(neuron_cache_append(&c, 5), 0); /* the hole freed last */
    CHECK_U64(neuron_cache_append(&c, 9), 1);
    CHECK_OK(&c);
    CHECK_U64(c.num_used, 4);
    CHECK(!neuron_cache_delete(&c, 7)); /* no longer resident */
    CHECK(neuron_cache_keep_in_place(&c, err, sizeof err) == -1 && strstr(err, "before its first row"));
    neuron_cache_free(&c);
    free(image);
}

int main(void)
{
    test_in_place();
    test_bad_init();
    test_bookkeeping_only();
    test_golden();
    test_capacity();
    test_check_reports();
    test_random_against_model();
    return check_report("test_neuron_cache");
}
