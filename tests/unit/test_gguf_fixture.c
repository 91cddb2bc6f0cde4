/* flashbed convert of a GGUF file against llama.cpp: tests/data/gguf/
 * <arch>/<TYPE>/ (README.md there) holds a tiny model.gguf, llama.cpp's
 * logits at 80 positions (logits.f32) and reference.json (the ids, the
 * greedy continuation and each step's top-2 margin). For llama, qwen2,
 * qwen3, phi3 and gemma3 and each of the 13 types, the file is converted as
 * stored (every matrix in its GGUF type) and the dense engine runs the 80
 * ids through its KV cache on the CPU backend:
 *   every logit within the type's tolerance (TOLERANCES below, with why),
 *   and the greedy continuation equal wherever llama.cpp's winner leads
 *   by more than the tolerance plus llama.cpp's own single-position noise
 *   there (stepwise_vs_batch_per_position).
 * One quantized fixture is converted with --dtype f32 too: its logits
 * equal the kept-type run's within the same bound. Each run prints its
 * max |Δlogit| (the closing note's table). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "arch_fixture.h"
#include "check.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "engine/forward/engine.h"
#include "engine/forward/sampler.h"
#include "engine/import/import.h"

#ifndef TEST_DATA_DIR
#error TEST_DATA_DIR must name tests/data
#endif

#define N_POSITIONS 80
#define MAX_VOCAB 4096

static char why[8192];

/* The tolerance on |flashbed's logit - llama.cpp's| per type (the tiny
 * random models' logits reach |10|). What the two compute differently:
 * - llama.cpp caches K and V in f16, flashbed in f32; llama.cpp's F16
 *   matmul rounds the activation to f16 before its dot products, BF16's
 *   to bf16 (ggml's vec_dot_type), flashbed keeps it in f32. Measured:
 *   F32 at most 0.009, F16 0.016, BF16 0.096 (bf16's relative 2^-9);
 *   bounds about 2x / 1.5x that.
 * - For the block types both quantize each activation vector to 8-bit
 *   blocks (Q8_0, Q8_K) and compute integer dot products. That rounding
 *   is the largest error in the chain: flashbed's own --dtype f32 run
 *   (weights decoded, activations in f32) differs from its kept run by
 *   0.26 to 0.40 on these models, and llama.cpp differs from each of the
 *   two by as much (0.18 to 0.34, position 0 included), i.e. the two
 *   engines' activation roundings do not fall alike on these models: the
 *   bound is that noise's measured worst (0.34) with headroom, the same
 *   for every block type since the 8-bit activations, not the weights'
 *   bits, dominate it. It still fails a wrong mapping (a RoPE pairing, a
 *   fused split or a q/k row order wrong moves logits by 1 to 10).
 * The greedy continuation must agree wherever llama.cpp's margin exceeds
 * the bound plus its own single-position noise there. */
static const struct {
    const char *type;
    double tolerance;
} TOLERANCES[] = {
    {"F32", 0.02}, {"F16", 0.03}, {"BF16", 0.15}, {"Q4_0", 0.5}, {"Q4_1", 0.5}, {"Q5_0", 0.5}, {"Q5_1", 0.5},
    {"Q8_0", 0.5}, {"Q2_K", 0.5}, {"Q3_K", 0.5},  {"Q4_K", 0.5}, {"Q5_K", 0.5}, {"Q6_K", 0.5},
};
#define N_TYPES (sizeof TOLERANCES / sizeof TOLERANCES[0])

static const char *const ARCHS[] = {"llama", "qwen2", "qwen3", "phi3", "gemma3"};
#define N_ARCHS (sizeof ARCHS / sizeof ARCHS[0])

/* reference.json and logits.f32 of one folder. */
struct gguf_ref {
    int ids[N_POSITIONS];
    int n_prompt, vocab;
    double margin[N_POSITIONS];  /* llama.cpp's top-2 margin at position p (greedy steps only) */
    double stepwise[N_POSITIONS]; /* llama.cpp's single-position against batch logits */
    float *logits;                /* [N_POSITIONS][vocab] */
};

