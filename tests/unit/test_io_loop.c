/* The submit/complete loop against a scripted engine: every read asked for
 * is done once, never more than iodepth are in flight, a transient submit
 * refusal is retried, and each failure (a short read, a queue, submit or
 * reap error) stops the loop with the status and message the contract
 * names, with nothing left in flight unless the status says so. With
 * max_retries 1, a short read is queued, committed and reaped again: once
 * short, the loop completes with 1 retry and every read done once; twice,
 * it fails naming the offset and both tries. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "io/io_loop.h"

/* The script: which call fails, and how. 0 = never. */
struct fake {
    unsigned queued, inflight, max_inflight, commits;
    unsigned fail_queue_at;      /* the n-th queue() returns -EIO */
    unsigned eagain_commits;     /* the first commits answer -EAGAIN */
    int commit_err;              /* then every commit answers this */
    int getevents_err;
    uint64_t short_offset;       /* the read at this offset comes back half (NONE: none), */
    unsigned short_times;        /* on its first short_times tries (0: every try) */
    struct io_unit *pending[64];
    unsigned npending, ndone;
    struct io_unit *done[64];
};

#define NONE UINT64_MAX

static struct fake fk;

static int fake_queue(struct io_thread *td, struct io_unit *u)
{
    (void)td;
    if (++fk.queued == fk.fail_queue_at)
        return -EIO;
    bool short_read = u->offset == fk.short_offset && (!fk.short_times || u->attempt < fk.short_times);
    u->result = short_read ? (int64_t)u->len / 2 : (int64_t)u->len;
    fk.pending[fk.npending++] = u;
    if (++fk.inflight > fk.max_inflight)
        fk.max_inflight = fk.inflight;
    return IO_Q_QUEUED;
}

static int fake_commit(struct io_thread *td)
{
    (void)td;
    if (fk.commits++ < fk.eagain_commits)
        return -EAGAIN;
    return fk.commit_err;
}

/* Completes everything pending, oldest first. */
static int fake_getevents(struct io_thread *td, unsigned min, unsigned max)
{
    (void)td;
    if (fk.getevents_err)
        return fk.getevents_err;
    if (min > fk.npending)
        return -EDEADLK; /* would wait for ever: a loop bug */
    unsigned n = fk.npending < max ? fk.npending : max;
    memcpy(fk.done, fk.pending, n * sizeof *fk.done);
    memmove(fk.pending, fk.pending + n, (fk.npending - n) * sizeof *fk.pending);
    fk.npending -= n;
    fk.inflight -= n;
    fk.ndone = n;
    return (int)n;
}

static struct io_unit *fake_event(struct io_thread *td, unsigned i)
{
    (void)td;
    return fk.done[i];
}

static const struct ioengine_ops fake_async = {
    .name = "fake",
    .queue = fake_queue,
    .commit = fake_commit,
    .getevents = fake_getevents,
    .event = fake_event,
};

/* The caller's side: reads at offsets 0, 4096, ... until `want`. */
struct source {
    unsigned want, asked, got;
    uint64_t bytes;
};

static bool next(void *ctx, struct io_unit *u)
{
    struct source *s = ctx;
    if (s->asked == s->want)
        return false;
    u->offset = (uint64_t)s->asked++ * 4096;
    u->len = 4096;
    return true;
}

static void done(void *ctx, const struct io_unit *u)
{
    struct source *s = ctx;
    s->got++;
    s->bytes += u->len;
}

static const struct io_loop_hooks hooks = {next, done};

static unsigned max_retries; /* the loop's, for the next run */
static struct io_loop last;  /* the last run's loop, freed: its counts */

/* Runs `want` reads at iodepth 4 under the script in fk; returns the status. */
static int run(unsigned want, struct source *s, char *err, size_t errlen)
{
    struct io_job job = {.path = "fake.bin", .file_size = 1 << 30, .chunk = 4096, .iodepth = 4};
    struct io_thread td = {.job = &job, .fd = -1};
    struct io_loop l;
    *s = (struct source){.want = want};
    err[0] = '\0';
    if (io_loop_init(&l, &fake_async, &td) != 0)
        return 99;
    l.max_retries = max_retries;
    int rc = io_loop_run(&l, &hooks, s, err, errlen);
    io_loop_free(&l);
    last = l;
    return rc;
}

int main(void)
{
    struct source s;
    char err[256];

    fk = (struct fake){.eagain_commits = 2, .short_offset = NONE};
    CHECK(run(1000, &s, err, sizeof err) == IO_LOOP_DONE);
    CHECK_U64(s.got, 1000);
    CHECK_U64(s.bytes, 1000 * 4096);
    CHECK_U64(fk.max_inflight, 4);
    CHECK_U64(fk.inflight, 0);

    fk = (struct fake){.short_offset = NONE};
    CHECK(run(0, &s, err, sizeof err) == IO_LOOP_DONE);
    CHECK_U64(fk.queued, 0);

    fk = (struct fake){.short_offset = 10 * 4096};
    CHECK(run(1000, &s, err, sizeof err) == IO_LOOP_FAILED);
    CHECK(strstr(err, "fake read of 4096 bytes at offset 40960 of fake.bin failed") != NULL);
    CHECK(s.asked < 20); /* stops asking soon after */
    CHECK_U64(s.got, s.asked - 1);
    CHECK_U64(fk.inflight, 0);

    fk = (struct fake){.fail_queue_at = 7, .short_offset = NONE};
    CHECK(run(1000, &s, err, sizeof err) == IO_LOOP_FAILED);
    CHECK(strstr(err, "could not start") != NULL && strstr(err, "offset 24576") != NULL);
    CHECK_U64(s.got, 6);
    CHECK_U64(fk.inflight, 0);

    fk = (struct fake){.commit_err = -EIO, .short_offset = NONE};
    CHECK(run(1000, &s, err, sizeof err) == IO_LOOP_LOST);
    CHECK(strstr(err, "fake submit of reads from fake.bin failed") != NULL);

    fk = (struct fake){.getevents_err = -EIO, .short_offset = NONE};
    CHECK(run(1000, &s, err, sizeof err) == IO_LOOP_LOST);
    CHECK(strstr(err, "fake waiting for reads from fake.bin failed") != NULL);
    CHECK_U64(s.got, 0);

    max_retries = 1;
    fk = (struct fake){.short_offset = 10 * 4096, .short_times = 1};
    CHECK(run(1000, &s, err, sizeof err) == IO_LOOP_DONE);
    CHECK_U64(s.got, 1000);
    CHECK_U64(s.bytes, 1000 * 4096); /* the short try not counted */
    CHECK_U64(last.retries, 1);
    CHECK_U64(fk.queued, 1001);
    CHECK(fk.max_inflight <= 4 && fk.inflight == 0 && !last.failed);

    fk = (struct fake){.short_offset = 10 * 4096, .short_times = 2};
    CHECK(run(1000, &s, err, sizeof err) == IO_LOOP_FAILED);
    CHECK(strstr(err, "fake read of 4096 bytes at offset 40960 of fake.bin failed: short read (2048 bytes) (tried 2 times)"));
    CHECK(last.failed && last.fail_offset == 40960 && last.retries == 1);
    CHECK_U64(s.got, s.asked - 1);
    CHECK_U64(fk.inflight, 0);
    return check_report("test_io_loop");
}
