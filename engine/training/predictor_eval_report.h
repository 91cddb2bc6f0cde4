/* Result files of a predictor evaluation (predictor_eval.h), written into
 * a folder each through a temporary (common/atomic_file.h):
 *
 *   eval.json   provenance, the predictor's description, a "layers" array
 *               of {layer, rank, true_density, predicted_density, recall,
 *               false_negative_rate, false_positive_rate, tp, fp, fn, tn},
 *               perplexity_dense, perplexity_predictor, perplexity_oracle
 *               (the FFN on the true active sets), top1_agreement,
 *               greedy_agreement, greedy_match (with the prompts and both
 *               models' tokens), bytes and multiply-adds against the model's
 *   eval.md     the same as tables
 *   fig9a.csv   per layer, % of d_ff per token: active in the model only
 *               (false negatives), in both, predicted only (false positives)
 *   fig9a.png/.svg with plot: the paper's Fig. 9a (plots/fig9a_predictor.gp)
 *
 * Each returns 0, or -1 with the reason (naming the file) in err. Nothing
 * printed. */
#ifndef FLASHBED_ENGINE_PREDICTOR_EVAL_REPORT_H
#define FLASHBED_ENGINE_PREDICTOR_EVAL_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/settings.h"
#include "engine/predictor/predictor.h"
#include "engine/training/predictor_eval.h"

struct predictor_eval_source {
    const char *model_dir;
    const char *model_name;
    const char *text;        /* the text file */
    const char *text_sha256; /* its hash */
    int gen_tokens;
};

/* eval.json's object; takes prov. */
cJSON *predictor_eval_json(const struct predictor_eval_result *r, const struct predictor *p,
                           const struct predictor_eval_source *src, cJSON *prov);
/* eval.md's text (caller frees), NULL when out of memory. */
char *predictor_eval_markdown(const struct predictor_eval_result *r, const struct predictor *p,
                              const struct predictor_eval_source *src);

/* eval.json (takes prov), eval.md, fig9a.csv and with plot the figure
 * (its script in set's plots folder; set is read only when plot), into dir
 * (which must exist), each claimed in folder, the command's result folder
 * (common/out_manifest.h; NULL: none). */
struct out_manifest;
int predictor_eval_write(struct out_manifest *folder, const char *dir, const struct predictor_eval_result *r,
                         const struct predictor *p, const struct predictor_eval_source *src, cJSON *prov, bool plot,
                         const struct fb_settings *set, char *err, size_t errlen);

#endif
