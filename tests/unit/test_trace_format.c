/* Trace writer and reader: round trips through every encoding, the size of
 * a 256-token x 32-layer x 16384-neuron trace at 3%, each bad input (wrong
 * magic, newer version, truncation, header/body disagreement, neuron >=
 * d_ff, misuse of the writer) answered with an error naming the file; every
 * single flipped bit of a version 2 file reported with where it lies (the
 * header, the token and layer, the end marker); the committed version 1
 * file read, unchecked, with the sets it was written with; and a header's
 * d_ff sizing nothing by itself (the reader's rows hold what the sets do).
 * Channel sets have their own test (test_trace_channels.c); their bit
 * flips are here, with the others. */
#include <ctype.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#include "common/crc32c.h"
#include "common/model_shape.h"
#include "common/rng.h"
#include "traces/trace.h"
#include "traces/trace_stats.h"
#include "traces/trace_synth.h"

static char dir[] = "/tmp/flashbed-trace-test-XXXXXX";
static char err[1024];

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

/* Deterministic sets of every shape: empty, full, sparse, dense, and
 * similar to the previous token (so each reference gets used). */
static uint32_t make_set(struct rng *r, uint32_t t, uint32_t l, uint32_t N, uint32_t *ids, int kind)
{
    uint32_t n = 0;
    int mode = (int)((t + l + kind) % 5);
    for (uint32_t i = 0; i < N; i++) {
        bool on = mode == 0 ? false
                : mode == 1 ? true
                : mode == 2 ? rng_below(r, 40) == 0
                : mode == 3 ? rng_below(r, 2) == 0
                            : (i * 7 + l) % 11 < 2 || rng_below(r, 100) == 0;
        if (on)
            ids[n++] = i;
    }
    return n;
}

static void round_trip(uint32_t L, uint32_t N, uint64_t T, bool pred)
{
    char path[256];
    path_of(path, sizeof path, "rt.trace");
    struct trace_meta m = {.n_layers = L, .d_model = 16, .d_ff = N, .dtype = DTYPE_F16, .ffn_kind = FFN_GLU,
                           .has_predicted = pred, .source = "{\"model\":\"test\"}", .has_channels = false};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, path, &m, err, sizeof err);
    CHECK(w != NULL);
    if (!w)
        return;
    struct rng r;
    rng_seed(&r, L * 1000 + N);
    uint32_t *a = malloc((size_t)T * L * N * sizeof *a), *p = malloc((size_t)T * L * N * sizeof *p);
    uint32_t *na = calloc(T * L, sizeof *na), *np = calloc(T * L, sizeof *np);
    for (uint64_t t = 0; t < T; t++) {
        unsigned flags = (t % 4 == 3 ? TRACE_TOKEN_GENERATED : 0) | (t == T / 2 ? TRACE_TOKEN_SEQ_START : 0);
        CHECK(trace_writer_begin_token(w, flags, err, sizeof err) == 0);
        for (uint32_t l = 0; l < L; l++) {
            size_t k = t * L + l;
            na[k] = make_set(&r, (uint32_t)t, l, N, a + k * N, 0);
            np[k] = make_set(&r, (uint32_t)t, l, N, p + k * N, 1);
            CHECK(trace_writer_layer(w, l, a + k * N, na[k], p + k * N, np[k], err, sizeof err) == 0);
        }
    }
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
    struct trace tr;
    CHECK(trace_load(path, &tr, err, sizeof err) == 0);
    CHECK_U64(tr.n_tokens, T);
    CHECK_U64(tr.meta.d_ff, N);
    CHECK_U64(tr.meta.ffn_kind, FFN_GLU);
    CHECK_STR(tr.meta.source, "{\"model\":\"test\"}");
    CHECK(tr.meta.has_predicted == pred);
    CHECK(tr.token_flags[0] & TRACE_TOKEN_SEQ_START);
    CHECK(tr.token_flags[T / 2] & TRACE_TOKEN_SEQ_START);
    CHECK(tr.token_flags[3] & TRACE_TOKEN_GENERATED);
    CHECK_U64(tr.version, TRACE_VERSION);
    CHECK(tr.check_bytes >= 8 + 5 * T * L); /* header, end marker, a CRC and length per block */
    int bad = 0;
    for (uint64_t t = 0; t < T; t++)
        for (uint32_t l = 0; l < L; l++) {
            size_t k = t * L + l;
            uint32_t n;
            const uint32_t *ids = trace_set(&tr, 0, t, l, &n);
            bad += n != na[k] || memcmp(ids, a + k * N, n * sizeof *ids) != 0;
            if (pred) {
                ids = trace_set(&tr, 1, t, l, &n);
                bad += n != np[k] || memcmp(ids, p + k * N, n * sizeof *ids) != 0;
            }
        }
    CHECK_U64(bad, 0);
    trace_free(&tr);
    free(a), free(p), free(na), free(np);
}

