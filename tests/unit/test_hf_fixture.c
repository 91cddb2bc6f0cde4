/* Each architecture against Hugging Face transformers: tests/data/<arch>_fixture
 * holds a tiny random model built from its config and saved by transformers
 * on the CPU, with transformers' logits at every position of a 64-token
 * prompt and its 8-token greedy continuation (tools/make_hf_fixture.py: OPT,
 * Llama with SwiGLU and with ReLU, Falcon with ReLU and with GELU,
 * Persimmon, Phi-2 with ReLU and with tanh GELU). Each folder is converted
 * with flashbed's importer, in f32 and in f16, and the dense engine runs the
 * whole sequence through its KV cache:
 *   f32: every logit within 1e-4 of transformers', and the same greedy
 *        continuation (the argmax at each generated position is the next id);
 *   f16: every logit within HF_F16_TOLERANCE, and the same continuation
 *        where transformers' winner leads by more than twice that.
 * OPT's byte-level tokenizer must give the tokenizers library's ids. A
 * fixture that is missing or disagrees with itself or its safetensors
 * fails, naming the file (hf_reference.h); the refusals are tested on
 * damaged copies of the OPT fixture. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "arch_fixture.h"
#include "check.h"
#include "common/fsutil.h"
#include "engine/forward/engine.h"
#include "engine/forward/sampler.h"
#include "engine/import/import.h"
#include "hf_reference.h"

/* f32 rounding of every weight to f16 moves these models' logits (|logit|
 * up to ~3) by at most ~3e-3 (measured: see docs/reference-numerics.md); this bound leaves a
 * margin while still failing on a wrong f16 conversion, which moves them
 * by the logits' own size. */
#define HF_F32_TOLERANCE 1e-4
#define HF_F16_TOLERANCE 1e-2

static char why[8192];

