/* The kernel language of ops.kern in OpenCL C 1.2: ops.kern is written
 * once against the FB_* names below, and compat_cuda.h maps the same
 * names to CUDA. The OpenCL program is this file followed by wtypes.kern
 * (the weight types' numbers) and ops.kern,
 * embedded into the binary at build time (backend_opencl.c compiles it
 * with clBuildProgram); nothing is looked up at run time.
 *
 * Launch geometry is stated by each kernel as "groups of FB_LSIZE
 * work-items": the host enqueues groups * size work-items (OpenCL) or a
 * grid of groups blocks of size threads (CUDA). A kernel reads only its
 * group number and its index in the group, never a global id, so both
 * launches mean the same. Group sizes are powers of two up to
 * FB_MAX_GROUP (the reductions halve them).
 *
 * Half-precision weights are widened on load (vload_half) and computed
 * in f32: a device without cl_khr_fp16 (PoCL's CPU device) reads them
 * too. bf16 is the top half of an f32's bits. */
#ifndef FLASHBED_KERNELS_COMPAT_OPENCL_H
#define FLASHBED_KERNELS_COMPAT_OPENCL_H

#ifndef FB_MAX_GROUP
#define FB_MAX_GROUP 256
#endif

#define FB_KERNEL __kernel
#define FB_GLOBAL __global
#define FB_LOCAL __local     /* a group-shared array declared in a kernel */
#define FB_LOCAL_PTR __local /* a pointer to one, passed to a helper */
#define FB_DEVICE            /* a helper function */

#define FB_LID ((int)get_local_id(0))
#define FB_LSIZE ((int)get_local_size(0))
#define FB_GROUP_ID ((int)get_group_id(0))
/* every work-item of a group waits here; the group's writes to local and
 * global memory before it are seen by all of them after it */
#define FB_BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

typedef ulong fb_u64;
typedef uint fb_u32;
typedef ushort fb_u16;
typedef uchar fb_u8;

#define fb_load_f16(p, i) vload_half((size_t)(i), (FB_GLOBAL const half *)(p))
#define fb_load_bf16(p, i) as_float((uint)(p)[i] << 16)

#define fb_exp(v) exp(v)
#define fb_sqrt(v) sqrt(v)
#define fb_pow(a, b) pow(a, b)
#define fb_sin(v) sin(v)
#define fb_cos(v) cos(v)
#define fb_erf(v) erf(v)
#define fb_tanh(v) tanh(v)
#define fb_fmax(a, b) fmax(a, b)
#define FB_NEG_INF (-INFINITY)

#endif
