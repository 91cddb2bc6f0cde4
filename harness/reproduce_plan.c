/* The study's steps per tier (harness/reproduce.h). Each add_* function
 * plans one part of the paper; the sizes of a tier are in one table. */
#include "harness/reproduce.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache/cache.h"
#include "common/errbuf.h"
#include "common/model_shape.h"
#include "common/parse.h"
#include "engine/ffn/neuron_source.h"
#include "harness/reproduce_plan.h"
#include "sim/paper_tables.h"

/* What a tier runs: the sizes every part takes from. */
struct tier_sizes {
    const char *sweep_size, *sweep_chunks, *sweep_threads, *sweep_runtime, *sweep_ramp;
    const char *trace_tokens;         /* synthetic traces */
    const char *record_prompt_tokens; /* stories260K's recorded trace */
    const char *record_tokens;
    const char *budgets;              /* the policy study's DRAM budgets */
    const char *run_prompt, *run_tokens;   /* measured runs: prompt and generated tokens */
    const char *base_prompt, *base_tokens; /* naive and hybrid read whole layers: fewer tokens */
    int rounds;                            /* each measured configuration, alternating */
    const char *predictor_tokens, *predictor_rank, *predictor_epochs;
    const char *predictor_svd_iterations;  /* the SVD start: 1 or 2 do before training */
    const char *long_tokens;               /* Fig. 8's long generation */
    const char *fig7_shares;               /* Fig. 7's DRAM shares (window:auto), percents */
    /* Table 3's CPU rows at the real shapes the quick tier adds (NULL in the
     * others: their shapes are the tier's): fewer tokens for naive and
     * hybrid, which read every FFN row of a model up to 5.6 GB per token */
    const char *real_base_prompt, *real_base_tokens, *real_run_prompt, *real_run_tokens;
    int real_rounds;
    /* the training-free sparsity study on stories260K: calibration tokens,
     * tokens scored per text, target sparsities, the predictor's thresholds */
    const char *sparsity_calib, *sparsity_tokens, *sparsities, *sparsity_predictor;
    /* the same study on the fixtures' GLU tiny shapes (random weights):
     * calibration and scored tokens of TinyStories (NULL: not planned) */
    const char *shapes_calib, *shapes_tokens;
    /* the real GGUF models' perplexity: the windows scored (NULL: not
     * planned; at most the llama.cpp reference's own) */
    const char *real_windows;
};

static const struct tier_sizes tiers[] = {
    /* Fig. 7's shares: the tiny shapes' weights outside the FFN are about
     * two thirds of them (fig7_min_share), so theirs start above that */
    [REPRO_TINY] = {"8m", "8k,16k,64k", "1,2", "0.05", "0", "32", "16", "16", "10%,25%,50%", "8", "8", "2", "2", 1, "64",
                    "16", "2", "1", "24", "70,80,90", NULL, NULL, NULL, NULL, 0, "512", "256", "0.5", "0.5", NULL, NULL, NULL},
    /* quick: sized for about ten minutes on 2 cores, most of it OPT-1.3B's
     * 30 measured runs (8 + 8 tokens, the first 5 cold); OPT-1.3B's
     * outside-FFN weights are about 45% of it, so Fig. 7 starts at 50%.
     * The real shapes added for Table 3 (Phi-2: 5.6 GB, 2.3 s per token
     * naive, 2.3 s all at half of it in DRAM, where its window does not
     * fit): naive and hybrid 2 + 3 tokens (4 measured after 1 cold), all
     * 4 + 6 (5 after the 5 cold that fill the window); with their models
     * made, about four more minutes. The shapes' sparsity study: 6 x 4
     * thresholds and 13 cells of 1024 tokens, about a minute. The real
     * GGUF models' perplexity: 4 windows of 512 (SmolLM2: about a minute) */
    [REPRO_QUICK] = {"1g", "4k,8k,16k,32k,64k,128k,256k,1m", "1,2,4,8,16,32", "0.5", "0.1", "128", "64", "64",
                     "10%,25%,50%", "8", "8", "4", "4", 3, "192", "128", "2", "1", "64", "50,65,80", "2", "3", "4", "6",
                     3, "2048", "4096", "0.25,0.5,0.7,0.9", "0.3,0.5,0.7,0.9", "1024", "1024", "4"},
    [REPRO_FULL] = {"4g", "4k,8k,16k,32k,64k,128k,256k,512k,1m", "1,2,4,8,16,32,64", "2", "0.5", "1000", "128",
                    "256", "10%,25%,50%", "128", "256", "4", "4", 3, "4096", "128", "3", "2", "1000", "30,40,50,60,70,80",
                    NULL, NULL, NULL, NULL, 0, "4096", "16384", "0.25,0.5,0.6,0.7,0.8,0.9", "0.2,0.3,0.5,0.7,0.9", "2048",
                    "4096", "100"},
};

/* The architectures and their shapes (configs/models/) per tier, and the
 * real shape of at most 3B the quick tier measures Table 3's CPU rows at
 * where the tier's shape is a tiny one and the real one fits this machine
 * (NULL: Falcon and Persimmon have none below 7B). */
static const struct {
    const char *arch, *make_arch; /* --models name, model make --arch */
    const char *shape[3];         /* tiny, quick, full */
    bool bias_relu;               /* ReLU with biases: 5% firing (--relu-density) */
    const char *table3_quick;     /* real shape of Table 3's CPU rows in the quick tier */
} archs[] = {
    {"opt", "opt", {"opt-tiny", "opt-1.3b", "opt-6.7b"}, true, "opt-1.3b"},
    {"falcon", "falcon", {"falcon-tiny", "falcon-tiny", "falcon-7b"}, false, NULL},
    {"persimmon", "persimmon", {"persimmon-tiny", "persimmon-tiny", "persimmon-8b"}, true, NULL},
    {"phi", "phi", {"phi-tiny", "phi-tiny", "phi-2"}, true, "phi-2"},
    /* TinyLlama-1.1B's shape with FATReLU, as llama-2-7b-fatrelu is Llama 2's */
    {"llama2", "llama", {"llama-relu-tiny", "llama-relu-tiny", "llama-2-7b-fatrelu"}, false, "llama-1.1b-fatrelu"},
};