/* A trace built in memory (trace_builder) equals the same sets written
 * to a file and loaded, array for array; both through their sinks, as the
 * engine records. Then the builder's refusals. */
static void builder_matches_file(uint32_t L, uint32_t N, uint64_t T, bool pred)
{
    char path[256];
    path_of(path, sizeof path, "bm.trace");
    struct trace_meta m = {.n_layers = L, .d_model = 16, .d_ff = N, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = pred, .source = "{\"model\":\"built\"}", .has_channels = false};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, path, &m, err, sizeof err);
    struct trace_builder *b = trace_builder_new(&m, err, sizeof err);
    CHECK(w && b);
    if (!w || !b)
        return;
    struct trace_sink sinks[2] = {trace_writer_sink(w), trace_builder_sink(b)};
    struct rng r;
    rng_seed(&r, 77 + N);
    uint32_t *a = malloc(N * sizeof *a), *p = malloc(N * sizeof *p);
    for (uint64_t t = 0; t < T; t++) {
        unsigned flags = t % 3 == 2 ? TRACE_TOKEN_GENERATED : 0;
        for (int k = 0; k < 2; k++)
            CHECK(sinks[k].begin_token(sinks[k].impl, flags, err, sizeof err) == 0);
        for (uint32_t l = 0; l < L; l++) {
            uint32_t na = make_set(&r, (uint32_t)t, l, N, a, 0), np = make_set(&r, (uint32_t)t, l, N, p, 1);
            for (int k = 0; k < 2; k++)
                CHECK(sinks[k].layer(sinks[k].impl, l, a, na, p, np, err, sizeof err) == 0);
        }
    }
    free(a), free(p);
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
    struct trace file, mem;
    CHECK(trace_load(path, &file, err, sizeof err) == 0);
    CHECK(trace_builder_finish(b, &mem, err, sizeof err) == 0);
    uint64_t sets = T * L;
    CHECK(mem.n_tokens == T && file.n_tokens == T);
    CHECK(memcmp(mem.token_flags, file.token_flags, T) == 0);
    CHECK(memcmp(mem.active_off, file.active_off, (sets + 1) * sizeof *mem.active_off) == 0);
    CHECK(memcmp(mem.active_ids, file.active_ids, file.active_off[sets] * sizeof *mem.active_ids) == 0);
    CHECK(!pred || memcmp(mem.pred_off, file.pred_off, (sets + 1) * sizeof *mem.pred_off) == 0);
    CHECK(!pred || memcmp(mem.pred_ids, file.pred_ids, file.pred_off[sets] * sizeof *mem.pred_ids) == 0);
    CHECK(pred == (mem.pred_off != NULL));
    CHECK_STR(mem.meta.source, "{\"model\":\"built\"}");
    CHECK(mem.meta.d_ff == N && mem.meta.n_layers == L && mem.version == TRACE_VERSION);
    trace_free(&file);
    trace_free(&mem);
}

