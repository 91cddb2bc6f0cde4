/* A run's plan on a device whose memory is not the host's (run_plan.h,
 * run_plan_share.h): the device budget's share, its refusals, and what
 * the plan holds on the device and beside it in DRAM. */
#include "engine/run/run_plan_share.h"

#include <stdio.h>

#include "common/errbuf.h"
#include "engine/compute/backend.h"

uint64_t run_plan_ring_bytes(uint32_t staging_rows, uint64_t row_stride)
{
    return (uint64_t)RUN_PINNED_RING_SLOTS * staging_rows * row_stride;
}

/* Whether the layers' up biases travel with their rows (as the device's
 * neuron cache and staging area hold them: a float per row). */
static bool has_up_bias(const struct model *m)
{
    for (uint32_t l = 0; m->layers && l < m->shape.n_layers; l++)
        if (m->layers[l].ffn_up_bias)
            return true;
    return false;
}

/* A staging row on the device: the bundle and its up bias. */
static uint64_t device_stage_row(const struct model *m)
{
    return m->bundle_stride + (has_up_bias(m) ? sizeof(float) : 0);
}

void plan_share_device(const struct run_plan_input *in, struct plan_share *sh)
{
    /* a cache row also has its entry in the device's moves list (the host's pinned one counts in DRAM) */
    *sh = (struct plan_share){.device = true, .budget = in->device_budget, .fixed = in->m->dram_bytes + in->kv_bytes,
                              .row_bytes = device_stage_row(in->m) + sizeof(struct row_move),
                              .stage_row = device_stage_row(in->m)};
}

int plan_device_refuse_fixed(const struct plan_share *sh, char *err, size_t errlen)
{
    char b1[32], b2[32];
    plan_human(sh->fixed, b1, sizeof b1), plan_human(sh->budget, b2, sizeof b2);
    return err_set(err, errlen, "the device budget of %s: the weights that stay on the device and the KV cache "
                   "already take %s", b2, b1);
}

int plan_device_refuse_staging(const struct plan_share *sh, uint64_t staged, const struct run_plan_out *out, char *err,
                               size_t errlen)
{
    char b1[32], b2[32], b3[32], b4[32];
    plan_human(sh->fixed, b1, sizeof b1), plan_human(staged, b2, sizeof b2), plan_human(sh->budget, b3, sizeof b3);
    plan_human(sh->fixed + staged, b4, sizeof b4);
    return err_set(err, errlen, "the device budget of %s cannot hold the weights and KV cache (%s) plus the device "
                   "staging area (%s: %u rows of %llu bytes): it needs %s", b3, b1, b2, out->staging_rows,
                   (unsigned long long)sh->stage_row, b4);
}

int plan_device_refuse_rows(const struct run_plan_input *in, const struct plan_share *sh, uint64_t staged,
                            char *err, size_t errlen)
{
    uint32_t layers = in->m->shape.n_layers;
    char b1[32], b2[32], b3[32], b4[32];
    plan_human(sh->fixed, b1, sizeof b1), plan_human(staged, b2, sizeof b2), plan_human(sh->budget, b3, sizeof b3);
    plan_human(sh->fixed + staged + (uint64_t)layers * sh->row_bytes, b4, sizeof b4);
    return err_set(err, errlen, "the device budget of %s cannot hold the weights and KV cache (%s), the device "
                   "staging area (%s) and a cache row in each of %u layers (%llu bytes each, its moves entry "
                   "included): it needs at least %s", b3, b1, b2, layers, (unsigned long long)sh->row_bytes, b4);
}

/* The DRAM budget beside a device budget: the host's part does not fit. */
static int refuse_host(const struct run_plan_input *in, const struct run_plan_out *out, uint64_t rows, char *err,
                       size_t errlen)
{
    char b1[32], b2[32], b3[32];
    plan_human(in->budget, b1, sizeof b1), plan_human(out->host_bytes, b2, sizeof b2);
    plan_human(out->pinned_bytes, b3, sizeof b3);
    return err_set(err, errlen, "the DRAM budget of %s cannot hold what the host keeps beside the device: %s (%s "
                   "pinned: a staging ring of %d x %u rows, x and the moves lists of %llu cache rows; the bounce "
                   "buffer of %u rows%s%s)", b1, b2, b3, RUN_PINNED_RING_SLOTS, out->staging_rows,
                   (unsigned long long)rows, out->bounce_rows,
                   out->scratch_bytes ? ", the buffer through which naive streams dram.bin" : "",
                   in->predictor_bytes ? ", the predictor" : "");
}

int plan_device_finish(const struct run_plan_input *in, const struct plan_share *sh, struct run_plan_out *out,
                       char *err, size_t errlen)
{
    const struct model *m = in->m;
    uint64_t rows = 0, stride = m->bundle_stride, stage_row = device_stage_row(m);
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        rows += out->layer_rows[l];
    out->device_sized = sh->device;
    out->device_fixed_bytes = m->dram_bytes + in->kv_bytes;
    out->device_row_bytes = stage_row + sizeof(struct row_move);
    out->device_stage_bytes = (uint64_t)out->staging_rows * stage_row;
    out->device_bytes = out->device_fixed_bytes + out->device_stage_bytes + rows * out->device_row_bytes;
    /* the ring, the layer's x brought back for a host-side chooser, the moves lists the host writes */
    out->pinned_bytes = run_plan_ring_bytes(out->staging_rows, stride) + (uint64_t)m->shape.d_model * sizeof(float) +
                        rows * sizeof(struct row_move);
    out->host_bytes = out->pinned_bytes + (uint64_t)out->bounce_rows * stride + out->scratch_bytes + in->predictor_bytes;
    if (!sh->device || !in->budget || out->host_bytes <= in->budget)
        return 0;
    return refuse_host(in, out, rows, err, errlen);
}
