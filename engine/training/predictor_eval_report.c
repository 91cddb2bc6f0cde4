/* eval.json, eval.md, fig9a.csv and the plot (predictor_eval_report.h). */
#include "engine/training/predictor_eval_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/atomic_file.h"
#include "common/errbuf.h"
#include "common/gnuplot.h"
#include "common/strbuf.h"

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static cJSON *layer_json(const struct predictor_eval_layer *L, uint32_t l, uint32_t rank)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "layer", l);
    cJSON_AddNumberToObject(o, "rank", rank);
    cJSON_AddNumberToObject(o, "true_density", L->true_density);
    cJSON_AddNumberToObject(o, "predicted_density", L->predicted_density);
    cJSON_AddNumberToObject(o, "recall", L->recall);
    cJSON_AddNumberToObject(o, "false_negative_rate", L->false_negative_rate);
    cJSON_AddNumberToObject(o, "false_positive_rate", L->false_positive_rate);
    cJSON_AddNumberToObject(o, "missed_mass_share", L->missed_mass_share);
    cJSON_AddNumberToObject(o, "tp", (double)L->tp);
    cJSON_AddNumberToObject(o, "fp", (double)L->fp);
    cJSON_AddNumberToObject(o, "fn", (double)L->fn);
    cJSON_AddNumberToObject(o, "tn", (double)L->tn);
    return o;
}

static cJSON *ids_json(const int *ids, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n && ids[i] >= 0; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
    return a;
}

static cJSON *greedy_json(const struct predictor_eval_result *r, int gen)
{
    cJSON *g = cJSON_CreateObject();
    cJSON_AddNumberToObject(g, "tokens_per_prompt", gen);
    cJSON_AddNumberToObject(g, "tokens", (double)r->greedy_tokens);
    cJSON *prompts = cJSON_AddArrayToObject(g, "prompts");
    cJSON *dense = cJSON_AddArrayToObject(g, "dense");
    cJSON *pred = cJSON_AddArrayToObject(g, "predictor");
    for (size_t k = 0; k < r->n_prompts; k++) {
        cJSON_AddItemToArray(prompts, cJSON_CreateString(predictor_eval_prompts[k]));
        cJSON_AddItemToArray(dense, ids_json(r->greedy_dense + k * (size_t)gen, gen));
        cJSON_AddItemToArray(pred, ids_json(r->greedy_predictor + k * (size_t)gen, gen));
    }
    return g;
}

static void add_costs(cJSON *j, const struct predictor_eval_result *r)
{
    cJSON_AddNumberToObject(j, "predictor_bytes", (double)r->predictor_bytes);
    cJSON_AddNumberToObject(j, "model_bytes", (double)r->model_bytes);
    cJSON_AddNumberToObject(j, "predictor_bytes_percent", pct(r->predictor_bytes, r->model_bytes));
    cJSON_AddNumberToObject(j, "predictor_madds_per_token", (double)r->predictor_madds);
    cJSON_AddNumberToObject(j, "model_madds_per_token", (double)r->model_madds);
    cJSON_AddNumberToObject(j, "predictor_flops_percent", pct(r->predictor_madds, r->model_madds));
}

cJSON *predictor_eval_json(const struct predictor_eval_result *r, const struct predictor *p,
                           const struct predictor_eval_source *src, cJSON *prov)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "provenance", prov);
    cJSON_AddStringToObject(j, "model", src->model_dir);
    cJSON_AddStringToObject(j, "text", src->text);
    cJSON_AddStringToObject(j, "text_sha256", src->text_sha256);
    cJSON_AddNumberToObject(j, "tokens", (double)r->tokens);
    cJSON_AddItemToObject(j, "predictor", predictor_describe(p));
    cJSON *layers = cJSON_AddArrayToObject(j, "layers");
    for (uint32_t l = 0; l < r->n_layers; l++)
        cJSON_AddItemToArray(layers, layer_json(&r->layers[l], l, p->layers[l].rank));
    cJSON_AddNumberToObject(j, "mean_true_density", r->mean_true_density);
    cJSON_AddNumberToObject(j, "mean_predicted_density", r->mean_predicted_density);
    cJSON_AddNumberToObject(j, "mean_recall", r->mean_recall);
    cJSON_AddNumberToObject(j, "perplexity_dense", r->perplexity_dense);
    cJSON_AddNumberToObject(j, "perplexity_predictor", r->perplexity_predictor);
    cJSON_AddNumberToObject(j, "perplexity_oracle", r->perplexity_oracle);
    cJSON_AddNumberToObject(j, "nll_dense", r->nll_dense);
    cJSON_AddNumberToObject(j, "nll_predictor", r->nll_predictor);
    cJSON_AddNumberToObject(j, "nll_oracle", r->nll_oracle);
    cJSON_AddNumberToObject(j, "top1_agreement", r->top1_agreement);
    cJSON_AddNumberToObject(j, "greedy_agreement", r->greedy_agreement);
    cJSON_AddNumberToObject(j, "greedy_match", r->greedy_match);
    cJSON_AddItemToObject(j, "greedy", greedy_json(r, src->gen_tokens));
    add_costs(j, r);
    cJSON_AddBoolToObject(j, "interrupted", r->interrupted);
    return j;
}

