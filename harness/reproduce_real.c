/* The real GGUF models' perplexity beside llama.cpp's (harness/reproduce.h):
 * each model of configs/llama_cpp/perplexity.json whose file the shared
 * data holds is converted (real/<name>/model) and scored on WikiText-2's
 * test split by llama.cpp's rule (perplexity --rule llama.cpp --context
 * n_ctx --drop-cr, the first W windows: real/<name>/ppl.json); the report
 * sets it beside llama.cpp's figure over the same W windows, from the
 * reference's window_nll, and beside its full run. A model the shared data
 * lacks is left out, saying so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "common/json_file.h"
#include "common/strbuf.h"
#include "harness/reproduce_plan.h"
#include "harness/reproduce_tables.h"

#define at repro_plan_at
#define RELATIVE_GOAL 0.005 /* issue 46: within 0.5% of llama.cpp's figure */

/* configs/llama_cpp/perplexity.json of p's settings; NULL when unreadable. */
static cJSON *read_references(const struct repro_plan *p)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/llama_cpp/perplexity.json", p->config.settings->configs_dir);
    return read_json_file(path);
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(s) ? s->valuestring : "";
}

static double num_of(const cJSON *o, const char *key)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(n) ? n->valuedouble : NAN;
}

static void left_out(struct repro_plan *p, const char *why)
{
    size_t n = strlen(p->real_left_out);
    snprintf(p->real_left_out + n, sizeof p->real_left_out - n, "%s%s", n ? "; " : "", why);
}

/* One model's steps: converted, then scored over its first windows. */
static int plan_model(struct repro_plan *p, const cJSON *ref, const char *gguf, const char *text, uint64_t windows)
{
    const char *name = str_of(ref, "name");
    char id[96], rel[160], model[4200], json[4200], ctx[16], win[24];
    snprintf(rel, sizeof rel, "real/%s/model", name);
    snprintf(id, sizeof id, "real-model-%s", name);
    at(p, model, sizeof model, "%s", rel);
    STEP(p, "real", id, rel, "a real GGUF model into flashbed's format", "convert", gguf, "--out", model);
    snprintf(rel, sizeof rel, "real/%s/ppl.json", name);
    snprintf(id, sizeof id, "real-ppl-%s", name);
    snprintf(ctx, sizeof ctx, "%.0f", num_of(ref, "n_ctx"));
    snprintf(win, sizeof win, "%llu", (unsigned long long)windows);
    STEP(p, "real", id, rel, "its perplexity on WikiText-2 by llama.cpp's rule", "perplexity", "--model", model,
         "--text", text, "--drop-cr", "--rule", "llama.cpp", "--context", ctx, "--windows", win, "--json",
         at(p, json, sizeof json, "%s", rel));
    /* decode speed: dense, greedy, on every CPU (tools/bench-gguf.sh sets it beside llama.cpp's) */
    snprintf(rel, sizeof rel, "real/%s/generate.json", name);
    snprintf(id, sizeof id, "real-decode-%s", name);
    STEP(p, "real", id, rel, "its dense decode speed", "generate", "--model", model, "--prompt",
         "The capital of France is", "-n", "64", "--temperature", "0", "--json", at(p, json, sizeof json, "%s", rel));
    return 0;
}

/* The model file, "models/NAME/FILE" as the references name it: in the
 * fetched folder (gguf_dir/NAME/FILE) first, else in the shared data. */
static bool find_gguf(const struct repro_plan *p, const char *file, char *path, size_t len)
{
    struct stat st;
    const char *under = strncmp(file, "models/", 7) == 0 ? file + 7 : file;
    if (p->config.gguf_dir && snprintf(path, len, "%s/%s", p->config.gguf_dir, under) < (int)len &&
        stat(path, &st) == 0)
        return true;
    return p->config.data && snprintf(path, len, "%s/%s", p->config.data, file) < (int)len && stat(path, &st) == 0;
}

