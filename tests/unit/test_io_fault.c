/* The fault engine (io/engine_fault.c, io/io_fault.h) and the retry of the
 * read loop (io/io_loop.h) through the reader pool (io/flash_reader.h):
 *   - a spec's refusals name the rule and what is wrong;
 *   - rates are a pure function of seed, offset and attempt: the same
 *     choices twice, 0 never, 1 always, 0.25 about a quarter;
 *   - an offset's rule hits its first N attempts over the whole run;
 *   - eio@X: the batch completes, 1 retry, 1 EIO injected, every byte right;
 *   - eio@X/2: the batch fails naming offset X, the stats hold X, and only
 *     the reads that completed are counted;
 *   - short reads are retried as errors are; a delay is waited. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/clock.h"
#include "io/flash_reader.h"
#include "io/io_fault.h"

enum { CHUNK = 4096, N_READS = 16, FILE_BYTES = CHUNK * N_READS };

static void test_parse(void)
{
    struct io_fault_spec s;
    char err[512];
    CHECK(io_fault_parse("eio:0.01,short:0.5,delay:0.05:200us,eio@4k/2,delay@8192:1ms", 7, &s, err, sizeof err) == 0);
    CHECK_U64(s.n_rules, 5);
    CHECK(s.seed == 7 && s.rules[0].kind == IO_FAULT_EIO && !s.rules[0].at_offset && s.rules[0].rate == 0.01);
    CHECK(s.rules[2].kind == IO_FAULT_DELAY && s.rules[2].delay_ns == 200000);
    CHECK(s.rules[3].at_offset && s.rules[3].offset == 4096 && s.rules[3].times == 2);
    CHECK(s.rules[4].at_offset && s.rules[4].offset == 8192 && s.rules[4].times == 1 && s.rules[4].delay_ns == 1000000);
    CHECK(io_fault_parse(NULL, 1, &s, err, sizeof err) == 0 && s.n_rules == 0);
    const struct {
        const char *spec, *says;
    } bad[] = {
        {"bogus:1", "unknown kind 'bogus'"}, {"eio:2", "rate must be a number in [0, 1]"},
        {"eio:-0.1", "not '-0.1'"},          {"delay:0.1", "takes a rate and a time"},
        {"eio:0.1:1ms", "takes one rate"},   {"eio@4k/0", "/N must be 1..1000"},
        {"delay@0", "takes a time"},         {"delay:1:11s", "is over 10 s"},
        {"eio@x", "the offset"},             {"eio", "expected eio:RATE or eio@OFFSET"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(io_fault_parse(bad[i].spec, 1, &s, err, sizeof err) == -1);
        if (!strstr(err, bad[i].says) || !strstr(err, bad[i].spec))
            fprintf(stderr, "'%s': %s\n", bad[i].spec, err);
        CHECK(strstr(err, bad[i].says) != NULL && strstr(err, bad[i].spec) != NULL);
    }
    char many[512] = "eio:0";
    for (int i = 1; i < IO_FAULT_MAX_RULES + 1; i++)
        strcat(many, ",eio:0");
    CHECK(io_fault_parse(many, 1, &s, err, sizeof err) == -1 && strstr(err, "at most 16") != NULL);
}

/* Hits of rule text over n offsets (attempt 0), with seed. */
static unsigned hits(const char *text, uint64_t seed, unsigned n, uint8_t *which)
{
    struct io_fault_spec s;
    char err[256];
    CHECK(io_fault_parse(text, seed, &s, err, sizeof err) == 0);
    static struct io_fault f;
    io_fault_init(&f, &s);
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        struct io_fault_choice c;
        io_fault_decide(&f, (uint64_t)i * CHUNK, CHUNK, 0, &c);
        if (which)
            which[i] = c.eio;
        k += c.eio;
    }
    return k;
}