static void md_layers(struct strbuf *b, const struct predictor_eval_result *r, const struct predictor *p)
{
    strbuf_add(b, "| layer | rank | true density | predicted density | predicted / true | recall | FN rate | "
                  "FP rate | missed |h| |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (uint32_t l = 0; l < r->n_layers; l++) {
        const struct predictor_eval_layer *L = &r->layers[l];
        strbuf_add(b, "| %u | %u | %.2f%% | %.2f%% | %.2f | %.4f | %.4f | %.4f | %.2f%% |\n", l, p->layers[l].rank,
                   100 * L->true_density, 100 * L->predicted_density,
                   L->true_density > 0 ? L->predicted_density / L->true_density : 0.0, L->recall,
                   L->false_negative_rate, L->false_positive_rate, 100 * L->missed_mass_share);
    }
    strbuf_add(b, "| mean | | %.2f%% | %.2f%% | | %.4f | | | |\n\n", 100 * r->mean_true_density,
               100 * r->mean_predicted_density, r->mean_recall);
    strbuf_add(b, "(missed |h|: the false negatives' share of the sum of |activation| over the active neurons: "
                  "what the misses weigh, not how many)\n\n");
}

char *predictor_eval_markdown(const struct predictor_eval_result *r, const struct predictor *p,
                              const struct predictor_eval_source *src)
{
    struct strbuf b = {0};
    strbuf_add(&b, "# Predictor evaluation: %s\n\n", src->model_name);
    char thr[128];
    predictor_threshold_text(p, thr, sizeof thr);
    strbuf_add(&b, "Text `%s` (sha256 %.16s…), %zu tokens scored; threshold %s, target %s", src->text,
               src->text_sha256, r->tokens, thr, predictor_target_name(p->target));
    if (p->target == PREDICT_GLU_ABS)
        strbuf_add(&b, " (|act(gate)·up| > %g)", p->act_threshold);
    strbuf_add(&b, "%s.\n\n", r->interrupted ? "; **interrupted**: the figures cover what ran" : "");
    md_layers(&b, r, p);
    strbuf_add(&b, "| | dense | with the predictor | oracle (the true active sets) |\n|---|---:|---:|---:|\n");
    strbuf_add(&b, "| perplexity | %.6g | %.6g | %.6g |\n", r->perplexity_dense, r->perplexity_predictor,
               r->perplexity_oracle);
    strbuf_add(&b, "| mean NLL (nats) | %.5f | %.5f | %.5f |\n\n", r->nll_dense, r->nll_predictor, r->nll_oracle);
    strbuf_add(&b, "- top-1 agreement on the text (teacher-forced): %.4f\n", r->top1_agreement);
    strbuf_add(&b, "- greedy agreement (tokens before the first difference), %zu prompts x %d tokens: %.4f; "
                   "position by position: %.4f\n", r->n_prompts, src->gen_tokens, r->greedy_agreement,
               r->greedy_match);
    strbuf_add(&b, "- predictor: %llu bytes = %.3f%% of the model's %llu; %llu multiply-adds per token = %.3f%% "
                   "of the model's %llu\n", (unsigned long long)r->predictor_bytes,
               pct(r->predictor_bytes, r->model_bytes), (unsigned long long)r->model_bytes,
               (unsigned long long)r->predictor_madds, pct(r->predictor_madds, r->model_madds),
               (unsigned long long)r->model_madds);
    return strbuf_take(&b);
}

static char *fig9a_csv(const struct predictor_eval_result *r)
{
    struct strbuf b = {0};
    strbuf_add(&b, "layer,model_only,both,predicted_only\n");
    for (uint32_t l = 0; l < r->n_layers; l++) {
        const struct predictor_eval_layer *L = &r->layers[l];
        uint64_t cells = L->tp + L->fp + L->fn + L->tn;
        strbuf_add(&b, "%u,%.6f,%.6f,%.6f\n", l, pct(L->fn, cells), pct(L->tp, cells), pct(L->fp, cells));
    }
    return strbuf_take(&b);
}

/* text (freed; NULL: out of memory) into the set as DIR/name. */
static int set_text(struct atomic_set *set, const char *dir, const char *name, char *text, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = atomic_set_text(set, path, text, err, errlen);
    free(text);
    return rc;
}

static int plot(const struct fb_settings *set, struct out_manifest *folder, const char *dir, const char *model_name,
                char *err, size_t errlen)
{
    char csv[4300], stem[4200];
    snprintf(csv, sizeof csv, "%s/fig9a.csv", dir);
    snprintf(stem, sizeof stem, "%s/fig9a", dir);
    const struct gnuplot_arg args[] = {GP_TEXT("csv", csv), GP_TEXT("plot_title", model_name)};
    return gnuplot_draw(set, folder, "fig9a_predictor.gp", args, 2, stem, err, errlen);
}

int predictor_eval_write(struct out_manifest *folder, const char *dir, const struct predictor_eval_result *r,
                         const struct predictor *p, const struct predictor_eval_source *src, cJSON *prov,
                         bool want_plot, const struct fb_settings *set, char *err, size_t errlen)
{
    /* eval.json, eval.md and fig9a.csv appear together, or none changes */
    char path[4200];
    struct atomic_set files = {.n = 0, .folder = folder};
    snprintf(path, sizeof path, "%s/eval.json", dir);
    cJSON *j = predictor_eval_json(r, p, src, prov);
    int rc = atomic_set_json(&files, path, j, err, errlen);
    cJSON_Delete(j);
    if (rc == 0)
        rc = set_text(&files, dir, "eval.md", predictor_eval_markdown(r, p, src), err, errlen);
    if (rc == 0)
        rc = set_text(&files, dir, "fig9a.csv", fig9a_csv(r), err, errlen);
    if (rc == 0)
        rc = atomic_set_commit(&files, err, errlen);
    else
        atomic_set_abort(&files);
    if (rc == 0 && want_plot)
        rc = plot(set, folder, dir, src->model_name, err, errlen);
    return rc;
}
