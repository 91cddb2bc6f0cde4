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
    return import_hf(hf, NULL, dir, DTYPE_F32, NULL, err, errlen);
}

/* Removes the temporary folder fixture_opt_tiny made. 0, or -1. */
static inline int fixture_remove(const char *tmp)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