static void builder_refusals(void)
{
    struct trace_meta m = {.n_layers = 2, .d_model = 16, .d_ff = 8, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = false, .source = NULL, .has_channels = false};
    trace_meta_set_units(&m);
    struct trace_builder *b = trace_builder_new(&m, err, sizeof err);
    struct trace_sink s = trace_builder_sink(b);
    const uint32_t up[] = {1, 3}, down[] = {3, 1}, big[] = {8};
    CHECK(s.layer(s.impl, 0, up, 2, NULL, 0, err, sizeof err) == -1); /* before any token */
    CHECK(s.begin_token(s.impl, 0, err, sizeof err) == 0);
    CHECK(s.layer(s.impl, 1, up, 2, NULL, 0, err, sizeof err) == -1);
    CHECK(strstr(err, "layer 1 given out of order") != NULL);
    CHECK(s.layer(s.impl, 0, down, 2, NULL, 0, err, sizeof err) == -1);
    CHECK(strstr(err, "active neurons not strictly ascending (1 after 3)") != NULL);
    CHECK(s.layer(s.impl, 0, big, 1, NULL, 0, err, sizeof err) == -1);
    CHECK(strstr(err, "token 0 layer 0: active neuron 8 >= d_ff 8") != NULL);
    CHECK(s.layer(s.impl, 0, up, 2, NULL, 0, err, sizeof err) == 0);
    CHECK(s.begin_token(s.impl, 0, err, sizeof err) == -1); /* layer 1 still missing */
    struct trace t;
    CHECK(trace_builder_finish(b, &t, err, sizeof err) == -1);
    CHECK(strstr(err, "token 0 got 1 of 2 layers") != NULL);
    b = trace_builder_new(&m, err, sizeof err);
    CHECK(trace_builder_finish(b, &t, err, sizeof err) == 0 && t.n_tokens == 0 && t.active_off[0] == 0);
    trace_free(&t);
    m.d_ff = 0;
    CHECK(trace_builder_new(&m, err, sizeof err) == NULL);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*n);
    CHECK(fread(b, 1, *n, f) == *n);
    fclose(f);
    return b;
}

/* Loading must fail with an error that names the file and contains want
 * ("": any message that names the file). */
static void expect_load_error(const char *path, const char *want)
{
    struct trace tr;
    err[0] = 0;
    int rc = trace_load(path, &tr, err, sizeof err);
    CHECK(rc != 0);
    if (rc == 0) {
        trace_free(&tr);
        return;
    }
    CHECK(strstr(err, path) != NULL);
    if (!strstr(err, want)) {
        fprintf(stderr, "error \"%s\" lacks \"%s\"\n", err, want);
        check_failures++;
    }
}

/* The header CRC of a file whose header fields a test has edited. */
static void reseal_header(char *b)
{
    uint32_t slen;
    memcpy(&slen, b + 52, 4); /* the tests run little-endian; version 3's fixed header is 56 bytes */
    uint32_t crc = crc32c(b, 56 + slen);
    memcpy(b + 56 + slen, &crc, 4);
}

static void small_trace(const char *path, uint32_t N, uint32_t neuron)
{
    struct trace_meta m = {.n_layers = 2, .d_model = 8, .d_ff = N, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = true, .source = "{}", .has_channels = false};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, path, &m, err, sizeof err);
    uint32_t a[] = {1, neuron}, p[] = {1, 2, neuron};
    for (int t = 0; t < 3; t++) {
        trace_writer_begin_token(w, 0, err, sizeof err);
        for (uint32_t l = 0; l < 2; l++)
            CHECK(trace_writer_layer(w, l, a, 2, p, 3, err, sizeof err) == 0);
    }
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
}

/* A damaged header: wrong magic, a newer version, every truncation, a
 * changed field without its CRC (damage) and with it (a writer's bug). b
 * (n bytes, a good trace) is changed in place and left as it came. */
static void bad_headers(const char *bad, char *b, size_t n)
{
    write_bytes(bad, "hello world, not a trace at all", 31);
    expect_load_error(bad, "wrong magic");
    write_bytes(bad, "", 0);
    expect_load_error(bad, "wrong magic");
    memcpy(b + 8, "\x09\x00\x00\x00", 4); /* version 9 */
    write_bytes(bad, b, n);
    expect_load_error(bad, "newer");
    memcpy(b + 8, "\x03\x00\x00\x00", 4); /* TRACE_VERSION again */
    /* every truncation point fails cleanly */
    for (size_t cut = 1; cut < n; cut++) {
        write_bytes(bad, b, cut);
        expect_load_error(bad, "");
    }
    write_bytes(bad, b, n - 10);
    expect_load_error(bad, "truncated");
    /* header edited without its CRC: damage */
    b[(8 + 4 + 8 * 4)] = 5;
    write_bytes(bad, b, n);
    expect_load_error(bad, "header checksum mismatch");
    /* and with it (a writer's bug, not damage): what the fields say is checked too */
    reseal_header(b);
    write_bytes(bad, b, n);
    expect_load_error(bad, "header says 5 tokens");
    b[(8 + 4 + 8 * 4)] = 2;
    reseal_header(b);
    write_bytes(bad, b, n);
    expect_load_error(bad, "more tokens than the header");
    b[(8 + 4 + 8 * 4)] = 3;
    b[(8 + 4 + 8 * 4) + 6] = 1; /* 2^48 tokens: refused before allocating */
    reseal_header(b);
    write_bytes(bad, b, n);
    expect_load_error(bad, "but the file has only");
    b[(8 + 4 + 8 * 4) + 6] = 0;
}

