/* A synthetic opt-tiny model folder for the tests that drive the engine:
 * made (model make's generator, f32) and converted into a new temporary
 * folder. */
#ifndef FLASHBED_TESTS_MODEL_FIXTURE_H
#define FLASHBED_TESTS_MODEL_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "common/model_shape.h"
#include "engine/import/import.h"
#include "engine/import/synthetic.h"
#include "engine/model/model.h"

/* tmp: a mkdtemp template ("/tmp/name-XXXXXX"), filled in; dir[dlen] gets
 * the model folder inside it. 0, or -1 with err. */
static inline int fixture_opt_tiny(char *tmp, char *dir, size_t dlen, uint64_t seed, double relu_density,
                                   struct model_shape *shape, char *err, size_t errlen)
{
    const struct fb_settings set = fb_settings_defaults();
    char hf[600];
    if (!mkdtemp(tmp)) {
        snprintf(err, errlen, "mkdtemp %s failed", tmp);
        return -1;
    }
    snprintf(hf, sizeof hf, "%s/hf", tmp);
    snprintf(dir, dlen, "%s/m", tmp);
    if (model_shape_load(&set, "opt-tiny", shape, err, errlen) != 0 ||
        synthetic_hf(shape, DTYPE_F32, seed, relu_density, NULL, hf, NULL, err, errlen) != 0)
        return -1;
    struct import_dtype dt = {.keep = false, .dtype = DTYPE_F32};
    return import_hf(hf, NULL, dir, &dt, NULL, err, errlen);
}

/* fixture_opt_tiny's model (seed 5, ReLU density 0.15) opened twice: with
 * every weight in DRAM (dense) and with its FFN on flash (flash), for the
 * tests that run one against the other. 0, or -1 with err. */
static inline int fixture_dense_and_flash(char *tmp, char *dir, size_t dlen, struct model *dense,
                                          struct model *flash, char *err, size_t errlen)
{
    struct model_shape shape;
    if (fixture_opt_tiny(tmp, dir, dlen, 5, 0.15, &shape, err, errlen) != 0 ||
        model_open(dense, dir, err, errlen) != 0)
        return -1;
    if (model_open_flags(flash, dir, MODEL_FFN_ON_FLASH, err, errlen) != 0) {
        model_close(dense);
        return -1;
    }
    return 0;
}

/* Removes the temporary folder fixture_opt_tiny made. 0, or -1. */
static inline int fixture_remove(const char *tmp)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
