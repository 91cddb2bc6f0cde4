/* reproduce's real GGUF models (harness/reproduce_real.c), on empty files
 * where the plan looks for the shared data (it needs only that they
 * exist): the quick tier converts SmolLM2 and scores 4 windows of 512 by
 * llama.cpp's rule from the CRLF WikiText-2 copy (--drop-cr), the full
 * tier 100 (the reference's own); the tiny tier plans none; Gemma 3,
 * absent, and everything without the shared data, left out by name. The
 * report's row: flashbed's figure from a ppl.json this test writes, beside
 * llama.cpp's over the same 3 windows (its running perplexity after its
 * third, 23.1896) and its full run (22.7569 over 100); a model planned but
 * not run says so. And configs/llama_cpp/perplexity.json, which the
 * report reads, holds tests/data/gguf/real's figures unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "common/strbuf.h"
#include "harness/reproduce.h"
#include "harness/reproduce_tables.h"
#include "test_files.h"

#ifndef TEST_DATA_DIR
#error TEST_DATA_DIR must name tests/data
#endif

#define SMOL "smollm2-135m-q4_1"
#define GEMMA_WHY "gemma3-270m-q4_k_m: models/gemma3-270m/gemma-3-270m-q4_k_m.gguf is neither in --gguf-dir " \
                  "(tools/fetch-models.sh) nor in the shared data, or corpus/wiki.test.raw is not in the shared data"

static char root[] = "/tmp/fb_test_reproduce_real_XXXXXX";
static struct fb_settings set;

static void fake_data(char *data, size_t len)
{
    char path[1024];
    snprintf(data, len, "%s/data", root);
    static const char *const dirs[] = {"models/smollm2-135m", "corpus"};
    static const char *const files[] = {"models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf", "corpus/wiki.test.raw"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", data, dirs[i]);
        CHECK(mkdir_p(path, 0755) == 0);
        snprintf(path, sizeof path, "%s/%s", data, files[i]);
        test_write_text(path, "");
    }
}

static void plan_in(enum repro_tier tier, const char *data, const char *gguf_dir, struct repro_plan *p)
{
    static char outs[3][512];
    char err[512];
    snprintf(outs[tier], sizeof outs[tier], "%s/study-%d", root, (int)tier);
    struct repro_config c = {.tier = tier, .n_models = 1, .models = {"falcon"}, .out = outs[tier], .disk = outs[tier],
                             .data = data, .gguf_dir = gguf_dir, .settings = &set, .mem_bytes = 1ull << 30};
    CHECK(repro_plan_build(&c, p, err, sizeof err) == 0);
}

static void plan(enum repro_tier tier, const char *data, struct repro_plan *p)
{
    plan_in(tier, data, NULL, p);
}

static const struct repro_step *step(const struct repro_plan *p, const char *id)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->steps[i].id, id))
            return &p->steps[i];
    return NULL;
}

/* The value after flag (the flag itself when last or followed by a flag
 * of its own: a switch); NULL without it. */
static const char *arg(const struct repro_step *s, const char *flag)
{
    for (char **a = s ? s->args : NULL; a && *a; a++)
        if (!strcmp(*a, flag))
            return a[1] && strncmp(a[1], "--", 2) ? a[1] : *a;
    return NULL;
}

static bool ends_with(const char *s, const char *tail)
{
    return s && strlen(s) >= strlen(tail) && !strcmp(s + strlen(s) - strlen(tail), tail);
}

static void planned(const char *data)
{
    struct repro_plan p;
    for (int tier = REPRO_QUICK; tier <= REPRO_FULL; tier++) {
        plan((enum repro_tier)tier, data, &p);
        const struct repro_step *c = step(&p, "real-model-" SMOL), *s = step(&p, "real-ppl-" SMOL);
        CHECK(c && s && c < s);
        CHECK(c && !strcmp(c->args[0], "convert") && ends_with(c->args[1], "SmolLM2-135M-Instruct.Q4_1.gguf"));
        CHECK(ends_with(arg(c, "--out"), "real/" SMOL "/model") && ends_with(c->out, "real/" SMOL "/model"));
        CHECK(s && !strcmp(s->args[0], "perplexity") && ends_with(arg(s, "--text"), "/corpus/wiki.test.raw"));
        CHECK_STR(arg(s, "--rule"), "llama.cpp");
        CHECK_STR(arg(s, "--context"), "512");
        CHECK_STR(arg(s, "--windows"), tier == REPRO_QUICK ? "4" : "100");
        CHECK_STR(arg(s, "--drop-cr"), "--drop-cr");
        CHECK(ends_with(arg(s, "--json"), "real/" SMOL "/ppl.json"));
        const struct repro_step *g = step(&p, "real-decode-" SMOL);
        CHECK(g && !strcmp(g->args[0], "generate") && !strcmp(arg(g, "--model"), arg(c, "--out")));
        CHECK_STR(arg(g, "-n"), "64");
        CHECK(ends_with(arg(g, "--json"), "real/" SMOL "/generate.json"));
        CHECK_STR(p.real_left_out, GEMMA_WHY);
        repro_plan_free(&p);
    }
    plan(REPRO_TINY, data, &p);
    CHECK(step(&p, "real-model-" SMOL) == NULL && step(&p, "real-ppl-" SMOL) == NULL);
    CHECK_STR(p.real_left_out, "");
    repro_plan_free(&p);
    plan(REPRO_QUICK, NULL, &p);
    CHECK(step(&p, "real-ppl-" SMOL) == NULL);
    CHECK(strstr(p.real_left_out, SMOL ": models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf is neither in "
                                       "--gguf-dir (tools/fetch-models.sh) nor in the shared data, or corpus/"
                                       "wiki.test.raw is not in the shared data; " GEMMA_WHY) != NULL);
    repro_plan_free(&p);
}

