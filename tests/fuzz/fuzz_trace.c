/* Fuzzes activation trace files (traces/): the header (magic, version,
 * shape, source JSON), each token's sets in every encoding (bitset,
 * Rice-coded gaps, relative to the previous token or to the active set;
 * active, predicted and kept-channel sets)
 * and the footer's totals. Through the public reader API only, so it keeps
 * fuzzing whatever versions the reader accepts: the streaming reader token
 * by token, then the whole-trace load that replay and `trace info` use,
 * and the statistics `trace info` prints from it. */
#include <stdlib.h>

#include "traces/trace.h"
#include "traces/trace_stats.h"
#include "fuzz_util.h"

/* Checks what the reader hands out: ascending ids below bound (d_ff for
 * neurons, d_model for channels). */
static void check_sets(const struct trace_meta *m, const uint32_t *const *sets, const uint32_t *n, uint32_t bound)
{
    for (uint32_t l = 0; l < m->n_layers; l++)
        for (uint32_t i = 0; i < n[l]; i++)
            if (sets[l][i] >= bound || (i && sets[l][i] <= sets[l][i - 1]))
                abort();
}

static void stream(const char *path)
{
    char err[512];
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    fuzz_note("trace_reader_open", r ? 0 : -1, err);
    if (!r)
        return;
    const struct trace_meta *m = trace_reader_meta(r);
    struct trace_token tok;
    while (trace_reader_next(r, &tok, err, sizeof err) == 1) {
        check_sets(m, tok.active, tok.n_active, m->d_ff);
        if (tok.pred)
            check_sets(m, tok.pred, tok.n_pred, m->d_ff);
        if (tok.channels)
            check_sets(m, tok.channels, tok.n_channels, m->d_model);
    }
    trace_reader_close(r);
}

static void load(const char *path)
{
    char err[512];
    struct trace tr;
    int rc = trace_load(path, &tr, err, sizeof err);
    fuzz_note("trace_load", rc, err);
    if (rc != 0)
        return;
    struct trace_stats s;
    if (trace_stats_compute(&tr, &s) == 0)
        trace_stats_free(&s);
    trace_free(&tr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("fuzz.trace", data, size);
    stream(path);
    load(path);
    return 0;
}