/* Sets outside the header's d_ff, and bytes after the last token. */
static void bad_sets(const char *bad, char *b, size_t n)
{
    /* neuron 900 recorded, header shrunk to d_ff 512 (and its units per layer) */
    memcpy(b + 8 + 4 + 8, "\x00\x02\x00\x00", 4);
    memcpy(b + 8 + 4 + 7 * 4, "\x00\x02\x00\x00", 4);
    reseal_header(b);
    write_bytes(bad, b, n);
    expect_load_error(bad, ">= d_ff 512");
    expect_load_error(bad, "token 0 layer 0");
    memcpy(b + 8 + 4 + 8, "\x00\x04\x00\x00", 4);
    memcpy(b + 8 + 4 + 7 * 4, "\x00\x04\x00\x00", 4);
    reseal_header(b);
    /* trailing garbage */
    char *longer = malloc(n + 3);
    memcpy(longer, b, n);
    memcpy(longer + n, "xyz", 3);
    write_bytes(bad, longer, n + 3);
    expect_load_error(bad, "trailing bytes");
    free(longer);
    write_bytes(bad, b, n);
    struct trace tr;
    CHECK(trace_load(bad, &tr, err, sizeof err) == 0); /* restored: loads again */
    trace_free(&tr);
}

static void corrupted_bytes(const char *bad, const char *b, size_t n)
{
    /* corrupted bytes anywhere: an error naming the file, never a crash
     * (ASan runs this) nor a trace (the CRCs see it) */
    struct rng r;
    rng_seed(&r, 11);
    for (int i = 0; i < 300; i++) {
        char *c = malloc(n);
        memcpy(c, b, n);
        for (int k = 0; k < 1 + i % 3; k++)
            c[rng_below(&r, n)] ^= (char)(1 + rng_below(&r, 255));
        if (memcmp(c, b, n) != 0) { /* two changes to one byte may cancel */
            write_bytes(bad, c, n);
            expect_load_error(bad, "");
        }
        free(c);
    }
    expect_load_error(dir, "directory");
    char missing[256];
    path_of(missing, sizeof missing, "missing.trace");
    expect_load_error(missing, "cannot read");
}

static void writer_refusals(void)
{
    char w_path[256];
    path_of(w_path, sizeof w_path, "refused.trace");
    struct trace_meta m = {.n_layers = 2, .d_model = 8, .d_ff = 64, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = false, .source = "{}", .has_channels = false};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, w_path, &m, err, sizeof err);
    uint32_t over[] = {3, 64}, unsorted[] = {5, 4}, ok[] = {1, 2};
    CHECK(trace_writer_layer(w, 0, ok, 2, NULL, 0, err, sizeof err) != 0);
    CHECK(trace_writer_begin_token(w, 0, err, sizeof err) == 0);
    CHECK(trace_writer_layer(w, 0, over, 2, NULL, 0, err, sizeof err) != 0 && strstr(err, ">= d_ff 64"));
    CHECK(trace_writer_layer(w, 0, unsorted, 2, NULL, 0, err, sizeof err) != 0 && strstr(err, "ascending"));
    CHECK(trace_writer_layer(w, 1, ok, 2, NULL, 0, err, sizeof err) != 0 && strstr(err, "layer 0 was due"));
    CHECK(trace_writer_layer(w, 0, ok, 2, NULL, 0, err, sizeof err) == 0);
    CHECK(trace_writer_close(w, err, sizeof err) != 0 && strstr(err, "1 of 2 layers"));
    struct stat st;
    CHECK(stat(w_path, &st) != 0);
    /* a header the reader would refuse is not written */
    char *big = malloc((1u << 20) + 2);
    memset(big, ' ', (1u << 20) + 1);
    big[(1u << 20) + 1] = 0;
    m.source = big;
    CHECK(trace_writer_open(NULL, w_path, &m, err, sizeof err) == NULL && strstr(err, "exceeds the format's"));
    CHECK(stat(w_path, &st) != 0);
    free(big);
}

