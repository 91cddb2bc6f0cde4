/* The memory a run's plan sizes its FFN caches to, shared by run_plan.c
 * and run_plan_device.c only (not an interface of the run layer): DRAM,
 * or, with a device budget, the device's memory. A share says what it
 * holds before any row, what a cache row and a staging row cost in it; the
 * device's refusals and what a plan on a device holds where are in
 * run_plan_device.c. Each returns 0, or -1 with err (err_set). No state. */
#ifndef FLASHBED_ENGINE_RUN_PLAN_SHARE_H
#define FLASHBED_ENGINE_RUN_PLAN_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/run/run_plan.h"

struct plan_share {
    bool device;        /* the device budget's share; else the DRAM budget's */
    uint64_t budget;    /* 0: none */
    uint64_t fixed;     /* held before any row: the weights there, the KV cache (DRAM: the predictor too) */
    uint64_t row_bytes; /* a cache row there */
    uint64_t stage_row; /* a staging row there */
};

/* "1.10 kB", "2.00 MB": how the plan's refusals say sizes. */
void plan_human(uint64_t v, char *buf, size_t len);

/* The device budget's share of in (in->device_budget set). */
void plan_share_device(const struct run_plan_input *in, struct plan_share *sh);

/* The device budget's refusals, each naming the budget and what it had to
 * hold: the weights and KV cache alone; with the device staging area
 * (staged bytes, out's staging rows); with one cache row in each layer
 * beside staged bytes of staging. */
int plan_device_refuse_fixed(const struct plan_share *sh, char *err, size_t errlen);
int plan_device_refuse_staging(const struct plan_share *sh, uint64_t staged, const struct run_plan_out *out, char *err,
                               size_t errlen);
int plan_device_refuse_rows(const struct run_plan_input *in, const struct plan_share *sh, uint64_t staged,
                            char *err, size_t errlen);

/* What a plan on a device holds where (out's device_* , pinned_bytes and
 * host_bytes, from its rows per layer and staging), and with a device
 * budget and a DRAM budget both, the host's part checked against DRAM. */
int plan_device_finish(const struct run_plan_input *in, const struct plan_share *sh, struct run_plan_out *out,
                       char *err, size_t errlen);

#endif
