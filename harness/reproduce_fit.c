/* Whether a real shape fits this machine for reproduce --quick's Table 3
 * rows (harness/reproduce_plan.h): its f16 weights in half the memory, its
 * model and Hugging Face folder on the study's disk beside what the rest
 * of the study writes. */
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsutil.h"
#include "common/machine.h"
#include "common/model_shape.h"
#include "harness/reproduce_plan.h"

/* What the study needs beyond its models: logs, traces, replays, the
 * predictors, the device rows' OPT-125M (a quarter of a GB) */
#define FIT_SPARE (1ull << 30)

bool repro_shape_params(const struct repro_plan *p, const char *shape, struct param_counts *pc)
{
    struct model_shape s;
    char err[512];
    if (model_shape_load(p->config.settings, shape, &s, err, sizeof err) != 0)
        return false;
    model_shape_params(&s, pc);
    return true;
}

uint64_t repro_shape_bytes(const struct repro_plan *p, const char *shape)
{
    struct param_counts pc;
    return repro_shape_params(p, shape, &pc) ? 2 * pc.total : 0; /* f16 */
}

static uint64_t tree_bytes; /* nftw's callback has no context; the plan is not thread-safe either */

static int add_file(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)path, (void)f;
    if (flag == FTW_F)
        tree_bytes += (uint64_t)st->st_blocks * 512;
    return 0;
}

/* Free bytes on the disk that holds (or will hold) path: its nearest
 * folder that exists; 0 when none can be read. */
static uint64_t free_at(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (;;) {
        uint64_t n;
        if (path_exists(dir) && free_bytes(dir, &n) == 0)
            return n;
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            return free_bytes(slash ? "/" : ".", &n) == 0 ? n : 0;
        *slash = '\0';
    }
}

void repro_fit_start(const struct repro_plan *p, uint64_t committed, struct repro_fit *f)
{
    memset(f, 0, sizeof *f);
    f->mem = p->config.mem_bytes;
    if (!f->mem) {
        struct machine_info m = {0};
        machine_info_get(&m);
        f->mem = m.mem_bytes;
    }
    /* what the study wrote already is room it has: a resumed study plans
     * as the first run did */
    tree_bytes = 0;
    if (path_exists(p->config.out))
        nftw(p->config.out, add_file, 16, FTW_PHYS);
    f->avail = free_at(p->config.out) + tree_bytes;
    f->committed = committed + FIT_SPARE;
}

bool repro_fit_take(struct repro_fit *f, const struct repro_plan *p, const char *shape, char *why, size_t len)
{
    uint64_t bytes = repro_shape_bytes(p, shape);
    if (!bytes) {
        snprintf(why, len, "%s: its shape cannot be read (configs/models/%s.json)", shape, shape);
        return false;
    }
    if (bytes > f->mem / 2) {
        snprintf(why, len, "%s: its %.1f GB of f16 weights are more than half of %s %.1f GB of memory", shape,
                 bytes / 1e9, p->config.mem_bytes ? "the" : "this machine's", f->mem / 1e9);
        return false;
    }
    /* its model (rows padded to the read alignment: Phi-2's 10 KiB rows
     * take 12 KiB, a fifth more) and, until converted, its Hugging Face
     * folder beside it */
    uint64_t model = bytes + bytes / 5;
    if (f->committed + model + bytes > f->avail) {
        snprintf(why, len, "%s: its model and Hugging Face folder (%.1f + %.1f GB) beside the rest of the study "
                 "(%.1f GB) do not fit the %.1f GB the disk under %s has", shape, model / 1e9, bytes / 1e9,
                 f->committed / 1e9, f->avail / 1e9, p->config.out);
        return false;
    }
    f->committed += model;
    return true;
}
