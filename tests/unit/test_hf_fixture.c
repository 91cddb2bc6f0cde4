/* Each architecture against Hugging Face transformers: tests/data/<arch>_fixture
 * holds a tiny random model built from its config and saved by
 * transformers, and its reference logits (tools/make_hf_fixture.py: OPT,
 * Falcon with ReLU and with GELU, Persimmon, Phi-2 with ReLU and with tanh
 * GELU, a ReLU Llama). Each folder is converted with flashbed's importer and
 * every logit must be within 1e-4 in f32; OPT's byte-level tokenizer must
 * give the tokenizers library's ids. A fixture not generated yet (it needs
 * torch and transformers) is skipped, saying so; the test skips (77) when
 * none is there. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "arch_fixture.h"
#include "check.h"
#include "common/json_file.h"
#include "engine/engine.h"
#include "engine/import.h"

/* Where the library says why a call failed (it prints nothing itself). */
static char why[1024];

/* The byte-level tokenizer against the tokenizers library's ids. */
static void check_tokenizer_cases(const char *fixture, const cJSON *ref, int vocab)
{
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(ref, "tokenizer_cases"), *c;
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/tokenizer.json", fixture);
    struct tokenizer t;
    if (cJSON_GetArraySize(cases) == 0 || tokenizer_load_hf_bytelevel(&t, path, vocab, err, sizeof err) != 0)
        return;
    cJSON_ArrayForEach(c, cases)
    {
        const char *s = cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring;
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "ids");
        int got[256];
        size_t n = tokenizer_encode(&t, s, strlen(s), false, got);
        bool same = (int)n == cJSON_GetArraySize(want);
        for (size_t i = 0; same && i < n; i++)
            same = got[i] == (int)cJSON_GetArrayItem(want, (int)i)->valuedouble;
        if (!same)
            fprintf(stderr, "%s: tokenizer case \"%s\" differs from the tokenizers library\n", fixture, s);
        CHECK(same);
    }
    tokenizer_free(&t);
}

/* Converts one fixture and compares its logits: 1 checked, 0 not there. */
static int check_fixture(const char *fixture)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/reference.json", fixture);
    char *text = read_text_file(path, NULL);
    if (!text) {
        printf("skipped: %s not generated yet (run tools/make_hf_fixture.py where transformers is installed)\n",
               path);
        return 0;
    }
    cJSON *ref = cJSON_Parse(text);
    free(text);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(ref, "token_ids");
    const cJSON *logits = cJSON_GetObjectItemCaseSensitive(ref, "logits");
    CHECK(cJSON_IsArray(ids) && cJSON_IsArray(logits));
    char tmp[] = "/tmp/flashbed-test-hf-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    int vocab = cJSON_GetArraySize(cJSON_GetArrayItem(logits, 0));
    char tok[600], dir[600];
    snprintf(tok, sizeof tok, "%s/tok.bin", tmp);
    snprintf(dir, sizeof dir, "%s/m", tmp);
    /* the logits do not depend on the tokenizer: placeholder pieces */
    CHECK(fx_write_tokenizer(tok, (uint32_t)vocab) == 0);
    int imported = import_hf(fixture, tok, dir, DTYPE_F32, why, sizeof why) == 0;
    if (!imported)
        fprintf(stderr, "%s: %s\n", fixture, why);
    CHECK(imported);
    struct model m;
    struct engine e;
    if (imported && model_open(&m, dir, why, sizeof why) == 0) {
        CHECK(engine_init(&e, &m, &backend_cpu, &ffn_dense, 2, 0, why, sizeof why) == 0);
        double worst = 0;
        for (int p = 0; p < cJSON_GetArraySize(ids); p++) {
            engine_forward(&e, (int)cJSON_GetArrayItem(ids, p)->valuedouble, p);
            const cJSON *row = cJSON_GetArrayItem(logits, p);
            for (int v = 0; v < vocab; v++)
                worst = fmax(worst, fabs(cJSON_GetArrayItem(row, v)->valuedouble - e.s.logits[v]));
        }
        printf("%s: max |logit - reference| = %.3g\n", fixture, worst);
        CHECK(worst <= 1e-4);
        engine_free(&e);
        model_close(&m);
    }
    check_tokenizer_cases(fixture, ref, vocab);
    const char *files[] = {"model.json", "dram.bin", "ffn.bin", "tokenizer.bin", "tokenizer.json"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    unlink(tok);
    rmdir(tmp);
    cJSON_Delete(ref);
    return 1;
}

int main(void)
{
    /* FLASHBED_HF_FIXTURE: one other folder of the same layout (engine_hf.sh
     * points it at the standard-library OPT of make_hf_models.py) */
    const char *one = getenv("FLASHBED_HF_FIXTURE");
    int checked = 0;
    if (one && *one) {
        checked = check_fixture(one);
    } else {
        const char *archs[] = {"opt", "falcon", "falcon-gelu", "persimmon", "phi", "phi-gelu", "llama-relu"};
        for (size_t i = 0; i < sizeof archs / sizeof *archs; i++) {
            char fixture[512];
            snprintf(fixture, sizeof fixture, "%s/%s_fixture", TEST_DATA_DIR, archs[i]);
            checked += check_fixture(fixture);
        }
    }
    if (!checked)
        return 77;
    return check_report("test_hf_fixture");
}
