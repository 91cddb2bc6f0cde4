/* OPT against Hugging Face transformers: tests/data/opt_fixture holds a tiny
 * random OPT saved by transformers and its reference logits
 * (tools/make_opt_fixture.py). The folder is converted with flashbed's
 * importer and every logit must be within 1e-4 in f32; the byte-level
 * tokenizer must give the tokenizers library's ids. Skips (77), saying so,
 * while the fixture has not been generated (it needs torch/transformers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "common/json_file.h"
#include "engine/engine.h"
#include "engine/import.h"

/* Where the library says why a call failed (it prints nothing itself). */
static char why[1024];

int main(void)
{
    /* FLASHBED_OPT_FIXTURE: another folder of the same layout (engine_hf.sh
     * points it at the standard-library OPT of make_hf_models.py) */
    const char *fixture = getenv("FLASHBED_OPT_FIXTURE");
    if (!fixture || !*fixture)
        fixture = TEST_DATA_DIR "/opt_fixture";
    char path[4096];
    snprintf(path, sizeof path, "%s/reference.json", fixture);
    char *text = read_text_file(path, NULL);
    if (!text) {
        printf("skipped: %s not generated yet (run tools/make_opt_fixture.py where transformers is installed)\n",
               path);
        return 77;
    }
    cJSON *ref = cJSON_Parse(text);
    free(text);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(ref, "token_ids");
    const cJSON *logits = cJSON_GetObjectItemCaseSensitive(ref, "logits");
    CHECK(cJSON_IsArray(ids) && cJSON_IsArray(logits));

    char tmp[] = "/tmp/flashbed-test-opt-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    /* the logits do not depend on the tokenizer: a placeholder of the vocab size */
    int vocab = cJSON_GetArraySize(cJSON_GetArrayItem(logits, 0));
    char tok[600], dir[600];
    snprintf(tok, sizeof tok, "%s/tok.bin", tmp);
    snprintf(dir, sizeof dir, "%s/m", tmp);
    FILE *f = fopen(tok, "wb");
    int32_t max = 8;
    fwrite(&max, 4, 1, f);
    for (int i = 0; i < vocab; i++) {
        char p[16];
        snprintf(p, sizeof p, "t%d", i);
        float score = -1e10f;
        int32_t len = (int32_t)strlen(p);
        fwrite(&score, 4, 1, f);
        fwrite(&len, 4, 1, f);
        fwrite(p, 1, (size_t)len, f);
    }
    fclose(f);
    CHECK(import_hf(fixture, tok, dir, DTYPE_F32, why, sizeof why) == 0);
    struct model m;
    struct engine e;
    CHECK(model_open(&m, dir, why, sizeof why) == 0);
    CHECK(engine_init(&e, &m, &backend_cpu, &ffn_dense, 2, 0, why, sizeof why) == 0);
    double worst = 0;
    for (int p = 0; p < cJSON_GetArraySize(ids); p++) {
        engine_forward(&e, (int)cJSON_GetArrayItem(ids, p)->valuedouble, p);
        const cJSON *row = cJSON_GetArrayItem(logits, p);
        for (int v = 0; v < vocab; v++)
            worst = fmax(worst, fabs(cJSON_GetArrayItem(row, v)->valuedouble - e.s.logits[v]));
    }
    printf("max |logit - reference| = %.3g\n", worst);
    CHECK(worst <= 1e-4);
    engine_free(&e);
    model_close(&m);
    /* the byte-level tokenizer against the tokenizers library's ids */
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(ref, "tokenizer_cases"), *c;
    snprintf(path, sizeof path, "%s/tokenizer.json", fixture);
    struct tokenizer t;
    char err[512];
    if (cJSON_GetArraySize(cases) > 0 && tokenizer_load_hf_bytelevel(&t, path, vocab, err, sizeof err) == 0) {
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
                fprintf(stderr, "tokenizer case \"%s\" differs from the tokenizers library\n", s);
            CHECK(same);
        }
        tokenizer_free(&t);
    }
    const char *files[] = {"model.json", "dram.bin", "ffn.bin", "tokenizer.bin"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    unlink(tok);
    rmdir(tmp);
    cJSON_Delete(ref);
    return check_report("test_opt_fixture");
}
