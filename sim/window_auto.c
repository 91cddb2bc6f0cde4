/* window:auto's K (sim/window_auto.h). */
#include "sim/window_auto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "sim/paper_tables.h"
#include "traces/trace_window.h"

/* The largest K whose K-1 consecutive tokens' union, most[K-2], fits. */
static int from_trace(const struct window_auto_input *in, uint32_t kmax, uint32_t *k, char *err, size_t errlen)
{
    uint32_t *most = malloc(kmax * sizeof *most);
    if (!most || trace_window_peaks(in->trace, in->use_predicted, in->tokens, kmax, most) != 0) {
        free(most);
        err_set(err, errlen, "out of memory choosing the window");
        return -1;
    }
    *k = 1;
    while (*k < kmax && most[*k - 1] <= in->capacity_rows)
        ++*k;
    free(most);
    return 0;
}

int window_auto_choose(const struct window_auto_input *in, struct window_auto_choice *out, char *err,
                       size_t errlen)
{
    uint32_t kmax = in->tokens == 0 ? 1 : in->tokens < WINDOW_MAX_K ? (uint32_t)in->tokens : WINDOW_MAX_K;
    if (in->trace) {
        out->from = "the trace: the largest window whose peak rows kept in any layer over the run fit a layer's "
                    "cache";
        return from_trace(in, kmax, &out->k, err, errlen);
    }
    uint32_t k = 1;
    while (k < kmax && ceil(paper_s_agg(k) * in->d_ff) <= (double)in->capacity_rows)
        k++;
    out->k = k;
    out->from = "the s_agg curve the cost model uses (OPT-6.7B, App. C.1): the largest window whose rows kept, "
                "s_agg(K-1) of d_ff, fit a layer's cache";
    return 0;
}

int window_auto_resolve(const struct policy_spec *asked, const struct window_auto_input *in,
                        struct policy_spec *out, struct window_auto_choice *why, char *err, size_t errlen)
{
    why->k = 0;
    why->from = NULL;
    if (!asked->arg_auto) {
        *out = *asked;
        return 0;
    }
    if (window_auto_choose(in, why, err, errlen) != 0)
        return -1;
    *out = policy_spec_of(asked->ops, why->k);
    return 0;
}
