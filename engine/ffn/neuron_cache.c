/* The per-layer neuron cache storage (neuron_cache.h; the paper's §3.3,
 * Fig. 6). Everything is allocated by neuron_cache_init; delete and append
 * only move one row's bytes and indices, in constant time. */
#include "engine/ffn/neuron_cache.h"

#include "common/errbuf.h"
#include "io/io_buffer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int init_fail(struct neuron_cache *c, char *err, size_t errlen, const char *msg)
{
    neuron_cache_free(c);
    err_set(err, errlen, "neuron cache: %s", msg);
    return -1;
}

/* The shape checks, apart so init reads as "check, allocate, clear". */
static int check_shape(uint32_t d_ff, uint32_t capacity, uint64_t row_stride, char *err, size_t errlen)
{
    if (d_ff == 0) {
        err_set(err, errlen, "neuron cache: d_ff is 0");
        return -1;
    }
    if (capacity == 0 || capacity > d_ff) {
        err_set(err, errlen, "neuron cache: capacity %" PRIu32 " rows is outside 1..d_ff (%" PRIu32 ")",
                 capacity, d_ff);
        return -1;
    }
    if (row_stride == 0 || row_stride % NEURON_CACHE_ALIGN != 0) {
        err_set(err, errlen, "neuron cache: row stride %" PRIu64 " bytes is not a nonzero multiple of %u",
                 row_stride, NEURON_CACHE_ALIGN);
        return -1;
    }
    /* rows is one block addressed as r * row_stride with a size_t. (The
     * bookkeeping arrays, d_ff * 8 bytes at most, fit any 64-bit size_t, and
     * the project builds for 64-bit hosts only: common/rng.h uses __int128.) */
    if (row_stride > SIZE_MAX / capacity) {
        err_set(err, errlen,
                 "neuron cache: %" PRIu32 " rows of %" PRIu64 " bytes do not fit in the address space",
                 capacity, row_stride);
        return -1;
    }
    return 0;
}

int neuron_cache_init(struct neuron_cache *c, uint32_t d_ff, uint32_t capacity, uint64_t row_stride,
                      const float *up_bias, bool host_rows, char *err, size_t errlen)
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
    if (host_rows && io_buffer_alloc(&c->rows_mem, (size_t)capacity * row_stride, true) != 0)
        return init_fail(c, err, errlen, "out of memory for the rows");
    c->rows = host_rows ? c->rows_mem.base : NULL;
    c->pointer = calloc(capacity, sizeof *c->pointer);
    c->row_of = malloc((size_t)d_ff * sizeof *c->row_of);
    if (up_bias)
        c->up_bias = calloc(capacity, sizeof *c->up_bias);
    if (!c->pointer || !c->row_of || (up_bias && !c->up_bias))
        return init_fail(c, err, errlen, "out of memory for the bookkeeping");
    for (uint32_t i = 0; i < d_ff; i++)
        c->row_of[i] = -1;
    return 0;
}

int neuron_cache_keep_in_place(struct neuron_cache *c, char *err, size_t errlen)
{
    if (c->num_used)
        return err_set(err, errlen, "neuron cache: kept in place only before its first row");
    free(c->free_rows);
    c->free_rows = malloc((size_t)c->capacity * sizeof *c->free_rows + 1);
    if (!c->free_rows)
        return err_set(err, errlen, "neuron cache: out of memory for the free rows");
    c->n_free = c->capacity;
    for (uint32_t k = 0; k < c->capacity; k++) { /* taken from the top: row 0 first */
        c->free_rows[k] = c->capacity - 1 - k;
        c->pointer[k] = NEURON_CACHE_FREE;
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
    free(c->free_rows);
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
        if (c->rows)
            memcpy(row_bytes(c, r), row_bytes(c, last), c->row_stride);
        c->pointer[r] = moved;
        if (c->up_bias)
            c->up_bias[r] = c->up_bias[last];
        c->row_of[moved] = (int32_t)r;
    }
    c->row_of[gone] = -1;
    c->num_used = last;
}

/* Kept in place: row r becomes a hole, the next append's. */
static void free_row(struct neuron_cache *c, uint32_t r)
{
    c->row_of[c->pointer[r]] = -1;
    c->pointer[r] = NEURON_CACHE_FREE;
    c->free_rows[c->n_free++] = r;
    c->num_used--;
}

bool neuron_cache_delete(struct neuron_cache *c, uint32_t id)
{
    if (id >= c->d_ff || c->row_of[id] < 0)
        return false;
    if (c->free_rows)
        free_row(c, (uint32_t)c->row_of[id]);
    else
        delete_row(c, (uint32_t)c->row_of[id]);
    return true;
}

/* The refusals are checked here, not left to the caller alone: a full
 * cache would otherwise write past pointer[] and up_bias[], and a resident
 * id would end up in two rows. */
uint32_t neuron_cache_append(struct neuron_cache *c, uint32_t id)
{
    if (c->num_used >= c->capacity || id >= c->d_ff || c->row_of[id] >= 0)
        return NEURON_CACHE_NO_ROW;
    uint32_t r = c->free_rows ? c->free_rows[--c->n_free] : c->num_used;
    c->num_used++;
    c->pointer[r] = id;
    c->row_of[id] = (int32_t)r;
    if (c->up_bias)
        c->up_bias[r] = c->bias_src[id];
    return r;
}

static int check_rows(const struct neuron_cache *c, char *err, size_t errlen)
{
    uint32_t end = c->free_rows ? c->capacity : c->num_used;
    for (uint32_t r = 0; r < end; r++) {
        uint32_t id = c->pointer[r];
        if (c->free_rows && id == NEURON_CACHE_FREE)
            continue;
        if (id >= c->d_ff) {
            err_set(err, errlen, "row %" PRIu32 " holds neuron %" PRIu32 ", d_ff is %" PRIu32, r, id, c->d_ff);
            return -1;
        }
        /* row_of[id] == r for every row also rules out a neuron in two rows */
        if (c->row_of[id] != (int32_t)r) {
            err_set(err, errlen, "row %" PRIu32 " holds neuron %" PRIu32 " but row_of says %" PRId32, r, id,
                     c->row_of[id]);
            return -1;
        }
        if (c->up_bias && c->up_bias[r] != c->bias_src[id]) {
            err_set(err, errlen, "row %" PRIu32 " has the up bias %g, neuron %" PRIu32 "'s is %g", r,
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
        if ((uint32_t)r >= (c->free_rows ? c->capacity : c->num_used) || c->pointer[r] != i) {
            err_set(err, errlen, "row_of[%" PRIu32 "] = %" PRId32 " does not hold it (num_used %" PRIu32 ")", i, r,
                     c->num_used);
            return -1;
        }
    }
    if (resident != c->num_used) {
        err_set(err, errlen, "%" PRIu32 " neurons resident, num_used %" PRIu32, resident, c->num_used);
        return -1;
    }
    return 0;
}

int neuron_cache_check(const struct neuron_cache *c, char *err, size_t errlen)
{
    if (c->num_used > c->capacity) {
        err_set(err, errlen, "num_used %" PRIu32 " > capacity %" PRIu32, c->num_used, c->capacity);
        return -1;
    }
    if ((c->up_bias == NULL) != (c->bias_src == NULL)) {
        err_set(err, errlen, "up_bias and bias_src disagree on whether the layer has a bias");
        return -1;
    }
    return check_rows(c, err, errlen) != 0 || check_row_of(c, err, errlen) != 0 ? -1 : 0;
}