static void test_rates(void)
{
    enum { N = 10000 };
    static uint8_t a[N], b[N], c[N];
    CHECK_U64(hits("eio:0", 3, N, NULL), 0);
    CHECK_U64(hits("eio:1", 3, N, NULL), N);
    unsigned k = hits("eio:0.25", 3, N, a);
    CHECK(k > 2300 && k < 2700);
    CHECK_U64(hits("eio:0.25", 3, N, b), k);
    CHECK(memcmp(a, b, N) == 0);               /* the same seed: the same reads */
    hits("eio:0.25", 4, N, c);
    CHECK(memcmp(a, c, N) != 0);               /* another seed: others */
    /* an attempt's draw is its own: a retry of a hit read is not always hit */
    struct io_fault_spec s;
    char err[256];
    CHECK(io_fault_parse("eio:0.5", 3, &s, err, sizeof err) == 0);
    struct io_fault f;
    io_fault_init(&f, &s);
    unsigned both = 0, first = 0;
    for (unsigned i = 0; i < 1000; i++) {
        struct io_fault_choice c0, c1;
        io_fault_decide(&f, (uint64_t)i * CHUNK, CHUNK, 0, &c0);
        io_fault_decide(&f, (uint64_t)i * CHUNK, CHUNK, 1, &c1);
        first += c0.eio;
        both += c0.eio && c1.eio;
    }
    CHECK(both > 0 && both < first);
    /* an offset's rule: its first N attempts at that byte, wherever the read starts */
    CHECK(io_fault_parse("short@5000/2,eio@5000", 1, &s, err, sizeof err) == 0);
    io_fault_init(&f, &s);
    struct io_fault_choice ch;
    io_fault_decide(&f, 0, CHUNK, 0, &ch); /* does not hold byte 5000 */
    CHECK(!ch.eio && !ch.short_read);
    io_fault_decide(&f, CHUNK, CHUNK, 0, &ch);
    CHECK(ch.eio && !ch.short_read); /* EIO outranks the short read */
    io_fault_decide(&f, CHUNK, CHUNK, 1, &ch);
    CHECK(!ch.eio && ch.short_read);
    io_fault_decide(&f, CHUNK, CHUNK, 0, &ch);
    CHECK(!ch.eio && !ch.short_read);
}

struct fixture {
    char path[64];
    uint8_t *want, *got;
    struct flash_read reqs[N_READS];
};

static void fixture_make(struct fixture *x)
{
    snprintf(x->path, sizeof x->path, "/tmp/flashbed-test-io-fault-XXXXXX");
    int fd = mkstemp(x->path);
    CHECK(fd >= 0);
    x->want = malloc(FILE_BYTES);
    x->got = malloc(FILE_BYTES);
    for (int i = 0; i < FILE_BYTES; i++)
        x->want[i] = (uint8_t)(i * 7 + i / 251);
    CHECK(write(fd, x->want, FILE_BYTES) == FILE_BYTES);
    close(fd);
    for (int i = 0; i < N_READS; i++)
        x->reqs[i] = (struct flash_read){(uint64_t)i * CHUNK, CHUNK, x->got + (size_t)i * CHUNK};
}

/* One batch of every chunk through a one-thread reader with rules text:
 * its return, stats and counts. */
static const char *engine_name = "fault"; /* test_reader_uring: fault_io_uring */
static unsigned engine_depth = 1;

static int read_with(struct fixture *x, const char *text, struct flash_reader_stats *st, struct io_fault_counts *c,
                     char *err, size_t errlen)
{
    struct io_fault_spec s;
    static struct io_fault f;
    CHECK(io_fault_parse(text, 9, &s, err, errlen) == 0);
    io_fault_init(&f, &s);
    struct flash_reader_config cfg = {.path = x->path, .engine = ioengine_find(engine_name), .threads = 1,
                                      .iodepth = engine_depth,
                                      .direct = false, .fault = &f};
    struct flash_reader *r = flash_reader_open(&cfg, err, errlen);
    CHECK(r != NULL);
    if (!r)
        return -2;
    memset(x->got, 0, FILE_BYTES);
    err[0] = '\0';
    int rc = flash_reader_read(r, x->reqs, N_READS, err, errlen);
    flash_reader_stats(r, st);
    io_fault_counts(&f, c);
    flash_reader_close(r);
    return rc;
}

