/* A twin's reuse fitted to its recorded trace (trace_synth.h's
 * synth_fit_reuse): a grid over the generator's popularity and reuse knobs,
 * each point's twin built in memory and measured as trace info measures
 * the recorded one. */
#include <math.h>

#include "common/errbuf.h"
#include "common/interrupt.h"
#include "traces/trace.h"
#include "traces/trace_stats.h"
#include "traces/trace_synth.h"

/* Root mean square of twin minus recorded over s_agg(2..min(8, k_max)) and the hottest 10%'s share. */
static double reuse_rms(const struct trace_stats *s, const struct synth_reuse *t)
{
    uint32_t k_max = t->k_max < s->sagg_k_max ? t->k_max : s->sagg_k_max;
    double sum = (s->hot10_share - t->hot10) * (s->hot10_share - t->hot10);
    int n = 1;
    for (uint32_t k = 2; k <= 8 && k <= k_max; k++, n++)
        sum += (s->sagg_active[k - 1] - t->sagg[k - 1]) * (s->sagg_active[k - 1] - t->sagg[k - 1]);
    return sqrt(sum / n);
}

/* p's twin built and measured: its rms against t into *rms. */
static int twin_rms(const struct synth_params *p, const struct synth_reuse *t, double *rms, char *err, size_t errlen)
{
    struct trace tr;
    struct trace_stats s;
    if (synth_build(p, &tr, err, errlen) != 0)
        return -1;
    int rc = trace_stats_compute(&tr, &s);
    if (rc != 0)
        err_set(err, errlen, "synth fit: out of memory");
    else
        *rms = reuse_rms(&s, t);
    trace_stats_free(&s);
    trace_free(&tr);
    return rc;
}

/* One knob of the search: its values and where it lives in the params. */
struct knob {
    const double *values;
    int n;
    double *at;
};

/* Knob k over its values, the others held: the best value kept in q. */
static int search_knob(struct synth_params *q, const struct knob *k, const struct synth_reuse *t, double *rms,
                       uint64_t *done, uint64_t total, const struct progress_report *progress, char *err,
                       size_t errlen)
{
    double best = *k->at;
    for (int i = 0; i < k->n; i++) {
        double e;
        *k->at = k->values[i];
        if (twin_rms(q, t, &e, err, errlen) != 0)
            return -1;
        if (e < *rms)
            *rms = e, best = k->values[i];
        progress_report(progress, "fit", ++*done, total, NULL);
        if (interrupted())
            return err_set(err, errlen, "synth fit: interrupted");
    }
    *k->at = best;
    return 0;
}

int synth_fit_reuse(struct synth_params *p, const struct synth_reuse *target, double *rms, double *rms_before,
                    char *err, size_t errlen)
{
    static const double zipf[] = SYNTH_FIT_ZIPF, recur[] = SYNTH_FIT_RECUR, decay[] = SYNTH_FIT_DECAY;
    struct synth_params q = *p;
    q.progress = NULL;
    q.fitted = true; /* the header text is the twin's; its sets do not depend on it */
    const struct knob knobs[] = {
        {zipf, sizeof zipf / sizeof *zipf, &q.zipf},
        {recur, sizeof recur / sizeof *recur, &q.recur},
        {decay, sizeof decay / sizeof *decay, &q.recur_decay},
    };
    uint64_t done = 0, total = SYNTH_FIT_PASSES * (sizeof zipf + sizeof recur + sizeof decay) / sizeof *zipf;
    if (twin_rms(&q, target, rms_before, err, errlen) != 0)
        return -1;
    *rms = *rms_before;
    for (int pass = 0; pass < SYNTH_FIT_PASSES; pass++)
        for (size_t k = 0; k < sizeof knobs / sizeof *knobs; k++)
            if (search_knob(&q, &knobs[k], target, rms, &done, total, p->progress, err, errlen) != 0)
                return -1;
    p->zipf = q.zipf, p->recur = q.recur, p->recur_decay = q.recur_decay;
    p->fitted = true;
    return 0;
}
