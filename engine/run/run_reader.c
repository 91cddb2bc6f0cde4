#include "engine/run/run_reader.h"

#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/ffn/ffn_flash.h"

enum { WHOLE_READ = FFN_FLASH_MAX_READ, MIN_BATCH = 16, TRACE_TOKENS = 8 };

/* Of layer l's set at token t, how many the set at t - 1 lacked (seen:
 * d_ff zeroed bytes, left zeroed). */
static uint32_t new_in_set(const struct trace *tr, int predicted, uint64_t t, uint32_t l, uint8_t *seen)
{
    uint32_t n_prev, n, fresh = 0;
    const uint32_t *prev = trace_set(tr, predicted, t - 1, l, &n_prev), *ids = trace_set(tr, predicted, t, l, &n);
    for (uint32_t j = 0; j < n_prev; j++)
        seen[prev[j]] = 1;
    for (uint32_t j = 0; j < n; j++)
        fresh += !seen[ids[j]];
    for (uint32_t j = 0; j < n_prev; j++)
        seen[prev[j]] = 0;
    return fresh;
}

/* Neurons a layer reads per token, on average: those of the trace's sets
 * (its first tokens) new since the token before — what a window reads —
 * else 5% of the layer. */
static uint32_t mean_reads(const struct model *m, const struct run_setup *p)
{
    uint32_t d_ff = m->shape.d_ff, layers = m->shape.n_layers;
    uint8_t *seen = p->have_trace && p->trace.n_tokens > 1 ? calloc(d_ff, 1) : NULL;
    if (!seen)
        return d_ff / 20;
    uint64_t tokens = p->trace.n_tokens < TRACE_TOKENS ? p->trace.n_tokens : TRACE_TOKENS, sum = 0;
    for (uint64_t t = 1; t < tokens; t++)
        for (uint32_t l = 0; l < layers; l++)
            sum += new_in_set(&p->trace, p->cfg.select.use_predicted, t, l, seen);
    free(seen);
    return (uint32_t)(sum / ((tokens - 1) * layers));
}

/* A batch like one of the run's layers. */
static void batch_shape(const struct model *m, const struct run_setup *p, struct reader_probe_config *cfg)
{
    uint64_t layer = (uint64_t)m->shape.d_ff * m->bundle_stride;
    if (p->policy.ops->reads_whole_layers) {
        cfg->read_bytes = layer < WHOLE_READ ? layer : WHOLE_READ;
        cfg->stride = cfg->read_bytes;
        cfg->batch_reads = (uint32_t)(layer / cfg->read_bytes);
    } else {
        cfg->read_bytes = cfg->stride = m->bundle_stride;
        cfg->batch_reads = mean_reads(m, p);
    }
    if (cfg->batch_reads < MIN_BATCH)
        cfg->batch_reads = MIN_BATCH;
}

int run_reader_choose(const struct model *m, struct run_setup *p, struct run_reader_choice *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    const struct reader_candidate c[RUN_READER_CANDIDATES] = {
        {"psync", p->cfg.stream.io_threads, 1, 0}, {"io_uring", 2, 16, 0}, {"io_uring", 4, 8, 0}};
    memcpy(out->c, c, sizeof c);
    out->n = RUN_READER_CANDIDATES;
    struct reader_probe_config cfg = {.path = m->ffn_path, .file_bytes = m->ffn_bytes, .rounds = RUN_READER_ROUNDS,
                                      .direct = p->cfg.stream.direct, .max_read = WHOLE_READ, .seed = 1};
    batch_shape(m, p, &cfg);
    out->read_bytes = cfg.read_bytes;
    out->batch_reads = cfg.batch_reads;
    char why[1024];
    if (reader_probe(&cfg, out->c, out->n, &out->best, why, sizeof why) != 0)
        return err_set(err, errlen, "--io-engine auto: %s", why);
    const struct reader_candidate *b = &out->c[out->best];
    p->cfg.stream.io_engine = b->engine;
    p->cfg.stream.io_threads = b->threads;
    p->cfg.stream.iodepth = b->iodepth;
    return 0;
}