static void bad_inputs(void)
{
    char good[256], bad[256];
    path_of(good, sizeof good, "good.trace");
    path_of(bad, sizeof bad, "bad.trace");
    small_trace(good, 1024, 900);
    size_t n;
    char *b = read_all(good, &n);
    bad_headers(bad, b, n);
    bad_sets(bad, b, n);
    corrupted_bytes(bad, b, n);
    free(b);
    /* the writer refuses bad sets, and an aborted trace leaves nothing behind */
    writer_refusals();
}

/* 256 tokens x 32 layers x 16384 neurons at 3% (active sets only): well under 10 MB. */
static void size_at_3_percent(void)
{
    char path[256];
    path_of(path, sizeof path, "big.trace");
    const uint32_t L = 32, N = 16384;
    struct trace_meta m = {.n_layers = L, .d_model = 4096, .d_ff = N, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = false, .source = "{}", .has_channels = false};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, path, &m, err, sizeof err);
    struct rng r;
    rng_seed(&r, 3);
    uint32_t *ids = malloc(N * sizeof *ids);
    for (int t = 0; t < 256; t++) {
        trace_writer_begin_token(w, 0, err, sizeof err);
        for (uint32_t l = 0; l < L; l++) {
            uint32_t n = 0;
            for (uint32_t i = 0; i < N; i++)
                if (rng_below(&r, 100) < 3)
                    ids[n++] = i;
            trace_writer_layer(w, l, ids, n, NULL, 0, err, sizeof err);
        }
    }
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    printf("256 x 32 x 16384 at 3%%: %.2f MB\n", st.st_size / 1e6);
    CHECK(st.st_size < 5000000);
    free(ids);
    unlink(path);
}

/* The generator reaches its targets on a small shape, and s_agg behaves. */
static void synth_calibration(void)
{
    const struct fb_settings set = fb_settings_defaults();
    char path[256];
    path_of(path, sizeof path, "synth.trace");
    struct model_shape shape;
    CHECK(model_shape_load(&set, "opt-1.3b", &shape, err, sizeof err) == 0);
    struct synth_params p;
    synth_params_default(&p, &shape);
    p.tokens = 64;
    CHECK(synth_write(&p, path, err, sizeof err) == 0);
    struct trace tr;
    CHECK(trace_load(path, &tr, err, sizeof err) == 0);
    struct trace_stats s;
    CHECK(trace_stats_compute(&tr, &s) == 0);
    CHECK_NEAR(s.density_active[0], 0.0156, 0.0005);
    CHECK_NEAR(s.density_active[23], 0.0536, 0.0005);
    CHECK_NEAR(s.mean_density_active, 0.033, 0.002);
    CHECK_NEAR(s.pred_over_active, 3.0, 0.05);
    CHECK_NEAR(s.recall, 0.95, 0.01);
    CHECK_NEAR(s.sagg_pred[4], 0.24, 0.025);
    CHECK_NEAR(trace_stats_new_per_token(s.sagg_pred, 4), 0.024, 0.005);
    CHECK_NEAR(s.sagg_pred[0], s.mean_density_pred, 1e-9);
    for (int k = 1; k < 16; k++)
        CHECK(s.sagg_pred[k] >= s.sagg_pred[k - 1]);
    CHECK(s.hot10_share > 0.2); /* power law: the top 10% take far more than 10% */
    CHECK(strstr(tr.meta.source, "scaled") != NULL); /* opt-1.3b has no paper statistics */
    trace_stats_free(&s);
    trace_free(&tr);
    unlink(path);

    /* s_agg on a hand-made trace: sets {0,1} {1,2} {2,3} of d_ff 4 */
    struct trace_meta m = {.n_layers = 1, .d_model = 4, .d_ff = 4, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = false, .source = "{}", .has_channels = false};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, path, &m, err, sizeof err);
    uint32_t sets[3][2] = {{0, 1}, {1, 2}, {2, 3}};
    for (int t = 0; t < 3; t++) {
        trace_writer_begin_token(w, 0, err, sizeof err);
        trace_writer_layer(w, 0, sets[t], 2, NULL, 0, err, sizeof err);
    }
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
    CHECK(trace_load(path, &tr, err, sizeof err) == 0);
    CHECK(trace_stats_compute(&tr, &s) == 0);
    CHECK_NEAR(s.sagg_active[0], 0.5, 1e-12);  /* each token 2 of 4 */
    CHECK_NEAR(s.sagg_active[1], 0.75, 1e-12); /* windows {0,1,2} {1,2,3} */
    CHECK_NEAR(s.sagg_active[2], 1.0, 1e-12);
    CHECK_NEAR(s.sagg_active[3], 0.0, 1e-12);  /* no window of 4 tokens */
    trace_stats_free(&s);
    trace_free(&tr);
    unlink(path);
}