/* Numbers of array key of o into out (at most max); their count, or -1. */
static int numbers(const cJSON *o, const char *key, double *out, int max)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *it;
    int n = 0;
    if (!cJSON_IsArray(a))
        return -1;
    cJSON_ArrayForEach(it, a)
    {
        if (!cJSON_IsNumber(it) || n >= max)
            return -1;
        out[n++] = it->valuedouble;
    }
    return n;
}

static int ref_fill(struct gguf_ref *r, const cJSON *o)
{
    double prompt[N_POSITIONS], greedy[N_POSITIONS], margins[N_POSITIONS];
    int np = numbers(o, "prompt_ids", prompt, N_POSITIONS), ng = numbers(o, "greedy_ids", greedy, N_POSITIONS);
    int nm = numbers(o, "greedy_margins", margins, N_POSITIONS);
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(o, "n_vocab");
    if (np < 1 || ng < 1 || np + ng != N_POSITIONS || nm != ng || !cJSON_IsNumber(vocab) ||
        vocab->valuedouble < 1 || vocab->valuedouble > MAX_VOCAB ||
        numbers(o, "stepwise_vs_batch_per_position", r->stepwise, N_POSITIONS) != N_POSITIONS)
        return -1;
    r->n_prompt = np;
    r->vocab = (int)vocab->valuedouble;
    for (int p = 0; p < N_POSITIONS; p++)
        r->ids[p] = (int)(p < np ? prompt[p] : greedy[p - np]);
    for (int i = 0; i < ng; i++)
        r->margin[np - 1 + i] = margins[i];
    return 0;
}

static int ref_load(struct gguf_ref *r, const char *dir)
{
    char path[1200];
    memset(r, 0, sizeof *r);
    snprintf(path, sizeof path, "%s/reference.json", dir);
    cJSON *o = read_json_file(path);
    int rc = o ? ref_fill(r, o) : -1;
    cJSON_Delete(o);
    if (rc)
        return snprintf(why, sizeof why, "%s: missing or not as tests/data/gguf/README.md says", path), -1;
    snprintf(path, sizeof path, "%s/logits.f32", dir);
    size_t len = 0;
    r->logits = (float *)read_text_file(path, &len);
    if (!r->logits || len != (size_t)N_POSITIONS * (size_t)r->vocab * sizeof(float)) {
        free(r->logits);
        return snprintf(why, sizeof why, "%s: missing or not %d x %d f32", path, N_POSITIONS, r->vocab), -1;
    }
    return 0;
}

/* dir/model.gguf converted into tmp/out (kept as stored unless dtype is
 * given), run through the dense engine over the reference's ids; every
 * position's logits into out [N_POSITIONS][vocab]. The folder is removed.
 * 0, or -1 with why. */
static int run_on(const struct backend_ops *be, const char *dir, const char *tmp, const char *tok,
                  const enum fb_dtype *dtype, const struct gguf_ref *r, float *out)
{
    const struct fb_settings set = fb_settings_defaults();
    char gguf[1200], folder[1200];
    snprintf(gguf, sizeof gguf, "%s/model.gguf", dir);
    snprintf(folder, sizeof folder, "%s/out", tmp);
    struct import_dtype dt = {.keep = !dtype, .dtype = dtype ? *dtype : DTYPE_F16};
    if (import_gguf(gguf, tok, folder, &dt, NULL, why, sizeof why) != 0)
        return -1;
    struct model m;
    struct engine e;
    int rc = -1;
    if (model_open(&m, folder, why, sizeof why) == 0) {
        if ((int)m.shape.vocab_size != r->vocab)
            snprintf(why, sizeof why, "%s: vocabulary %u, reference %d", gguf, m.shape.vocab_size, r->vocab);
        else if (engine_init(&e, &set, &m, be, &ffn_dense, 1, N_POSITIONS, why, sizeof why) == 0) {
            rc = 0;
            for (int p = 0; p < N_POSITIONS && rc == 0; p++) {
                rc = engine_forward(&e, r->ids[p], p);
                memcpy(out + (size_t)p * r->vocab, e.s.logits, (size_t)r->vocab * sizeof *out);
            }
            if (rc)
                snprintf(why, sizeof why, "%s: engine_forward: %s", gguf, e.err);
            engine_free(&e);
        }
        model_close(&m);
    }
    fs_remove_tree(folder);
    return rc;
}

