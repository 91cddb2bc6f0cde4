/* What a study's plan (harness/reproduce.h) puts on disk, computed from
 * its steps before any runs, and removing again what it made that is big
 * and can be made again (`reproduce --clean`).
 *
 * The estimate: each converted model folder by its shape and dtype
 * (ffn.bin's padded bundles, its checksums, dram.bin's matrices in the
 * dtype and vectors in f32; a llama2.c checkpoint by its file's size);
 * each trained predictor by its rank, shape and dtype; the Hugging Face
 * folder `model make` writes (every parameter in the dtype), there only
 * until its model is converted, so the largest of them counts once at the
 * peak; Fig. 2b's scratch file by the sweep's --size; each synthetic trace
 * at most its tokens x layers x two sets as bitsets (the codec never
 * writes a set larger); and the results, logs and plots of every step, a
 * stated allowance: REPRO_DISK_RESULTS_PLOTS for a step that draws plots,
 * REPRO_DISK_RESULTS_PER_STEP for any other (measured at the tiny tier: a
 * policy study with its plots takes about 0.8 MiB, a run's files and log
 * under 0.1 MiB).
 * What exists already (a model folder, the scratch file at its size, a
 * finished step's results) needs no new room.
 *
 * Return convention: 0, or -1 with the reason in err. Not thread-safe. */
#ifndef FLASHBED_HARNESS_REPRODUCE_DISK_H
#define FLASHBED_HARNESS_REPRODUCE_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "harness/reproduce.h"

#define REPRO_DISK_RESULTS_PER_STEP (128u * 1024u) /* a step's result files and log */
#define REPRO_DISK_RESULTS_PLOTS (1024u * 1024u)   /* one that draws plots (--plot) */

struct repro_disk {
    uint64_t models;     /* converted model folders */
    uint64_t predictors; /* trained predictors, in those folders */
    uint64_t hf_peak;    /* the largest Hugging Face folder, made and removed again */
    uint64_t scratch;    /* Fig. 2b's scratch file, on the plan's --disk */
    uint64_t traces;     /* at most: the synthetic traces */
    uint64_t results;    /* the allowance for every step's results and logs */
    uint64_t total;      /* the peak: all of the above */
    /* of total, what is not there yet: under the study's folder, and the
     * scratch file on --disk (counted in need_out when it is the same file
     * system) */
    uint64_t need_out, need_disk;
    char scratch_path[4200]; /* "" when the plan sweeps no scratch file */
};

int repro_disk_estimate(const struct repro_plan *p, struct repro_disk *d, char *err, size_t errlen);

/* Refuses (-1, err naming the folder, what is needed and what is free)
 * when the file systems of the study's folder and of --disk lack d's room. */
int repro_disk_check(const struct repro_plan *p, const struct repro_disk *d, char *err, size_t errlen);

/* What --clean removes: the model folders the plan's steps made (converted
 * models with their predictors, Hugging Face folders left over) and its
 * scratch file, each only where the step that makes it finished (its
 * marker in steps/) or, for the scratch file, where it is the plan's own
 * path; *bytes the size they take now. Calls each (path) into fn. */
typedef void (*repro_clean_fn)(void *ctx, const char *path, uint64_t bytes);
uint64_t repro_clean_list(const struct repro_plan *p, repro_clean_fn fn, void *ctx);

/* Removes them, and the markers of the steps that made them (and of those
 * that wrote into them: a predictor's training, a folder's removal), so
 * that running the study again makes them again, and nothing else: the
 * results of the runs stay. *removed: the bytes freed. */
int repro_clean(const struct repro_plan *p, uint64_t *removed, char *err, size_t errlen);

#endif