static char *section(const struct repro_plan *p)
{
    struct strbuf b = {0};
    repro_section_real(&b, p);
    return strbuf_take(&b);
}

static void report(const char *data)
{
    struct repro_plan p;
    plan(REPRO_QUICK, data, &p);
    char *text = section(&p);
    CHECK(text && strstr(text, "| " SMOL " | — | not run | — | — | 22.7569 over 100 | not run |\n") != NULL);
    CHECK(text && strstr(text, "Skipped: " GEMMA_WHY ".") != NULL);
    free(text);
    char path[4400];
    snprintf(path, sizeof path, "%s/real/" SMOL, p.config.out);
    CHECK(mkdir_p(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/real/" SMOL "/ppl.json", p.config.out);
    test_write_text(path, "{\"perplexity\": 23.2271, \"windows\": 3, \"tokens_scored\": 765}\n");
    snprintf(path, sizeof path, "%s/real/" SMOL "/generate.json", p.config.out);
    test_write_text(path, "{\"summary\": {\"generation_tokens_per_second\": 123.44}, \"tokens\": [{}, {}, {}]}\n");
    text = section(&p);
    CHECK(text && strstr(text, "| " SMOL " | 3 (765) | 23.2271 | 23.1896 | +0.16% (within 0.5%) | 22.7569 over 100 "
                               "| 123.4 (3 tokens) |\n"));
    if (text)
        printf("%s", text);
    free(text);
    repro_plan_free(&p);
    plan(REPRO_TINY, data, &p);
    text = section(&p);
    CHECK_STR(text, ""); /* the tiny tier: no such part */
    free(text);
    repro_plan_free(&p);
}

/* configs/llama_cpp/perplexity.json's model name against
 * tests/data/gguf/real/NAME.json: the same numbers, read alike. */
static void same_as_reference(const cJSON *copy)
{
    char path[1024];
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(copy, "name"));
    snprintf(path, sizeof path, "%s/gguf/real/%s.json", TEST_DATA_DIR, name ? name : "");
    cJSON *ref = read_json_file(path);
    const cJSON *ppl = cJSON_GetObjectItemCaseSensitive(ref, "perplexity"), *w;
    CHECK(ref && cJSON_IsObject(ppl));
    static const char *const keys[] = {"ppl", "n_ctx", "first", "windows", "scored_tokens", "corpus_tokens"};
    for (int i = 0; i < 6; i++)
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(copy, keys[i])) ==
              cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ppl, keys[i])));
    const cJSON *nll = cJSON_GetObjectItemCaseSensitive(copy, "window_nll");
    int i = 0, n = 0;
    cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(ppl, "per_window"))
    {
        n++;
        i += cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(w, "nll")) ==
             cJSON_GetNumberValue(cJSON_GetArrayItem(nll, n - 1));
    }
    CHECK(n > 0 && i == n && cJSON_GetArraySize(nll) == n);
    cJSON_Delete(ref);
}

static void configs_copy(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/llama_cpp/perplexity.json", set.configs_dir);
    cJSON *o = read_json_file(path), *m;
    int models = 0;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(o, "models"))
    {
        same_as_reference(m);
        models++;
    }
    CHECK(models == 2);
    cJSON_Delete(o);
}

/* tools/fetch-models.sh's folder (gguf_dir/NAME/FILE) is looked in first:
 * Gemma, absent from the shared data, is planned from there, and SmolLM2
 * from there too when both hold it. */
static void fetched(const char *data)
{
    char dir[600], path[1024];
    snprintf(dir, sizeof dir, "%s/fetched", root);
    static const char *const files[] = {"gemma3-270m/gemma-3-270m-q4_k_m.gguf",
                                        "smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)(strchr(files[i], '/') - files[i]), files[i]);
        CHECK(mkdir_p(path, 0755) == 0);
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        test_write_text(path, "");
    }
    struct repro_plan p;
    plan_in(REPRO_QUICK, data, dir, &p);
    const struct repro_step *g = step(&p, "real-model-gemma3-270m-q4_k_m"), *s = step(&p, "real-model-" SMOL);
    snprintf(path, sizeof path, "%s/%s", dir, files[0]);
    CHECK(g && g->args[1] && !strcmp(g->args[1], path));
    snprintf(path, sizeof path, "%s/%s", dir, files[1]);
    CHECK(s && s->args[1] && !strcmp(s->args[1], path));
    CHECK(step(&p, "real-ppl-gemma3-270m-q4_k_m") != NULL);
    CHECK_STR(p.real_left_out, "");
    repro_plan_free(&p);
}

int main(void)
{
    set = fb_settings_defaults();
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    char data[512];
    fake_data(data, sizeof data);
    planned(data);
    report(data);
    fetched(data);
    configs_copy();
    fs_remove_tree(root);
    return check_report("test_reproduce_real");
}
