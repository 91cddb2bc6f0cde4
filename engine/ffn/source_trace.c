/* A trace's recorded sets (neuron_source.h): the flash FFN replays them
 * (run --active trace:FILE, ffn_flash.h's trace), so they are known before
 * a layer's input and nothing here computes them. */
#include "common/errbuf.h"
#include "engine/ffn/neuron_select.h"

static int trace_check(const struct model *m, const struct select_config *c, char *err, size_t errlen)
{
    (void)m;
    (void)c;
    return err_set(err, errlen, "a trace's sets are replayed, not computed: neurons are selected by the oracle, a "
                   "predictor or the gate");
}

const struct neuron_source_ops source_trace = {
    .name = "trace",
    .replays = true,
    .check = trace_check,
};