/* The byte-level tokenizer against the tokenizers library's ids. */
static void check_tokenizer_cases(const char *fixture, const cJSON *ref, int vocab)
{
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(ref, "tokenizer_cases"), *c;
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/tokenizer.json", fixture);
    struct tokenizer t;
    if (cJSON_GetArraySize(cases) == 0)
        return;
    int loaded = tokenizer_load_hf_bytelevel(&t, path, vocab, err, sizeof err) == 0;
    if (!loaded)
        fprintf(stderr, "%s: %s\n", path, err);
    CHECK(loaded);
    if (!loaded)
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

/* What one conversion's run gave against the reference. */
struct hf_compare {
    double worst;      /* max |logit - reference| over every position */
    int greedy;        /* generated positions whose argmax is the reference's next id */
    int greedy_steps;  /* generated positions compared */
    int greedy_sure;   /* of those, where the reference's winner leads by > 2 tolerances */
    int greedy_sure_ok;
    /* longrope: the worst below the original context (short factors) and
     * from it (long factors); otherwise worst_short is worst */
    double worst_short, worst_long;
};

/* The reference's lead of its winner at position p over the runner-up. */
static double reference_lead(const struct hf_reference *r, int p)
{
    const float *row = r->logits + (size_t)p * (size_t)r->vocab;
    int w = argmax(row, r->vocab);
    double second = -INFINITY;
    for (int v = 0; v < r->vocab; v++)
        if (v != w && row[v] > second)
            second = row[v];
    return row[w] - second;
}

/* Runs the reference's ids through the engine, position by position
 * through its KV cache, and compares every position's logits; from the
 * prompt's last position on, the argmax must be the next reference id
 * (the greedy continuation, teacher-forced on the reference's tokens). */
static void compare_run(struct engine *e, const struct hf_reference *r, double tolerance, struct hf_compare *c)
{
    memset(c, 0, sizeof *c);
    for (int p = 0; p < r->positions; p++) {
        engine_forward(e, r->ids[p], p);
        const float *want = r->logits + (size_t)p * (size_t)r->vocab;
        double *part = arch_rope_table_at(&e->m->arch, p) ? &c->worst_long : &c->worst_short;
        for (int v = 0; v < r->vocab; v++) {
            c->worst = fmax(c->worst, fabs((double)want[v] - e->s.logits[v]));
            *part = fmax(*part, fabs((double)want[v] - e->s.logits[v]));
        }
        if (p < r->n_prompt - 1 || p + 1 >= r->positions)
            continue;
        bool same = argmax(e->s.logits, r->vocab) == r->ids[p + 1];
        c->greedy_steps++;
        c->greedy += same;
        if (reference_lead(r, p) > 2 * tolerance) {
            c->greedy_sure++;
            c->greedy_sure_ok += same;
        }
    }
}

/* The fixture converted in dtype to tmp/<name>, opened and compared (with
 * long_as_short, longrope's long factors replaced by the short ones once
 * loaded: the negative control); the converted folder is removed. 0, or
 * -1 with why. */
static int run_conversion(const char *fixture, const char *tmp, enum fb_dtype dtype, const struct hf_reference *r,
                          double tolerance, bool long_as_short, struct hf_compare *c)
{
    const struct fb_settings set = fb_settings_defaults();
    char tok[1200], dir[1200];
    snprintf(tok, sizeof tok, "%s/tok.bin", tmp);
    /* the logits do not depend on the tokenizer: placeholder pieces, as
     * many as config.json's vocabulary (the reference's is checked below) */
    snprintf(dir, sizeof dir, "%s/config.json", fixture);
    cJSON *config = read_json_file(dir);
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(config, "vocab_size");
    int pieces = cJSON_IsNumber(vocab) && vocab->valuedouble >= 1 && vocab->valuedouble <= HF_REF_MAX_VOCAB
                     ? (int)vocab->valuedouble
                     : r->vocab;
    cJSON_Delete(config);
    if (fx_write_tokenizer(tok, (uint32_t)pieces) != 0)
        return snprintf(why, sizeof why, "cannot write %s", tok), -1;
    snprintf(dir, sizeof dir, "%s/%s", tmp, wtype_name(dtype));
    struct import_dtype dt = {.keep = false, .dtype = dtype};
    if (import_hf(fixture, tok, dir, &dt, NULL, why, sizeof why) != 0)
        return -1;
    struct model m;
    struct engine e;
    int rc = -1;
    if (model_open(&m, dir, why, sizeof why) == 0) {
        if (long_as_short)
            memcpy(m.arch.rope_long_factor, m.arch.rope_short_factor, sizeof m.arch.rope_long_factor);
        if (hf_reference_fits(r, fixture, (int)m.shape.vocab_size, (int)m.shape.max_positions, why, sizeof why) == 0 &&
            engine_init(&e, &set, &m, &backend_cpu, &ffn_dense, 2, r->positions, why, sizeof why) == 0) {
            compare_run(&e, r, tolerance, c);
            engine_free(&e);
            rc = 0;
        }
        model_close(&m);
    }
    fs_remove_tree(dir);
    return rc;
}

/* One conversion's checks and its line of figures. */
static void check_conversion(const char *fixture, const char *tmp, enum fb_dtype dtype,
                             const struct hf_reference *r, double tolerance)
{
    struct hf_compare c;
    int ran = run_conversion(fixture, tmp, dtype, r, tolerance, false, &c) == 0;
    if (!ran)
        fprintf(stderr, "%s (%s): %s\n", fixture, wtype_name(dtype), why);
    CHECK(ran);
    if (!ran)
        return;
    printf("%s %s: max |logit - reference| = %.3g over %d positions; greedy %d of %d equal (%d of %d where "
           "the reference's winner leads by > %g)\n",
           fixture, wtype_name(dtype), c.worst, r->positions, c.greedy, c.greedy_steps, c.greedy_sure_ok,
           c.greedy_sure, 2 * tolerance);
    CHECK(c.worst <= tolerance);
    CHECK(c.greedy_steps == r->positions - r->n_prompt);
    CHECK_U64(c.greedy_sure_ok, c.greedy_sure);
    if (dtype == DTYPE_F32)
        CHECK_U64(c.greedy, c.greedy_steps);
}

/* A fixture in f32 and in f16, and its tokenizer cases. */
static void check_fixture(const char *fixture)
{
    struct hf_reference r;
    int loaded = hf_reference_load(&r, fixture, why, sizeof why) == 0;
    if (!loaded)
        fprintf(stderr, "%s\n", why);
    CHECK(loaded);
    if (!loaded)
        return;
    char tmp[] = "/tmp/flashbed-test-hf-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    check_conversion(fixture, tmp, DTYPE_F32, &r, HF_F32_TOLERANCE);
    check_conversion(fixture, tmp, DTYPE_F16, &r, HF_F16_TOLERANCE);
    check_tokenizer_cases(fixture, r.json, r.vocab);
    fs_remove_tree(tmp);
    hf_reference_free(&r);
}

/* The negative control of a longrope fixture: with the long factors
 * ignored (the short ones in their place) the positions below the original
 * context still match, and those from it move by far more than the
 * tolerance (transformers' own logits move by 1.3: reference.json's
 * long_factors_ignored_max_abs_diff). */
static void check_long_factors_matter(const char *fixture)
{
    struct hf_reference r;
    if (hf_reference_load(&r, fixture, why, sizeof why) != 0)
        return; /* check_fixture has failed on it already */
    char tmp[] = "/tmp/flashbed-test-hf-long-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    struct hf_compare c;
    int ran = run_conversion(fixture, tmp, DTYPE_F32, &r, HF_F32_TOLERANCE, true, &c) == 0;
    if (!ran)
        fprintf(stderr, "%s (long factors ignored): %s\n", fixture, why);
    CHECK(ran);
    if (ran)
        printf("%s with the long factors ignored: max |logit - reference| = %.3g below the original context, %.3g "
               "from it\n",
               fixture, c.worst_short, c.worst_long);
    CHECK(ran && c.worst_short <= HF_F32_TOLERANCE && c.worst_long > 0.1);
    fs_remove_tree(tmp);
    hf_reference_free(&r);
}

/* ---- refusals, on damaged copies of a fixture ---- */

/* Writes len bytes of data to path; 0 or -1. */
static int write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(data, 1, len, f);
    return fclose(f) == 0 && n == len ? 0 : -1;
}