static int run(const char *dir, const char *tmp, const char *tok, const enum fb_dtype *dtype,
               const struct gguf_ref *r, float *out)
{
    return run_on(&backend_cpu, dir, tmp, tok, dtype, r, out);
}

/* max |a - b| over every position's logits */
static double worst(const float *a, const float *b, int vocab)
{
    double w = 0;
    for (size_t i = 0; i < (size_t)N_POSITIONS * (size_t)vocab; i++)
        w = fmax(w, fabs((double)a[i] - b[i]));
    return w;
}

/* The greedy steps whose winner leads by more than the tolerance and
 * llama.cpp's own noise at that position: *sure of them, *same agreeing. */
static void greedy_check(const struct gguf_ref *r, const float *got, double tolerance, int *sure, int *same)
{
    *sure = *same = 0;
    for (int p = r->n_prompt - 1; p + 1 < N_POSITIONS; p++) {
        if (r->margin[p] <= tolerance + r->stepwise[p])
            continue;
        (*sure)++;
        *same += argmax(got + (size_t)p * r->vocab, r->vocab) == r->ids[p + 1];
    }
}

/* One arch and type: its max |Δlogit| checked and printed, and returned
 * (-1 when it did not run). kept_out: the run's logits, for the caller. */
static double check_one(const char *arch, int type, const char *tmp, const char *tok, float *got)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/gguf/%s/%s", TEST_DATA_DIR, arch, TOLERANCES[type].type);
    struct gguf_ref r;
    double tol = TOLERANCES[type].tolerance;
    int ok = ref_load(&r, dir) == 0 && run(dir, tmp, tok, NULL, &r, got) == 0;
    if (!ok)
        fprintf(stderr, "%s: %s\n", dir, why);
    CHECK(ok);
    if (!ok)
        return -1;
    double w = worst(got, r.logits, r.vocab);
    int sure, same;
    greedy_check(&r, got, tol, &sure, &same);
    printf("%-6s %-5s max |dlogit| %.4g (tolerance %g); greedy %d of %d equal where llama.cpp leads by more\n", arch,
           TOLERANCES[type].type, w, tol, same, sure);
    CHECK(w <= tol);
    CHECK_U64(same, sure);
    free(r.logits);
    return w;
}

/* --dtype f32 on a quantized fixture: everything decoded, the same
 * function within the type's tolerance of the kept run (kept). */
static void check_decoded(const char *arch, int type, const char *tmp, const char *tok, const float *kept)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/gguf/%s/%s", TEST_DATA_DIR, arch, TOLERANCES[type].type);
    struct gguf_ref r;
    enum fb_dtype f32 = DTYPE_F32;
    float *got = malloc((size_t)N_POSITIONS * MAX_VOCAB * sizeof *got);
    int ok = got && ref_load(&r, dir) == 0 && run(dir, tmp, tok, &f32, &r, got) == 0;
    if (!ok)
        fprintf(stderr, "%s (--dtype f32): %s\n", dir, why);
    CHECK(ok);
    if (ok) {
        double w = worst(got, kept, r.vocab);
        printf("%-6s %-5s --dtype f32 against as stored: max |dlogit| %.4g (tolerance %g); against llama.cpp %.4g\n",
               arch, TOLERANCES[type].type, w, TOLERANCES[type].tolerance, worst(got, r.logits, r.vocab));
        CHECK(w <= TOLERANCES[type].tolerance);
        free(r.logits);
    }
    free(got);
}

/* arch's fixture of type on every other backend here (describe: the
 * device present, else skipped, saying so): sim's logits the cpu's bit
 * for bit, a device's within the type's tolerance of llama.cpp's. */
