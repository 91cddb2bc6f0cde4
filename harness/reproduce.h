/* flashbed reproduce: the paper's study (../shared/PAPER.md) as a plan of
 * flashbed's own commands, run one after another into one result folder,
 * then REPORT.md (harness/reproduce_report.c) from their result files.
 *
 * The plan is data. Every step is one flashbed command line (the arguments
 * after the program and its global options) and the path under the
 * plan's folder that it writes. Steps come in an order that satisfies
 * their needs (models before the runs on them), so running them in order
 * is the whole schedule; measured runs of several configurations are
 * planned round by round (configuration A, B, C, then A, B, C again), so
 * that a shared machine's drift spreads over all of them instead of
 * landing on one.
 *
 * Resuming: a finished step leaves steps/<id>.json (its arguments, exit
 * status, seconds, date). Running the plan again skips a step whose marker
 * holds the same arguments, removes what an unfinished one left and runs
 * it again, and refuses (naming the step) when the arguments differ: the
 * folder was made with other settings.
 *
 * Tiers: tiny (the tiny shapes, seconds per step: tests), quick (OPT-1.3B
 * and the tiny shapes of the other architectures: the README's main job;
 * Table 3's CPU rows also at the real shape of every architecture that has
 * one of at most 3B fitting this machine: Phi-2, TinyLlama's 1.1B with
 * FATReLU), full (the paper's 7B shapes).
 *
 * Return convention: 0, or -1 with a message in err naming the step, its
 * command and its log. Not thread-safe; one plan at a time. */
#ifndef FLASHBED_HARNESS_REPRODUCE_H
#define FLASHBED_HARNESS_REPRODUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/mode.h"
#include "common/settings.h"

struct out_manifest;

enum repro_tier { REPRO_TINY, REPRO_QUICK, REPRO_FULL };

#define REPRO_MAX_MODELS 5
#define REPRO_MAX_DEVICES 3

/* A device backend that starts here (sim always; opencl, cuda where they
 * do): Table 3's device rows are measured on it (cli/ finds them). */
struct repro_device {
    char backend[16];  /* sim, opencl, cuda */
    char device[128];  /* as its driver names it */
    bool emulated;     /* a model of a device (sim, OpenCL on a CPU): no GPU timings */
};

struct repro_config {
    enum repro_tier tier;
    const char *models[REPRO_MAX_MODELS]; /* architectures: opt, falcon, persimmon, phi, llama2 */
    size_t n_models;
    const char *out;   /* the study's folder */
    const char *disk;  /* a folder on the disk Fig. 2b sweeps */
    const char *data;  /* the shared data (stories260K, texts); NULL or missing: those steps are left out */
    const char *gguf_dir; /* tools/fetch-models.sh's folder (the real GGUF models), searched before
                           * data's models/; NULL: data's alone */
    bool fio;          /* fio is installed: the sweep runs it beside */
    struct repro_device devices[REPRO_MAX_DEVICES]; /* Table 3's device rows run on each */
    size_t n_devices;
    char devices_absent[512]; /* the device backends that did not start here, and why ("" when none) */
    const struct fb_settings *settings; /* configs and plot scripts the plan and report read (borrowed) */
    uint64_t mem_bytes; /* the memory whose half a real shape's weights must fit in (0: this machine's) */
};

/* A step whose first argument is this removes the path after it (a
 * folder under the plan's, converted and no longer needed) instead of
 * running flashbed: `rm -r PATH` in --plan. */
#define REPRO_REMOVE "@remove"

/* The quality-against-bytes study of the training-free neuron sources
 * (harness/reproduce_sparsity.c): on one model, each source's perplexity
 * on each text beside the FFN bytes a token reads. Planned where model is
 * not "": by reproduce on stories260K and on the fixtures' GLU tiny shapes
 * (random weights: their bytes and times, not their perplexities; quick
 * and full tiers), by `flashbed sparsify study` on any model folder. */
#define REPRO_SPARSITY_MAX 8 /* sparsities, predictor thresholds */
#define REPRO_SPARSITY_TEXTS 2
#define REPRO_SPARSITY_SHAPES 6
struct repro_sparsity {
    char model[4200];          /* a flashbed model folder with a GLU FFN ("" none planned) */
    char name[64];             /* what the report calls it */
    char dir[64];              /* its files under the plan's folder, and its steps' ids with '/' as '-' ("": "sparsity") */
    char dtype[8];             /* its weights' dtype, for the report ("" unsaid) */
    bool trained;              /* a trained model (its perplexities mean something), not random weights */
    char calib_text[4400];     /* the thresholds and the predictor are calibrated on its first calib_tokens */
    uint64_t calib_tokens;
    char texts[REPRO_SPARSITY_TEXTS][4400];   /* scored; past the calibration tokens where it is calib_text */
    char text_names[REPRO_SPARSITY_TEXTS][32];
    size_t n_texts;
    uint64_t tokens;           /* scored per text */
    double sparsities[REPRO_SPARSITY_MAX];    /* sparsify calibrate's targets, each in [0, 1) */
    size_t n_sparsities;
    double predictor_p[REPRO_SPARSITY_MAX];   /* the predictor's probability thresholds (none: no predictor) */
    size_t n_predictor;
    bool train_predictor;      /* the plan trains it (into a model folder of the study's own) */
    char predictor_act[32];    /* predictor train's --act-threshold ("" its default) */
    char predictor_rank[16];   /* predictor train's --rank ("" its default, 128: more than a small model's d_model) */
};

