/* REPORT.md's training-free sparsity section with the fixtures' shapes
 * (harness/reproduce_sparsity_shapes.c), from cell files this test writes
 * into a quick plan's folder (the plan needs only that the shared data's
 * files exist: empty ones here): the shapes' table has a row per source
 * and sparsity, a column per model with stories260K's first, each cell the
 * FFN KB per token, its share of dense and ms; a cell not measured is a
 * dash; no shape's perplexity in the table, their dense ones, spread and
 * tied heads said in the text; cells reading less than 1 - S listed; only
 * stories260K called trained; the `sparsify study` command given. The tiny
 * tier, which plans no shapes, has no such part. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/fsutil.h"
#include "common/strbuf.h"
#include "harness/reproduce.h"
#include "harness/reproduce_tables.h"
#include "test_files.h"

static char root[] = "/tmp/fb_test_reproduce_sparsity_report_XXXXXX";
static struct fb_settings set;

/* Empty files where the plan looks for the shared data. */
static void fake_data(char *data, size_t len)
{
    char path[1024];
    snprintf(data, len, "%s/data", root);
    snprintf(path, sizeof path, "%s/models/stories260K", data);
    CHECK(mkdir_p(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/corpus", data);
    CHECK(mkdir_p(path, 0755) == 0);
    static const char *const files[] = {"models/stories260K/stories260K.bin", "models/stories260K/tok512.bin",
                                        "corpus/tinystories_sample.txt"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", data, files[i]);
        test_write_text(path, "");
    }
}

static void plan(enum repro_tier tier, const char *data, struct repro_plan *p)
{
    char out[512], err[512];
    snprintf(out, sizeof out, "%s/study-%d", root, (int)tier);
    static char outs[3][512];
    snprintf(outs[tier], sizeof outs[tier], "%s", out);
    struct repro_config c = {.tier = tier, .n_models = 1, .models = {"falcon"}, .out = outs[tier],
                             .disk = outs[tier], .data = data, .settings = &set, .mem_bytes = 1ull << 30};
    CHECK(repro_plan_build(&c, p, err, sizeof err) == 0);
}

/* A cell as perplexity --json writes it (the keys the report reads). */
static void cell(const struct repro_plan *p, const char *dir, const char *name, double ppl, double bytes,
                 double dense_bytes, double ms)
{
    char path[4400], text[512];
    snprintf(path, sizeof path, "%s/%s/tinystories", p->config.out, dir);
    CHECK(mkdir_p(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/%s/tinystories/%s.json", p->config.out, dir, name);
    snprintf(text, sizeof text, "{\"perplexity\": %.17g, \"ffn_bytes_per_token\": %.17g, "
             "\"dense_ffn_bytes_per_token\": %.17g, \"ms_per_token\": %.17g}\n", ppl, bytes, dense_bytes, ms);
    test_write_text(path, text);
}

/* stories260K: dense and gate at 0.5; each shape m: dense (perplexity
 * 500 + m, 0.1 (m + 1) ms), gate and teal at every sparsity (1 - S of the
 * bytes; gate 10% above dense's perplexity, teal 5% below), drelu-tiny's
 * gate at 0.25 at half the bytes, gate-cal not measured. */
static void write_cells(const struct repro_plan *p)
{
    cell(p, "sparsity", "dense", 4.5, 660480, 660480, 0.55);
    cell(p, "sparsity", "gate-s50", 7.0, 330240, 660480, 1.25);
    for (size_t m = 0; m < p->n_shapes; m++) {
        const struct repro_sparsity *z = &p->shapes[m];
        double d = 500 + (double)m;
        cell(p, z->dir, "dense", d, 132096, 132096, 0.1 * (double)(m + 1));
        for (size_t i = 0; i < z->n_sparsities; i++) {
            char name[32];
            double s = z->sparsities[i], share = (m == 5 && i == 0) ? 0.5 : 1 - s;
            snprintf(name, sizeof name, "gate-s%02.0f", 100 * s);
            cell(p, z->dir, name, 1.1 * d, share * 132096, 132096, 0.25);
            snprintf(name, sizeof name, "teal-s%02.0f", 100 * s);
            cell(p, z->dir, name, 0.95 * d, (1 - s) * 132096, 132096, 0.5);
        }
    }
}

/* The lines of the shapes' table: from its header to the blank line. */
static size_t table_rows(const char *text, const char *header)
{
    const char *t = strstr(text, header);
    size_t n = 0;
    for (const char *l = t; l && *l == '|'; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        n++;
    return n;
}

static void quick_shapes(const char *data)
{
    struct repro_plan p;
    plan(REPRO_QUICK, data, &p);
    CHECK_U64(p.n_shapes, 6);
    write_cells(&p);
    struct strbuf b = {0};
    repro_section_sparsity(&b, &p);
    char *text = strbuf_take(&b);
    CHECK(text != NULL);
    if (!text) {
        repro_plan_free(&p);
        return;
    }
    CHECK(strstr(text, "### The same study on the fixtures' GLU shapes (random weights)\n\n**Only stories260K is "
                       "a trained model here.** llama3-tiny, mistral-tiny, qwen2-tiny, qwen3-tiny, phi3-tiny, "
                       "drelu-tiny are the tiny shapes") != NULL);
    const char *header = "| source | setting | stories260K (trained, f32) | llama3-tiny (random, f16) | mistral-tiny "
                         "(random, f16) | qwen2-tiny (random, f16) | qwen3-tiny (random, f16) | phi3-tiny (random, "
                         "f16) | drelu-tiny (random, f16) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
    CHECK(strstr(text, header) != NULL);
    CHECK_U64(table_rows(text, header), 2 + 1 + 3 * 4); /* header, rule, dense, 3 sources x 4 sparsities */
    CHECK(strstr(text, "| dense | every neuron | 660.5 KB (100.0%), 0.55 ms | 132.1 KB (100.0%), 0.10 ms | 132.1 KB "
                       "(100.0%), 0.20 ms | 132.1 KB (100.0%), 0.30 ms | 132.1 KB (100.0%), 0.40 ms | 132.1 KB "
                       "(100.0%), 0.50 ms | 132.1 KB (100.0%), 0.60 ms |\n") != NULL);
    CHECK(strstr(text, "| gate | S = 0.5 | 330.2 KB (50.0%), 1.25 ms | 66.0 KB (50.0%), 0.25 ms | 66.0 KB (50.0%), "
                       "0.25 ms | 66.0 KB (50.0%), 0.25 ms | 66.0 KB (50.0%), 0.25 ms | 66.0 KB (50.0%), 0.25 ms | "
                       "66.0 KB (50.0%), 0.25 ms |\n") != NULL);
    CHECK(strstr(text, "| gate | S = 0.25 | — | 99.1 KB (75.0%), 0.25 ms |") != NULL);
    CHECK(strstr(text, "(75.0%), 0.25 ms | 66.0 KB (50.0%), 0.25 ms |\n| gate | S = 0.5 |") != NULL); /* drelu */
    CHECK(strstr(text, "| gate-cal | S = 0.9 | — | — | — | — | — | — | — |\n") != NULL);
    CHECK(strstr(text, "| teal | S = 0.7 | — | 39.6 KB (30.0%), 0.50 ms |") != NULL);
    /* the perplexities: in the text, never in the table */
    CHECK(strstr(text, "(dense here: llama3-tiny 500, mistral-tiny 501, qwen2-tiny 502, qwen3-tiny 503, phi3-tiny "
                       "504, drelu-tiny 505; every sparse cell -5.0% to +10.0% of its shape's dense; llama3-tiny "
                       "and qwen2-tiny tie the LM head to the embeddings") != NULL);
    CHECK(strstr(strstr(text, header), "550") == NULL && strstr(strstr(text, header), "475") == NULL);
    CHECK(strstr(text, "\nRead less than 1 - S: drelu-tiny gate at S = 0.25 (50.0%): a ReLU-gated FFN") != NULL);
    CHECK(strstr(text, "`flashbed sparsify study --model DIR --text FILE[,FILE] --calibration-text FILE") != NULL);
    CHECK(strstr(text, "stories260K is a trained model: its perplexities measure") != NULL);
    free(text);
    repro_plan_free(&p);
}

static void tiny_none(const char *data)
{
    struct repro_plan p;
    plan(REPRO_TINY, data, &p);
    CHECK_U64(p.n_shapes, 0);
    struct strbuf b = {0};
    repro_section_sparsity(&b, &p);
    char *text = strbuf_take(&b);
    CHECK(text && strstr(text, "## Training-free sparsity: quality against bytes (stories260K)") != NULL);
    CHECK(text && strstr(text, "fixtures' GLU shapes") == NULL);
    free(text);
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
    quick_shapes(data);
    tiny_none(data);
    fs_remove_tree(root);
    return check_report("test_reproduce_sparsity_report");
}
