/* Warm-up profile (warmup.h). */
#include "engine/warmup.h"

#include <stdio.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "engine/dtype.h"
#include "engine/engine.h"

static struct trace_writer *open_profile(const struct warmup_input *in, char *err, size_t errlen)
{
    const struct model *m = in->m;
    struct trace_meta tm = model_trace_meta(m);
    char src[512];
    snprintf(src, sizeof src, "{\"model\": \"%s\", \"recorded_by\": \"flashbed run warm-up\", \"threshold\": %g}",
             m->shape.name, in->io->threshold);
    tm.source = src;
    return trace_writer_open(in->path, &tm, err, errlen);
}

/* The needed sets of every warm-up token (the oracle's, or those the run's
 * predictor or gate chooses), through a predictor run. */
static int record(const struct warmup_input *in, struct trace_writer *w, char *err, size_t errlen)
{
    struct ffn_flash_config cfg = *in->io;
    cfg.policy = "predictor";
    cfg.layout = "bundled";
    cfg.capacity_rows = 0;
    cfg.layer_rows = NULL;
    cfg.staging_rows = in->m->shape.d_ff;
    cfg.bounce_rows = 1;
    cfg.stream_dram = false;
    if (cfg.active == ACTIVE_TRACE)
        cfg.active = ACTIVE_ORACLE;
    cfg.check = false; /* the record's sets are the chosen ones: what the run's policy will rank */
    cfg.trace = cfg.profile = NULL;
    cfg.record = w;
    struct engine e;
    char why[512];
    if (engine_init_with(&e, in->m, in->be, &ffn_flash, &cfg, in->threads, in->n_tokens, why, sizeof why) != 0) {
        err_set(err, errlen, "the warm-up engine: %s", why);
        return -1;
    }
    int rc = 0;
    for (int pos = 0; pos < in->n_tokens && rc == 0; pos++) {
        ffn_flash_next_token(&e.ffn, pos == 0 ? TRACE_TOKEN_SEQ_START : 0u);
        engine_forward(&e, in->tokens[pos], pos);
        const char *why = ffn_flash_error(&e.ffn);
        if (why) {
            err_set(err, errlen, "warm-up token %d: %s", pos, why);
            rc = -1;
        }
    }
    engine_free(&e);
    return rc;
}

int warmup_profile(const struct warmup_input *in, struct trace *out, char *err, size_t errlen)
{
    if (in->n_tokens < 1) {
        err_set(err, errlen, "the warm-up has no tokens");
        return -1;
    }
    struct trace_writer *w = open_profile(in, err, errlen);
    if (!w)
        return -1;
    if (record(in, w, err, errlen) != 0) {
        trace_writer_abort(w);
        return -1;
    }
    if (trace_writer_close(w, err, errlen) != 0)
        return -1;
    if (trace_load(in->path, out, err, errlen) != 0) {
        unlink(in->path);
        return -1;
    }
    return 0;
}
