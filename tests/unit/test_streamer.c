/* The streamer (engine/ffn/streamer.h) on a unit that is not a neuron
 * bundle: input sparsity's channel bundles, in a file written here. Every
 * row its hooks are asked to compute holds the bytes of the unit it names
 * (in-place landing, staging, the bounce buffer), the counts match what
 * was read, each unit read is checked against its checksum, and a unit
 * damaged on flash fails the token once read twice, with the hook's words.
 * In needed order (input sparsity's sum) on units lying between others
 * (a layer pitch, a base, a checksum table of its own pitch) through a
 * shared reader, its caches in one mapping: the rows computed are exactly the needed ones, held
 * first in needed order, then the misses in read order, at their units'
 * bytes; deletions leave holes (no moves); reads are counted as their
 * batch completes; a damaged unit fails the step and its kept rows leave. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cache/layout_spec.h"
#include "cache/policy_spec.h"
#include "common/crc32c.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/ffn/streamer.h"

enum { LAYERS = 2, D_MODEL = 64, D_FF = 1024, CAP = 6 };

static uint8_t pattern(uint32_t l, uint32_t id, uint64_t k)
{
    return (uint8_t)(l * 131u + id * 7u + k * 3u);
}

struct seen {
    struct streamer *s;
    uint64_t rows, wrong;
};

static void check_row(struct seen *v, uint32_t l, uint32_t id, const uint8_t *at)
{
    v->rows++;
    for (uint64_t k = 0; k < v->s->unit.bytes; k++)
        if (at[k] != pattern(l, id, k)) {
            v->wrong++;
            return;
        }
}

static void compute_staged(void *ctx, int layer, const uint32_t *ids, uint32_t n, const float *x, float *out)
{
    (void)x, (void)out;
    struct seen *v = ctx;
    for (uint32_t k = 0; k < n; k++)
        check_row(v, (uint32_t)layer, ids[k], v->s->staging + (uint64_t)k * v->s->stride);
}

static void compute_cached(void *ctx, int layer, uint32_t first, uint32_t n, const float *x, float *out)
{
    (void)x, (void)out;
    struct seen *v = ctx;
    const struct neuron_cache *c = &v->s->caches[layer];
    for (uint32_t r = first; r < first + n; r++)
        check_row(v, (uint32_t)layer, c->pointer[r], c->rows + (uint64_t)r * v->s->stride);
}

static void damaged(void *ctx, uint32_t layer, uint32_t id, char *why, size_t len)
{
    (void)ctx;
    snprintf(why, len, "channel bundle %u of layer %u is damaged", id, layer);
}

/* The file: every unit its pattern, padded to the stride; crc[] its checksums. */
static int write_units(const char *path, const struct unit_geometry *g, uint32_t *crc)
{
    FILE *fp = fopen(path, "wb");
    uint8_t *buf = calloc(1, g->stride);
    int rc = fp && buf ? 0 : -1;
    for (uint32_t l = 0; l < LAYERS && rc == 0; l++)
        for (uint32_t i = 0; i < g->units && rc == 0; i++) {
            for (uint64_t k = 0; k < g->bytes; k++)
                buf[k] = pattern(l, i, k);
            crc[l * g->units + i] = crc32c(buf, g->bytes);
            rc = fwrite(buf, 1, g->stride, fp) == g->stride ? 0 : -1;
        }
    free(buf);
    if (fp && fclose(fp) != 0)
        rc = -1;
    return rc;
}

/* One layer's step on needed[0..n). */
static void step(struct streamer *s, int layer, const uint32_t *needed, uint32_t n)
{
    static float out[D_MODEL];
    if (layer == 0)
        streamer_begin_token(s);
    memcpy(s->needed, needed, n * sizeof *needed);
    struct streamer_step *st = streamer_decide(s, layer, n);
    streamer_forward(s, st, NULL, 0, NULL, out, D_MODEL);
    st->layer = -1;
}