/* Where things lie in a version 2 file, found by walking its layout
 * (traces/trace.h) independently of the reader. */
struct v2_layout {
    size_t header_end, footer_start;   /* header: [0, header_end); end marker: [footer_start, size) */
    uint64_t check_bytes;              /* CRCs and block lengths */
    uint32_t n_layers;
    size_t n_tokens;
    size_t token_start[16];            /* the token's marker; its flags follow */
    size_t block_start[16][4];         /* (token, layer): length, sets, CRC up to the next */
};

static int walk_v2(const uint8_t *b, size_t n, struct v2_layout *w)
{
    uint32_t slen;
    uint64_t tokens;
    memset(w, 0, sizeof *w);
    memcpy(&slen, b + 52, 4);
    memcpy(&tokens, b + 44, 8);
    memcpy(&w->n_layers, b + 12, 4);
    if (tokens > 16 || w->n_layers > 4)
        return -1;
    w->n_tokens = (size_t)tokens;
    w->header_end = 56 + slen + 4;
    w->check_bytes = 4 + 4;
    size_t pos = w->header_end;
    for (size_t t = 0; t < w->n_tokens; t++) {
        w->token_start[t] = pos;
        pos += 2;
        for (uint32_t l = 0; l < w->n_layers; l++) {
            w->block_start[t][l] = pos;
            uint64_t len = 0;
            size_t raw = 0;
            do {
                len |= (uint64_t)(b[pos] & 0x7f) << (7 * raw);
                raw++;
            } while (b[pos++] & 0x80);
            pos += len + 4;
            w->check_bytes += raw + 4;
        }
    }
    w->footer_start = pos;
    return pos + 36 == n ? 0 : -1;
}

/* err names `what` as a whole word: "token 1" is not found in "token 12". */
static bool names(const char *err, const char *what)
{
    size_t len = strlen(what);
    for (const char *p = strstr(err, what); p; p = strstr(p + 1, what))
        if (!isalnum((unsigned char)p[len]))
            return true;
    return false;
}

/* Where a flip of byte i must be reported. */
static void place_of(const struct v2_layout *w, size_t i, char *want, size_t len)
{
    if (i < w->header_end) {
        snprintf(want, len, "header");
        return;
    }
    if (i >= w->footer_start) {
        snprintf(want, len, "end marker");
        return;
    }
    for (size_t t = w->n_tokens; t-- > 0;) {
        if (i < w->token_start[t])
            continue;
        if (i < w->block_start[t][0]) { /* marker and flags: the token, or layer 0's CRC */
            snprintf(want, len, "token %zu", t);
            return;
        }
        uint32_t l = w->n_layers - 1;
        while (i < w->block_start[t][l])
            l--;
        snprintf(want, len, "token %zu layer %u", t, l);
        return;
    }
}

/* Flips every bit of the file at path, one at a time: each must be an
 * error naming the file and the place, never a trace that loads. */
static void every_bit_flip(const char *path)
{
    size_t n;
    uint8_t *b = (uint8_t *)read_all(path, &n);
    struct v2_layout w;
    int walked = walk_v2(b, n, &w);
    CHECK(walked == 0);
    if (walked != 0) {
        free(b);
        return;
    }
    struct trace tr;
    CHECK(trace_load(path, &tr, err, sizeof err) == 0);
    CHECK_U64(tr.check_bytes, w.check_bytes);
    trace_free(&tr);
    char bad[256], want[64];
    path_of(bad, sizeof bad, "flip.trace");
    int loaded = 0, misplaced = 0, unnamed = 0;
    for (size_t bit = 0; bit < n * 8; bit++) {
        b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        write_bytes(bad, b, n);
        b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (trace_load(bad, &tr, err, sizeof err) == 0) {
            trace_free(&tr);
            if (loaded++ < 5)
                fprintf(stderr, "byte %zu bit %zu: flipped, and the trace loaded\n", bit / 8, bit % 8);
            continue;
        }
        unnamed += strstr(err, bad) == NULL;
        place_of(&w, bit / 8, want, sizeof want);
        if (!names(err, want) && misplaced++ < 5)
            fprintf(stderr, "byte %zu bit %zu: \"%s\" does not name %s\n", bit / 8, bit % 8, err, want);
    }
    printf("%s: %zu bits flipped one at a time: %d loaded, %d reported elsewhere\n", path, n * 8, loaded,
           misplaced);
    CHECK_U64(loaded, 0);
    CHECK_U64(misplaced, 0);
    CHECK_U64(unnamed, 0);
    free(b);
}

