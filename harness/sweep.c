#include "harness/sweep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/limits.h"
#include "common/out_path.h"
#include "common/progress.h"
#include "common/provenance.h"
#include "common/subprocess.h"
#include "harness/sweep_rounds.h"


static uint64_t list_max(const struct u64_list *l)
{
    uint64_t m = 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] > m)
            m = l->v[i];
    return m;
}

/* Free reserved huge pages (HugePages_Free in /proc/meminfo), 0 if unknown. */
static uint64_t huge_pages_free(void)
{
    uint64_t n = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "HugePages_Free: %llu", (unsigned long long *)&n) == 1)
            break;
    fclose(f);
    return n;
}

/* Records which settings a refusal is about and why; returns -1. */
#define REFUSE(bits, ...) (*settings = (bits), err_set(err, errlen, __VA_ARGS__))

static int check_numbers(const struct sweep_config *c, unsigned *settings, char *err, size_t errlen)
{
    if (!c->path || !*c->path)
        return REFUSE(SWEEP_SET_PATH, "no file to read given (it is created if missing)");
    if (c->runtime_s <= 0)
        return REFUSE(SWEEP_SET_RUNTIME, "the measured time must be positive");
    if (c->rounds > SWEEP_MAX_ROUNDS)
        return REFUSE(SWEEP_SET_ROUNDS, "%u rounds are more than %d", c->rounds, SWEEP_MAX_ROUNDS);
    if (c->iodepth < 1 || c->iodepth > FB_MAX_IODEPTH)
        return REFUSE(SWEEP_SET_IODEPTH, "reads in flight per thread must be between 1 and %d", FB_MAX_IODEPTH);
    for (size_t i = 0; i < c->threads.n; i++)
        if (c->threads.v[i] > FB_MAX_THREADS)
            return REFUSE(SWEEP_SET_THREADS, "%llu threads are more than %d",
                          (unsigned long long)c->threads.v[i], FB_MAX_THREADS);
    uint64_t max_chunk = list_max(&c->chunks);
    if (max_chunk > (1ull << 30))
        return REFUSE(SWEEP_SET_CHUNKS, "chunk size %llu is over 1 GiB", (unsigned long long)max_chunk);
    if (c->size < max_chunk)
        return REFUSE(SWEEP_SET_SIZE, "%llu is smaller than the largest chunk %llu",
                      (unsigned long long)c->size, (unsigned long long)max_chunk);
    return 0;
}

/* Direct I/O: the file system must support it, and every read must be
 * aligned to what it demands. Asked of the file, or of its directory when
 * the file is not there yet. */
static int check_direct(const struct sweep_config *c, struct sweep *s, enum scratch_action action,
                        unsigned *settings, char *err, size_t errlen)
{
    s->dio_align = 0;
    if (!c->direct || (c->engine->flags & (IOENGINE_PAGE_CACHE | IOENGINE_NO_IO)))
        return 0;
    char where[4096];
    if (action == SCRATCH_CREATE)
        dir_of(c->path, where, sizeof where);
    else
        snprintf(where, sizeof where, "%s", c->path);
    struct disk_info di;
    disk_info_for_path(where, &di);
    uint32_t off_align, mem_align;
    if (di.memory_backed || dio_alignment(where, &off_align, &mem_align) != 0)
        return REFUSE(SWEEP_SET_PATH | SWEEP_SET_DIRECT,
                      "%s is on %s, which does not support direct I/O (O_DIRECT): reads there would not "
                      "reach a disk; put the file on an SSD",
                      c->path, di.fs_type[0] ? di.fs_type : "a file system");
    for (size_t i = 0; i < c->chunks.n; i++)
        if (c->chunks.v[i] % off_align)
            return REFUSE(SWEEP_SET_CHUNKS | SWEEP_SET_DIRECT,
                          "chunk size %llu is not a multiple of %u, the logical block size direct I/O "
                          "needs on %s",
                          (unsigned long long)c->chunks.v[i], off_align, c->path);
    /* Buffers are 2 MiB aligned and chunks multiples of off_align. */
    if (mem_align > off_align)
        return REFUSE(SWEEP_SET_PATH | SWEEP_SET_DIRECT,
                      "%s needs buffers aligned to %u, more than its block size %u", c->path, mem_align,
                      off_align);
    s->dio_align = off_align;
    return 0;
}

/* The output folder is made when the first point is written; checked now
 * that it can be, so bad input never costs a measurement. */
static int check_out(const struct sweep_config *c, unsigned *settings, char *err, size_t errlen)
{
    if (!c->out_dir || !*c->out_dir)
        return REFUSE(SWEEP_SET_OUT, "no result folder given");
    char why[4400];
    if (out_dir_check(c->out_dir, why, sizeof why) != 0)
        return REFUSE(SWEEP_SET_OUT, "%s", why);
    return 0;
}

