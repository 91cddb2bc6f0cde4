/* flashbed run's setup, decided from its options as plain data (struct
 * run_options: what cli/cmd_run.c parsed from the command line, the
 * policy and the layout already values):
 *
 *   run_setup_plan     the policy and layout (a mode's preset, or --policy
 *                      and --layout, which must agree with an explicit
 *                      --mode), the flash FFN's I/O settings, what chooses
 *                      the neurons (a trace, the oracle, the predictor or
 *                      the gate) and what that source cannot do with the
 *                      policy;
 *   run_setup_warmup   hot's warm-up profile under a computed source
 *                      (engine/run/warmup.h), when run_setup_needs_warmup;
 *   run_setup_fit      the caches, staging and bounce rows sized to the
 *                      DRAM budget, or on a device with a device budget to
 *                      it (engine/run/run_plan.h), or a dense run's check
 *                      against them; a device budget without a device is
 *                      refused naming the option.
 *
 * The command line's parsing, its files and its printing stay in cli/.
 * No printing. 0, or -1 with err holding the whole line run prints: these
 * are run's option logic, so unlike other library code their messages name
 * the command (run_options.cmd) and the option at fault. Not thread-safe:
 * one setup per run; run_setup_free releases what it holds. */
#ifndef FLASHBED_ENGINE_RUN_SETUP_H
#define FLASHBED_ENGINE_RUN_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/layout_spec.h"
#include "cache/policy_spec.h"
#include "common/settings.h"
#include "engine/compute/backend.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/ffn/select_choice.h"
#include "engine/model/model.h"
#include "engine/run/run_plan.h"
#include "traces/trace.h"

/* run's options as data. */
struct run_options {
    const char *cmd;            /* the command, as messages name it: "run" */
    const char *mode;           /* naive, hybrid, predictor, window, all (dense needs no setup) */
    bool mode_given;            /* --mode was given: --policy and --layout must agree with it */
    struct policy_spec policy;  /* --policy (ops NULL: not given); window:auto taken */
    struct layout_spec layout;  /* --layout (ops NULL: not given) */
    uint32_t window;            /* --window's K (0: auto) */
    uint32_t coalesce;          /* --coalesce's G */
    const char *active;         /* oracle, predictor, gate, or trace:FILE */
    const char *use;            /* with trace:FILE: predicted, actual or auto */
    double threshold;           /* --threshold: the chooser's */
    bool threshold_given;
    const char *sparsify;       /* --sparsify FILE: gate-cal's and the gate's thresholds file (NULL: the model's) */
    double act_threshold;       /* --act-threshold: the truth beside a chooser */
    bool act_threshold_given;
    bool check;
    const char *io_engine;
    struct io_fault *fault;     /* io_engine fault's rules and counts (the caller's; NULL: none) */
    bool verify;                /* --verify on: bundles checked against ffn.crc32c as they are read */
    unsigned io_threads, iodepth;
    bool direct;                /* not --buffered */
    bool read_ahead;            /* --read-ahead on (ffn_flash.h) */
    const char *warmup_file;    /* the warm-up's text, as messages name it (NULL: the prompt) */
    const struct fb_settings *settings; /* the warm-up's backend reads its tuning here */
};

/* What a run was set up with. */
struct run_setup {
    bool dense;
    struct ffn_flash_config cfg;
    struct run_plan_out plan;
    struct policy_spec policy;  /* as asked (window:auto unresolved: plan.policy has its K); ops NULL: dense */
    struct layout_spec layout;  /* ops NULL: dense */
    struct trace trace, profile; /* profile: hot's warm-up under a computed source */
    bool have_trace, have_profile;
    char profile_desc[256];
    uint64_t budget;            /* 0: none */
    bool device;                /* the backend's memory is not the host's (backend_info.host_visible false) */
    const char *backend;        /* its name, as messages say it (NULL: unnamed) */
    uint64_t device_budget;     /* --device-budget; 0: none (a device's caches follow the DRAM budget) */
    uint64_t model_bytes;       /* dram.bin + ffn.bin */
    uint64_t kv_bytes;
    char active_desc[800];
    bool ffn_t_checked;         /* --active teal: ffn_t.bin has checksums (ffn_t.crc32c), its reads checkable */
    struct select_choice sel;   /* --active oracle, predictor or gate (have_sel) */
    bool have_sel;
};

/* The model's bytes and the KV cache for max_seq positions, into p. */
void run_setup_sizes(struct run_setup *p, const struct model *m, int max_seq);

/* The policy and layout alone (part of run_setup_plan). */
int run_setup_policy(const struct run_options *o, struct run_setup *p, char *err, size_t errlen);

/* What the source cannot do with this run's policy and options (part of
 * run_setup_plan): --check beside the oracle, a chooser beside a policy
 * that reads whole layers. */
int run_setup_check_source(const struct run_options *o, const struct run_setup *p, char *err, size_t errlen);

/* The policy, the layout, the I/O settings and the source into p (a
 * trace:FILE loaded and checked against m's shape). */
int run_setup_plan(const struct run_options *o, const struct model *m, struct run_setup *p, char *err,
                   size_t errlen);

/* Whether the policy ranks a profile of needed sets that only a warm-up
 * can give (hot, with no trace to read them from). */
bool run_setup_needs_warmup(const struct run_setup *p);

/* Runs the warm-up over tokens[0..n) (at most the model's positions) into
 * p's profile and describes it. */
int run_setup_warmup(const struct run_options *o, const struct model *m, const struct backend_ops *be, int threads,
                     const int *tokens, int n, struct run_setup *p, char *err, size_t errlen);

/* The plan for `tokens` computed tokens within p->budget, applied to p->cfg;
 * a dense run: the model and the KV cache within it. */
int run_setup_fit(const struct run_options *o, const struct model *m, struct run_setup *p, uint64_t tokens,
                  char *err, size_t errlen);

void run_setup_free(struct run_setup *p);

#endif
