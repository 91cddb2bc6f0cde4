/* reproduce's plan (harness/reproduce.h), Table 3 at real shapes: the
 * quick tier adds Phi-2's and the 1.1B FATReLU Llama's naive, hybrid and
 * all on the trace, round by round (the modes alternating), each priced,
 * with the tier's tokens for the real shapes, where their f16 weights fit
 * half the memory; a smaller memory leaves them out and says why; the tiny
 * and full tiers add none. The disk check depends on the machine's free
 * space: where it leaves a shape out, that shape's checks are skipped,
 * saying so. The training-free sparsity study: on stories260K where the
 * shared data is (its steps, ids, arguments and order per tier), the same
 * study on the fixtures' six GLU tiny shapes in the quick and full tiers
 * (each one's model made and converted, thresholds at the tier's
 * sparsities, dense and three sources on TinyStories, no predictor; none
 * in the tiny tier), and alone as `sparsify study` plans it (no predictor
 * trained, the user's model only read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "harness/reproduce.h"

#define GIB (1ull << 30)

static struct fb_settings set;

static const char *data; /* the shared data, NULL without it */

static void plan(enum repro_tier tier, uint64_t mem, struct repro_plan *p)
{
    struct repro_config c = {.tier = tier, .n_models = 5, .out = "tests-no-such-dir/study",
                             .disk = "tests-no-such-dir/study", .settings = &set, .mem_bytes = mem, .data = data};
    static const char *const models[] = {"opt", "falcon", "persimmon", "phi", "llama2"};
    for (int i = 0; i < 5; i++)
        c.models[i] = models[i];
    char err[512];
    CHECK(repro_plan_build(&c, p, err, sizeof err) == 0);
}

static const struct repro_step *step(const struct repro_plan *p, const char *id)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->steps[i].id, id))
            return &p->steps[i];
    return NULL;
}

static long step_index(const struct repro_plan *p, const char *id)
{
    const struct repro_step *s = step(p, id);
    return s ? (long)(s - p->steps) : -1;
}

/* The value after flag in the step's arguments; NULL without it. */
static const char *arg(const struct repro_step *s, const char *flag)
{
    for (char **a = s ? s->args : NULL; a && *a; a++)
        if (!strcmp(*a, flag))
            return a[1];
    return NULL;
}

/* Steps whose id holds text. */
static size_t steps_with(const struct repro_plan *p, const char *text)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += strstr(p->steps[i].id, text) != NULL;
    return n;
}

/* shape's Table 3 steps: the model (made, converted, its HF folder
 * removed), the trace, 3 modes x 3 rounds, 3 prices, and nothing else. */
static void table3_steps(const struct repro_plan *p, const char *shape)
{
    static const char *const modes[] = {"naive", "hybrid", "all"};
    char id[96];
    const char *const once[] = {"model-make-%s", "model-convert-%s", "model-tidy-%s", "trace-%s"};
    for (int i = 0; i < 4; i++) {
        snprintf(id, sizeof id, once[i], shape);
        CHECK(step(p, id) != NULL);
    }
    for (int m = 0; m < 3; m++) {
        snprintf(id, sizeof id, "predict-%s-%s-trace", shape, modes[m]);
        CHECK_STR(arg(step(p, id), "--predictor-rank"), "none");
        for (int r = 1; r <= 3; r++) {
            snprintf(id, sizeof id, "run-%s-%s-trace-r%d", shape, modes[m], r);
            const struct repro_step *s = step(p, id);
            CHECK_STR(arg(s, "--prompt-tokens"), m < 2 ? "2" : "4");
            CHECK_STR(arg(s, "-n"), m < 2 ? "3" : "6");
            CHECK_STR(arg(s, "--cold"), m < 2 ? "1" : "5");
            CHECK(m == 0 ? arg(s, "--dram-budget") == NULL : !strcmp(arg(s, "--dram-budget"), "50%"));
        }
    }
    CHECK_U64(steps_with(p, shape), 4 + 9 + 3);
    /* after the model and trace; round by round, the modes alternating */
    char a[96], b[96], c[96];
    snprintf(a, sizeof a, "model-tidy-%s", shape);
    snprintf(b, sizeof b, "run-%s-naive-trace-r1", shape);
    CHECK(step_index(p, a) < step_index(p, b));
    snprintf(a, sizeof a, "run-%s-all-trace-r1", shape);
    snprintf(c, sizeof c, "run-%s-naive-trace-r2", shape);
    CHECK(step_index(p, b) < step_index(p, a) && step_index(p, a) < step_index(p, c));
}