#define N_ARCHS (sizeof archs / sizeof archs[0])

static int arch_index(const char *arch)
{
    for (size_t i = 0; i < N_ARCHS; i++)
        if (!strcmp(archs[i].arch, arch))
            return (int)i;
    return -1;
}

const char *repro_shape(const char *arch, enum repro_tier tier)
{
    int i = arch_index(arch);
    return i < 0 ? NULL : archs[i].shape[tier];
}

const char *repro_table3_shape(const char *arch)
{
    int i = arch_index(arch);
    return i < 0 ? NULL : archs[i].table3_quick;
}

const char *repro_shape_arch(const char *shape)
{
    for (size_t i = 0; shape && i < N_ARCHS; i++) {
        bool real = archs[i].table3_quick && !strcmp(archs[i].table3_quick, shape);
        for (int t = 0; t < 3 && !real; t++)
            real = !strcmp(archs[i].shape[t], shape);
        if (real)
            return archs[i].arch;
    }
    return NULL;
}

const char *repro_tier_name(enum repro_tier tier)
{
    static const char *names[] = {"tiny", "quick", "full"};
    return names[tier];
}

/* Appends a step (harness/reproduce_plan.h). */
static struct repro_step *add_step(struct repro_plan *p, const char *section, const char *id, const char *out,
                                   const char *what)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 32;
        struct repro_step *s = realloc(p->steps, cap * sizeof *s);
        if (!s)
            return NULL;
        p->steps = s;
        p->cap = cap;
    }
    struct repro_step *s = &p->steps[p->n];
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    snprintf(s->section, sizeof s->section, "%s", section);
    snprintf(s->what, sizeof s->what, "%s", what);
    snprintf(s->out, sizeof s->out, "%s/%s", p->config.out, out);
    return s;
}

/* The step's arguments from a NULL-terminated list. */
static int set_args(struct repro_step *s, const char *const *args)
{
    size_t n = 0;
    while (args[n])
        n++;
    s->args = calloc(n + 1, sizeof *s->args);
    for (size_t i = 0; s->args && i < n; i++)
        if (!(s->args[i] = strdup(args[i])))
            return -1;
    return s->args ? 0 : -1;
}

int repro_plan_add(struct repro_plan *p, const char *section, const char *id, const char *out, const char *what,
                   const char *const *args)
{
    struct repro_step *s = add_step(p, section, id, out, what);
    if (!s)
        return -1;
    p->n++; /* counted at once, so that repro_plan_free frees what set_args made */
    return set_args(s, args);
}

bool repro_plan_has(const struct repro_plan *p, const char *id)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->steps[i].id, id))
            return true;
    return false;
}

