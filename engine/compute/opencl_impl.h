/* Inside the opencl backend (backend_opencl.c, opencl_device.c,
 * opencl_ops.c): its instance, and what its files share. The kernels
 * are kernels/ops.kern over kernels/compat_opencl.h, one program text
 * built into the binary (fb_opencl_source, generated at build time).
 * Every function returns 0, or -1 with the reason in the instance's
 * error (bk_fail); a failed enqueue marks the instance failed, as a
 * fault in the queue would. Threading: one host thread per instance. */
#ifndef FLASHBED_ENGINE_OPENCL_IMPL_H
#define FLASHBED_ENGINE_OPENCL_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "engine/compute/backend.h"
#include "engine/compute/backend_impl.h"

extern const char fb_opencl_source[];

/* The kernels of ops.kern, in the order of ocl_kernel_names. */
enum ocl_kernel { K_MATVEC, K_FFN_H, K_FFN_DOWN, K_ATTENTION, K_NORM, K_ROPE, K_ADD, K_EMBED, K_MOVE_ROWS, K_FFN_ACT, K_COUNT };
extern const char *const ocl_kernel_names[K_COUNT];

/* Events kept, the markers event_elapsed reads the profiling times of:
 * an older one is waited for by waiting for the oldest kept one. */
#define OCL_EVENTS BACKEND_EVENTS_KEPT

struct backend {
    struct backend_base base;
    cl_context ctx;
    cl_device_id dev;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k[K_COUNT];
    size_t group; /* work-items per group, a power of two */
    struct backend_device desc; /* info()'s; desc.emulated: a CPU device (PoCL) */
    uint64_t max_alloc;
    /* The device works on the host's memory itself (CL_DEVICE_HOST_UNIFIED_
     * MEMORY: PoCL, integrated GPUs): registered memory is then used in
     * place. A discrete GPU (NVIDIA's OpenCL) keeps a copy of it, which
     * the host's later writes do not reach (seen on an H200). */
    bool shares_host;
    /* scratch: the FFN's h (h_floats), attention's scores (att_heads
     * heads of att_stride floats); grown when an op needs more */
    cl_mem h, att;
    size_t h_floats, att_stride, att_heads;
    /* move_rows' fault word on the device, read back after each call into
     * fault_host; move_mark: the events recorded before the last call */
    cl_mem fault;
    cl_int fault_host;
    bool moved;
    uint64_t move_mark;
    cl_event ring[OCL_EVENTS];
    uint64_t events; /* recorded so far; event e is ring[e % OCL_EVENTS] */
};

/* The memory behind a reference's buffer. */
static inline cl_mem ocl_mem(struct dev_ref r)
{
    return (cl_mem)r.buf->handle;
}

/* ---- opencl_device.c ---- */
/* The device to compute on: number want (0 or more) over every
 * platform's devices in order; want < 0: the first GPU, else the first
 * device. Returns 1 (not -1) when the machine has no platform or no
 * device, with the reason in err, so that callers can tell "no OpenCL
 * here" from a failure. */
int ocl_pick_device(int64_t want, cl_device_id *out, char *err, size_t errlen);
/* What the driver says of dev (its name, type and memory) into out, and
 * its largest allocation; 0, or -1 with why in err. Creates nothing. */
int ocl_describe_device(cl_device_id dev, struct backend_device *out, uint64_t *max_alloc, char *err, size_t errlen);
/* The program of src built for dev in ctx; on failure err holds the
 * first lines of the driver's build log. */
int ocl_build(cl_context ctx, cl_device_id dev, const char *src, cl_program *out, char *err, size_t errlen);
/* The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"). */
const char *ocl_error_name(cl_int rc);
/* Marks b failed with "what: <error name>" unless rc is CL_SUCCESS;
 * returns 0 or -1. */
int ocl_check(struct backend *b, cl_int rc, const char *what);

/* ---- opencl_ops.c: the compute ops of backend.h ---- */
int ocl_matvec(struct backend *b, struct dev_ref out, struct dev_ref w, enum fb_dtype t, struct dev_ref x,
               struct dev_ref bias, int rows, int cols);
int ocl_ffn_rows(struct backend *b, struct dev_ref out, struct dev_ref rows, size_t row_stride, int n_rows,
                 struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a);
int ocl_ffn_ids(struct backend *b, struct dev_ref out, struct dev_ref bundles, size_t row_stride, struct dev_ref ids,
                int n_ids, struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a);
int ocl_attention(struct backend *b, struct dev_ref out, struct dev_ref q, struct dev_ref k_cache,
                  struct dev_ref v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim);
int ocl_norm(struct backend *b, struct dev_ref out, struct dev_ref x, struct dev_ref weight, struct dev_ref bias,
             int d, enum norm_kind kind, float eps);
int ocl_rope(struct backend *b, struct dev_ref vec, int n_heads, int head_dim, int rot_dims, int pos,
             struct dev_ref inv_freq, float scale);
int ocl_add(struct backend *b, struct dev_ref y, struct dev_ref x, int n);
int ocl_embed(struct backend *b, struct dev_ref out, struct dev_ref table, enum fb_dtype t, int r, int d, float scale);
int ocl_ffn_act(struct backend *b, struct dev_ref h, struct dev_ref z, struct dev_ref g, int n, const struct arch *ar);
int ocl_move_rows(struct backend *b, struct dev_ref base, size_t row_bytes, struct dev_ref moves, int n);

#endif
