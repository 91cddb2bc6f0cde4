#include "harness/sweep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/provenance.h"
#include "common/subprocess.h"


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

int sweep_check(const struct sweep_config *c, struct sweep *s, enum scratch_action *action,
                char *err, size_t errlen)
{
    if (!c->path || !*c->path) {
        snprintf(err, errlen, "sweep needs --file PATH (the file to read; created if missing)");
        return -1;
    }
    if (c->runtime_s <= 0) {
        snprintf(err, errlen, "--runtime must be positive");
        return -1;
    }
    if (c->iodepth < 1 || c->iodepth > FB_MAX_IODEPTH) {
        snprintf(err, errlen, "--iodepth must be between 1 and %d", FB_MAX_IODEPTH);
        return -1;
    }
    for (size_t i = 0; i < c->threads.n; i++)
        if (c->threads.v[i] > FB_MAX_THREADS) {
            snprintf(err, errlen, "--threads %llu is more than %d",
                     (unsigned long long)c->threads.v[i], FB_MAX_THREADS);
            return -1;
        }
    uint64_t max_chunk = list_max(&c->chunks);
    if (max_chunk > (1ull << 30)) {
        snprintf(err, errlen, "chunk size %llu is over 1 GiB", (unsigned long long)max_chunk);
        return -1;
    }
    if (c->size < max_chunk) {
        snprintf(err, errlen, "--size %llu is smaller than the largest chunk %llu",
                 (unsigned long long)c->size, (unsigned long long)max_chunk);
        return -1;
    }
    if (scratch_file_check(c->path, c->size, action, err, errlen) != 0)
        return -1;

    /* Direct I/O: the file system must support it, and every read must be
     * aligned to what it demands. Asked of the file, or of its directory
     * when the file is not there yet. */
    s->dio_align = 0;
    bool engine_direct = c->direct && !(c->engine->flags & (IOENGINE_PAGE_CACHE | IOENGINE_NO_IO));
    if (engine_direct) {
        char where[4096];
        if (*action == SCRATCH_CREATE)
            dir_of(c->path, where, sizeof where);
        else
            snprintf(where, sizeof where, "%s", c->path);
        struct disk_info di;
        disk_info_for_path(where, &di);
        uint32_t off_align, mem_align;
        if (di.memory_backed || dio_alignment(where, &off_align, &mem_align) != 0) {
            snprintf(err, errlen,
                     "%s is on %s, which does not support direct I/O (O_DIRECT): reads there would "
                     "not reach a disk; put --file on an SSD, or pass --buffered",
                     c->path, di.fs_type[0] ? di.fs_type : "a file system");
            return -1;
        }
        for (size_t i = 0; i < c->chunks.n; i++)
            if (c->chunks.v[i] % off_align) {
                snprintf(err, errlen,
                         "chunk size %llu is not a multiple of %u, the logical block size direct "
                         "I/O needs on %s (or pass --buffered)",
                         (unsigned long long)c->chunks.v[i], off_align, c->path);
                return -1;
            }
        /* Buffers are 2 MiB aligned and chunks multiples of off_align. */
        if (mem_align > off_align) {
            snprintf(err, errlen, "%s needs buffers aligned to %u, more than its block size %u",
                     c->path, mem_align, off_align);
            return -1;
        }
        s->dio_align = off_align;
    }
    if (!c->out_dir || !*c->out_dir) {
        snprintf(err, errlen, "--out needs a directory");
        return -1;
    }
    /* The output folder is made when the first point is written; check now
     * that it can be, so bad input never costs a measurement. */
    char probe[4096];
    snprintf(probe, sizeof probe, "%s", c->out_dir);
    while (!path_exists(probe)) {
        char parent[4096];
        dir_of(probe, parent, sizeof parent);
        if (strcmp(parent, probe) == 0)
            break;
        snprintf(probe, sizeof probe, "%s", parent);
    }
    struct stat pst;
    if (stat(probe, &pst) != 0 || !S_ISDIR(pst.st_mode)) {
        snprintf(err, errlen, "cannot write results to %s: %s is not a directory", c->out_dir,
                 probe);
        return -1;
    }
    if (access(probe, W_OK) != 0) {
        snprintf(err, errlen, "cannot write results under %s: %s", probe, strerror(errno));
        return -1;
    }
    if (c->compare_fio && !program_available("fio")) {
        snprintf(err, errlen, "--compare-fio needs fio, which is not installed (apt-get install fio)");
        return -1;
    }
    if (c->compare_fio && c->fio_mem && strstr(c->fio_mem, "huge")) {
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
        uint64_t free_pages = huge_pages_free();
        if (free_pages < need) {
            snprintf(err, errlen,
                     "--fio-mem %s needs %llu free 2 MiB huge pages, %llu are free (as root: echo %llu "
                     "> /proc/sys/vm/nr_hugepages)",
                     c->fio_mem, (unsigned long long)need, (unsigned long long)free_pages,
                     (unsigned long long)need);
            return -1;
        }
    }
    if (c->plot && !program_available("gnuplot")) {
        snprintf(err, errlen, "--plot needs gnuplot, which is not installed (apt-get install gnuplot-nox)");
        return -1;
    }
    return 0;
}

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

