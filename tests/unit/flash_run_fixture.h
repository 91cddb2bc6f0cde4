/* What the flash-FFN-on-a-device tests share (test_ffn_flash_device,
 * test_device_terms): the run's length, a case (a mode, or a policy and
 * layout, under a budget, chosen by the oracle or a trace), a trace of the
 * model's shape, and run's setup of a case as cli/cmd_run.c makes it. */
#ifndef FLASHBED_TEST_FLASH_RUN_FIXTURE_H
#define FLASHBED_TEST_FLASH_RUN_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_text.h"
#include "engine/run/run_setup.h"
#include "traces/trace.h"

enum { N_PROMPT = 5, N_GEN = 7, MAX_SEQ = N_PROMPT + N_GEN, N_ROWS = MAX_SEQ - 1 };

struct run_case {
    const char *mode;
    const char *policy, *layout; /* NULL: the mode's */
    uint64_t budget_pct;         /* 0: none */
    bool traced;                 /* the trace (trace_path) chooses, not the oracle */
};

static char trace_path[700], trace_active[720];

/* A trace of the model's shape: token t needs, in layer l, the neurons i
 * with (3i + 5t + 7l) mod 16 < 3: consecutive tokens share some, so a
 * policy under a budget both hits and drops rows the token needs (belady
 * keeps the ones needed soonest): the second batch of row moves. */
static int write_trace(const char *path, const struct model *m)
{
    char err[512];
    const struct model_shape *s = &m->shape;
    struct trace_meta tm = {s->n_layers, s->d_model, s->d_ff, 4, FFN_RELU, false, "{}"};
    struct trace_writer *w = trace_writer_open(path, &tm, err, sizeof err);
    uint32_t *set = malloc(s->d_ff * sizeof *set);
    int rc = w && set ? 0 : -1;
    for (uint32_t t = 0; rc == 0 && t < MAX_SEQ; t++) {
        rc = trace_writer_begin_token(w, 0, err, sizeof err);
        for (uint32_t l = 0; rc == 0 && l < s->n_layers; l++) {
            uint32_t n = 0;
            for (uint32_t i = 0; i < s->d_ff; i++)
                if ((3 * i + 5 * t + 7 * l) % 16 < 3)
                    set[n++] = i;
            rc = trace_writer_layer(w, l, set, n, NULL, 0, err, sizeof err);
        }
    }
    free(set);
    if (rc != 0) {
        if (w)
            trace_writer_abort(w);
        return -1;
    }
    return trace_writer_close(w, err, sizeof err);
}

/* run's setup of c, as cli/cmd_run.c sets it up; 0 or -1. */
static int setup(const struct fb_settings *set, const struct model *m, const struct run_case *c, struct run_setup *p)
{
    struct run_options o = {.cmd = "run", .mode = c->mode, .window = 3, .active = c->traced ? trace_active : "oracle",
                            .use = "auto",
                            .io_engine = "psync", .io_threads = 1, .iodepth = 1, .direct = false, .settings = set};
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

#endif
