/* The flash reader pool: every byte of random batches lands where it should,
 * for psync and io_uring, 1 to 32 threads, iodepth 1 and 8, direct and
 * buffered; long reads are split at max_read and counted as issued; bad
 * requests and bad configurations fail with messages that say what and
 * where; a set-up that fails in one thread leaves no thread behind. The test file lives in the working directory (ctest runs in the
 * build tree, a real file system); where that refuses O_DIRECT the direct
 * cases are skipped, saying so. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/rng.h"
#include "io/flash_reader.h"
#include "io/io_buffer.h"

#define FILE_SIZE ((6u << 20) + (12u << 10)) /* 6 MiB + 12 KiB */
#define MAX_READ (64u << 10)
#define BATCH 40
#define DST_SIZE (16u << 20)

static unsigned char *expect; /* the file's contents */

/* A position-dependent pattern: every 8-byte word differs from its neighbours. */
static void fill_pattern(unsigned char *p, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t x = seed + i;
        uint64_t v = rng_splitmix(&x);
        memcpy(p + i, &v, len - i < 8 ? len - i : 8);
    }
}

static int write_file(const char *path, const unsigned char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return close(fd);
}

static int make_temp(char *path, size_t len)
{
    snprintf(path, len, "./flash_reader_test.XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    return write_file(path, expect, FILE_SIZE);
}

static uint64_t units_of(uint64_t len, uint64_t max_read)
{
    if (!max_read)
        return len ? 1 : 0;
    return (len + max_read - 1) / max_read;
}

/* Random batches: each destination must equal the file, and the stats must
 * count units after splitting and exact bytes. */
static void check_batches(struct flash_reader *r, uint64_t max_read, struct io_buffer *dst,
                          uint64_t seed, const char *label)
{
    const uint64_t a = flash_reader_alignment(r);
    const bool direct = flash_reader_direct(r);
    static const uint64_t lens[] = {4096, 16384, 65536, 65536 + 4096, 200 << 10, 1 << 20, 0};
    struct rng rng;
    rng_seed(&rng, seed);
    char err[512];
    for (int b = 0; b < 3; b++) {
        struct flash_read reqs[BATCH];
        uint64_t want_reads = 0, want_bytes = 0, dst_used = 0;
        int n = b == 2 ? 1 : BATCH; /* a one-unit batch too */
        for (int i = 0; i < n; i++) {
            uint64_t len = lens[rng_next(&rng) % (sizeof lens / sizeof lens[0])];
            if (!direct && len && rng_next(&rng) % 2)
                len += rng_next(&rng) % 5000; /* odd lengths without direct I/O */
            if (direct && len)
                len = len < a ? a : len / a * a;
            if (direct && rng_next(&rng) % 8 == 0)
                len = a; /* the smallest legal read */
            uint64_t off = rng_next(&rng) % (FILE_SIZE - len + 1);
            off -= off % a;
            uint64_t gap = direct ? 0 : rng_next(&rng) % 64;
            dst_used += gap;
            dst_used = (dst_used + a - 1) / a * a;
            reqs[i] = (struct flash_read){off, len, (char *)dst->base + dst_used};
            dst_used += len;
            want_reads += units_of(len, max_read);
            want_bytes += len;
        }
        CHECK(dst_used <= DST_SIZE);
        memset(dst->base, 0xa5, dst_used);
        struct flash_reader_stats s0, s1;
        flash_reader_stats(r, &s0);
        int rc = flash_reader_read(r, reqs, (size_t)n, err, sizeof err);
        flash_reader_stats(r, &s1);
        CHECK(rc == 0);
        if (rc)
            fprintf(stderr, "%s: %s\n", label, err);
        int bad = 0;
        for (int i = 0; i < n; i++)
            if (reqs[i].len && memcmp(reqs[i].dst, expect + reqs[i].offset, reqs[i].len) != 0)
                bad++;
        CHECK(bad == 0);
        if (bad)
            fprintf(stderr, "%s batch %d: %d of %d reads differ from the file\n", label, b, bad, n);
        CHECK_U64(s1.batches - s0.batches, 1);
        CHECK_U64(s1.reads - s0.reads, want_reads);
        CHECK_U64(s1.bytes - s0.bytes, want_bytes);
        CHECK(s1.wait_ms >= s0.wait_ms);
    }
}

/* An empty batch returns at once. A read past the end of the file fails,
 * naming the offset; the reader stays usable. show: print the message
 * (once per engine, to see what a user would). */
static void check_empty_and_past_end(struct flash_reader *r, struct io_buffer *dst, const char *label, bool show)
{
    char err[512];
    struct flash_reader_stats s0, s1;
    flash_reader_stats(r, &s0);
    CHECK(flash_reader_read(r, NULL, 0, err, sizeof err) == 0);
    flash_reader_stats(r, &s1);
    CHECK_U64(s1.reads, s0.reads);
    CHECK_U64(s1.bytes, s0.bytes);

    struct flash_read past = {FILE_SIZE - 4096, 8192, dst->base};
    err[0] = '\0';
    CHECK(flash_reader_read(r, &past, 1, err, sizeof err) == -1);
    char off[32];
    snprintf(off, sizeof off, "%u", FILE_SIZE - 4096);
    CHECK(strstr(err, off) != NULL && strstr(err, "end of the file") != NULL);
    if (show)
        printf("%s: past the end: %s\n", label, err);
}

/* Direct I/O at alignment a: a misaligned offset or buffer is refused,
 * naming the read (the second of a pair), and so is a misaligned length. */
static void check_misaligned(struct flash_reader *r, struct io_buffer *dst, uint64_t a, const char *label,
                             bool show)
{
    char err[512];
    struct flash_read mis[3] = {
        {4096, 4096, dst->base},
        {4096 + 1, 4096, (char *)dst->base + 8192},
        {0, 4096, (char *)dst->base + 1},
    };
    for (int i = 1; i < 3; i++) {
        struct flash_read pair[2] = {mis[0], mis[i]};
        err[0] = '\0';
        CHECK(flash_reader_read(r, pair, 2, err, sizeof err) == -1);
        CHECK(strstr(err, "aligned") != NULL && strstr(err, "read 1 ") != NULL);
        if (i == 1)
            CHECK(strstr(err, "offset 4097") != NULL);
        if (show)
            printf("%s: misaligned: %s\n", label, err);
    }
    struct flash_read odd_len = {0, a + a / 2, dst->base};
    CHECK(flash_reader_read(r, &odd_len, 1, err, sizeof err) == -1);
    CHECK(strstr(err, "aligned") != NULL);
}

static void test_matrix(const char *path, const struct ioengine_ops *eng, bool direct,
                        struct io_buffer *dst)
{
    static const unsigned threads[] = {1, 4, 32};
    static const unsigned depths[] = {1, 8};
    for (size_t t = 0; t < 3; t++)
        for (size_t d = 0; d < 2; d++) {
            char label[128], err[512];
            snprintf(label, sizeof label, "%s threads=%u iodepth=%u direct=%d", eng->name,
                     threads[t], depths[d], direct);
            struct flash_reader_config cfg = {path, eng, threads[t], depths[d], direct, MAX_READ, NULL};
            struct flash_reader *r = flash_reader_open(&cfg, err, sizeof err);
            CHECK(r != NULL);
            if (!r) {
                fprintf(stderr, "%s: %s\n", label, err);
                continue;
            }
            CHECK(flash_reader_direct(r) == direct);
            uint64_t a = flash_reader_alignment(r);
            if (direct)
                CHECK(a >= 512 && (a & (a - 1)) == 0 && MAX_READ % a == 0);
            else
                CHECK_U64(a, 1);
            check_batches(r, MAX_READ, dst, t * 10 + d + (direct ? 100 : 0), label);
            check_empty_and_past_end(r, dst, label, t == 0 && d == 0);
            if (direct && a <= 4096)
                check_misaligned(r, dst, a, label, t == 0 && d == 0);
            struct flash_read first = {0, a > 4096 ? a : 4096, dst->base};
            CHECK(flash_reader_read(r, &first, 1, err, sizeof err) == 0);
            CHECK(memcmp(dst->base, expect, first.len) == 0);
            flash_reader_close(r);
        }
}

/* max_read 0: nothing split; zero-length requests count for nothing. */
static void test_no_split(const char *path, const struct ioengine_ops *eng, bool direct,
                          struct io_buffer *dst)
{
    char err[512];
    struct flash_reader_config cfg = {path, eng, 4, 4, direct, 0, NULL};
    struct flash_reader *r = flash_reader_open(&cfg, err, sizeof err);
    CHECK(r != NULL);
    if (!r) {
        fprintf(stderr, "no split: %s\n", err);
        return;
    }
    char *d = dst->base;
    struct flash_read reqs[] = {
        {0, 1 << 20, d},
        {8192, 0, NULL},
        {(2 << 20), 3 << 20, d + (1 << 20)},
        {FILE_SIZE - 4096, 4096, d + (4 << 20)},
    };
    memset(d, 0, 5 << 20);
    CHECK(flash_reader_read(r, reqs, 4, err, sizeof err) == 0);
    struct flash_reader_stats s;
    flash_reader_stats(r, &s);
    CHECK_U64(s.reads, 3);
    CHECK_U64(s.bytes, (1 << 20) + (3 << 20) + 4096);
    CHECK(memcmp(d, expect, 1 << 20) == 0);
    CHECK(memcmp(d + (1 << 20), expect + (2 << 20), 3 << 20) == 0);
    CHECK(memcmp(d + (4 << 20), expect + FILE_SIZE - 4096, 4096) == 0);
    flash_reader_close(r);
}

/* Submit, then wait: the same bytes as one read; a second submit before
 * the wait is refused and leaves the first batch intact; a wait with
 * nothing in flight is 0; a refused submit (past the end) leaves nothing
 * in flight; close with a batch in flight waits for it. */
static void test_submit_wait(const char *path, const struct ioengine_ops *eng, bool direct,
                             struct io_buffer *dst)
{
    char err[512];
    struct flash_reader_config cfg = {path, eng, 4, 2, direct, MAX_READ, NULL};
    struct flash_reader *r = flash_reader_open(&cfg, err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return;
    char *d = dst->base;
    struct flash_read reqs[] = {{0, 1 << 20, d}, {(3 << 20), 2 << 20, d + (1 << 20)}};
    struct flash_read past = {FILE_SIZE, 4096, d};
    memset(d, 0, 3 << 20);
    CHECK(flash_reader_wait(r, err, sizeof err) == 0);
    CHECK(flash_reader_submit(r, &past, 1, err, sizeof err) == -1);
    CHECK(flash_reader_submit(r, reqs, 2, err, sizeof err) == 0);
    CHECK(flash_reader_submit(r, reqs, 2, err, sizeof err) == -1);
    CHECK(strstr(err, "already in flight") != NULL);
    CHECK(flash_reader_wait(r, err, sizeof err) == 0);
    CHECK(flash_reader_wait(r, err, sizeof err) == 0);
    CHECK(memcmp(d, expect, 1 << 20) == 0);
    CHECK(memcmp(d + (1 << 20), expect + (3 << 20), 2 << 20) == 0);
    struct flash_reader_stats s;
    flash_reader_stats(r, &s);
    CHECK_U64(s.bytes, 3 << 20);
    CHECK(flash_reader_submit(r, reqs, 2, err, sizeof err) == 0);
    flash_reader_close(r);
}

/* A file that shrinks under the reader: the read fails naming the offset. */
static void test_short_read(const struct ioengine_ops *eng, bool direct, struct io_buffer *dst)
{
    char path[64], err[512];
    if (make_temp(path, sizeof path) != 0) {
        CHECK(!"cannot create the second test file");
        return;
    }
    struct flash_reader_config cfg = {path, eng, 2, 2, direct, MAX_READ, NULL};
    struct flash_reader *r = flash_reader_open(&cfg, err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        CHECK(truncate(path, 1 << 20) == 0);
        struct flash_read reqs[] = {
            {0, 4096, dst->base},
            {(2 << 20) + 8192, 4096, (char *)dst->base + 4096},
        };
        err[0] = '\0';
        CHECK(flash_reader_read(r, reqs, 2, err, sizeof err) == -1);
        char off[32];
        snprintf(off, sizeof off, "offset %u", (2 << 20) + 8192);
        CHECK(strstr(err, off) != NULL);
        CHECK(strstr(err, path + 2) != NULL);
        printf("%s direct=%d: file shrunk: %s\n", eng->name, direct, err);
        CHECK(flash_reader_read(r, reqs, 1, err, sizeof err) == 0);
        CHECK(memcmp(dst->base, expect, 4096) == 0);
        flash_reader_close(r);
    } else {
        fprintf(stderr, "short read: %s\n", err);
    }
    unlink(path);
}

static void test_bad_config(const char *path, bool direct_ok)
{
    char err[512];
    const struct ioengine_ops *psync = ioengine_find("psync");

    struct flash_reader_config cfg = {"./no/such/flash_file.bin", psync, 4, 1, false, 0, NULL};
    err[0] = '\0';
    CHECK(flash_reader_open(&cfg, err, sizeof err) == NULL);
    CHECK(strstr(err, "./no/such/flash_file.bin") != NULL);
    CHECK(strstr(err, "No such file") != NULL);
    printf("missing file: %s\n", err);

    cfg = (struct flash_reader_config){path, psync, 0, 1, false, 0, NULL};
    err[0] = '\0';
    CHECK(flash_reader_open(&cfg, err, sizeof err) == NULL);
    CHECK(strstr(err, "threads") != NULL);

    cfg.threads = 5000;
    CHECK(flash_reader_open(&cfg, err, sizeof err) == NULL);
    CHECK(strstr(err, "threads") != NULL);

    cfg = (struct flash_reader_config){path, psync, 4, 0, false, 0, NULL};
    err[0] = '\0';
    CHECK(flash_reader_open(&cfg, err, sizeof err) == NULL);
    CHECK(strstr(err, "iodepth") != NULL);

    cfg = (struct flash_reader_config){path, ioengine_find("mmap"), 4, 1, false, 0, NULL};
    err[0] = '\0';
    CHECK(flash_reader_open(&cfg, err, sizeof err) == NULL);
    CHECK(strstr(err, "mmap") != NULL);

    cfg.engine = ioengine_find("null");
    err[0] = '\0';
    CHECK(flash_reader_open(&cfg, err, sizeof err) == NULL);
    CHECK(strstr(err, "null") != NULL);

    cfg.engine = NULL;
    err[0] = '\0';
    CHECK(flash_reader_open(&cfg, err, sizeof err) == NULL);
    CHECK(strstr(err, "engine") != NULL);

    if (direct_ok) {
        cfg = (struct flash_reader_config){path, psync, 4, 1, true, 1000, NULL};
        err[0] = '\0';
        CHECK(flash_reader_open(&cfg, err, sizeof err) == NULL);
        CHECK(strstr(err, "max_read") != NULL && strstr(err, "alignment") != NULL);
    }
}

/* Threads of this process, from /proc (0 where there is none). */
static unsigned thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    unsigned n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* An engine whose set-up fails in one thread of eight: open must fail
 * naming it, and only after every thread it started has cleaned up and
 * been joined. */
static atomic_uint setups, cleanups;

static int failing_setup(struct io_thread *td)
{
    (void)td;
    return atomic_fetch_add(&setups, 1) == 5 ? -ENOSPC : 0;
}

static void counting_cleanup(struct io_thread *td)
{
    (void)td;
    atomic_fetch_add(&cleanups, 1);
}

static void test_setup_failure(const char *path)
{
    struct ioengine_ops eng = *ioengine_find("psync");
    eng.setup = failing_setup;
    eng.cleanup = counting_cleanup;
    unsigned before = thread_count();
    char err[512] = "";
    struct flash_reader_config cfg = {path, &eng, 8, 1, false, 0, NULL};
    CHECK(flash_reader_open(&cfg, err, sizeof err) == NULL);
    CHECK(strstr(err, "engine setup") != NULL && strstr(err, path + 2) != NULL);
    CHECK_U64(atomic_load(&setups), 8);
    CHECK_U64(atomic_load(&cleanups), 8);
    CHECK_U64(thread_count(), before);
    printf("setup failure: %s\n", err);
}

/* io_uring compiled in and allowed by the kernel (containers may forbid it). */
static const struct ioengine_ops *uring_engine(void)
{
    const struct ioengine_ops *eng = ioengine_find("io_uring");
    if (!eng) {
        printf("io_uring: not built in, skipped\n");
        return NULL;
    }
    struct io_job job = {.iodepth = 1};
    struct io_thread td = {.job = &job, .fd = -1};
    int rc = eng->setup(&td);
    eng->cleanup(&td);
    if (rc) {
        printf("io_uring: the kernel refuses a ring (%s), skipped\n", strerror(-rc));
        return NULL;
    }
    return eng;
}

int main(void)
{
    expect = malloc(FILE_SIZE);
    if (!expect)
        return 1;
    fill_pattern(expect, FILE_SIZE, 0x5eed);
    char path[64];
    if (make_temp(path, sizeof path) != 0) {
        perror("creating the test file in the working directory");
        return 1;
    }
    bool direct_ok = true;
    int fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0) {
        direct_ok = false;
        printf("direct I/O: %s here (%s), direct cases skipped, buffered only\n", strerror(errno),
               path);
    } else {
        close(fd);
    }
    struct io_buffer dst;
    if (io_buffer_alloc(&dst, DST_SIZE, false) != 0) {
        unlink(path);
        return 1;
    }

    const struct ioengine_ops *engines[2] = {ioengine_find("psync"), uring_engine()};
    for (int e = 0; e < 2; e++) {
        if (!engines[e])
            continue;
        for (int d = direct_ok ? 1 : 0; d >= 0; d--) {
            printf("%s, %s: threads 1/4/32 x iodepth 1/8\n", engines[e]->name,
                   d ? "direct" : "buffered");
            test_matrix(path, engines[e], d, &dst);
            test_no_split(path, engines[e], d, &dst);
            test_submit_wait(path, engines[e], d, &dst);
            test_short_read(engines[e], d, &dst);
        }
    }
    test_bad_config(path, direct_ok);
    test_setup_failure(path);

    io_buffer_free(&dst);
    unlink(path);
    free(expect);
    return check_report("test_flash_reader");
}
