/* Warm-up profile (warmup.h). */
#include "engine/run/warmup.h"

#include <stdio.h>

#include "common/errbuf.h"
#include "engine/forward/engine.h"
#include "engine/model/dtype.h"
#include "engine/run/run_stop.h"

static struct trace_builder *open_profile(const struct warmup_input *in, char *err, size_t errlen)
{
    const struct model *m = in->m;
    struct trace_meta tm = model_trace_meta(m);
    char src[512];
    snprintf(src, sizeof src, "{\"model\": \"%s\", \"recorded_by\": \"flashbed run warm-up\", \"threshold\": %g}",
             m->shape.name, in->io->neuron.threshold);
    tm.source = src;
    return trace_builder_new(&tm, err, errlen);
}

/* The needed sets of every warm-up token (the oracle's, or those the run's
 * predictor or gate chooses), through a predictor run. */
static int record(const struct warmup_input *in, const struct trace_sink *sink, char *err, size_t errlen)
{
    struct ffn_flash_config cfg = *in->io;
    cfg.policy = policy_spec_of(&policy_predictor, 0); /* keeps nothing: reads each token's needed rows */
    cfg.layout = layout_spec_of(&layout_bundled, 0);
    cfg.capacity_rows = 0;
    cfg.layer_rows = NULL;
    cfg.stream.staging_rows = in->m->shape.d_ff;
    cfg.stream.bounce_rows = 1;
    cfg.neuron.stream_dram = false;
    if (select_source(&cfg.select)->replays) /* its sets are the true ones: the oracle's */
        cfg.select = (struct select_config){.ops = &source_oracle, .threshold = cfg.neuron.threshold};
    cfg.neuron.check = false; /* the record's sets are the chosen ones: what the run's policy will rank */
    cfg.select.trace = cfg.profile = NULL;
    cfg.record = sink;
    struct engine e;
    char why[512];
    if (engine_init_with(&e, in->settings, in->m, in->be, &ffn_flash, &cfg, in->threads, in->n_tokens, why, sizeof why) != 0) {
        err_set(err, errlen, "the warm-up engine: %s", why);
        return -1;
    }
    int rc = 0;
    for (int pos = 0; pos < in->n_tokens && rc == 0; pos++) {
        ffn_flash_next_token(&e.ffn, pos == 0 ? TRACE_TOKEN_SEQ_START : 0u);
        if (engine_forward(&e, in->tokens[pos], pos) != 0) {
            err_set(err, errlen, "warm-up token %d: %s", pos, e.err);
            rc = -1;
            break;
        }
        const char *why = ffn_flash_error(&e.ffn);
        char stop[1024];
        if (why || run_stop_check(&e, true, pos, in->tokens[pos], stop, sizeof stop) != 0) {
            err_set(err, errlen, "warm-up token %d: %s", pos, why ? why : stop);
            rc = -1;
        }
        struct ffn_flash_token spent; /* each token's counts (and its sanity) apart, as in the run */
        ffn_flash_take_token(&e.ffn, &spent);
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
    struct trace_builder *b = open_profile(in, err, errlen);
    if (!b)
        return -1;
    struct trace_sink sink = trace_builder_sink(b);
    if (record(in, &sink, err, errlen) != 0) {
        trace_builder_free(b);
        return -1;
    }
    return trace_builder_finish(b, out, err, errlen);
}
