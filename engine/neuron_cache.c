/* The per-layer neuron cache (neuron_cache.h; the paper's §3.3, Fig. 6).
 * Everything is allocated by neuron_cache_init; evict and reserve only move
 * bytes and indices, each in time linear in the rows or ids they touch. */
#include "engine/neuron_cache.h"

#include "io/io_buffer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int init_fail(struct neuron_cache *c, char *err, size_t errlen, const char *msg)
{
    neuron_cache_free(c);
    snprintf(err, errlen, "neuron cache: %s", msg);
    return -1;
}

/* The shape checks, apart so init reads as "check, allocate, clear". */
static int check_shape(uint32_t d_ff, uint32_t capacity, uint64_t row_stride, char *err, size_t errlen)
{
    if (d_ff == 0) {
        snprintf(err, errlen, "neuron cache: d_ff is 0");
        return -1;
    }
    if (capacity == 0 || capacity > d_ff) {
        snprintf(err, errlen, "neuron cache: capacity %" PRIu32 " rows is outside 1..d_ff (%" PRIu32 ")",
                 capacity, d_ff);
        return -1;
    }
    if (row_stride == 0 || row_stride % NEURON_CACHE_ALIGN != 0) {
        snprintf(err, errlen, "neuron cache: row stride %" PRIu64 " bytes is not a nonzero multiple of %u",
                 row_stride, NEURON_CACHE_ALIGN);
        return -1;
    }
    /* rows is one block addressed as r * row_stride with a size_t. (The
     * bookkeeping arrays, d_ff * 8 bytes at most, fit any 64-bit size_t, and
     * the project builds for 64-bit hosts only: common/rng.h uses __int128.) */
    if (row_stride > SIZE_MAX / capacity) {
        snprintf(err, errlen,
                 "neuron cache: %" PRIu32 " rows of %" PRIu64 " bytes do not fit in the address space",
                 capacity, row_stride);
        return -1;
    }
    return 0;
}

int neuron_cache_init(struct neuron_cache *c, uint32_t d_ff, uint32_t capacity, uint64_t row_stride,
                      const float *up_bias, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (check_shape(d_ff, capacity, row_stride, err, errlen) != 0)
        return -1;
    c->d_ff = d_ff;
    c->capacity = capacity;
    c->row_stride = row_stride;
    c->bias_src = up_bias;

    /* huge pages (2 MiB-aligned, touched now): direct reads land in few DMA
     * segments, and page faults stay out of the first tokens */
    if (io_buffer_alloc(&c->rows_mem, (size_t)capacity * row_stride, true) != 0)
        return init_fail(c, err, errlen, "out of memory for the rows");
    c->rows = c->rows_mem.base;
    c->pointer = calloc(capacity, sizeof *c->pointer);
    c->row_of = malloc((size_t)d_ff * sizeof *c->row_of);
    c->last_active = malloc((size_t)d_ff * sizeof *c->last_active);
    if (up_bias)
        c->up_bias = calloc(capacity, sizeof *c->up_bias);
    if (!c->pointer || !c->row_of || !c->last_active || (up_bias && !c->up_bias))
        return init_fail(c, err, errlen, "out of memory for the bookkeeping");
    for (uint32_t i = 0; i < d_ff; i++) {
        c->row_of[i] = -1;
        c->last_active[i] = -1;
    }
    return 0;
}

void neuron_cache_free(struct neuron_cache *c)
{
    if (c->rows)
        io_buffer_free(&c->rows_mem);
    free(c->pointer);
    free(c->up_bias);
    free(c->row_of);
    free(c->last_active);
    memset(c, 0, sizeof *c);
}

static uint8_t *row_bytes(const struct neuron_cache *c, uint32_t r)
{
    return c->rows + (size_t)r * c->row_stride;
}

/* Deletes row r: the last used row moves into the hole (bundle, id, bias),
 * so rows[0 .. num_used) stays compact without touching any other row. */
static void delete_row(struct neuron_cache *c, uint32_t r)
{
    uint32_t last = c->num_used - 1, gone = c->pointer[r];
    if (r != last) {
        uint32_t moved = c->pointer[last];
        memcpy(row_bytes(c, r), row_bytes(c, last), c->row_stride);
        c->pointer[r] = moved;
        if (c->up_bias)
            c->up_bias[r] = c->up_bias[last];
        c->row_of[moved] = (int32_t)r;
    }
    c->row_of[gone] = -1;
    c->num_used = last;
    c->deleted_total++;
}

/* Whether a resident neuron has left the window at `token`. -1 (never
 * active: a gap row) is outside every window, also in the first tokens where
 * token - (window - 1) is still negative. */
static bool left_window(const struct neuron_cache *c, uint32_t id, int64_t token, uint32_t window)
{
    if (window == 0)
        return true;
    int64_t la = c->last_active[id]; /* == token when needed now, which keeps it */
    return la < 0 || la < token - ((int64_t)window - 1);
}

void neuron_cache_delete(struct neuron_cache *c, uint32_t id)
{
    if (c->row_of[id] >= 0)
        delete_row(c, (uint32_t)c->row_of[id]);
}

static void append_row(struct neuron_cache *c, uint32_t id);

uint32_t neuron_cache_append(struct neuron_cache *c, uint32_t id)
{
    append_row(c, id);
    return c->num_used - 1;
}

void neuron_cache_mark(struct neuron_cache *c, const uint32_t *needed, uint32_t n, int64_t token)
{
    for (uint32_t j = 0; j < n; j++)
        c->last_active[needed[j]] = token;
}