static void check_backends(const char *arch, int type, const char *tmp)
{
    char dir[1200], err[512];
    snprintf(dir, sizeof dir, "%s/gguf/%s/%s", TEST_DATA_DIR, arch, TOLERANCES[type].type);
    struct gguf_ref r;
    size_t n = (size_t)N_POSITIONS * MAX_VOCAB;
    float *cpu = malloc(n * sizeof *cpu), *got = malloc(n * sizeof *got);
    const struct fb_settings set = fb_settings_defaults();
    int ok = cpu && got && ref_load(&r, dir) == 0 && run(dir, tmp, NULL, NULL, &r, cpu) == 0;
    CHECK(ok);
    for (size_t i = 0; ok && backend_nth(i); i++) {
        const struct backend_ops *be = backend_nth(i);
        struct backend_device dev;
        if (be == &backend_cpu)
            continue;
        if (be->describe(&set, &dev, err, sizeof err) != 0) {
            printf("%-6s %-5s on %s: skipped (%s)\n", arch, TOLERANCES[type].type, be->name, err);
            continue;
        }
        int rc = run_on(be, dir, tmp, NULL, NULL, &r, got);
        if (rc)
            fprintf(stderr, "%s on %s: %s\n", dir, be->name, why);
        CHECK(rc == 0);
        if (rc)
            continue;
        double w = worst(got, r.logits, r.vocab), vs_cpu = worst(got, cpu, r.vocab);
        printf("%-6s %-5s on %s: max |dlogit| %.4g against llama.cpp (tolerance %g), %.4g against cpu\n", arch,
               TOLERANCES[type].type, be->name, w, TOLERANCES[type].tolerance, vs_cpu);
        CHECK(w <= TOLERANCES[type].tolerance);
        if (be == &backend_sim)
            CHECK(vs_cpu == 0);
    }
    if (ok)
        free(r.logits);
    free(cpu), free(got);
}

/* ---- refusals, on damaged copies of a fixture ---- */

/* tests/data/gguf/<rel> with the first occurrence of from (bytes) replaced
 * by to (as long), written to tmp/bad.gguf; poke >= 0: the u32 right after
 * from's end plus 4 bytes (a key's value past its type) becomes value. */
static int damaged(const char *rel, const char *tmp, const char *from, const char *to, long value, char *out,
                   size_t len)
{
    char src[1200];
    snprintf(src, sizeof src, "%s/gguf/%s", TEST_DATA_DIR, rel);
    snprintf(out, len, "%s/bad.gguf", tmp);
    size_t n = 0;
    char *data = read_text_file(src, &n);
    size_t k = strlen(from);
    char *at = NULL;
    for (size_t i = 0; data && !at && i + k <= n; i++)
        if (!memcmp(data + i, from, k))
            at = data + i;
    if (!at) {
        free(data);
        return -1;
    }
    memcpy(at, to, k);
    if (value >= 0) {
        uint32_t v = (uint32_t)value;
        memcpy(at + k + 4, &v, 4);
    }
    FILE *f = fopen(out, "wb");
    int rc = f && fwrite(data, 1, n, f) == n ? 0 : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    free(data);
    return rc;
}

/* Converting gguf into tmp/out fails with a message holding want, and
 * leaves nothing behind (no out, no temporary folder). */
static void check_refused(const char *gguf, const char *tmp, const char *tok, const enum fb_dtype *dtype,
                          const char *want)
{
    char out[1200];
    snprintf(out, sizeof out, "%s/out", tmp);
    struct import_dtype dt = {.keep = !dtype, .dtype = dtype ? *dtype : DTYPE_F16};
    why[0] = '\0';
    int rc = import_gguf(gguf, tok, out, &dt, NULL, why, sizeof why);
    bool named = strstr(why, want) != NULL;
    if (rc == 0 || !named)
        fprintf(stderr, "%s: want a refusal naming \"%s\", got %d \"%s\"\n", gguf, want, rc, why);
    CHECK(rc != 0 && named);
    CHECK(access(out, F_OK) != 0);
    /* the only entries of tmp are the tokenizer and the damaged file */
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -le 2", tmp);
    CHECK(system(cmd) == 0);
}