/* dst/name as a copy of src/name, its first keep bytes (all when keep is
 * SIZE_MAX); with poke >= 0 the f32 at byte poke becomes NaN. */
static int copy_file(const char *src, const char *dst, const char *name, size_t keep, long poke)
{
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/%s", src, name);
    snprintf(b, sizeof b, "%s/%s", dst, name);
    size_t len = 0;
    char *data = read_text_file(a, &len);
    if (!data)
        return -1;
    if (poke >= 0 && (size_t)poke + sizeof(float) <= len)
        memcpy(data + poke, &(float){NAN}, sizeof(float));
    int rc = write_bytes(b, data, keep < len ? keep : len);
    free(data);
    return rc;
}

/* dst/reference.json: src's with one edit (a member of "logits", or an
 * element of an id list, or a list shortened by one). */
enum ref_edit { EDIT_NONE, EDIT_VOCAB, EDIT_PROMPT_ID, EDIT_DROP_GREEDY };
static int edit_reference(const char *src, const char *dst, enum ref_edit edit, int value)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/reference.json", src);
    cJSON *j = read_json_file(path);
    if (!j)
        return -1;
    if (edit == EDIT_VOCAB)
        cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "logits"), "vocab"),
                             value);
    if (edit == EDIT_PROMPT_ID)
        cJSON_SetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "prompt_ids"), 5), value);
    if (edit == EDIT_DROP_GREEDY)
        cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(j, "greedy_ids"), 0);
    char *text = cJSON_PrintUnformatted(j);
    snprintf(path, sizeof path, "%s/reference.json", dst);
    int rc = text ? write_bytes(path, text, strlen(text)) : -1;
    free(text);
    cJSON_Delete(j);
    return rc;
}

/* One damaged copy of fixture: it must be refused, naming the file, with
 * the words `want` in the message. */