/* Whether the plan left shape out for want of disk (not checked then). */
static bool short_of_disk(const struct repro_plan *p, const char *shape)
{
    const char *at = strstr(p->table3_left_out, shape);
    bool disk = at && strstr(at, "do not fit the") != NULL;
    if (disk)
        fprintf(stderr, "note: %s left out for the disk here, not checked: %s\n", shape, p->table3_left_out);
    return disk;
}

static void quick_with_memory(void)
{
    struct repro_plan p;
    plan(REPRO_QUICK, 64 * GIB, &p);
    for (int i = 0; i < 3; i++)
        CHECK_STR(p.table3_shape[i], ""); /* OPT-1.3B is the tier's; Falcon, Persimmon have none of <= 3B */
    if (!short_of_disk(&p, "phi-2")) {
        CHECK_STR(p.table3_shape[3], "phi-2");
        table3_steps(&p, "phi-2");
    }
    if (!short_of_disk(&p, "llama-1.1b-fatrelu")) {
        CHECK_STR(p.table3_shape[4], "llama-1.1b-fatrelu");
        table3_steps(&p, "llama-1.1b-fatrelu");
    }
    /* the rest of phi and llama2 stays on their tiny shapes */
    CHECK(step(&p, "policies-phi-tiny") != NULL && step(&p, "run-phi-tiny-window-trace-r3") != NULL);
    CHECK(step(&p, "policies-phi-2") == NULL && step(&p, "trace-info-phi-2") == NULL);
    CHECK_STR(repro_table3_shape("phi"), "phi-2");
    CHECK(repro_table3_shape("falcon") == NULL && repro_table3_shape("persimmon") == NULL);
    repro_plan_free(&p);
}

static void quick_short_of_memory(void)
{
    struct repro_plan p;
    plan(REPRO_QUICK, 6 * GIB, &p); /* phi-2's 5.56 GB > 3.2; the Llama's 2.2 GB fit */
    CHECK_STR(p.table3_shape[3], "");
    CHECK(strstr(p.table3_left_out, "phi-2: its 5.6 GB of f16 weights are more than half of the 6.4 GB of "
                                    "memory") != NULL);
    CHECK_U64(steps_with(&p, "phi-2"), 0);
    if (!short_of_disk(&p, "llama-1.1b-fatrelu"))
        CHECK_STR(p.table3_shape[4], "llama-1.1b-fatrelu");
    repro_plan_free(&p);
    plan(REPRO_QUICK, 4 * GIB, &p); /* 2.2 GB > 2.1 */
    CHECK_STR(p.table3_shape[4], "");
    CHECK(strstr(p.table3_left_out, "; llama-1.1b-fatrelu: its 2.2 GB of f16 weights are more than half") != NULL);
    CHECK_U64(steps_with(&p, "phi-2") + steps_with(&p, "llama-1.1b"), 0);
    repro_plan_free(&p);
}