static int open_on(struct streamer *s, struct seen *v, const char *path, const struct unit_geometry *g,
                   const uint32_t *crc, const char *layout)
{
    struct cache_config cc = {0};
    char err[512];
    if (cache_policy_parse("lru", false, &cc.policy, err, sizeof err) != 0 || cache_layout_parse(layout, &cc.layout, err, sizeof err) != 0)
        return fprintf(stderr, "%s\n", err), -1;
    cc.capacity_rows = CAP;
    struct streamer_config sc = {.io_threads = 2, .iodepth = 1, .verify = true, .staging_rows = 2, .bounce_rows = 3};
    struct streamer_open_args a = {.path = path, .unit_word = "channel", .unit = *g, .decide = cc,
                                   .default_rows = CAP, .crc = crc};
    struct streamer_hooks h = {.ctx = v, .compute_staged = compute_staged, .compute_cached = compute_cached,
                               .damaged = damaged};
    static struct ffn_flash_token acc;
    memset(&acc, 0, sizeof acc);
    v->s = s;
    if (streamer_open(s, &sc, &a, &h, &acc, err, sizeof err) != 0)
        return fprintf(stderr, "%s\n", err), -1;
    return 0;
}

static void test_lands(const char *path, const struct unit_geometry *g, const uint32_t *crc, const char *layout)
{
    struct streamer s;
    struct seen v = {0};
    CHECK(open_on(&s, &v, path, g, crc, layout) == 0);
    const uint32_t a[] = {1, 3, 9, 11}, b[] = {40}, c[] = {2, 3, 4, 5, 6, 7, 8, 20};
    step(&s, 0, a, 4);
    step(&s, 1, b, 1);
    step(&s, 0, c, 8); /* more than the cache holds: some rows are used once */
    step(&s, 1, a, 4);
    CHECK(!s.error[0]);
    CHECK(v.rows >= 4 + 1 + 8 + 4);
    CHECK_U64(v.wrong, 0);
    CHECK(s.acc->rows_inserted > 0);
    CHECK_U64(s.acc->rows_verified, s.acc->rows_inserted); /* every unit read whole was checked */
    if (strcmp(layout, "bundled") == 0)
        CHECK_U64(s.acc->bytes_read, s.acc->rows_inserted * g->stride);
    else /* 1..3 and 9..11 read whole, 2 and 10 through the bounce buffer and not kept */
        CHECK(s.acc->bytes_read > s.acc->rows_inserted * g->stride);
    CHECK(s.acc->io_requests >= s.acc->reads);
    streamer_close(&s);
}

static void test_damaged(const char *path, const struct unit_geometry *g, uint32_t *crc)
{
    struct streamer s;
    struct seen v = {0};
    crc[5] ^= 1; /* layer 0's unit 5 no longer matches what is on flash */
    CHECK(open_on(&s, &v, path, g, crc, "bundled") == 0);
    const uint32_t a[] = {5};
    step(&s, 0, a, 1);
    CHECK(s.read_failed);
    CHECK_STR(s.error, "channel bundle 5 of layer 0 is damaged");
    CHECK_U64(s.acc->verify_retries, 1);
    CHECK_U64(s.caches[0].num_used, 0); /* the failed step's rows left the cache */
    streamer_close(&s);
    crc[5] ^= 1;
}

/* ---- needed order, on units that lie between others (ffn_t.bin's two
 * streams): per layer OTHER units of another kind, then ours, read through
 * a reader the test opens and shares. */
enum { OTHER = 3 };

struct order_seen {
    struct streamer *s;
    uint32_t ids[D_MODEL];
    uint32_t n, calls;
    uint64_t wrong;
};