struct damage {
    const char *what, *want;
    enum ref_edit edit;
    int value;
    size_t logits_keep; /* bytes of logits.f32 kept */
    long nan_at;        /* byte of logits.f32 made NaN, or -1 */
};

static void check_refused(const char *fixture, const char *tmp, const struct damage *d)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/bad", tmp);
    CHECK(mkdir_p(dir, 0755) == 0);
    CHECK(copy_file(fixture, dir, "config.json", SIZE_MAX, -1) == 0);
    CHECK(copy_file(fixture, dir, "model.safetensors", SIZE_MAX, -1) == 0);
    CHECK(copy_file(fixture, dir, "logits.f32", d->logits_keep, d->nan_at) == 0);
    CHECK(edit_reference(fixture, dir, d->edit, d->value) == 0);
    struct hf_reference r;
    struct hf_compare c;
    why[0] = '\0';
    bool refused = hf_reference_load(&r, dir, why, sizeof why) != 0;
    if (!refused) {
        refused = run_conversion(dir, tmp, DTYPE_F32, &r, HF_F32_TOLERANCE, false, &c) != 0;
        hf_reference_free(&r);
    }
    bool named = strstr(why, dir) && strstr(why, d->want);
    if (!refused || !named)
        fprintf(stderr, "damaged fixture (%s): refused %d, message \"%s\", want \"%s\"\n", d->what, refused, why,
                d->want);
    CHECK(refused && named);
    fs_remove_tree(dir);
}

static void check_refusals(const char *fixture)
{
    struct hf_reference r;
    if (hf_reference_load(&r, fixture, why, sizeof why) != 0)
        return; /* check_fixture has failed on it already */
    size_t bytes = (size_t)r.positions * (size_t)r.vocab * sizeof(float);
    size_t small = (size_t)r.positions * 256 * sizeof(float);
    int vocab = r.vocab, outside = r.vocab + 80;
    hf_reference_free(&r);
    char out_msg[64];
    snprintf(out_msg, sizeof out_msg, "prompt_ids[5] = %d is outside the vocabulary", outside);
    const struct damage cases[] = {
        {"an id outside the vocabulary", out_msg, EDIT_PROMPT_ID, outside, SIZE_MAX, -1},
        {"a NaN logit", "logits.f32: logit 40 of position 3 is nan", EDIT_NONE, 0, SIZE_MAX,
         (long)((3 * (size_t)vocab + 40) * sizeof(float))},
        {"logits.f32 cut short", "logits.f32: ", EDIT_NONE, 0, bytes - 4, -1},
        {"a vocabulary the safetensors do not have", "model.safetensors has", EDIT_VOCAB, 256, small, -1},
        {"positions against the id lists", "greedy_ids, but logits.positions", EDIT_DROP_GREEDY, 0, SIZE_MAX, -1},
    };
    char tmp[] = "/tmp/flashbed-test-hf-bad-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_refused(fixture, tmp, &cases[i]);
    fs_remove_tree(tmp);
}

int main(void)
{
    /* FLASHBED_HF_FIXTURE: one other folder of the same layout (engine_hf.sh
     * points it at the standard-library OPT of make_hf_models.py) */
    const char *one = getenv("FLASHBED_HF_FIXTURE");
    if (one && *one) {
        check_fixture(one);
        return check_report("test_hf_fixture");
    }
    const char *archs[] = {"opt",      "llama", "llama-relu", "falcon", "falcon-gelu", "persimmon", "phi",
                           "phi-gelu", "llama3", "mistral",   "qwen2",  "qwen3",
                           "phi3",     "drelu", "prosparse", "phi3_longrope"};
    for (size_t i = 0; i < sizeof archs / sizeof *archs; i++) {
        char fixture[512];
        snprintf(fixture, sizeof fixture, "%s/%s_fixture", TEST_DATA_DIR, archs[i]);
        check_fixture(fixture);
    }
    check_long_factors_matter(TEST_DATA_DIR "/phi3_longrope_fixture");
    check_refusals(TEST_DATA_DIR "/opt_fixture");
    return check_report("test_hf_fixture");
}
