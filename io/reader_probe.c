#include "io/reader_probe.h"

#include <stdlib.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "common/median.h"
#include "common/rng.h"
#include "io/flash_reader.h"
#include "io/io_buffer.h"
#include "io/ioengine.h"

struct probe {
    const struct reader_probe_config *cfg;
    struct flash_reader **readers; /* [n] */
    double *bw;                    /* [n][rounds] */
    struct flash_read *reqs;       /* [batch_reads] */
    struct io_buffer buf;
    struct rng rng;
};

static int open_candidates(struct probe *p, const struct reader_candidate *c, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        const struct ioengine_ops *eng = ioengine_find(c[i].engine);
        if (!eng)
            return err_set(err, errlen, "reader probe: unknown I/O engine '%s' (%s)", c[i].engine, ioengine_names());
        struct flash_reader_config rc = {.path = p->cfg->path, .engine = eng, .threads = c[i].threads,
                                         .iodepth = c[i].iodepth, .direct = p->cfg->direct,
                                         .max_read = p->cfg->max_read};
        if (!(p->readers[i] = flash_reader_open(&rc, err, errlen)))
            return -1;
    }
    return 0;
}

/* A fresh batch: reads at random multiples of the stride, within the file. */
static void draw_batch(struct probe *p)
{
    const struct reader_probe_config *cfg = p->cfg;
    uint64_t slots = (cfg->file_bytes - cfg->read_bytes) / cfg->stride + 1;
    for (uint32_t k = 0; k < cfg->batch_reads; k++)
        p->reqs[k] = (struct flash_read){rng_below(&p->rng, slots) * cfg->stride, cfg->read_bytes,
                                         (char *)p->buf.base + (uint64_t)k * cfg->read_bytes};
}

/* Every round, the candidates in an order rotated by the round. */
static int measure(struct probe *p, size_t n, char *err, size_t errlen)
{
    const struct reader_probe_config *cfg = p->cfg;
    double bytes = (double)cfg->batch_reads * (double)cfg->read_bytes;
    for (unsigned r = 0; r < cfg->rounds; r++)
        for (size_t j = 0; j < n; j++) {
            size_t i = (j + r) % n;
            draw_batch(p);
            double t0 = now_ms();
            if (flash_reader_read(p->readers[i], p->reqs, cfg->batch_reads, err, errlen) != 0)
                return -1;
            double ms = now_ms() - t0;
            p->bw[i * cfg->rounds + r] = ms > 0 ? bytes / (ms * 1e-3) : 0;
        }
    return 0;
}

static int check_config(const struct reader_probe_config *cfg, size_t n, char *err, size_t errlen)
{
    if (!n || !cfg->rounds || !cfg->batch_reads || !cfg->stride || !cfg->read_bytes)
        return err_set(err, errlen, "reader probe: nothing to measure (candidates, rounds, reads and sizes must "
                                    "be positive)");
    if (cfg->file_bytes < cfg->read_bytes)
        return err_set(err, errlen, "reader probe: %s has %llu bytes, fewer than one read of %llu", cfg->path,
                       (unsigned long long)cfg->file_bytes, (unsigned long long)cfg->read_bytes);
    return 0;
}

int reader_probe(const struct reader_probe_config *cfg, struct reader_candidate *c, size_t n, size_t *best,
                 char *err, size_t errlen)
{
    if (check_config(cfg, n, err, errlen) != 0)
        return -1;
    struct probe p = {.cfg = cfg};
    rng_seed(&p.rng, cfg->seed);
    p.readers = calloc(n, sizeof *p.readers);
    p.bw = calloc(n * cfg->rounds, sizeof *p.bw);
    p.reqs = calloc(cfg->batch_reads, sizeof *p.reqs);
    int rc = p.readers && p.bw && p.reqs ? 0 : err_set(err, errlen, "reader probe: out of memory");
    if (rc == 0 && io_buffer_alloc(&p.buf, (size_t)cfg->batch_reads * cfg->read_bytes, true) != 0)
        rc = err_set(err, errlen, "reader probe: cannot map %llu bytes of read buffer",
                     (unsigned long long)cfg->batch_reads * cfg->read_bytes);
    if (rc == 0)
        rc = open_candidates(&p, c, n, err, errlen);
    if (rc == 0)
        rc = measure(&p, n, err, errlen);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        c[i].bytes_per_s = median_sorting(p.bw + i * cfg->rounds, cfg->rounds);
        if (i == 0 || c[i].bytes_per_s > c[*best].bytes_per_s)
            *best = i;
    }
    for (size_t i = 0; p.readers && i < n; i++)
        flash_reader_close(p.readers[i]);
    if (p.buf.base)
        io_buffer_free(&p.buf);
    free(p.readers);
    free(p.bw);
    free(p.reqs);
    return rc;
}