uint32_t neuron_cache_evict(struct neuron_cache *c, const uint32_t *needed, uint32_t n, int64_t token,
                            uint32_t window)
{
    neuron_cache_mark(c, needed, n, token);
    uint32_t deleted = 0, r = 0;
    /* Not r++ after a delete: row r now holds what was the last row, which
     * has to be judged too. */
    while (r < c->num_used) {
        if (left_window(c, c->pointer[r], token, window)) {
            delete_row(c, r);
            deleted++;
        } else {
            r++;
        }
    }
    return deleted;
}

/* Whether one read may span from appended neuron a to miss b > a: at most
 * gap neurons lie between them and none is resident (a resident neuron has
 * its row elsewhere, so a read over it would land in the wrong rows). The
 * ones between are not needed: needed ids are ascending and misses between a
 * and b would have come first. */
static bool can_join(const struct neuron_cache *c, uint32_t a, uint32_t b, uint32_t gap)
{
    if (b - a - 1 > gap)
        return false;
    for (uint32_t i = a + 1; i < b; i++)
        if (c->row_of[i] >= 0)
            return false;
    return true;
}

static void append_row(struct neuron_cache *c, uint32_t id)
{
    uint32_t r = c->num_used++;
    c->pointer[r] = id;
    c->row_of[id] = (int32_t)r;
    if (c->up_bias)
        c->up_bias[r] = c->bias_src[id];
    c->inserted_total++;
}

/* One walk over the misses serves both the count (apply false: nothing is
 * written, so a reserve past capacity changes nothing) and the append, so
 * the two can never disagree. Returns the runs, *rows the rows. */
static uint32_t plan_runs(struct neuron_cache *c, const uint32_t *needed, uint32_t n, uint32_t gap,
                          bool apply, struct neuron_run *runs, uint32_t *rows)
{
    uint32_t n_runs = 0, n_rows = 0, prev = 0;
    bool have_prev = false;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t id = needed[j];
        if (c->row_of[id] >= 0)
            continue; /* a hit; can_join sees it and breaks the run */
        if (have_prev && can_join(c, prev, id, gap)) {
            uint32_t added = id - prev; /* gap neurons prev+1 .. id-1, then id */
            if (apply) {
                for (uint32_t i = prev + 1; i <= id; i++)
                    append_row(c, i);
                runs[n_runs - 1].count += added;
            }
            n_rows += added;
        } else {
            if (apply) {
                runs[n_runs] = (struct neuron_run){id, 1, c->num_used};
                append_row(c, id);
            }
            n_runs++;
            n_rows++;
        }
        prev = id;
        have_prev = true;
    }
    *rows = n_rows;
    return n_runs;
}

int neuron_cache_reserve(struct neuron_cache *c, const uint32_t *needed, uint32_t n, uint32_t gap,
                         struct neuron_run *runs, uint32_t *rows_added)
{
    uint32_t rows, dummy;
    if (!rows_added)
        rows_added = &dummy;
    plan_runs(c, needed, n, gap, false, runs, &rows);
    *rows_added = rows;
    if (rows > c->capacity - c->num_used)
        return -1;
    return (int)plan_runs(c, needed, n, gap, true, runs, &rows);
}

static int check_rows(const struct neuron_cache *c, char *err, size_t errlen)
{
    for (uint32_t r = 0; r < c->num_used; r++) {
        uint32_t id = c->pointer[r];
        if (id >= c->d_ff) {
            snprintf(err, errlen, "row %" PRIu32 " holds neuron %" PRIu32 ", d_ff is %" PRIu32, r, id, c->d_ff);
            return -1;
        }
        /* row_of[id] == r for every row also rules out a neuron in two rows */
        if (c->row_of[id] != (int32_t)r) {
            snprintf(err, errlen, "row %" PRIu32 " holds neuron %" PRIu32 " but row_of says %" PRId32, r, id,
                     c->row_of[id]);
            return -1;
        }
        if (c->up_bias && c->up_bias[r] != c->bias_src[id]) {
            snprintf(err, errlen, "row %" PRIu32 " has the up bias %g, neuron %" PRIu32 "'s is %g", r,
                     (double)c->up_bias[r], id, (double)c->bias_src[id]);
            return -1;
        }
    }
    return 0;
}

static int check_row_of(const struct neuron_cache *c, char *err, size_t errlen)
{
    uint32_t resident = 0;
    for (uint32_t i = 0; i < c->d_ff; i++) {
        int32_t r = c->row_of[i];
        if (r < 0)
            continue;
        resident++;
        if ((uint32_t)r >= c->num_used || c->pointer[r] != i) {
            snprintf(err, errlen, "row_of[%" PRIu32 "] = %" PRId32 " does not hold it (num_used %" PRIu32 ")", i, r,
                     c->num_used);
            return -1;
        }
    }
    if (resident != c->num_used) {
        snprintf(err, errlen, "%" PRIu32 " neurons resident, num_used %" PRIu32, resident, c->num_used);
        return -1;
    }
    return 0;
}

int neuron_cache_check(const struct neuron_cache *c, char *err, size_t errlen)
{
    if (c->num_used > c->capacity) {
        snprintf(err, errlen, "num_used %" PRIu32 " > capacity %" PRIu32, c->num_used, c->capacity);
        return -1;
    }
    if ((c->up_bias == NULL) != (c->bias_src == NULL)) {
        snprintf(err, errlen, "up_bias and bias_src disagree on whether the layer has a bias");
        return -1;
    }
    return check_rows(c, err, errlen) != 0 || check_row_of(c, err, errlen) != 0 ? -1 : 0;
}
