/* The settings every command shares: where configs and plot scripts are
 * read from, and engine tuning. cli/main.c builds one struct from the
 * global options and the environment before the command runs and passes it
 * down by pointer; a library function that needs a setting takes the
 * struct as an argument or as a field of its config struct, never from a
 * static, so that two callers in one process (a test, reproduce's
 * --check-plan) can each use their own.
 *
 * The struct borrows its strings: whoever fills it keeps them alive while
 * it is in use. Functions taking one require it (never NULL) unless their
 * header says otherwise. */
#ifndef FLASHBED_COMMON_SETTINGS_H
#define FLASHBED_COMMON_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Work (multiply-adds) below which the cpu backend computes a step on one
 * thread: waking the team costs microseconds. */
#define FB_MIN_PARALLEL_WORK_DEFAULT 32768

struct fb_settings {
    const char *configs_dir;  /* model shapes (models/), hardware profiles (hw/), the paper's numbers (paper/) */
    const char *plots_dir;    /* the gnuplot scripts (*.gp) */
    size_t min_parallel_work; /* cpu backend: multiply-adds below which a step runs on one thread;
                               * 0 puts every step on the team (tests of the threaded paths) */
    bool pin_threads;         /* cpu backend: its compute team one thread per CPU (common/cpu_pin.h) */
    /* The sim backend's fault injection (engine/compute/backend_sim.h), to
     * check that a device fault or a slow device is handled: */
    uint64_t sim_fail_at;  /* the Nth copy or launch (1-based) fails; 0: none */
    uint64_t sim_delay_us; /* microseconds the queue thread waits before each command; 0: none */
    /* The opencl backend's device: its number over every platform's
     * devices in order; -1: the first GPU, else the first device. */
    int64_t opencl_device;
};

/* The defaults: the source tree's configs/ and plots/ (its path compiled
 * in, so the build tree runs without installing),
 * FB_MIN_PARALLEL_WORK_DEFAULT, the compute team pinned, no injected faults or delays, and the
 * opencl backend's own choice of device. */
struct fb_settings fb_settings_defaults(void);

#endif