/* The most huge pages one fio job of the sweep asks for. */
static uint64_t fio_huge_pages_most(const struct sweep_config *c)
{
    uint64_t need = 0;
    for (size_t t = 0; t < c->threads.n; t++)
        for (size_t k = 0; k < c->chunks.n; k++) {
            struct point_params pp = {.threads = (unsigned)c->threads.v[t],
                                      .chunk = c->chunks.v[k],
                                      .iodepth = (c->engine->flags & IOENGINE_SYNC) ? 1 : c->iodepth};
            uint64_t n = fio_huge_pages_needed(&pp);
            if (n > need)
                need = n;
        }
    return need;
}

static int check_tools(const struct sweep_config *c, unsigned *settings, char *err, size_t errlen)
{
    if (c->compare_fio && !program_available("fio"))
        return REFUSE(SWEEP_SET_FIO, "the comparison needs fio, which is not installed (apt-get install fio)");
    if (c->compare_fio && c->fio_mem && strstr(c->fio_mem, "huge")) {
        uint64_t need = fio_huge_pages_most(c), free_pages = huge_pages_free();
        if (free_pages < need)
            return REFUSE(SWEEP_SET_FIO_MEM,
                          "fio's buffers in %s need %llu free 2 MiB huge pages, %llu are free (as root: echo "
                          "%llu > /proc/sys/vm/nr_hugepages)",
                          c->fio_mem, (unsigned long long)need, (unsigned long long)free_pages,
                          (unsigned long long)need);
    }
    if (c->plot && !program_available("gnuplot"))
        return REFUSE(SWEEP_SET_PLOT,
                      "the plots need gnuplot, which is not installed (apt-get install gnuplot-nox)");
    return 0;
}

int sweep_check(const struct sweep_config *c, struct sweep *s, enum scratch_action *action, unsigned *settings,
                char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->cfg = c;
    *settings = 0;
    if (check_numbers(c, settings, err, errlen) != 0)
        return -1;
    if (scratch_file_check(c->path, c->size, action, err, errlen) != 0) {
        *settings = SWEEP_SET_PATH;
        return -1;
    }
    if (check_direct(c, s, *action, settings, err, errlen) != 0 || check_out(c, settings, err, errlen) != 0 ||
        check_tools(c, settings, err, errlen) != 0)
        return -1;
    return 0;
}

#undef REFUSE

static int add_point(struct sweep *s, const struct sweep_point *p)
{
    if (s->n_points == s->cap_points) {
        size_t cap = s->cap_points ? s->cap_points * 2 : 16;
        struct sweep_point *np = realloc(s->points, cap * sizeof *np);
        if (!np)
            return -1;
        s->points = np;
        s->cap_points = cap;
    }
    s->points[s->n_points++] = *p;
    return 0;
}

static void describe(const struct point_params *p, char *buf, size_t len)
{
    char chunk[32];
    format_size(p->chunk, chunk, sizeof chunk);
    snprintf(buf, len, "%s chunk %s threads %u", p->engine->name, chunk, p->threads);
}

/* Ours' run in round r into pt: 0; 1 with the reason in err; 130 when
 * interrupted; 2 when a read failed its retry (pt kept with its error). */
static int measure_ours(struct sweep_point *pt, unsigned r, size_t seed_stride, char *err, size_t errlen)
{
    struct point_params round = pt->params;
    round.seed += (uint64_t)r * seed_stride; /* fresh offsets each round, as fio's randrepeat=0 */
    struct point_result res;
    int rc = bench_point_run(&round, &res, pt->error, sizeof pt->error);
    if (rc != 0 && !res.read_failed) {
        err_set(err, errlen, "%s", pt->error);
        return 1;
    }
    sweep_round_add(pt, r, &res);
    if (rc != 0) {
        snprintf(pt->failed_offset, sizeof pt->failed_offset, "%llu", (unsigned long long)res.failed_offset);
        return 2;
    }
    pt->error[0] = '\0';
    if (res.interrupted)
        return 130;
    pt->params.iodepth = res.iodepth;
    return 0;
}

/* fio's run of the same job in round r into pt: 0; 1 with the reason in
 * err; 130 when interrupted (its numbers partial). */
static int measure_fio(const struct sweep_config *c, struct sweep_point *pt, unsigned r, char *err, size_t errlen)
{
    struct fio_result f;
    if (fio_job_run(&pt->params, c->fio_mem, &f, err, errlen) != 0) {
        if (!interrupted())
            return 1;
        err_set(err, errlen, "%s", ""); /* fio failed because it was interrupted: no error */
        return 130;
    }
    if (interrupted())
        return 130;
    sweep_round_add_fio(pt, r, &f);
    return 0;
}

/* Measures one point in its rounds into pt, ours and fio's (when asked)
 * alternating: ours first in even rounds, fio first in odd ones. 0; 1 with
 * the reason in err; 130 when interrupted (pt incomplete). A read that
 * failed its retry ends the point's rounds: it is kept with its error, no
 * fio beside it. */
