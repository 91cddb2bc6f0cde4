/* A trace's recorded sets (neuron_source.h): the flash FFN replays them
 * (run --active trace:FILE, ffn_flash.h's trace) through the replay hook,
 * so they are known before a layer's input and nothing here computes them.
 * check refuses on purpose: a trace's sets are not chosen from a layer's
 * input, which is what perplexity and generate (the masked dense FFN)
 * need; only the flash FFN, which opens no neuron_select for it, replays. */
#include <string.h>

#include "common/errbuf.h"
#include "engine/ffn/neuron_select.h"
#include "traces/trace.h"

static int trace_check(const struct model *m, const struct select_config *c, char *err, size_t errlen)
{
    (void)m;
    (void)c;
    return err_set(err, errlen, "a trace's sets are replayed, not computed: neurons are selected by the oracle, a "
                   "predictor or the gate");
}

/* Token t's set: the trace's predicted sets (use_predicted) or its
 * active ones, from its first token again past its last. */
static uint32_t trace_replay(const struct select_config *c, uint64_t t, int layer, uint32_t *out)
{
    const struct trace *tr = c->trace;
    uint32_t n;
    const uint32_t *ids = trace_set(tr, c->use_predicted, t % tr->n_tokens, (uint32_t)layer, &n);
    memcpy(out, ids, n * sizeof *out);
    return n;
}

const struct neuron_source_ops source_trace = {
    .name = "trace",
    .replays = true,
    .check = trace_check,
    .replay = trace_replay,
};