static void test_reader(void)
{
    struct fixture x;
    fixture_make(&x);
    struct flash_reader_stats st;
    struct io_fault_counts c;
    char err[512];

    CHECK(read_with(&x, "eio@8192", &st, &c, err, sizeof err) == 0);
    CHECK_U64(st.retries, 1);
    CHECK_U64(c.injected[IO_FAULT_EIO], 1);
    CHECK_U64(c.attempts, N_READS + 1);
    CHECK_U64(st.reads, N_READS);
    CHECK_U64(st.bytes, FILE_BYTES);
    CHECK(!st.failed && memcmp(x.got, x.want, FILE_BYTES) == 0);

    CHECK(read_with(&x, "short@12288", &st, &c, err, sizeof err) == 0);
    CHECK_U64(st.retries, 1);
    CHECK_U64(c.injected[IO_FAULT_SHORT], 1);
    CHECK(st.bytes == FILE_BYTES && memcmp(x.got, x.want, FILE_BYTES) == 0);

    CHECK(read_with(&x, "eio@8192/2", &st, &c, err, sizeof err) == -1);
    CHECK(strstr(err, "offset 8192 of") && strstr(err, "Input/output error") && strstr(err, "tried 2 times"));
    CHECK(st.failed && st.failed_offset == 8192);
    CHECK_U64(st.retries, 1);
    CHECK_U64(st.reads, 2);                 /* the two before it; none after: the batch stopped */
    CHECK_U64(st.bytes, 2 * CHUNK);         /* only what completed */
    CHECK_U64(c.injected[IO_FAULT_EIO], 2);

    CHECK(read_with(&x, "short:1", &st, &c, err, sizeof err) == -1);
    CHECK(strstr(err, "offset 0 of") && strstr(err, "short read (2048 bytes)"));
    CHECK(st.failed && st.failed_offset == 0 && st.reads == 0 && st.bytes == 0);
    CHECK_U64(c.injected[IO_FAULT_SHORT], 2);

    double t0 = now_ms();
    CHECK(read_with(&x, "delay@0:30ms", &st, &c, err, sizeof err) == 0);
    CHECK(now_ms() - t0 >= 30.0);
    CHECK_U64(c.injected[IO_FAULT_DELAY], 1);
    CHECK(st.retries == 0 && st.bytes == FILE_BYTES);

    /* no rules: psync's reads */
    CHECK(read_with(&x, "", &st, &c, err, sizeof err) == 0);
    CHECK(st.retries == 0 && c.attempts == N_READS && memcmp(x.got, x.want, FILE_BYTES) == 0);
    unlink(x.path);
    free(x.want);
    free(x.got);
}

/* The fault engine over io_uring, 4 reads in flight: a fault at an offset
 * retried once and counted, the data whole; twice, the batch fails naming
 * the offset; every read short: it fails, nothing counted as read. */
static void test_reader_uring(void)
{
    if (!ioengine_find("fault_io_uring")) {
        printf("test_io_fault: fault_io_uring not built (no liburing): its checks skipped\n");
        return;
    }
    engine_name = "fault_io_uring";
    engine_depth = 4;
    struct fixture x;
    fixture_make(&x);
    struct flash_reader_stats st;
    struct io_fault_counts c;
    char err[512];
    for (int k = 0; k < 2; k++) {
        CHECK(read_with(&x, k ? "short@12288" : "eio@8192", &st, &c, err, sizeof err) == 0);
        CHECK_U64(st.retries, 1);
        CHECK_U64(c.injected[k ? IO_FAULT_SHORT : IO_FAULT_EIO], 1);
        CHECK_U64(c.attempts, N_READS + 1);
        CHECK(st.reads == N_READS && st.bytes == FILE_BYTES && memcmp(x.got, x.want, FILE_BYTES) == 0);
    }
    CHECK(read_with(&x, "eio@8192/2", &st, &c, err, sizeof err) == -1);
    CHECK(strstr(err, "fault_io_uring read") && strstr(err, "offset 8192 of") && strstr(err, "tried 2 times"));
    CHECK(st.failed && st.failed_offset == 8192);
    CHECK(read_with(&x, "short:1", &st, &c, err, sizeof err) == -1);
    CHECK(strstr(err, "short read (2048 bytes)") != NULL);
    CHECK(st.failed && st.bytes == 0 && st.reads == 0);
    CHECK(read_with(&x, "", &st, &c, err, sizeof err) == 0);
    CHECK(st.retries == 0 && c.attempts == N_READS && memcmp(x.got, x.want, FILE_BYTES) == 0);
    unlink(x.path);
    free(x.want);
    free(x.got);
}

int main(void)
{
    test_parse();
    test_rates();
    test_reader();
    test_reader_uring();
    return check_report("test_io_fault");
}