static void compute_rows(void *ctx, int layer, const uint32_t *ids, const uint8_t *const *rows, uint32_t n,
                         const float *x, float *out)
{
    (void)x, (void)out;
    struct order_seen *v = ctx;
    v->calls++;
    for (uint32_t k = 0; k < n; k++) {
        v->ids[v->n++] = ids[k];
        for (uint64_t b = 0; b < v->s->unit.bytes; b++)
            if (rows[k][b] != pattern((uint32_t)layer, ids[k], b)) {
                v->wrong++;
                break;
            }
    }
}

/* The interleaved file: per layer OTHER units of 0xee, then ours; crc[] per layer OTHER + D_MODEL. */
static int write_interleaved(const char *path, const struct unit_geometry *g, uint32_t *crc)
{
    FILE *fp = fopen(path, "wb");
    uint8_t *buf = calloc(1, g->stride);
    int rc = fp && buf ? 0 : -1;
    for (uint32_t l = 0; l < LAYERS && rc == 0; l++)
        for (uint32_t i = 0; i < OTHER + g->units && rc == 0; i++) {
            for (uint64_t k = 0; k < g->bytes; k++)
                buf[k] = i < OTHER ? 0xee : pattern(l, i - OTHER, k);
            crc[l * (OTHER + g->units) + i] = i < OTHER ? 0 : crc32c(buf, g->bytes);
            rc = fwrite(buf, 1, g->stride, fp) == g->stride ? 0 : -1;
        }
    free(buf);
    if (fp && fclose(fp) != 0)
        rc = -1;
    return rc;
}

static uint64_t done_reads, done_bytes;

static int open_needed(struct streamer *s, struct order_seen *v, struct flash_reader *r, const char *path,
                       const struct unit_geometry *g, const uint32_t *crc)
{
    struct cache_config cc = {0};
    char err[512];
    if (cache_policy_parse("lru", false, &cc.policy, err, sizeof err) != 0 ||
        cache_layout_parse("transposed", &cc.layout, err, sizeof err) != 0)
        return fprintf(stderr, "%s\n", err), -1;
    cc.capacity_rows = CAP;
    struct streamer_config sc = {.io_threads = 2, .iodepth = 1, .verify = true, .staging_rows = 2};
    struct streamer_open_args a = {.path = path, .unit_word = "channel", .unit = *g, .decide = cc,
                                   .default_rows = CAP, .crc = crc, .order = STREAMER_NEEDED_ORDER,
                                   .base = OTHER * g->stride, .layer_pitch = (OTHER + g->units) * g->stride,
                                   .crc_base = OTHER, .crc_pitch = OTHER + g->units, .reader = r,
                                   .done_reads = &done_reads, .done_bytes = &done_bytes, .one_mapping = true};
    struct streamer_hooks h = {.ctx = v, .compute_rows = compute_rows, .damaged = damaged};
    static struct ffn_flash_token acc;
    memset(&acc, 0, sizeof acc);
    done_reads = done_bytes = 0;
    v->s = s;
    if (streamer_open(s, &sc, &a, &h, &acc, err, sizeof err) != 0)
        return fprintf(stderr, "%s\n", err), -1;
    return 0;
}

/* One step in needed order: the rows computed are the needed ones held,
 * in needed order, then the misses in read (ascending) order. */
static void needed_step(struct streamer *s, struct order_seen *v, int layer, const uint32_t *needed, uint32_t n)
{
    static float out[D_MODEL];
    if (layer == 0)
        streamer_begin_token(s);
    memcpy(s->needed, needed, n * sizeof *needed);
    struct streamer_step *st = streamer_decide(s, layer, n);
    uint32_t want[D_MODEL], k = 0;
    for (uint32_t j = 0; j < n; j++) {
        bool miss = false;
        for (uint32_t i = 0; i < st->st.n_misses; i++)
            miss |= st->st.misses[i] == needed[j];
        if (!miss)
            want[k++] = needed[j];
    }
    memcpy(want + k, st->st.misses, st->st.n_misses * sizeof *want);
    v->n = 0;
    streamer_forward(s, st, NULL, 0, NULL, out, D_MODEL);
    CHECK_U64(v->n, n);
    CHECK(memcmp(v->ids, want, n * sizeof *want) == 0);
}

