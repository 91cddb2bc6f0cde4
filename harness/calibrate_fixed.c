#include "harness/calibrate_fixed.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "common/rng.h"
#include "engine/compute/threadpool.h"
#include "io/flash_reader.h"
#include "io/io_buffer.h"
#include "io/ioengine.h"

enum { SMALL = HW_TAIL_READ_BYTES, LARGE = 65536, BIG = 1 << 20, MOST_READS = 1024 };

/* What one reader measurement works on: the file, its buffer (one slot
 * per read, so no two reads share a destination) and the requests. */
struct read_bench {
    struct flash_reader *r;
    struct io_buffer buf;
    struct flash_read reqs[MOST_READS];
    uint64_t file_bytes;
    struct rng rng;
};

/* n reads of `bytes` at random aligned offsets; seconds for the batch. */
static double timed_batch(struct read_bench *b, size_t n, uint64_t bytes, char *err, size_t errlen)
{
    uint64_t slots = (b->file_bytes - bytes) / bytes;
    for (size_t i = 0; i < n; i++)
        b->reqs[i] = (struct flash_read){rng_below(&b->rng, slots) * bytes, bytes, (char *)b->buf.base + i * bytes};
    uint64_t t0 = now_ns();
    if (flash_reader_read(b->r, b->reqs, n, err, errlen) != 0)
        return -1;
    return (double)(now_ns() - t0) * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of `reps` batches of n reads of `bytes`; -1 on error. */
static double median_batch(struct read_bench *b, int reps, size_t n, uint64_t bytes, char *err, size_t errlen)
{
    double t[32];
    reps = reps > 32 ? 32 : reps;
    for (int i = 0; i < reps; i++)
        if ((t[i] = timed_batch(b, n, bytes, err, errlen)) < 0)
            return -1;
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

static int bench_open(struct read_bench *b, const char *path, const char *engine, unsigned threads, char *err,
                      size_t errlen)
{
    memset(b, 0, sizeof *b);
    rng_seed(&b->rng, 11);
    struct flash_reader_config c = {.path = path, .engine = ioengine_find(engine), .threads = threads,
                                    .iodepth = 1, .direct = true};
    if (!(b->r = flash_reader_open(&c, err, errlen)))
        return -1;
    FILE *f = fopen(path, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0)
        b->file_bytes = (uint64_t)ftell(f);
    if (f)
        fclose(f);
    if (b->file_bytes < 4 * BIG || io_buffer_alloc(&b->buf, (size_t)MOST_READS * LARGE, true) != 0) {
        flash_reader_close(b->r);
        b->r = NULL;
        return err_set(err, errlen, "%s: too small for the fixed-cost reads, or no memory for them", path);
    }
    return 0;
}

static void bench_close(struct read_bench *b)
{
    if (b->r)
        flash_reader_close(b->r);
    if (b->buf.base)
        io_buffer_free(&b->buf);
}

/* One thread, queue depth 1: a read's time at 4 KiB, 64 KiB and 1 MiB
 * (the median of batches of many reads, so a batch's own cost spreads
 * thin), and the least-squares line through them: intercept and slope. */
static int per_read(struct read_bench *b, bool quick, double *read_s, double *bw, char *err, size_t errlen)
{
    const double size[3] = {SMALL, LARGE, BIG};
    const size_t n[3] = {quick ? 32 : 128, quick ? 16 : 64, quick ? 4 : 16};
    double t[3], sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < 3; i++) {
        if ((t[i] = median_batch(b, quick ? 3 : 7, n[i], (uint64_t)size[i], err, errlen)) < 0)
            return -1;
        t[i] /= (double)n[i];
        sx += size[i], sy += t[i], sxx += size[i] * size[i], sxy += size[i] * t[i];
    }
    double slope = (3 * sxy - sx * sy) / (3 * sxx - sx * sx);
    *bw = slope > 0 ? 1 / slope : 0;
    *read_s = slope > 0 ? fmax(0, (sy - slope * sx) / 3) : t[0];
    return 0;
}

/* psync's batch cost and tail on one reader of io_threads threads. */
static int tail_terms(struct hw_fixed *f, const char *path, unsigned io_threads, bool quick, char *err, size_t errlen)
{
    struct read_bench b;
    if (bench_open(&b, path, "psync", io_threads, err, errlen) != 0)
        return -1;
    int rc = -1, reps = quick ? 9 : 25;
    double one = median_batch(&b, reps, 1, SMALL, err, errlen);
    double read1 = f->read_s[HW_IO_PSYNC] + (f->read_bw[HW_IO_PSYNC] > 0 ? SMALL / f->read_bw[HW_IO_PSYNC] : 0);
    if (one < 0)
        goto out;
    f->batch_s = fmax(0, one - read1);
    const unsigned counts[] = {1, 4, 16, 32, 64};
    f->n_tail = 0;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0] && counts[i] <= io_threads; i++) {
        unsigned T = counts[i];
        size_t rounds = quick ? 8 : 24;
        double lng = median_batch(&b, 3, T * rounds, SMALL, err, errlen);
        double shrt = median_batch(&b, reps, T, SMALL, err, errlen);
        if (lng < 0 || shrt < 0)
            goto out;
        f->tail_threads[f->n_tail] = T;
        f->tail_factor[f->n_tail++] = fmax(1, (shrt - f->batch_s) / (lng / (double)rounds));
    }
    rc = 0;
out:
    bench_close(&b);
    return rc;
}