static int measure_point(const struct sweep_config *c, struct sweep_point *pt, size_t done, size_t total,
                         char *err, size_t errlen)
{
    unsigned rounds = sweep_rounds_of(c);
    char what[96], line[160];
    describe(&pt->params, what, sizeof what);
    struct io_fault_counts before, after;
    io_fault_counts(c->fault, &before);
    int rc = 0;
    for (unsigned r = 0; r < rounds && rc == 0; r++) {
        bool fio_first = c->compare_fio && r % 2 == 1;
        snprintf(line, sizeof line, "%s, round %u of %u", what, r + 1, rounds);
        progress_report(c->progress, "sweep", done, total, rounds > 1 ? line : what);
        if (fio_first)
            rc = measure_fio(c, pt, r, err, errlen);
        if (rc == 0)
            rc = measure_ours(pt, r, total, err, errlen);
        if (rc == 0 && c->compare_fio && !fio_first) {
            progress_report(c->progress, "sweep", done, total, "fio: same job");
            rc = measure_fio(c, pt, r, err, errlen);
        }
    }
    io_fault_counts(c->fault, &after);
    pt->faults.attempts = after.attempts - before.attempts;
    for (int k = 0; k < IO_FAULT_KINDS; k++)
        pt->faults.injected[k] = after.injected[k] - before.injected[k];
    pt->has_fio = rc == 0 && c->compare_fio;
    sweep_point_settle(pt);
    return rc == 2 ? 0 : rc;
}

static struct point_params point_at(const struct sweep_config *c, size_t ti, size_t ci, uint64_t seed)
{
    return (struct point_params){
        .engine = c->engine,
        .path = c->path,
        .file_size = c->size,
        .chunk = c->chunks.v[ci],
        .threads = (unsigned)c->threads.v[ti],
        .iodepth = c->iodepth,
        .direct = c->direct,
        .huge_pages = c->huge_pages,
        .runtime_s = c->runtime_s / sweep_rounds_of(c),
        .ramp_s = c->ramp_s / sweep_rounds_of(c),
        .seed = seed,
        .fault = c->fault,
    };
}

/* Every point, threads outer and chunks inner; the result files are
 * rewritten after each so an interrupted run keeps what it measured. */
static int measure_all(struct sweep *s, char *err, size_t errlen)
{
    const struct sweep_config *c = s->cfg;
    uint64_t seed_base = c->seed ? c->seed : (uint64_t)time(NULL) ^ now_ns();
    int rc = 0;
    size_t done = 0;
    for (size_t ti = 0; ti < c->threads.n && rc == 0; ti++)
        for (size_t ci = 0; ci < c->chunks.n && rc == 0; ci++) {
            if (interrupted()) {
                rc = 130;
                break;
            }
            struct sweep_point pt;
            memset(&pt, 0, sizeof pt);
            pt.params = point_at(c, ti, ci, seed_base + done);
            if ((rc = measure_point(c, &pt, done, s->total, err, errlen)) != 0)
                break;
            if (add_point(s, &pt) != 0) {
                err_set(err, errlen, "out of memory");
                rc = 1;
                break;
            }
            done++;
            s->n_failed += pt.error[0] != '\0';
            s->complete = done == s->total;
            if (sweep_write_files(s, c->out_dir, err, errlen) != 0)
                rc = 1;
        }
    if (rc == 0 && s->n_failed) {
        const char *first = "";
        for (size_t i = 0; i < s->n_points && !first[0]; i++)
            first = s->points[i].error;
        err_set(err, errlen, "%zu of %zu points stopped at a failed read; the first: %s", s->n_failed,
                s->n_points, first);
        rc = 1;
    }
    return rc == 0 && interrupted() ? 130 : rc;
}

int sweep_run(struct sweep *s, enum scratch_action action, cJSON *parameters, char *err, size_t errlen)
{
    const struct sweep_config *c = s->cfg;
    if (err && errlen)
        err[0] = '\0';
    s->total = c->chunks.n * c->threads.n;
    interrupt_install();
    if (scratch_file_prepare(c->path, c->size, action, c->progress, err, errlen) != 0) {
        cJSON_Delete(parameters);
        return interrupted() ? 130 : 1;
    }
    s->provenance = provenance_new();
    provenance_add_disk(s->provenance, c->path);
    cJSON_AddItemToObject(s->provenance, "parameters", parameters);
    int rc = measure_all(s, err, errlen);
    /* A plot of the points there are, even after a failure; the first
     * error is the one reported. */
    char plot_err[512];
    if (s->n_points && c->plot && sweep_plot(s, c->out_dir, plot_err, sizeof plot_err) != 0 && rc != 1) {
        err_set(err, errlen, "%s", plot_err);
        rc = rc == 0 ? 1 : rc;
    }
    return rc;
}

void sweep_free(struct sweep *s)
{
    cJSON_Delete(s->provenance);
    free(s->points);
    s->provenance = NULL;
    s->points = NULL;
    s->n_points = s->cap_points = 0;
}