static void other_tiers(void)
{
    for (int tier = REPRO_TINY; tier <= REPRO_FULL; tier += REPRO_FULL - REPRO_TINY) {
        struct repro_plan p;
        plan((enum repro_tier)tier, 64 * GIB, &p);
        for (int i = 0; i < 5; i++)
            CHECK_STR(p.table3_shape[i], "");
        CHECK_STR(p.table3_left_out, "");
        CHECK_U64(steps_with(&p, "llama-1.1b"), 0);
        if (tier == REPRO_TINY)
            CHECK_U64(steps_with(&p, "phi-2"), 0);
        else /* Phi-2 is the full tier's own shape: its whole study, its model made once */
            CHECK(step(&p, "policies-phi-2") != NULL && steps_with(&p, "model-make-phi-2") == 1);
        repro_plan_free(&p);
    }
}

/* A step's argument ends with text. */
static bool arg_ends(const struct repro_step *s, const char *flag, const char *text)
{
    const char *a = arg(s, flag);
    return a && strlen(a) >= strlen(text) && !strcmp(a + strlen(a) - strlen(text), text);
}

/* One text's cells of the stories260K study: dense, gate (global, from the
 * thresholds file), gate-cal and teal per sparsity, the predictor. */
static void sparsity_cells(const struct repro_plan *p, const char *text, const char *skip, const char *tokens,
                           const char *sp, const char *pr)
{
    char id[96], file[64];
    snprintf(id, sizeof id, "sparsity-%s-dense", text);
    const struct repro_step *d = step(p, id);
    CHECK(d && arg(d, "--active") == NULL && arg(d, "--sparsify") == NULL);
    CHECK_STR(arg(d, "--skip"), skip);
    CHECK_STR(arg(d, "--tokens"), tokens);
    snprintf(file, sizeof file, "sparsity/%s/dense.json", text);
    CHECK(arg_ends(d, "--json", file));
    static const char *const sources[] = {"gate", "gate-cal", "teal"};
    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof id, "sparsity-%s-%s-%s", text, sources[i], sp);
        const struct repro_step *s = step(p, id);
        snprintf(file, sizeof file, "sparsity/thresholds/%s.json", sp);
        CHECK(s && arg_ends(s, "--sparsify", file) && arg(s, "--threshold") == NULL);
        CHECK_STR(arg(s, "--active"), sources[i]);
        CHECK(step_index(p, "sparsity-thresholds-s50") < step_index(p, id));
    }
    snprintf(id, sizeof id, "sparsity-%s-predictor-%s", text, pr);
    const struct repro_step *s = step(p, id);
    CHECK(s && arg(s, "--sparsify") == NULL);
    CHECK_STR(arg(s, "--active"), "predictor");
    CHECK(step_index(p, "sparsity-predictor") < step_index(p, id));
}

/* The fixtures' GLU shapes' study in a tier with n_sp sparsities (sp:
 * their tags), calib calibration tokens and tokens scored: every shape's
 * model, its thresholds and 1 + 3 x n_sp cells on TinyStories, exactly. */
