/* The kernel language of ops.kern in CUDA: the FB_* names of
 * compat_opencl.h mapped to CUDA C++, so that a .cu wrapper that includes
 * this file and then ops.kern compiles the same kernels as the OpenCL
 * program. A group is a thread block, a work-item a thread; a kernel's
 * groups are the grid (blockIdx.x) and its size the block (blockDim.x),
 * one dimension each. Kernels are extern "C" so a module loader finds
 * them by their OpenCL names. f16 loads go through cuda_fp16.h's
 * conversion; compute is f32 as in OpenCL. */
#ifndef FLASHBED_KERNELS_COMPAT_CUDA_H
#define FLASHBED_KERNELS_COMPAT_CUDA_H

#include <cuda_fp16.h>
#include <math.h>

#ifndef FB_MAX_GROUP
#define FB_MAX_GROUP 256
#endif

#define FB_KERNEL extern "C" __global__
#define FB_GLOBAL
#define FB_LOCAL __shared__
#define FB_LOCAL_PTR
#define FB_DEVICE static __device__ __forceinline__

#define FB_LID ((int)threadIdx.x)
#define FB_LSIZE ((int)blockDim.x)
#define FB_GROUP_ID ((int)blockIdx.x)
/* __syncthreads orders a block's shared and global writes for the block */
#define FB_BARRIER() __syncthreads()

typedef unsigned long long fb_u64;
typedef unsigned int fb_u32;
typedef unsigned short fb_u16;
typedef unsigned char fb_u8;

#define fb_load_f16(p, i) __half2float(__ushort_as_half((p)[i]))
#define fb_load_bf16(p, i) __uint_as_float((fb_u32)(p)[i] << 16)

#define fb_exp(v) expf(v)
#define fb_sqrt(v) sqrtf(v)
#define fb_pow(a, b) powf(a, b)
#define fb_sin(v) sinf(v)
#define fb_cos(v) cosf(v)
#define fb_erf(v) erff(v)
#define fb_tanh(v) tanhf(v)
#define fb_fmax(a, b) fmaxf(a, b)
#define FB_NEG_INF (-INFINITY)

#endif