int calibrate_measure_reads(struct hw_fixed *f, const char *path, unsigned io_threads, bool quick, char *err,
                            size_t errlen)
{
    f->present = true;
    char why[2][400] = {"", ""};
    for (int e = 0; e < HW_IO_ENGINES; e++) {
        struct read_bench b;
        f->read_s[e] = f->read_bw[e] = 0;
        int rc = bench_open(&b, path, hw_io_engine_names[e], 1, why[e], sizeof why[e]);
        if (rc == 0)
            rc = per_read(&b, quick, &f->read_s[e], &f->read_bw[e], why[e], sizeof why[e]);
        bench_close(&b);
        if (rc != 0 && e == HW_IO_PSYNC)
            return err_set(err, errlen, "fixed cost per read (psync): %s", why[e]);
    }
    char src[1200];
    snprintf(src, sizeof src,
             "measured: the engine's reader (io/flash_reader.h), 1 thread, queue depth 1, direct I/O, random 4 KiB, "
             "64 KiB and 1 MiB reads, the median of batches of each; the least-squares intercept of time over size%s%s",
             why[HW_IO_URING][0] ? "; io_uring not measured: " : "", why[HW_IO_URING]);
    snprintf(f->read_source, sizeof f->read_source, "%.299s", src);
    if (tail_terms(f, path, io_threads, quick, err, errlen) != 0)
        return -1;
    snprintf(f->batch_source, sizeof f->batch_source,
             "measured: a batch of one 4 KiB read on the engine's reader of %u psync threads (median), less the "
             "read's own time (read_s + bytes / bw_bytes)", io_threads);
    snprintf(f->tail_source, sizeof f->tail_source,
             "measured: a batch of one 4 KiB read per thread (T threads, median) less batch_s, over the time per "
             "round (one read per thread) of a batch of %d rounds at T threads; psync, direct I/O", quick ? 8 : 24);
    return 0;
}

void calibrate_reads_unmeasured(struct hw_fixed *f, const char *why)
{
    f->present = true;
    memset(f->read_s, 0, sizeof f->read_s);
    memset(f->read_bw, 0, sizeof f->read_bw);
    f->batch_s = 0;
    f->n_tail = 0;
    snprintf(f->read_source, sizeof f->read_source, "not measured (%s): 0", why);
    snprintf(f->batch_source, sizeof f->batch_source, "not measured (%s): 0", why);
    snprintf(f->tail_source, sizeof f->tail_source, "not measured (%s): 1", why);
}

static void empty_job(void *arg, int worker, int n)
{
    (void)arg, (void)worker, (void)n;
}

/* Seconds of one empty job: hot, the least over reps batches of 200 back
 * to back of the batch's mean (the workers spinning, as between the
 * engine's kernels: the hand-off alone; the time a busy machine takes the
 * CPU from a working team is in the kernels' measured rate already); cold
 * (gap_s > 0), the mean of reps each after gap_s asleep, as a batch of
 * reads keeps the caller waiting (the mean: a token pays every slow
 * wake-up), and into *slept_s the mean time really slept. */
static double job_time(struct threadpool *p, double gap_s, int reps, double *slept_s)
{
    double sum = 0, least = INFINITY, slept = 0;
    for (int i = 0; i < reps; i++) {
        if (gap_s > 0) {
            struct timespec ts = {0, (long)(gap_s * 1e9)};
            uint64_t s0 = now_ns();
            nanosleep(&ts, NULL);
            slept += (double)(now_ns() - s0) * 1e-9;
        }
        int n = gap_s > 0 ? 1 : 200;
        uint64_t t0 = now_ns();
        for (int k = 0; k < n; k++)
            threadpool_run(p, empty_job, NULL);
        double t = (double)(now_ns() - t0) * 1e-9 / n;
        sum += t;
        least = fmin(least, t);
    }
    if (slept_s)
        *slept_s = slept / reps;
    return gap_s > 0 ? sum / reps : least;
}

int calibrate_measure_team(struct hw_fixed *f, const struct fb_settings *set, unsigned threads, bool quick,
                           char *err, size_t errlen)
{
    struct threadpool *p = threadpool_create((int)(threads < 1 ? 1 : threads));
    if (!p)
        return err_set(err, errlen, "cannot start a team of %u compute threads", threads);
    f->present = true;
    f->team_threads = threadpool_size(p);
    f->min_parallel_work = (double)set->min_parallel_work;
    threadpool_run(p, empty_job, NULL); /* the threads started */
    f->job_hot_s = job_time(p, 0, quick ? 5 : 20, NULL);
    const double gaps[] = {100e-6, 300e-6, 1e-3, 3e-3};
    f->n_cold = 0;
    for (size_t i = 0; i < sizeof gaps / sizeof gaps[0]; i++) {
        double slept; /* a loaded machine oversleeps: the wait is what was slept */
        double t = job_time(p, gaps[i], quick ? 16 : 64, &slept);
        if (f->n_cold && slept <= f->cold_gap_s[f->n_cold - 1])
            continue; /* the waits stay ascending */
        f->cold_gap_s[f->n_cold] = slept;
        f->job_cold_s[f->n_cold++] = t;
    }
    threadpool_destroy(p);
    snprintf(f->job_source, sizeof f->job_source,
             "measured: an empty job over the engine's thread team (engine/compute/threadpool.h) of %.0f threads: "
             "hot, the least mean of %d batches of 200 back to back; cold, the mean of %d, each after "
             "0.1, 0.3, 1 or 3 ms asleep (gap_s: the mean time slept); the kernels' min_parallel_work %.0f", f->team_threads, quick ? 5 : 20, quick ? 16 : 64,
             f->min_parallel_work);
    f->token_s = 0;
    snprintf(f->token_source, sizeof f->token_source,
             "0: a token's time is its forward pass (engine/forward/decode.c: sampling is outside it); its embedding, "
             "norms and adds are d_model-long and its lm_head is priced by bytes and one team job");
    return 0;
}