static void shapes_study(const struct repro_plan *p, const char *const *sp, size_t n_sp, const char *calib,
                         const char *tokens)
{
    static const char *const shapes[] = {"llama3-tiny", "mistral-tiny", "qwen2-tiny", "qwen3-tiny", "phi3-tiny",
                                         "drelu-tiny"};
    static const char *const archs[] = {"llama", "mistral", "qwen2", "qwen3", "phi3", "bamboo"};
    static const char *const sources[] = {"gate", "gate-cal", "teal"};
    CHECK_U64(p->n_shapes, 6);
    CHECK_U64(steps_with(p, "sparsity-shapes-"), 6 * (n_sp + 1 + 3 * n_sp));
    for (size_t i = 0; i < 6; i++) {
        char id[96], pre[64], end[96];
        CHECK_STR(p->shapes[i].name, shapes[i]);
        CHECK(!p->shapes[i].trained && p->shapes[i].n_predictor == 0 && p->shapes[i].n_texts == 1);
        snprintf(id, sizeof id, "model-make-%s", shapes[i]);
        const struct repro_step *mk = step(p, id);
        CHECK_STR(arg(mk, "--arch"), archs[i]);
        CHECK_STR(arg(mk, "--dtype"), "f16");
        CHECK(arg(mk, "--relu-density") == NULL);
        snprintf(pre, sizeof pre, "sparsity-shapes-%s-", shapes[i]);
        CHECK_U64(steps_with(p, pre), n_sp + 1 + 3 * n_sp);
        CHECK_U64(steps_with(p, shapes[i]), 3 + n_sp + 1 + 3 * n_sp); /* its model: made, converted, tidied */
        snprintf(id, sizeof id, "sparsity-shapes-%s-tinystories-dense", shapes[i]);
        const struct repro_step *d = step(p, id);
        CHECK(d && arg_ends(d, "--text", "/corpus/tinystories_sample.txt") && arg(d, "--active") == NULL);
        CHECK_STR(arg(d, "--skip"), calib);
        CHECK_STR(arg(d, "--tokens"), tokens);
        snprintf(end, sizeof end, "study/models/%s", shapes[i]);
        CHECK(arg_ends(d, "--model", end));
        snprintf(end, sizeof end, "study/sparsity-shapes/%s/tinystories/dense.json", shapes[i]);
        CHECK(arg_ends(d, "--json", end));
        snprintf(end, sizeof end, "model-tidy-%s", shapes[i]);
        long tidy = step_index(p, end);
        for (size_t k = 0; k < n_sp; k++) {
            snprintf(id, sizeof id, "sparsity-shapes-%s-thresholds-%s", shapes[i], sp[k]);
            const struct repro_step *t = step(p, id);
            CHECK_STR(arg(t, "--tokens"), calib);
            CHECK(step_index(p, id) > tidy);
            long thr = step_index(p, id);
            for (int j = 0; j < 3; j++) {
                snprintf(id, sizeof id, "sparsity-shapes-%s-tinystories-%s-%s", shapes[i], sources[j], sp[k]);
                const struct repro_step *c = step(p, id);
                snprintf(end, sizeof end, "study/sparsity-shapes/%s/thresholds/%s.json", shapes[i], sp[k]);
                CHECK(c && arg_ends(c, "--sparsify", end) && step_index(p, id) > thr);
                CHECK_STR(arg(c, "--active"), sources[j]);
                CHECK_STR(arg(c, "--skip"), calib);
            }
        }
    }
}

/* reproduce's study on stories260K, where the shared data is. */
static void sparsity_in_reproduce(void)
{
    if (!data) {
        fprintf(stderr, "note: no shared data: the stories260K sparsity study is not planned, not checked\n");
        return;
    }
    struct repro_plan p;
    plan(REPRO_TINY, 64 * GIB, &p);
    CHECK_STR(p.sparsity.name, "stories260K");
    /* tiny: S = 0.5, P = 0.5: thresholds, the predictor, 2 texts x (dense + 3 sources + predictor) */
    CHECK_U64(steps_with(&p, "sparsity-"), 1 + 1 + 2 * 5);
    CHECK_U64(p.n_shapes, 0); /* the shapes' study: quick and full */
    const struct repro_step *t = step(&p, "sparsity-thresholds-s50");
    CHECK(t && arg_ends(t, "--out", "study/sparsity/thresholds/s50.json") && arg_ends(t, "--out", ".json"));
    CHECK_STR(arg(t, "--tokens"), "512");
    CHECK_STR(arg(t, "--kind"), "both");
    CHECK(arg_ends(t, "--model", "study/models/stories260K"));
    const struct repro_step *pr = step(&p, "sparsity-predictor");
    CHECK(pr && arg_ends(pr, "--model", "study/models/stories260K"));
    CHECK_STR(arg(pr, "--rank"), "16");
    CHECK_STR(arg(pr, "--act-threshold"), "0.2");
    CHECK(pr && strstr(pr->out, "models/stories260K/predictor.safetensors") != NULL);
    CHECK(step_index(&p, "model-stories260K") < step_index(&p, "sparsity-thresholds-s50"));
    sparsity_cells(&p, "tinystories", "512", "256", "s50", "p50");
    sparsity_cells(&p, "wikitext2", "0", "256", "s50", "p50");
    repro_plan_free(&p);
    plan(REPRO_QUICK, 64 * GIB, &p);
    /* quick: 4 sparsities, 4 predictor thresholds; the six shapes' studies */
    CHECK_U64(steps_with(&p, "sparsity-") - steps_with(&p, "sparsity-shapes-"), 4 + 1 + 2 * (1 + 3 * 4 + 4));
    static const char *const sp4[] = {"s25", "s50", "s70", "s90"};
    shapes_study(&p, sp4, 4, "1024", "1024");
    CHECK(step(&p, "sparsity-thresholds-s25") && step(&p, "sparsity-thresholds-s90"));
    CHECK_STR(arg(step(&p, "sparsity-thresholds-s70"), "--tokens"), "2048");
    sparsity_cells(&p, "tinystories", "2048", "4096", "s50", "p30");
    sparsity_cells(&p, "wikitext2", "0", "4096", "s50", "p90");
    repro_plan_free(&p);
    plan(REPRO_FULL, 64 * GIB, &p);
    static const char *const sp6[] = {"s25", "s50", "s60", "s70", "s80", "s90"};
    shapes_study(&p, sp6, 6, "2048", "4096");
    repro_plan_free(&p);
}

