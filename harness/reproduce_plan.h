/* Inside reproduce's planner (harness/reproduce_plan.c and the parts of
 * the study planned in files of their own, reproduce_device.c): appending
 * a step, paths under the study's folder, the measured runs' budget.
 * Internal to harness/reproduce_*.c; not thread-safe, as the plan is not. */
#ifndef FLASHBED_HARNESS_REPRODUCE_PLAN_H
#define FLASHBED_HARNESS_REPRODUCE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/model_shape.h"
#include "harness/reproduce.h"

/* Appends a step with args (NULL-terminated, copied); out is relative to
 * the plan's folder. 0, or -1 when out of memory. */
int repro_plan_add(struct repro_plan *p, const char *section, const char *id, const char *out, const char *what,
                   const char *const *args);

#define STEP(p, section, id, out, what, ...)                                              \
    do {                                                                                  \
        const char *a_[] = {__VA_ARGS__, NULL};                                           \
        if (repro_plan_add(p, section, id, out, what, a_) != 0)                           \
            return -1;                                                                    \
    } while (0)

/* A path under the plan's folder (printf-style), into buf; returns buf. */
const char *repro_plan_at(const struct repro_plan *p, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The real GGUF models' steps (harness/reproduce_real.c): each model of
 * configs/llama_cpp/perplexity.json the shared data holds converted and
 * scored over its first `windows` windows (at most the reference's); the
 * others named in p->real_left_out. 0, or -1 out of memory. */
int repro_plan_real(struct repro_plan *p, uint64_t windows);

/* Whether the plan already has a step of this id. */
bool repro_plan_has(const struct repro_plan *p, const char *id);

/* The training-free sparsity study's steps (harness/reproduce_sparsity.c)
 * for z (p->sparsity or one of p->shapes); none when its model is "". 0,
 * or -1 out of memory. */
int repro_plan_sparsity(struct repro_plan *p, const struct repro_sparsity *z);

/* The DRAM budget of the measured runs on a shape: the paper's half,
 * three quarters on the tiny shapes. */
const char *repro_run_budget(const char *shape);

/* Table 3's device rows (harness/reproduce_device.c): on every device of
 * the plan's config, its calibration (an emulated profile where the device
 * is one), naive and all on shape round by round, and each one's price
 * with that profile. rounds and the token counts are the tier's. */
struct repro_device_sizes {
    const char *shape;
    const char *base_prompt, *base_tokens; /* naive: reads whole layers */
    const char *run_prompt, *run_tokens;   /* all */
    const char *budget;                    /* all's --dram-budget */
    int rounds;
};
int repro_plan_devices(struct repro_plan *p, const struct repro_device_sizes *z);

/* Whether real shapes fit this machine, taken one after another
 * (harness/reproduce_fit.c): a shape's f16 weights at most half the memory
 * (the config's mem_bytes, or this machine's), and on the disk under the
 * study's folder room for its model (a fifth more than its weights: rows
 * padded) and its Hugging Face folder beside every model taken before,
 * what the rest of the study writes (committed) and 1 GiB to spare. What the study's folder holds already counts as room,
 * so that a resumed study plans what the first run did. */
struct repro_fit {
    uint64_t mem, avail, committed; /* bytes */
};
void repro_fit_start(const struct repro_plan *p, uint64_t committed, struct repro_fit *f);
/* true, the shape's bytes committed; false with why (its name first). */
bool repro_fit_take(struct repro_fit *f, const struct repro_plan *p, const char *shape, char *why, size_t len);
/* A shape's parameters (configs/models); false when it cannot be read. */
bool repro_shape_params(const struct repro_plan *p, const char *shape, struct param_counts *pc);
/* A shape's weights in f16; 0 when it cannot be read. */
uint64_t repro_shape_bytes(const struct repro_plan *p, const char *shape);

#endif
