/* --active and --threshold as data (select_choice.h): what every source
 * shares; a source's own option logic is its choose hook
 * (neuron_source.h). */
#include "engine/ffn/select_choice.h"

#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"

int select_choice_calibrated(const struct source_args *a, const struct model *m, enum sparsify_kind kind,
                             struct select_choice *c, char *err, size_t errlen)
{
    char why[4800];
    if (sparsify_load(m, a->sparsify, kind, &c->cal, why, sizeof why) != 0)
        return err_set(err, errlen, "%s --active %s%s%s: %s", a->cmd, a->name, a->sparsify ? " --sparsify " : "",
                       a->sparsify ? a->sparsify : "", why);
    c->have_cal = true;
    if (a->sparsify)
        snprintf(c->cal_path, sizeof c->cal_path, "%s", a->sparsify);
    else
        snprintf(c->cal_path, sizeof c->cal_path, "%s/%s", m->dir, SPARSIFY_FILE);
    return 0;
}

const char select_active_bars[] = "|all"
#define SOURCE(x, names, run_help) names
#include "engine/ffn/sources.def"
#undef SOURCE
    ;

const char select_run_active_help[] = "which neurons:"
#define SOURCE(x, names, run_help) run_help
#include "engine/ffn/sources.def"
#undef SOURCE
    ;

/* A source select_choice_open takes: one that computes its sets. */
static const struct neuron_source_ops *chosen_source(const char *name, bool *cal)
{
    const struct neuron_source_ops *o = neuron_source_find(name, cal);
    return o && o->layer ? o : NULL;
}

bool select_choice_known(const char *name)
{
    return chosen_source(name, NULL) != NULL;
}

/* What every source shares: its name, and whether it reads a thresholds
 * file (per layer: then no --threshold) or none (then no --sparsify). */
static int open_source(struct source_args *a, const struct model *m, struct select_choice *out, char *err,
                       size_t errlen)
{
    const struct neuron_source_ops *o = chosen_source(a->name, &a->cal);
    if (!o) {
        char names[256];
        neuron_source_names(names, sizeof names);
        return err_set(err, errlen, "%s --active: '%s' is not %s", a->cmd, a->name, names);
    }
    out->cfg.ops = o;
    a->cal = a->cal || o->file == SOURCE_FILE_PER_LAYER;
    if (a->cal && a->threshold_given)
        return err_set(err, errlen, "%s --threshold: --active %s takes its per-layer thresholds from %s; "
                       "leave out --threshold (or use --active gate for one global threshold)", a->cmd, a->name,
                       a->sparsify ? a->sparsify : "the model's " SPARSIFY_FILE);
    if (a->sparsify && !a->cal && o->file == SOURCE_FILE_NONE)
        return err_set(err, errlen, "%s --sparsify %s: --active %s reads no thresholds file (gate, gate-cal and teal "
                       "do)", a->cmd, a->sparsify, a->name);
    out->cfg.threshold = a->threshold_given ? (float)a->threshold : 0;
    return o->choose ? o->choose(a, m, out, err, errlen) : 0;
}

int select_choice_open(const char *cmd, const char *name, bool threshold_given, double threshold,
                       const char *sparsify, const struct model *m, struct select_choice *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct source_args a = {cmd, name, false, threshold_given, threshold, sparsify};
    if (open_source(&a, m, out, err, errlen) != 0) {
        select_choice_free(out);
        return -1;
    }
    char why[512];
    if (neuron_select_check(m, &out->cfg, why, sizeof why) != 0) {
        err_set(err, errlen, "%s --active %s: %s", cmd, name, why);
        select_choice_free(out);
        return -1;
    }
    out->cfg.ops->describe(m, out);
    return 0;
}

void select_choice_free(struct select_choice *c)
{
    if (c->have_pred)
        predictor_free(&c->pred);
    if (c->have_cal)
        sparsify_free(&c->cal);
    c->have_pred = false;
    c->have_cal = false;
}