static void check_refusals(const char *tmp, const char *tok)
{
    char bad[1200], path[1200];
    enum fb_dtype q4 = DTYPE_Q4_0;
    snprintf(path, sizeof path, "%s/gguf/llama/F32/model.gguf", TEST_DATA_DIR);
    check_refused(path, tmp, tok, &q4, "--dtype q4_0");
    /* an unknown key of the architecture's namespace */
    CHECK(damaged("llama/F32/model.gguf", tmp, "llama.rope.freq_base", "llama.rope.freq_bass", -1, bad,
                  sizeof bad) == 0);
    check_refused(bad, tmp, tok, NULL, "key llama.rope.freq_bass is not supported");
    /* a key at a value that changes the computation */
    CHECK(damaged("llama/F32/model.gguf", tmp, "llama.vocab_size", "llama.expert_cnt", -1, bad, sizeof bad) == 0);
    check_refused(bad, tmp, tok, NULL, "key llama.expert_cnt");
    /* soft-capping at a value other than 0 (a gemma3 key of the same
     * length renamed: its u32 32 becomes the cap) */
    CHECK(damaged("gemma3/F32/model.gguf", tmp, "gemma3.attention.value_length", "gemma3.attn_logit_softcapping", -1,
                  bad, sizeof bad) == 0);
    check_refused(bad, tmp, tok, NULL, "key gemma3.attn_logit_softcapping: attention logits soft-capped");
    /* a tensor nobody reads: refused by name once the rest is written */
    CHECK(damaged("llama/F32/model.gguf", tmp, "output.weight", "outpux.weight", -1, bad, sizeof bad) == 0);
    check_refused(bad, tmp, tok, NULL, "tensor outpux.weight is not part of a llama model");
    /* a shape that disagrees with the metadata */
    CHECK(damaged("qwen2/F32/model.gguf", tmp, "qwen2.feed_forward_length", "qwen2.feed_forward_length", 64, bad,
                  sizeof bad) == 0);
    check_refused(bad, tmp, tok, NULL, "tensor blk.0.ffn_gate.weight has 2 dims [64, 128, 1, 1]");
}

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-gguf-XXXXXX", tok[1200];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(tok, sizeof tok, "%s/tok.bin", tmp);
    CHECK(fx_write_tokenizer(tok, 384) == 0); /* the llama2.c override's check below */
    float *got = malloc((size_t)N_POSITIONS * MAX_VOCAB * sizeof *got);
    CHECK(got != NULL);
    double table[N_ARCHS][N_TYPES];
    for (size_t a = 0; got && a < N_ARCHS; a++)
        for (size_t t = 0; t < N_TYPES; t++) {
            table[a][t] = check_one(ARCHS[a], (int)t, tmp, NULL, got); /* the GGUF's own tokenizer */
            if (a == 0 && !strcmp(TOLERANCES[t].type, "Q4_K") && table[a][t] >= 0)
                check_decoded(ARCHS[a], (int)t, tmp, tok, got); /* with a llama2.c tokenizer.bin instead */
        }
    printf("\nmax |dlogit| against llama.cpp (tolerance)\n%-6s", "type");
    for (size_t a = 0; a < N_ARCHS; a++)
        printf(" %10s", ARCHS[a]);
    for (size_t t = 0; got && t < N_TYPES; t++) {
        printf("\n%-6s", TOLERANCES[t].type);
        for (size_t a = 0; a < N_ARCHS; a++)
            printf(" %10.4g", table[a][t]);
        printf("   (%g)", TOLERANCES[t].tolerance);
    }
    printf("\n");
    for (size_t t = 0; t < N_TYPES; t++) /* gemma3's own steps (windows, post-norms, scaled embedding) elsewhere */
        if (!strcmp(TOLERANCES[t].type, "F32") || !strcmp(TOLERANCES[t].type, "Q4_K"))
            check_backends("gemma3", (int)t, tmp);
    check_refusals(tmp, tok);
    free(got);
    fs_remove_tree(tmp);
    return check_report("test_gguf_fixture");
}
