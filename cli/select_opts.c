/* --active and --threshold for perplexity and generate (select_opts.h). */
#include "cli/select_opts.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "engine/ffn/ffn_select.h"
#include "engine/forward/engine.h"

int select_engine_init(const char *cmd, const char *active, bool threshold_given, double threshold,
                       const char *sparsify, struct engine *e, const struct fb_settings *set, const struct model *m,
                       const struct backend_ops *be, int threads, int max_seq, struct select_choice *sel,
                       bool *have_sel)
{
    *have_sel = false;
    bool sparse = strcmp(active, "all") != 0;
    char err[10240]; /* the model's folder, twice */
    if (!sparse && sparsify) {
        fb_error("%s --sparsify %s: the dense FFN (--active all) reads no thresholds file (gate, gate-cal and teal "
                 "do)", cmd, sparsify);
        return -1;
    }
    if (sparse && select_choice_open(cmd, active, threshold_given, threshold, sparsify, m, sel, err, sizeof err) != 0) {
        fb_error("%s", err);
        return -1;
    }
    *have_sel = sparse;
    if (engine_init_with(e, set, m, be, sparse ? &ffn_select : &ffn_dense, sparse ? &sel->cfg : NULL, threads,
                         max_seq, err, sizeof err) != 0) {
        fb_error("%s: %s", cmd, err);
        return -1;
    }
    return 0;
}