/* A trace with predicted and channel sets, 3 tokens x 2 layers (channel
 * sets empty, sparse and full): a flipped bit in a channel set is caught
 * and placed like any other. */
static void channel_flips(const char *path)
{
    struct trace_meta m = {.n_layers = 2, .d_model = 12, .d_ff = 40, .dtype = DTYPE_F16, .ffn_kind = FFN_GLU,
                           .has_predicted = true, .source = "{}", .has_channels = true};
    trace_meta_set_units(&m);
    struct trace_writer *wr = trace_writer_open(NULL, path, &m, err, sizeof err);
    uint32_t c[3][2][12] = {{{0, 4, 11}, {0}}, {{0, 4, 10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}, {{7}, {3}}};
    uint32_t nc[3][2] = {{3, 0}, {3, 12}, {1, 1}};
    uint32_t a[] = {2, 9, 33};
    for (int t = 0; t < 3; t++) {
        CHECK(trace_writer_begin_token(wr, 0, err, sizeof err) == 0);
        for (uint32_t l = 0; l < 2; l++) {
            CHECK(trace_writer_layer_channels(wr, l, c[t][l], nc[t][l], err, sizeof err) == 0);
            CHECK(trace_writer_layer(wr, l, a, 3 - (uint32_t)t, a, 3, err, sizeof err) == 0);
        }
    }
    CHECK(trace_writer_close(wr, err, sizeof err) == 0);
    every_bit_flip(path);
}

/* Traces small enough to flip every bit of: 3 tokens x 2 layers with
 * predicted sets (a sequence start in the middle), and 4 x 3 without. */
static void bit_flips(void)
{
    char path[256];
    path_of(path, sizeof path, "flips.trace");
    struct trace_meta m = {.n_layers = 2, .d_model = 8, .d_ff = 50, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = true, .source = "{\"model\":\"flip\"}", .has_channels = false};
    trace_meta_set_units(&m);
    struct trace_writer *wr = trace_writer_open(NULL, path, &m, err, sizeof err);
    uint32_t a[3][2][4] = {{{1, 7, 30, 49}, {0}}, {{1, 7, 31, 49}, {2, 3}}, {{5}, {2, 3, 4, 40}}};
    uint32_t na[3][2] = {{4, 1}, {4, 2}, {1, 4}};
    uint32_t p[] = {1, 2, 3, 5, 7, 30, 31, 40, 49};
    for (int t = 0; t < 3; t++) {
        CHECK(trace_writer_begin_token(wr, t == 2 ? TRACE_TOKEN_SEQ_START : TRACE_TOKEN_GENERATED, err,
                                       sizeof err) == 0);
        for (uint32_t l = 0; l < 2; l++)
            CHECK(trace_writer_layer(wr, l, a[t][l], na[t][l], p, 9 - (uint32_t)t, err, sizeof err) == 0);
    }
    CHECK(trace_writer_close(wr, err, sizeof err) == 0);
    every_bit_flip(path);

    struct trace_meta m2 = {.n_layers = 3, .d_model = 8, .d_ff = 300, .dtype = DTYPE_F16, .ffn_kind = FFN_GLU,
                            .has_predicted = false, .source = "{}", .has_channels = false};
    trace_meta_set_units(&m2);
    wr = trace_writer_open(NULL, path, &m2, err, sizeof err);
    uint32_t ids[300];
    for (int t = 0; t < 4; t++) {
        CHECK(trace_writer_begin_token(wr, 0, err, sizeof err) == 0);
        for (uint32_t l = 0; l < 3; l++) {
            uint32_t k = 0;
            for (uint32_t i = 0; i < 300; i++)
                if ((i * (l + 3) + (uint32_t)t) % (t == 3 ? 2 : 13) == 0) /* Rice, then a bitset */
                    ids[k++] = i;
            CHECK(trace_writer_layer(wr, l, ids, k, NULL, 0, err, sizeof err) == 0);
        }
    }
    CHECK(trace_writer_close(wr, err, sizeof err) == 0);
    every_bit_flip(path);
    channel_flips(path);
}

/* tests/data/trace_v1.trace, written by the version 1 writer: it reads, as
 * unchecked, with the sets trace_v1.sets lists (dumped by the version 1
 * reader). */
static void reads_version_1(void)
{
    struct trace tr;
    CHECK(trace_load(TEST_DATA_DIR "/trace_v1.trace", &tr, err, sizeof err) == 0);
    CHECK_U64(tr.version, 1);
    CHECK_U64(tr.check_bytes, 0);
    CHECK(tr.meta.has_predicted);
    FILE *f = fopen(TEST_DATA_DIR "/trace_v1.sets", "r");
    CHECK(f != NULL);
    if (!f || tr.n_tokens == 0)
        return;
    char *line = NULL;
    size_t cap = 0;
    uint64_t lines = 0, wrong = 0;
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#')
            continue;
        char *q = line, kind;
        unsigned long long t = strtoull(q, &q, 10);
        unsigned long flags = strtoul(q, &q, 10), l = strtoul(q, &q, 10);
        while (*q == ' ')
            q++;
        kind = *q++;
        uint32_t n;
        const uint32_t *ids = t < tr.n_tokens && l < tr.meta.n_layers
                                  ? trace_set(&tr, kind == 'p', t, (uint32_t)l, &n) : NULL;
        bool same = ids && tr.token_flags[t] == flags;
        uint32_t j = 0;
        for (char *e; same; q = e, j++) {
            unsigned long id = strtoul(q, &e, 10);
            if (e == q)
                break;
            same = j < n && ids[j] == id;
        }
        wrong += !same || j != n;
        lines++;
    }
    free(line);
    fclose(f);
    CHECK_U64(lines, tr.n_tokens * tr.meta.n_layers * 2);
    CHECK_U64(wrong, 0);
    trace_free(&tr);
}