struct repro_step {
    char id[96];      /* unique and a file name: "fig2b-sweep", "model-opt-1.3b" */
    char what[160];   /* what the progress line says */
    char section[32]; /* which part of REPORT.md it feeds: "fig2b", "calibration", ... */
    char **args;      /* NULL-terminated, heap */
    char out[4096];   /* what it writes, under the plan's folder */
};

struct repro_plan {
    struct repro_step *steps;
    size_t n, cap;
    struct repro_config config;
    char missing[1024]; /* parts of the study the plan leaves out, and why ("" when none) */
    char fig7_left_out[256]; /* Fig. 7's shares the first model cannot take, and why ("" when none) */
    char device_shape[32]; /* the shape of Table 3's device rows ("" when none are planned) */
    char device_budget[8]; /* and all's --dram-budget there */
    /* config.out opened as the study's result folder while the study runs
     * and reports (common/out_manifest.h: its markers, tables and REPORT.md
     * are claimed there); NULL when it is not open (--plan, --merge, tests) */
    struct out_manifest *folder;
    /* per model of config.models: the real shape Table 3's CPU rows also
     * run at, beside the tier's ("" when none: the tier's shape is real, or
     * the architecture has none that fits) */
    char table3_shape[REPRO_MAX_MODELS][32];
    char table3_left_out[1024]; /* the real shapes left out, and why ("" when none) */
    char prompt[16384]; /* the measured runs' prompt (numbered phrases) */
    char text[4400];    /* the predictors' training text ("" without the shared data: no predictor runs) */
    char real_left_out[1024]; /* the real GGUF models the shared data lacks, and why ("" when none) */
    struct repro_sparsity sparsity; /* the training-free sparsity study (model "": not planned) */
    /* the same study on the fixtures' GLU tiny shapes, random weights: one text, no predictor */
    struct repro_sparsity shapes[REPRO_SPARSITY_SHAPES];
    size_t n_shapes;
};

/* A measured mode of the paper's ablation (cache/mode.h's table): run's
 * --mode and the policy and layout it stands for at the study's window of
 * 5 tokens and coalescing gap 0 (what predict prices). */
struct repro_mode {
    const struct cache_mode *m;
    const char *mode;
    char policy[32], layout[32];
    bool whole_layers;  /* reads whole layers whatever chooses the neurons (naive, hybrid) */
    bool streams_all;   /* holds no part of any layer: runs without a budget (naive) */
};

/* Mode i in the paper's order (naive .. all) into out; false past the last. */
bool repro_mode_get(size_t i, struct repro_mode *out);

/* The architectures --models names, and each one's shape per tier. */
const char *repro_shape(const char *arch, enum repro_tier tier);
const char *repro_tier_name(enum repro_tier tier);
/* The real shape of at most 3B the quick tier measures an architecture's
 * Table 3 CPU rows at where it fits; NULL when it has none. */
const char *repro_table3_shape(const char *arch);
/* The architecture one of whose shapes (any tier's, or the quick tier's
 * real Table 3 one) is shape; NULL when none is. */
const char *repro_shape_arch(const char *shape);

/* Plans the study for c (strings are copied; c->settings is kept by
 * pointer, for the report). */
int repro_plan_build(const struct repro_config *c, struct repro_plan *p, char *err, size_t errlen);
void repro_plan_free(struct repro_plan *p);

/* One step as a shell command line ("flashbed ARGS", each argument quoted
 * where needed): for --plan and the messages. */
void repro_step_command(const struct repro_step *s, const char *program, char *buf, size_t len);

/* Where a step is when the runner calls back. */
enum repro_event { REPRO_SKIPPED, REPRO_STARTED, REPRO_FINISHED, REPRO_FAILED, REPRO_INTERRUPTED };

/* Called for every step: skipped (done before), started, then finished,
 * failed or interrupted (after seconds). index counts from 0 over p->n. */
typedef void (*repro_progress_fn)(void *ctx, const struct repro_plan *p, size_t index, enum repro_event ev,
                                  double seconds);

/* Runs the steps in order with program (flashbed's own path) and its
 * global options (NULL-terminated, may be NULL), each step's output and
 * errors into logs/<id>.log. Stops at the first failure, and between
 * steps once interrupted() (common/interrupt.h; the step running gets the
 * signal itself and cleans up): then *stopped is set and 0 returned, the
 * finished steps kept. */
int repro_run(const struct repro_plan *p, const char *program, const char *const *globals,
              repro_progress_fn progress, void *ctx, bool *stopped, char *err, size_t errlen);

/* `flashbed sparsify study`: a plan of the training-free sparsity study
 * alone, of z (copied) under out (kept by pointer), run by repro_run; and
 * its REPORT.md (the study's section). 0, or -1 with err. */
int repro_sparsity_plan_build(const struct repro_sparsity *z, const char *out, const struct fb_settings *set,
                              struct repro_plan *p, char *err, size_t errlen);
int repro_sparsity_report_write(const struct repro_plan *p, const char *command_line, char *err, size_t errlen);

/* Writes REPORT.md into the study's folder from what its steps wrote so
 * far (command_line: how the study was run, for the report's head). */
int repro_report_write(const struct repro_plan *p, const char *command_line, char *err, size_t errlen);

/* --merge: one REPORT.md in folder from the studies in its subfolders
 * (each with reproduce.json, as --plan's lines make them), each study's
 * report under its folder's name; a study without one yet is listed as
 * not finished. */
int repro_merge(const char *folder, const struct fb_settings *set, char *err, size_t errlen);

/* The sweep the profiles take the flash from, relative to the study: read
 * into huge pages as the engine's buffers are ("fig2b-huge/sweep.json" when
 * Fig. 2b itself ran on small pages beside fio, else "fig2b/sweep.json"). */
const char *repro_engine_sweep(const struct repro_plan *p);

#endif