int repro_plan_real(struct repro_plan *p, uint64_t windows)
{
    const char *data = p->config.data;
    cJSON *refs = read_references(p);
    const cJSON *ref;
    char text[4200], gguf[4200];
    struct stat st;
    snprintf(text, sizeof text, "%s/corpus/wiki.test.raw", data ? data : "");
    int rc = 0;
    char why[600];
    if (!refs)
        left_out(p, "llama_cpp/perplexity.json is not in the configs");
    cJSON_ArrayForEach(ref, cJSON_GetObjectItemCaseSensitive(refs, "models"))
    {
        double most = num_of(ref, "windows");
        if (!data || !find_gguf(p, str_of(ref, "file"), gguf, sizeof gguf) || stat(text, &st) != 0) {
            snprintf(why, sizeof why, "%s: %s is neither in %s (tools/fetch-models.sh) nor in the shared data, or "
                     "corpus/wiki.test.raw is not in the shared data", str_of(ref, "name"), str_of(ref, "file"),
                     p->config.gguf_dir ? p->config.gguf_dir : "--gguf-dir");
            left_out(p, why);
        } else if (rc == 0)
            rc = plan_model(p, ref, gguf, text, isfinite(most) && (double)windows > most ? (uint64_t)most : windows);
    }
    cJSON_Delete(refs);
    return rc;
}

/* exp of the mean nll of the reference's first w windows; NAN when it
 * has fewer. */
static double reference_over(const cJSON *ref, size_t w)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(ref, "window_nll");
    double per = num_of(ref, "n_ctx") - 1 - num_of(ref, "first"), sum = 0;
    if (w == 0 || (size_t)cJSON_GetArraySize(a) < w || !(per > 0))
        return NAN;
    for (size_t i = 0; i < w; i++)
        sum += cJSON_GetArrayItem(a, (int)i)->valuedouble;
    return exp(sum / (per * (double)w));
}

static void model_row(struct strbuf *b, const struct repro_plan *p, const cJSON *ref)
{
    char path[4400];
    const char *name = str_of(ref, "name");
    cJSON *got = read_json_file(at(p, path, sizeof path, "real/%s/ppl.json", name));
    double full = num_of(ref, "ppl"), ppl = num_of(got, "perplexity"), w = num_of(got, "windows");
    double same = isfinite(w) ? reference_over(ref, (size_t)w) : NAN, rel = ppl / same - 1;
    strbuf_add(b, "| %s |", name);
    if (isfinite(rel))
        strbuf_add(b, " %.0f (%.0f) | %.4f | %.4f | %+.2f%% (%s) |", w, num_of(got, "tokens_scored"), ppl, same,
                   100 * rel, fabs(rel) <= RELATIVE_GOAL ? "within 0.5%" : "beyond 0.5%");
    else
        strbuf_add(b, " — | not run | — | — |");
    strbuf_add(b, " %.4f over %.0f |", full, num_of(ref, "windows"));
    cJSON *gen = read_json_file(at(p, path, sizeof path, "real/%s/generate.json", name));
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(gen, "summary");
    double rate = num_of(sum, "generation_tokens_per_second");
    if (isfinite(rate))
        strbuf_add(b, " %.1f (%d tokens) |\n", rate, cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(gen, "tokens")));
    else
        strbuf_add(b, " not run |\n");
    cJSON_Delete(gen);
    cJSON_Delete(got);
}

void repro_section_real(struct strbuf *b, const struct repro_plan *p)
{
    bool planned = false;
    for (size_t i = 0; i < p->n && !planned; i++)
        planned = !strcmp(p->steps[i].section, "real");
    if (!planned && !p->real_left_out[0])
        return;
    strbuf_add(b, "## Real GGUF models: perplexity beside llama.cpp's, and decode speed\n\n"
                  "WikiText-2 test ('\\r' removed) by llama.cpp's perplexity rule (`perplexity --rule llama.cpp "
                  "--context 512`: whole windows, each one's second half scored), the first windows only; "
                  "llama.cpp's figure over the same windows from its per-window sums "
                  "(configs/llama_cpp/perplexity.json, from tests/data/gguf/real/), and over its own full run. "
                  "Decode: `generate` (dense, greedy, 64 tokens from \"The capital of France is\", every CPU); "
                  "tools/bench-gguf.sh times it beside llama.cpp on the same file.\n\n");
    cJSON *refs = read_references(p);
    const cJSON *ref;
    if (planned) {
        strbuf_add(b, "| model | windows (tokens) | flashbed | llama.cpp, same windows | flashbed / llama.cpp - 1 "
                      "| llama.cpp, full run | decode tokens/s, every CPU |\n|---|---:|---:|---:|---:|---:|---:|\n");
        cJSON_ArrayForEach(ref, cJSON_GetObjectItemCaseSensitive(refs, "models"))
        {
            char id[96];
            snprintf(id, sizeof id, "real-ppl-%s", str_of(ref, "name"));
            if (repro_plan_has(p, id))
                model_row(b, p, ref);
        }
        strbuf_add(b, "\n");
    }
    if (p->real_left_out[0])
        strbuf_add(b, "Skipped: %s.\n\n", p->real_left_out);
    cJSON_Delete(refs);
}