/* Bytes malloc has handed out, mmapped blocks included. */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* A header claiming MODEL_MAX_D_FF neurons over two small sets: the
 * reader's memory follows the sets, not d_ff (it allocated 4 x layers x
 * d_ff ids before: 128 MiB here, and terabytes for a 40-byte header that
 * claims 4096 layers). mallinfo2 sees glibc's heap: under ASan, whose
 * allocator it does not see, the bound holds trivially. */
static void rows_follow_the_sets(void)
{
    char path[256];
    path_of(path, sizeof path, "wide.trace");
    small_trace(path, 1024, 900);
    size_t n;
    char *b = read_all(path, &n);
    uint32_t wide = MODEL_MAX_D_FF;
    memcpy(b + 8 + 4 + 8, &wide, 4); /* d_ff (the tests run little-endian) */
    memcpy(b + 8 + 4 + 7 * 4, &wide, 4); /* and the units per layer, which equal it */
    reseal_header(b);
    write_bytes(path, b, n);
    free(b);
    size_t before = heap_in_use();
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return;
    struct trace_token tok;
    size_t peak = 0, tokens = 0;
    while (trace_reader_next(r, &tok, err, sizeof err) == 1) {
        tokens++;
        CHECK(tok.n_active[1] == 2 && tok.active[1][0] == 1 && tok.active[1][1] == 900);
        CHECK(tok.n_pred[0] == 3 && tok.pred[0][1] == 2);
        size_t now = heap_in_use();
        peak = now > peak ? now : peak;
    }
    CHECK_U64(tokens, 3);
    CHECK(peak < before + (1u << 20));
    trace_reader_close(r);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    round_trip(3, 37, 12, true);   /* d_ff not a multiple of 8 */
    round_trip(2, 1000, 9, false);
    round_trip(1, 1, 5, true);
    bad_inputs();
    bit_flips();
    reads_version_1();
    rows_follow_the_sets();
    size_at_3_percent();
    synth_calibration();
    builder_matches_file(3, 40, 25, true);
    builder_matches_file(1, 200, 70, false); /* past the builder's first growth */
    builder_refusals();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_report("test_trace_format");
}