/* `sparsify study`'s plan: the same cells of a user's model, no predictor
 * trained, every output under --out. */
static void sparsity_alone(void)
{
    struct repro_sparsity *z = calloc(1, sizeof *z);
    snprintf(z->model, sizeof z->model, "user/model");
    snprintf(z->name, sizeof z->name, "m");
    snprintf(z->calib_text, sizeof z->calib_text, "c.txt");
    snprintf(z->texts[0], sizeof z->texts[0], "c.txt");
    snprintf(z->texts[1], sizeof z->texts[1], "w.txt");
    snprintf(z->text_names[0], sizeof z->text_names[0], "c");
    snprintf(z->text_names[1], sizeof z->text_names[1], "w");
    z->n_texts = 2;
    z->calib_tokens = 100;
    z->tokens = 50;
    z->sparsities[0] = 0.5;
    z->sparsities[1] = 0.7;
    z->n_sparsities = 2;
    z->predictor_p[0] = 0.5;
    z->n_predictor = 1;
    struct repro_plan p;
    char err[256];
    CHECK(repro_sparsity_plan_build(z, "out", &set, &p, err, sizeof err) == 0);
    CHECK_U64(p.n, 2 + 2 * (1 + 3 * 2 + 1));
    CHECK(step(&p, "sparsity-predictor") == NULL);
    for (size_t i = 0; i < p.n; i++) {
        CHECK(!strncmp(p.steps[i].out, "out/", 4));
        CHECK_STR(arg(&p.steps[i], "--model"), "user/model");
    }
    CHECK_STR(arg(step(&p, "sparsity-c-teal-s70"), "--skip"), "100");
    CHECK_STR(arg(step(&p, "sparsity-w-teal-s70"), "--skip"), "0");
    CHECK_STR(arg(step(&p, "sparsity-thresholds-s70"), "--out"), "out/sparsity/thresholds/s70.json");
    CHECK_STR(arg(step(&p, "sparsity-w-predictor-p50"), "--threshold"), "0.5");
    repro_plan_free(&p);
    free(z);
}

int main(void)
{
    set = fb_settings_defaults();
    const char *d = getenv("FLASHBED_DATA");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/models/stories260K/stories260K.bin", d ? d : FLASHBED_DATA_DEFAULT);
    data = access(probe, R_OK) == 0 ? (d ? d : FLASHBED_DATA_DEFAULT) : NULL;
    sparsity_in_reproduce();
    sparsity_alone();
    quick_with_memory();
    quick_short_of_memory();
    other_tiers();
    return check_report("test_reproduce_plan");
}