int sweep_run(const struct sweep_config *c, cJSON *parameters)
{
    char err[512];
    struct sweep s = {.cfg = c};
    enum scratch_action action;
    if (sweep_check(c, &s, &action, err, sizeof err) != 0) {
        fb_error("%s", err);
        cJSON_Delete(parameters);
        return 1;
    }
    interrupt_install();
    if (action != SCRATCH_READY)
        fb_info("%s %s (%llu bytes of random data)", action == SCRATCH_CREATE ? "creating" : "extending",
                c->path, (unsigned long long)c->size);
    if (scratch_file_prepare(c->path, c->size, action, err, sizeof err) != 0) {
        fb_error("%s", err);
        cJSON_Delete(parameters);
        return interrupted() ? 130 : 1;
    }
    s.provenance = provenance_new();
    provenance_add_disk(s.provenance, c->path);
    cJSON_AddItemToObject(s.provenance, "parameters", parameters);

    size_t total = c->chunks.n * c->threads.n;
    struct progress prog;
    progress_begin(&prog, "sweep", total);
    uint64_t seed_base = c->seed ? c->seed : (uint64_t)time(NULL) ^ now_ns();
    int rc = 0;
    size_t done = 0;
    for (size_t ti = 0; ti < c->threads.n && rc == 0; ti++) {
        for (size_t ci = 0; ci < c->chunks.n && rc == 0; ci++) {
            if (interrupted())
                break;
            struct sweep_point pt;
            memset(&pt, 0, sizeof pt);
            pt.params = (struct point_params){
                .engine = c->engine,
                .path = c->path,
                .file_size = c->size,
                .chunk = c->chunks.v[ci],
                .threads = (unsigned)c->threads.v[ti],
                .iodepth = c->iodepth,
                .direct = c->direct,
                .huge_pages = c->huge_pages,
                .runtime_s = c->runtime_s,
                .ramp_s = c->ramp_s,
                .seed = seed_base + done,
            };
            char what[96];
            describe(&pt.params, what, sizeof what);
            progress_update(&prog, done, what);
            if (bench_point_run(&pt.params, &pt.result, err, sizeof err) != 0) {
                fb_error("%s", err);
                rc = 1;
                break;
            }
            if (pt.result.interrupted)
                break;
            pt.params.iodepth = pt.result.iodepth;
            if (c->compare_fio) {
                progress_update(&prog, done, "fio: same job");
                if (fio_job_run(&pt.params, c->fio_mem, &pt.fio, err, sizeof err) != 0) {
                    if (interrupted())
                        break;
                    fb_error("%s", err);
                    rc = 1;
                    break;
                }
                if (interrupted())
                    break; /* fio was interrupted too: its numbers are partial */
                pt.has_fio = true;
            }
            if (add_point(&s, &pt) != 0) {
                fb_error("out of memory");
                rc = 1;
                break;
            }
            done++;
            /* Rewritten after every point: an interrupted run keeps what it measured. */
            s.complete = done == total;
            if (sweep_write_files(&s, c->out_dir) != 0) {
                rc = 1;
                break;
            }
        }
    }
    progress_end(&prog);
    if (interrupted() && rc == 0)
        rc = 130;
    if (s.n_points && c->plot && sweep_plot(&s, c->out_dir) != 0 && rc == 0)
        rc = 1;
    if (s.n_points)
        fb_info("%zu of %zu points written to %s/sweep.{json,csv,md}%s", s.n_points, total,
                c->out_dir, c->plot ? " with throughput.{png,svg}" : "");
    else
        fb_info("no point finished; nothing written");
    cJSON_Delete(s.provenance);
    free(s.points);
    return rc;
}