static void test_needed_order(const char *path, const struct unit_geometry *g, uint32_t *crc)
{
    struct streamer s;
    struct order_seen v = {0};
    char err[512];
    struct streamer_config rc = {.io_threads = 2, .iodepth = 1};
    struct flash_reader *r = streamer_config_reader(&rc, path, err, sizeof err);
    CHECK(r != NULL);
    CHECK(r && open_needed(&s, &v, r, path, g, crc) == 0);
    if (!r)
        return;
    const uint32_t a[] = {1, 3, 9, 11}, b[] = {3, 4, 5, 6, 7, 8, 9, 20}, c[] = {1, 9, 40};
    needed_step(&s, &v, 0, a, 4);
    needed_step(&s, &v, 1, c, 3);
    needed_step(&s, &v, 0, b, 8); /* more than the cache holds: some are used once, some held rows leave */
    needed_step(&s, &v, 1, a, 4);
    needed_step(&s, &v, 0, c, 3);
    CHECK(!s.error[0]);
    CHECK_U64(v.wrong, 0); /* every row at its unit's bytes: the pitch and the base */
    CHECK(s.acc->rows_deleted > 0);
    CHECK_U64(s.acc->row_moves, 0); /* holes, not moves */
    CHECK_U64(done_reads, s.acc->rows_inserted);
    CHECK_U64(s.acc->reads, done_reads);
    CHECK_U64(done_bytes, done_reads * g->stride);
    CHECK_U64(s.acc->rows_verified, done_reads); /* the checksums' table at its pitch */
    streamer_close(&s);
    /* a damaged unit: the step's kept rows leave, the reader stays the test's */
    crc[OTHER + 5] ^= 1;
    CHECK(open_needed(&s, &v, r, path, g, crc) == 0);
    const uint32_t d[] = {2, 5, 6};
    streamer_begin_token(&s);
    memcpy(s.needed, d, sizeof d);
    streamer_forward(&s, streamer_decide(&s, 0, 3), NULL, 0, NULL, (float[D_MODEL]){0}, D_MODEL);
    CHECK_STR(s.error, "channel bundle 5 of layer 0 is damaged");
    CHECK_U64(s.caches[0].num_used, 0);
    CHECK_U64(done_reads, 3); /* the batch's reads completed, counted before their checks */
    streamer_close(&s);
    crc[OTHER + 5] ^= 1;
    flash_reader_close(r);
}

int main(void)
{
    struct unit_dims d = {LAYERS, D_MODEL, D_FF, FFN_RELU, DTYPE_F32};
    struct unit_geometry g;
    char err[512], path[] = "./streamer_test.XXXXXX";
    CHECK(unit_geometry_make(UNIT_CHANNEL_BUNDLE, &d, 4096, &g, err, sizeof err) == 0);
    CHECK_U64(g.units, D_MODEL);
    uint32_t *crc = malloc(LAYERS * D_MODEL * sizeof *crc);
    int fd = mkstemp(path);
    CHECK(fd >= 0 && crc);
    if (fd < 0 || !crc)
        return check_report("test_streamer");
    close(fd);
    CHECK(write_units(path, &g, crc) == 0);
    test_lands(path, &g, crc, "bundled");
    test_lands(path, &g, crc, "coalesce:2"); /* reads spanning rows not kept: the bounce buffer */
    test_damaged(path, &g, crc);
    uint32_t *icrc = malloc(LAYERS * (OTHER + D_MODEL) * sizeof *icrc);
    CHECK(icrc && write_interleaved(path, &g, icrc) == 0);
    if (icrc)
        test_needed_order(path, &g, icrc);
    free(icrc);
    unlink(path);
    free(crc);
    return check_report("test_streamer");
}