const char *repro_plan_at(const struct repro_plan *p, char *buf, size_t len, const char *fmt, ...)
{
    char rel[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    snprintf(buf, len, "%s/%s", p->config.out, rel);
    return buf;
}

#define at repro_plan_at

const char *repro_engine_sweep(const struct repro_plan *p)
{
    return p->config.fio ? "fig2b-huge/sweep.json" : "fig2b/sweep.json";
}

/* Fig. 2b: the disk's random-read throughput over chunk x threads; beside
 * fio like for like (both reading into 4 KiB pages: fio's huge pages need
 * ones reserved as root), then again on huge pages, as the engine reads,
 * without fio: the huge-page gain as its own series. This machine's
 * profile takes the engine's (huge-page) points (no further sweep). */
static int add_flash(struct repro_plan *p, const struct tier_sizes *t)
{
    char scratch[4200], out[4200], sweep[4200], hw[4200];
    snprintf(scratch, sizeof scratch, "%s/flashbed-reproduce-scratch.bin", p->config.disk);
    at(p, out, sizeof out, "fig2b");
    if (p->config.fio) {
        STEP(p, "fig2b", "fig2b-sweep", "fig2b", "Fig. 2b: random reads of the disk, chunk x threads, beside fio "
             "(both on 4 KiB pages)", "sweep", "--file", scratch, "--size", t->sweep_size, "--chunks", t->sweep_chunks,
             "--threads", t->sweep_threads, "--runtime", t->sweep_runtime, "--ramp", t->sweep_ramp, "--small-pages",
             "--compare-fio", "--plot", "--out", out);
        STEP(p, "fig2b", "fig2b-huge", "fig2b-huge", "Fig. 2b again on huge pages, as the engine reads",
             "sweep", "--file", scratch, "--size", t->sweep_size, "--chunks", t->sweep_chunks, "--threads",
             t->sweep_threads, "--runtime", t->sweep_runtime, "--ramp", t->sweep_ramp, "--plot", "--out",
             at(p, out, sizeof out, "fig2b-huge"));
    } else
        STEP(p, "fig2b", "fig2b-sweep", "fig2b", "Fig. 2b: random reads of the disk, chunk x threads (no fio here)",
             "sweep", "--file", scratch, "--size", t->sweep_size, "--chunks", t->sweep_chunks, "--threads",
             t->sweep_threads, "--runtime", t->sweep_runtime, "--ramp", t->sweep_ramp, "--plot", "--out",
             out);
    at(p, sweep, sizeof sweep, "%s", repro_engine_sweep(p));
    at(p, hw, sizeof hw, "calibration/hw.json");
    STEP(p, "calibration", "calibration", "calibration/hw.json", "this machine's profile (DRAM copies, compute; flash from Fig. 2b)",
         "calibrate", "--quick", "--sweep", sweep, "--file", scratch, "--size", t->sweep_size, "--name", "reproduce",
         "--out", hw);
    STEP(p, "paper", "paper-table3", "paper-table3", "Table 3 modelled: this machine's CPU rows, the paper's other backends",
         "predict", "--paper", "table3", "--hw", hw, "--out", at(p, out, sizeof out, "paper-table3"));
    return 0;
}

/* A synthetic model of the shape (f16, seed 1) as a flashbed model folder:
 * made as a Hugging Face folder (model make --arch make_arch; bias_relu:
 * ReLU with biases, 5% firing), converted, and the HF folder removed. */
static int add_model(struct repro_plan *p, const char *make_arch, bool bias_relu, const char *shape)
{
    char id[96], hf[4200], model[4200], what[160];
    at(p, hf, sizeof hf, "models/%s-hf", shape);
    at(p, model, sizeof model, "models/%s", shape);
    snprintf(id, sizeof id, "model-make-%s", shape);
    snprintf(what, sizeof what, "synthetic %s (f16, random weights of the real shape)", shape);
    char rel[200];
    snprintf(rel, sizeof rel, "models/%s-hf", shape);
    if (bias_relu)
        STEP(p, "models", id, rel, what, "model", "make", "--arch", make_arch, "--shape", shape, "--dtype", "f16",
             "--relu-density", "0.05", "--seed", "1", "--out", hf);
    else
        STEP(p, "models", id, rel, what, "model", "make", "--arch", make_arch, "--shape", shape, "--dtype", "f16",
             "--seed", "1", "--out", hf);
    snprintf(id, sizeof id, "model-convert-%s", shape);
    snprintf(what, sizeof what, "%s into flashbed's model format", shape);
    snprintf(rel, sizeof rel, "models/%s", shape);
    STEP(p, "models", id, rel, what, "convert", hf, "--out", model, "--dtype", "f16");
    snprintf(id, sizeof id, "model-tidy-%s", shape);
    snprintf(what, sizeof what, "remove %s's Hugging Face folder (converted)", shape);
    snprintf(rel, sizeof rel, "models/%s-hf", shape);
    STEP(p, "models", id, rel, what, REPRO_REMOVE, hf);
    return 0;
}

/* A calibrated synthetic trace of the shape (its architecture's
 * statistics). */
static int add_trace(struct repro_plan *p, const char *shape, const struct tier_sizes *t)
{
    char id[96], trace[4200], what[160], rel[200];
    at(p, trace, sizeof trace, "traces/%s.trace", shape);
    snprintf(id, sizeof id, "trace-%s", shape);
    snprintf(what, sizeof what, "calibrated synthetic trace of %s", shape);
    snprintf(rel, sizeof rel, "traces/%s.trace", shape);
    STEP(p, "traces", id, rel, what, "trace", "synth", "--shape", shape, "--tokens", t->trace_tokens, "--seed", "1",
         "--out", trace);
    return 0;
}

/* The shape's trace, its statistics (Fig. 4a), and the policy study on it. */
static int add_trace_and_policies(struct repro_plan *p, const char *shape, const struct tier_sizes *t)
{
    char id[96], trace[4200], out[4200], what[160], rel[200], hw[4200];
    at(p, trace, sizeof trace, "traces/%s.trace", shape);
    if (add_trace(p, shape, t) != 0)
        return -1;
    snprintf(id, sizeof id, "trace-info-%s", shape);
    snprintf(what, sizeof what, "statistics of %s's trace (Fig. 4a)", shape);
    snprintf(rel, sizeof rel, "traces/%s-info", shape);
    STEP(p, "traces", id, rel, what, "trace", "info", trace, "--plot", "--out", at(p, out, sizeof out, "%s", rel));
    snprintf(id, sizeof id, "policies-%s", shape);
    snprintf(what, sizeof what, "policy study on %s's trace: every policy x layout", shape);
    snprintf(rel, sizeof rel, "policies/%s", shape);
    STEP(p, "policies", id, rel, what, "replay", "--trace", trace, "--dram-budget", t->budgets, "--layout",
         "split,bundled,friends", "--hw", at(p, hw, sizeof hw, "calibration/hw.json"), "--plot", "--quiet", "--out",
         at(p, out, sizeof out, "%s", rel));
    return 0;
}

/* A tier's comma-separated numbers into v (at most max); how many. */
static size_t numbers(const char *list, double *v, size_t max)
{
    size_t n = 0;
    for (const char *c = list; c && *c && n < max; c += strcspn(c, ",") + (c[strcspn(c, ",")] == ',')) {
        char *end;
        v[n++] = strtod(c, &end);
    }
    return n;
}

/* The training-free sparsity study on stories260K (the model the recorded
 * trace converted: a trained SwiGLU model), calibrated on TinyStories'
 * first tokens, scored past them and on WikiText-2; with its predictor
 * when the plan trains predictors (WikiText-2 is there). */
static void plan_sparsity_study(struct repro_plan *p, const struct tier_sizes *t)
{
    struct repro_sparsity *z = &p->sparsity;
    const char *data = p->config.data;
    at(p, z->model, sizeof z->model, "models/stories260K");
    snprintf(z->name, sizeof z->name, "stories260K");
    z->trained = true;
    snprintf(z->dtype, sizeof z->dtype, "f32"); /* convert keeps the llama2.c checkpoint's */
    snprintf(z->calib_text, sizeof z->calib_text, "%s/corpus/tinystories_sample.txt", data);
    z->calib_tokens = strtoull(t->sparsity_calib, NULL, 10);
    z->tokens = strtoull(t->sparsity_tokens, NULL, 10);
    snprintf(z->texts[0], sizeof z->texts[0], "%s", z->calib_text);
    snprintf(z->text_names[0], sizeof z->text_names[0], "tinystories");
    z->n_texts = 1;
    if (p->text[0]) {
        snprintf(z->texts[1], sizeof z->texts[1], "%s", p->text);
        snprintf(z->text_names[1], sizeof z->text_names[1], "wikitext2");
        z->n_texts = 2;
    }
    z->n_sparsities = numbers(t->sparsities, z->sparsities, REPRO_SPARSITY_MAX);
    z->n_predictor = numbers(t->sparsity_predictor, z->predictor_p, REPRO_SPARSITY_MAX);
    z->train_predictor = true;
    /* SwiGLU: truly active when |silu(gate).up| > 0.2, as the recorded trace counts */
    snprintf(z->predictor_act, sizeof z->predictor_act, "0.2");
    /* d_model 64: a quarter of it (the paper's 1024 of Llama's 4096) */
    snprintf(z->predictor_rank, sizeof z->predictor_rank, "16");
}

/* The tiny shapes of the fixtures' GLU architectures (configs/models/;
 * tools/make_hf_fixture.py's transformers fixtures are these
 * architectures): the sparsity study on random weights of each, for the
 * bytes and times its sources give at the shape, beside stories260K's. */
static const struct {
    const char *shape, *make_arch;
} glu_shapes[REPRO_SPARSITY_SHAPES] = {
    {"llama3-tiny", "llama"}, {"mistral-tiny", "mistral"}, {"qwen2-tiny", "qwen2"},
    {"qwen3-tiny", "qwen3"},  {"phi3-tiny", "phi3"},       {"drelu-tiny", "bamboo"},
};

/* Each shape's model (made as reproduce makes every synthetic one: f16,
 * seed 1, the synthetic byte-fallback tokenizer), then its study: the
 * stories260K study's sparsities, calibrated on TinyStories' first tokens
 * and scored past them; no predictor (random weights teach it nothing). */
static int add_sparsity_shapes(struct repro_plan *p, const struct tier_sizes *t)
{
    const struct repro_sparsity *s = &p->sparsity;
    for (size_t i = 0; t->shapes_calib && i < REPRO_SPARSITY_SHAPES; i++) {
        const char *shape = glu_shapes[i].shape;
        struct repro_sparsity *z = &p->shapes[p->n_shapes++];
        if (add_model(p, glu_shapes[i].make_arch, false, shape) != 0)
            return -1;
        at(p, z->model, sizeof z->model, "models/%s", shape);
        snprintf(z->name, sizeof z->name, "%s", shape);
        snprintf(z->dir, sizeof z->dir, "sparsity-shapes/%s", shape);
        snprintf(z->dtype, sizeof z->dtype, "f16");
        snprintf(z->calib_text, sizeof z->calib_text, "%s", s->calib_text);
        z->calib_tokens = strtoull(t->shapes_calib, NULL, 10);
        z->tokens = strtoull(t->shapes_tokens, NULL, 10);
        snprintf(z->texts[0], sizeof z->texts[0], "%s", s->calib_text);
        snprintf(z->text_names[0], sizeof z->text_names[0], "%s", s->text_names[0]);
        z->n_texts = 1;
        memcpy(z->sparsities, s->sparsities, sizeof z->sparsities);
        z->n_sparsities = s->n_sparsities;
        if (repro_plan_sparsity(p, z) != 0)
            return -1;
    }
    return 0;
}

/* stories260K, a real trained model, records a real trace on TinyStories:
 * the policy study's trace with real co-activation structure. */
static int add_recorded_trace(struct repro_plan *p, const struct tier_sizes *t)
{
    const char *data = p->config.data;
    char ck[4200], tok[4200], text[4200], model[4200], trace[4200], out[4200];
    snprintf(ck, sizeof ck, "%s/models/stories260K/stories260K.bin", data);
    snprintf(tok, sizeof tok, "%s/models/stories260K/tok512.bin", data);
    snprintf(text, sizeof text, "%s/corpus/tinystories_sample.txt", data);
    struct stat st;
    if (stat(ck, &st) != 0 || stat(tok, &st) != 0 || stat(text, &st) != 0) {
        size_t n = strlen(p->missing);
        snprintf(p->missing + n, sizeof p->missing - n, "%sthe recorded trace: stories260K or its text is not under %s",
                 n ? "; " : "", data);
        return 0;
    }
    at(p, model, sizeof model, "models/stories260K");
    at(p, trace, sizeof trace, "traces/stories260K.trace");
    STEP(p, "traces", "model-stories260K", "models/stories260K", "stories260K (trained) into flashbed's format",
         "convert", ck, "--tokenizer", tok, "--out", model);
    /* SwiGLU: a neuron counts as active when |silu(gate).up| > 0.2 (the
     * trace header records it; trace info prints the density it gives:
     * about 14% in the first layer, a sparse FFN's order, where 0.05 gave 35%) */
    STEP(p, "traces", "trace-stories260K", "traces/stories260K-run", "a recorded trace of stories260K on TinyStories",
         "run", "--model", model, "--mode", "predictor", "--active", "oracle", "--threshold", "0.2", "--record",
         trace, "--prompt-file", text, "--prompt-tokens", t->record_prompt_tokens, "-n", t->record_tokens,
         "--ignore-eos", "--quiet", "--out", at(p, out, sizeof out, "traces/stories260K-run"));
    STEP(p, "traces", "trace-info-stories260K", "traces/stories260K-info", "statistics of stories260K's trace",
         "trace", "info", trace, "--plot", "--out", at(p, out, sizeof out, "traces/stories260K-info"));
    char hw[4200];
    STEP(p, "policies", "policies-stories260K", "policies/stories260K", "policy study on stories260K's recorded trace",
         "replay", "--trace", trace, "--dram-budget", t->budgets, "--layout", "split,bundled,friends", "--hw",
         at(p, hw, sizeof hw, "calibration/hw.json"), "--plot", "--quiet", "--out",
         at(p, out, sizeof out, "policies/stories260K"));
    plan_sparsity_study(p, t);
    if (repro_plan_sparsity(p, &p->sparsity) != 0)
        return -1;
    return add_sparsity_shapes(p, t);
}

/* The tiny shapes (configs/models/NAME-tiny.json): tests' sizes. */
static bool is_tiny(const char *shape)
{
    size_t n = strlen(shape);
    return n > 5 && !strcmp(shape + n - 5, "-tiny");
}

/* The predictor's rank: the tier's, at most what a tiny shape's d_model
 * (64) allows. */
static const char *predictor_rank(const char *shape, const struct tier_sizes *t)
{
    return is_tiny(shape) ? "16" : t->predictor_rank;
}

/* The DRAM budget of the measured runs: the paper's half of the model,
 * except on the tiny shapes, whose two layers are each so large a share of
 * the model that one layer's staging does not fit in half. */
const char *repro_run_budget(const char *shape)
{
    return is_tiny(shape) ? "75%" : "50%";
}

/* The paper's ablation (Table 2) as run's modes (cache/mode.h), at the
 * study's window of 5 tokens and gap 0; naive and hybrid read whole layers
 * whatever chooses the neurons, so they run once, on the trace. */
bool repro_mode_get(size_t i, struct repro_mode *out)
{
    const struct cache_mode *m = cache_mode_at(i);
    if (!m)
        return false;
    out->m = m;
    out->mode = m->name;
    struct policy_spec policy = cache_mode_policy(m, 5, false);
    const struct policy_ops *ops = policy.ops;
    cache_policy_name(&policy, out->policy, sizeof out->policy);
    struct layout_spec layout = cache_mode_layout(m, 0);
    cache_layout_name(&layout, out->layout, sizeof out->layout);
    out->whole_layers = ops->reads_whole_layers;
    out->streams_all = out->whole_layers && !ops->keeps_resident_part;
    return true;
}

/* The measured runs' sizes: a tier's, or those of the real shapes it adds
 * for Table 3. */
struct run_sizes {
    const char *run_prompt, *run_tokens;   /* prompt and generated tokens */
    const char *base_prompt, *base_tokens; /* naive and hybrid */
    int rounds;
};

/* One measured run: mode md on the shape's model, its neurons chosen by
 * the source named source (one that replays, the trace: the shape's
 * calibrated trace; else by its name: the predictor trained on the model),
 * round r. naive and hybrid run few tokens, one of them cold; naive keeps
 * nothing between tokens and runs without a budget. */
static int add_run(struct repro_plan *p, const char *shape, const struct repro_mode *md, const char *source, int r,
                   const struct run_sizes *t)
{
    char id[96], what[160], rel[200], model[4200], active[4300], out[4200];
    at(p, model, sizeof model, "models/%s", shape);
    if (neuron_source_find(source, NULL)->replays)
        snprintf(active, sizeof active, "trace:%s/traces/%s.trace", p->config.out, shape);
    else
        snprintf(active, sizeof active, "%s", source);
    snprintf(id, sizeof id, "run-%s-%s-%s-r%d", shape, md->mode, source, r);
    snprintf(what, sizeof what, "%s %s (neurons: %s), round %d of %d", shape, md->mode, source, r, t->rounds);
    snprintf(rel, sizeof rel, "runs/%s/%s-%s-r%d", shape, md->mode, source, r);
    at(p, out, sizeof out, "%s", rel);
    const char *prompt = md->whole_layers ? t->base_prompt : t->run_prompt;
    const char *tokens = md->whole_layers ? t->base_tokens : t->run_tokens;
    const char *cold = md->whole_layers ? "1" : "5";
    /* --read-ahead off here, in Fig. 7 and in Fig. 8: the paper's serial
     * breakdown, whose I/O the cost model's prices (tools/bench-engine.sh
     * measures the overlap) */
    if (md->streams_all)
        STEP(p, "runs", id, rel, what, "run", "--model", model, "--mode", md->mode, "--active", active, "--prompt",
             p->prompt, "--prompt-tokens", prompt, "-n", tokens, "--cold", cold, "--ignore-eos", "--quiet", "--out",
             out);
    else
        STEP(p, "runs", id, rel, what, "run", "--model", model, "--mode", md->mode, "--window", "5", "--active", active,
             "--dram-budget", repro_run_budget(shape), "--prompt", p->prompt, "--prompt-tokens", prompt, "-n", tokens,
             "--cold", cold, "--read-ahead", "off", "--ignore-eos", "--quiet", "--out", out);
    return 0;
}

/* The cost model's price of a mode on this machine's profile, beside the
 * runs: the trace's volumes (naive and hybrid need none), the predictor's
 * cost (its rank) for the runs a deployable source chose. */
static int add_predict(struct repro_plan *p, const char *shape, const struct repro_mode *md, const char *source,
                       const char *rank)
{
    char id[96], what[160], rel[200], hw[4200], trace[4200], out[4200];
    at(p, hw, sizeof hw, "calibration/hw.json");
    at(p, trace, sizeof trace, "traces/%s.trace", shape);
    snprintf(id, sizeof id, "predict-%s-%s-%s", shape, md->mode, source);
    snprintf(what, sizeof what, "%s %s (neurons: %s), the cost model on this machine's profile", shape, md->mode,
             source);
    snprintf(rel, sizeof rel, "runs/%s/%s-%s-predict", shape, md->mode, source);
    at(p, out, sizeof out, "%s", rel);
    const char *pred_rank = neuron_source_find(source, NULL)->deployable ? rank : "none";
    if (md->whole_layers) /* whole layers: predict prices them as sequential reads, without a trace */
        STEP(p, "runs", id, rel, what, "predict", "--model", shape, "--hw", hw, "--dtype", "f16", "--policy",
             md->policy, "--dram-budget", repro_run_budget(shape), "--predictor-rank", "none", "--out", out);
    else
        STEP(p, "runs", id, rel, what, "predict", "--model", shape, "--hw", hw, "--dtype", "f16", "--policy",
             md->policy, "--layout", md->layout, "--dram-budget", repro_run_budget(shape), "--trace", trace,
             "--predictor-rank", pred_rank, "--out", out);
    return 0;
}

/* The predictor the deployable runs use, trained on the synthetic model's
 * own activations over the shared text. */
static int add_predictor(struct repro_plan *p, const char *shape, const struct tier_sizes *t)
{
    char id[96], what[160], model[4200];
    at(p, model, sizeof model, "models/%s", shape);
    snprintf(id, sizeof id, "predictor-%s", shape);
    snprintf(what, sizeof what, "%s's activation predictor, rank %s", shape, predictor_rank(shape, t));
    char rel[200];
    snprintf(rel, sizeof rel, "models/%s/predictor.safetensors", shape);
    STEP(p, "runs", id, rel, what, "predictor", "train", "--model", model, "--text", p->text, "--tokens",
         t->predictor_tokens, "--rank", predictor_rank(shape, t), "--svd-iterations", t->predictor_svd_iterations,
         "--epochs", t->predictor_epochs, "--force");
    return 0;
}

/* Tables 2 and 3's measured runs on one shape, round by round (every
 * configuration once per round, so the modes alternate), then each
 * configuration's price on this machine's profile. */
static int add_runs(struct repro_plan *p, const char *shape, const struct tier_sizes *t)
{
    static const char *const sources[] = {"trace", "predictor"}; /* neuron sources' names */
    bool trained = p->text[0] != '\0';
    if (trained && add_predictor(p, shape, t) != 0)
        return -1;
    const struct run_sizes z = {t->run_prompt, t->run_tokens, t->base_prompt, t->base_tokens, t->rounds};
    struct repro_mode md;
    for (int r = 1; r <= t->rounds; r++)
        for (size_t i = 0; repro_mode_get(i, &md); i++)
            for (int src = 0; src < (md.whole_layers || !trained ? 1 : 2); src++)
                if (add_run(p, shape, &md, sources[src], r, &z) != 0)
                    return -1;
    for (size_t i = 0; repro_mode_get(i, &md); i++)
        for (int src = 0; src < (md.whole_layers || !trained ? 1 : 2); src++)
            if (add_predict(p, shape, &md, sources[src], predictor_rank(shape, t)) != 0)
                return -1;
    return 0;
}

/* Fig. 8: every token's latency over a long generation in all mode, the
 * cold start included, on the first model of the study. */
static int add_fig8(struct repro_plan *p, const char *shape, const struct tier_sizes *t)
{
    char what[160], model[4200], active[4300], out[4200];
    at(p, model, sizeof model, "models/%s", shape);
    snprintf(active, sizeof active, "trace:%s/traces/%s.trace", p->config.out, shape);
    snprintf(what, sizeof what, "Fig. 8: %s all over %s generated tokens, every token's latency", shape,
             t->long_tokens);
    STEP(p, "fig8", "fig8", "fig8", what, "run", "--model", model, "--mode", "all", "--window", "5", "--active",
         active, "--dram-budget", repro_run_budget(shape), "--prompt", p->prompt, "--prompt-tokens", t->run_prompt, "-n",
         t->long_tokens, "--read-ahead", "off", "--ignore-eos", "--plot", "--quiet", "--out",
         at(p, out, sizeof out, "fig8"));
    return 0;
}

/* The least DRAM share a Fig. 7 point can take on the shape: the weights
 * outside the FFN plus one token's neurons (s_agg(1) of the FFN, the
 * smallest window), below which predict finds no FFN cache row and the run
 * little more (predict --paper fig7 leaves such shares out too); 0 when the
 * shape cannot be read (its steps then say why). */
static double fig7_min_share(const struct repro_plan *p, const char *shape)
{
    struct param_counts pc;
    if (!repro_shape_params(p, shape, &pc))
        return 0;
    return pc.total ? ((double)(pc.total - pc.ffn) + paper_s_agg(1) * (double)pc.ffn) / (double)pc.total : 0;
}

/* One Fig. 7 run: all mode, window:auto at the share, round r; the prompt
 * and tokens of the other measured runs. */
static int add_fig7_run(struct repro_plan *p, const char *shape, int share, int r, const struct tier_sizes *t)
{
    char id[96], what[160], rel[200], model[4200], active[4300], out[4200], budget[16];
    at(p, model, sizeof model, "models/%s", shape);
    snprintf(active, sizeof active, "trace:%s/traces/%s.trace", p->config.out, shape);
    snprintf(budget, sizeof budget, "%d%%", share);
    snprintf(id, sizeof id, "fig7-%d-r%d", share, r);
    snprintf(what, sizeof what, "Fig. 7: %s all, window:auto at %d%% DRAM, round %d of %d", shape, share, r, t->rounds);
    snprintf(rel, sizeof rel, "fig7/%d-r%d", share, r);
    STEP(p, "fig7", id, rel, what, "run", "--model", model, "--mode", "all", "--window", "auto", "--active", active,
         "--dram-budget", budget, "--prompt", p->prompt, "--prompt-tokens", t->run_prompt, "-n", t->run_tokens,
         "--cold", "5", "--read-ahead", "off", "--ignore-eos", "--quiet", "--out", at(p, out, sizeof out, "%s", rel));
    return 0;
}

/* The cost model's price of the same point: window:auto chosen over the
 * run's tokens (its prompt with BOS and every generated token but the
 * last: prompt + generated), on the trace, on this machine's profile. */
static int add_fig7_predict(struct repro_plan *p, const char *shape, int share, const struct tier_sizes *t)
{
    char id[96], what[160], rel[200], hw[4200], trace[4200], out[4200], budget[16], tokens[32];
    at(p, hw, sizeof hw, "calibration/hw.json");
    at(p, trace, sizeof trace, "traces/%s.trace", shape);
    snprintf(budget, sizeof budget, "%d%%", share);
    snprintf(tokens, sizeof tokens, "%d", atoi(t->run_prompt) + atoi(t->run_tokens));
    snprintf(id, sizeof id, "fig7-%d-predict", share);
    snprintf(what, sizeof what, "Fig. 7: %s window:auto at %d%% DRAM, the cost model on this machine's profile", shape,
             share);
    snprintf(rel, sizeof rel, "fig7/%d-predict", share);
    STEP(p, "fig7", id, rel, what, "predict", "--model", shape, "--hw", hw, "--dtype", "f16", "--policy",
         "window:auto", "--layout", "coalesce:0", "--dram-budget", budget, "--trace", trace, "--tokens", tokens,
         "--predictor-rank", "none", "--out", at(p, out, sizeof out, "%s", rel));
    return 0;
}

/* Fig. 7 measured on the first model: every share the shape can take, round
 * by round (the shares alternate), each beside its price, and the paper's
 * modelled curve (OPT-6.7B on its RTX 4090) to overlay. */
static int add_fig7(struct repro_plan *p, const char *shape, const struct tier_sizes *t)
{
    int shares[16], n = 0;
    double least = fig7_min_share(p, shape);
    for (const char *c = t->fig7_shares; *c && n < 16;) {
        char *end;
        int share = (int)strtol(c, &end, 10);
        c = *end ? end + 1 : end;
        if (share >= 100 * least) {
            shares[n++] = share;
            continue;
        }
        size_t len = strlen(p->fig7_left_out);
        snprintf(p->fig7_left_out + len, sizeof p->fig7_left_out - len, "%s%d%%", len ? ", " : "", share);
    }
    if (p->fig7_left_out[0]) {
        size_t len = strlen(p->fig7_left_out);
        snprintf(p->fig7_left_out + len, sizeof p->fig7_left_out - len, ": below %s's weights outside the FFN plus "
                 "one token's neurons, %.1f%% of the model", shape, 100 * least);
    }
    for (int r = 1; r <= t->rounds; r++)
        for (int i = 0; i < n; i++)
            if (add_fig7_run(p, shape, shares[i], r, t) != 0)
                return -1;
    for (int i = 0; i < n; i++)
        if (add_fig7_predict(p, shape, shares[i], t) != 0)
            return -1;
    char out[4200];
    STEP(p, "fig7", "paper-fig7", "paper-fig7", "Fig. 7 modelled as the paper has it: OPT-6.7B on its RTX 4090",
         "predict", "--paper", "fig7", "--out", at(p, out, sizeof out, "paper-fig7"));
    return 0;
}

/* Table 3's device rows: OPT's (the paper's GPU rows are OPT-6.7B's) at a
 * shape PoCL computes in seconds per run, the quick tier's OPT-1.3B on the
 * full tier; its model and trace first, where the plan has none. */
static int add_device_rows(struct repro_plan *p, const struct tier_sizes *t)
{
    static const char *const shapes[] = {"opt-tiny", "opt-125m", "opt-1.3b"};
    /* OPT-125M's embeddings and attention are more than half of it: at half
     * the model nothing would be left for the window, which three quarters
     * hold (as the tiny shapes get) */
    static const char *const budgets[] = {"75%", "75%", "50%"};
    const char *shape = shapes[p->config.tier];
    char id[96], trace[4200], rel[200], what[160];
    snprintf(id, sizeof id, "model-make-%s", shape);
    if (!repro_plan_has(p, id) && add_model(p, "opt", true, shape) != 0)
        return -1;
    snprintf(id, sizeof id, "trace-%s", shape);
    snprintf(rel, sizeof rel, "traces/%s.trace", shape);
    snprintf(what, sizeof what, "calibrated synthetic trace of %s", shape);
    if (!repro_plan_has(p, id))
        STEP(p, "traces", id, rel, what, "trace", "synth", "--shape", shape, "--tokens", t->trace_tokens, "--seed",
             "1", "--out", at(p, trace, sizeof trace, "%s", rel));
    /* at most two rounds: the rows check the pipeline, and PoCL's runs are the tier's slowest */
    int rounds = t->rounds < 2 ? t->rounds : 2;
    struct repro_device_sizes z = {shape, t->base_prompt, t->base_tokens, t->run_prompt, t->run_tokens,
                                   budgets[p->config.tier], rounds};
    return repro_plan_devices(p, &z);
}

/* Device rows are planned where the study has OPT and a device starts. */
static bool plans_devices(struct repro_plan *p)
{
    bool opt = false;
    for (size_t i = 0; i < p->config.n_models; i++)
        opt = opt || !strcmp(p->config.models[i], "opt");
    if (!opt && p->config.n_devices) {
        size_t n = strlen(p->missing);
        snprintf(p->missing + n, sizeof p->missing - n, "%sTable 3's device rows: they are OPT's, and --models "
                 "leaves opt out", n ? "; " : "");
    }
    return opt && p->config.n_devices;
}

/* Table 3's CPU modes: the paper's rows (cache/mode.c's column). */
static bool table3_mode(const struct repro_mode *md)
{
    return (md->m->tables & CACHE_MODE_TABLE3_CPU) != 0;
}

/* Table 3's CPU rows at a real shape the tier adds: its model and trace,
 * naive, hybrid and all on the trace round by round (the modes
 * alternating), then each one's price on this machine's profile. */
static int add_table3_real(struct repro_plan *p, int a, const char *shape, const struct tier_sizes *t)
{
    if (add_model(p, archs[a].make_arch, archs[a].bias_relu, shape) != 0 || add_trace(p, shape, t) != 0)
        return -1;
    const struct run_sizes z = {t->real_run_prompt, t->real_run_tokens, t->real_base_prompt, t->real_base_tokens,
                                t->real_rounds};
    struct repro_mode md;
    for (int r = 1; r <= z.rounds; r++)
        for (size_t i = 0; repro_mode_get(i, &md); i++)
            if (table3_mode(&md) && add_run(p, shape, &md, "trace", r, &z) != 0)
                return -1;
    for (size_t i = 0; repro_mode_get(i, &md); i++)
        if (table3_mode(&md) && add_predict(p, shape, &md, "trace", "none") != 0)
            return -1;
    return 0;
}

/* The real shapes the quick tier adds for Table 3 (archs[].table3_quick,
 * where the tier's shape is another) that fit this machine, beside what
 * the rest of the study writes (its models, Fig. 2b's file), into
 * p->table3_shape; the others, and why, into p->table3_left_out. */
static void choose_table3_shapes(struct repro_plan *p, const struct tier_sizes *t)
{
    if (p->config.tier != REPRO_QUICK)
        return;
    uint64_t committed = 0;
    char err[256];
    if (parse_size(t->sweep_size, &committed, err, sizeof err) != 0)
        committed = 0;
    for (size_t i = 0; i < p->config.n_models; i++)
        committed += repro_shape_bytes(p, archs[arch_index(p->config.models[i])].shape[p->config.tier]);
    struct repro_fit f;
    repro_fit_start(p, committed, &f);
    for (size_t i = 0; i < p->config.n_models; i++) {
        int a = arch_index(p->config.models[i]);
        const char *real = archs[a].table3_quick;
        char why[512];
        if (!real || !strcmp(real, archs[a].shape[p->config.tier]))
            continue;
        if (repro_fit_take(&f, p, real, why, sizeof why)) {
            snprintf(p->table3_shape[i], sizeof p->table3_shape[i], "%s", real);
            continue;
        }
        size_t n = strlen(p->table3_left_out);
        snprintf(p->table3_left_out + n, sizeof p->table3_left_out - n, "%s%s", n ? "; " : "", why);
    }
}

static int plan_steps(struct repro_plan *p)
{
    const struct tier_sizes *t = &tiers[p->config.tier];
    if (add_flash(p, t) != 0)
        return -1;
    if (p->config.data && add_recorded_trace(p, t) != 0)
        return -1;
    for (size_t i = 0; i < p->config.n_models; i++) {
        int a = arch_index(p->config.models[i]);
        const char *shape = archs[a].shape[p->config.tier];
        if (add_trace_and_policies(p, shape, t) != 0 || add_model(p, archs[a].make_arch, archs[a].bias_relu, shape) != 0 ||
            add_runs(p, shape, t) != 0)
            return -1;
        if (i == 0 && (add_fig8(p, shape, t) != 0 || add_fig7(p, shape, t) != 0))
            return -1;
    }
    if (plans_devices(p) && add_device_rows(p, t) != 0)
        return -1;
    if (t->real_windows && repro_plan_real(p, strtoull(t->real_windows, NULL, 10)) != 0)
        return -1;
    /* last: the study's own parts first, then the larger models */
    choose_table3_shapes(p, t);
    for (size_t i = 0; i < p->config.n_models; i++)
        if (p->table3_shape[i][0] && add_table3_real(p, arch_index(p->config.models[i]), p->table3_shape[i], t) != 0)
            return -1;
    return 0;
}

int repro_plan_build(const struct repro_config *c, struct repro_plan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (c->n_models > REPRO_MAX_MODELS)
        return err_set(err, errlen, "at most %d models", REPRO_MAX_MODELS);
    for (size_t i = 0; i < c->n_models; i++) {
        if (arch_index(c->models[i]) < 0)
            return err_set(err, errlen, "unknown model '%s' (opt, falcon, persimmon, phi, llama2)", c->models[i]);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->models[i], c->models[j]))
                return err_set(err, errlen, "model '%s' is named twice", c->models[i]);
    }
    p->config = *c;
    /* numbered phrases of ten words (ten tokens or more in any of our
     * tokenizers), enough for the tier's longest prompt with some to spare */
    const struct tier_sizes *t = &tiers[c->tier];
    int need = atoi(t->run_prompt) > atoi(t->base_prompt) ? atoi(t->run_prompt) : atoi(t->base_prompt);
    size_t len = 0;
    for (int i = 1; i <= need / 9 + 2 && len + 64 < sizeof p->prompt; i++)
        len += (size_t)snprintf(p->prompt + len, sizeof p->prompt - len,
                                "%sthe quick brown fox jumps over the lazy dog %d", i > 1 ? " " : "", i);
    /* the predictors learn from the shared text; without it they are left out */
    char text[4200];
    snprintf(text, sizeof text, "%s/corpus/wiki.test.raw", c->data ? c->data : "");
    struct stat st;
    if (c->data && stat(text, &st) == 0)
        snprintf(p->text, sizeof p->text, "%s", text);
    else
        snprintf(p->missing + strlen(p->missing), sizeof p->missing - strlen(p->missing),
                 "%sthe runs with the trained predictor: no WikiText-2 under %s", p->missing[0] ? "; " : "",
                 c->data ? c->data : "(no --data)");
    if (plan_steps(p) != 0) {
        repro_plan_free(p);
        return err_set(err, errlen, "out of memory");
    }
    return 0;
}

void repro_plan_free(struct repro_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        for (char **a = p->steps[i].args; a && *a; a++)
            free(*a);
        free(p->steps[i].args);
    }
    free(p->steps);
    memset(p, 0, sizeof *p);
}
