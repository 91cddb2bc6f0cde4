/* What the flash-FFN-on-a-device tests share (test_ffn_flash_device,
 * test_device_terms): the run's length, a case (a mode, or a policy and
 * layout, under a budget, chosen by the oracle, a trace, the predictor or
 * the gate, with or without --check), a trace file
 * (trace_file_fixture.h), and run's setup of a case as cli/cmd_run.c makes it. */
#ifndef FLASHBED_TEST_FLASH_RUN_FIXTURE_H
#define FLASHBED_TEST_FLASH_RUN_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "policy_text.h"
#include "trace_file_fixture.h"
#include "engine/compute/backend.h"
#include "engine/run/run_exec.h"
#include "engine/run/run_setup.h"
#include "traces/trace.h"

enum { N_PROMPT = 5, N_GEN = 7, MAX_SEQ = N_PROMPT + N_GEN, N_ROWS = MAX_SEQ - 1 };

struct run_case {
    const char *mode;
    const char *policy, *layout; /* NULL: the mode's */
    uint64_t budget_pct;         /* 0: none */
    bool traced;                 /* the trace (trace_path) chooses, not the oracle */
    const char *active;          /* NULL: as traced says; else --active (oracle, predictor, gate, trace:FILE) */
    const char *use;             /* --use with a trace (NULL: auto) */
    bool check;                  /* --check */
};

static char trace_path[700], trace_active[720];

/* run's setup of c, as cli/cmd_run.c sets it up; 0 or -1. */
static int setup(const struct fb_settings *set, const struct model *m, const struct run_case *c, struct run_setup *p)
{
    const char *active = c->active ? c->active : c->traced ? trace_active : "oracle";
    struct run_options o = {.cmd = "run", .mode = c->mode, .window = 3, .active = active,
                            .use = c->use ? c->use : "auto", .check = c->check,
                            .io_engine = "psync", .io_threads = 1, .iodepth = 1, .direct = false,
                            .read_ahead = true, .settings = set};
    if (c->policy) {
        o.policy = POLICY(c->policy);
        o.layout = LAYOUT(c->layout);
    }
    char err[2048];
    memset(p, 0, sizeof *p);
    if (run_setup_plan(&o, m, p, err, sizeof err) != 0) {
        fprintf(stderr, "setup %s: %s\n", c->mode, err);
        return -1;
    }
    run_setup_sizes(p, m, MAX_SEQ);
    p->budget = p->model_bytes * c->budget_pct / 100;
    if (run_setup_fit(&o, m, p, N_ROWS, err, sizeof err) != 0) {
        fprintf(stderr, "fit %s: %s\n", c->mode, err);
        return -1;
    }
    return 0;
}

/* The prompt through engine e, each token's row to hook(ctx), the backend's
 * counts before the first token into *last (set-up's uploads are no token's). */
static inline void run_prompt(struct engine *e, const int *prompt, run_exec_hook hook, void *ctx,
                              struct backend_counts *last)
{
    char err[1024];
    e->be_ops->counts(e->be, last);
    struct decode_config d = {.prompt = prompt, .n_prompt = N_PROMPT, .n = N_GEN, .ignore_eos = true};
    struct run_exec_config rc = {.decode = d, .token = hook, .ctx = ctx};
    struct run_outcome out;
    CHECK(run_exec(e, &rc, &out, err, sizeof err) == 0);
    CHECK_STR(out.error, "");
    CHECK_U64(out.n_rows, N_ROWS);
    free(out.rows);
}

/* The backend a device test's one argument names; NULL (after saying why)
 * when it is missing or unknown. */
static inline const struct backend_ops *backend_arg(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s BACKEND (%s)\n", argv[0], backend_names());
        return NULL;
    }
    const struct backend_ops *be = backend_find(argv[1]);
    if (!be)
        fprintf(stderr, "%s: unknown backend\n", argv[1]);
    return be;
}

#endif
