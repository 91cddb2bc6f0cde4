/* A model that exists only as numbers, for the run planner's tests
 * (test_run_plan.c, test_run_plan_device.c): d_model 4, f32, ReLU (no
 * gate): a row is 2 vectors of 16 bytes = 32 bytes of weights, stored in
 * bundles of PLAN_STRIDE (the alignment); dram.bin 1000 bytes. */
#ifndef FLASHBED_TEST_PLAN_MODEL_FIXTURE_H
#define FLASHBED_TEST_PLAN_MODEL_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "engine/model/model.h"

enum { PLAN_STRIDE = 64, PLAN_DRAM = 1000 };

static inline struct model fake_model(uint32_t n_layers, uint32_t d_ff)
{
    struct model m;
    memset(&m, 0, sizeof m);
    m.shape.n_layers = n_layers;
    m.shape.d_ff = d_ff;
    m.shape.d_model = 4;
    m.dtype = DTYPE_F32;
    m.bundle_stride = PLAN_STRIDE;
    m.dram_bytes = PLAN_DRAM;
    return m;
}

#endif
