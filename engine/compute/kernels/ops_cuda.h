/* The cuda backend's kernel launches (ops_cuda.cu): each enqueues one op
 * of the shared kernels (ops.kern, compiled by nvcc through compat_cuda.h)
 * on stream s, and returns the launch's status (cudaGetLastError after
 * it, which also carries an earlier fault of the queue). C linkage and
 * plain C arguments: the host side (backend_cuda_ops.c) is C.
 *
 * Operands are (device pointer, byte offset) pairs as ops.kern takes them
 * (a dev_ref's buffer handle and offset); an absent one (a bias, ids) is
 * p NULL. The caller has checked every operand against its buffer
 * (backend_impl.h's bk_check_*) and the scratch against its size; a
 * launch here only sizes the grid. Weight types are wtypes.kern's FB_*
 * numbers (the host includes wtypes_check.h, which checks them against
 * the table); activations and norm kinds the FBK_* numbers below, which
 * ops_cuda.cu checks against ops.kern's FB_* at compile time: the host
 * maps its enums to them by name. */
#ifndef FLASHBED_ENGINE_KERNELS_OPS_CUDA_H
#define FLASHBED_ENGINE_KERNELS_OPS_CUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { FBK_ACT_RELU = 0, FBK_ACT_SILU = 1, FBK_ACT_GELU = 2, FBK_ACT_GELU_TANH = 3, FBK_ACT_SQUARED_RELU = 4,
       FBK_ACT_FATRELU = 5 };
enum { FBK_NORM_RMS = 0, FBK_NORM_LAYER = 1 };

struct fbk_ref {
    void *p;
    size_t off;
};

/* The FFN's bundles (model_format.h) as ops.kern's fb_ffn_h and
 * fb_ffn_down read them: bundle r (or ids[r]) at bundles + r * stride;
 * ids outside [0, held) are skipped. */
struct fbk_ffn {
    struct fbk_ref bundles;
    size_t stride;
    struct fbk_ref ids; /* int32, or p NULL: bundle r is the r-th */
    int n;              /* bundles (or ids) */
    size_t held;        /* bundles the buffer (and the up biases) hold */
    struct fbk_ref up_bias, x;
    int d, t, glu, act_up, act;
    float threshold;
};

cudaError_t fbk_cuda_matvec(cudaStream_t s, struct fbk_ref out, struct fbk_ref w, int t, struct fbk_ref x,
                            struct fbk_ref bias, int rows, int cols);
/* h: n floats of scratch for the per-bundle values */
cudaError_t fbk_cuda_ffn(cudaStream_t s, struct fbk_ref out, float *h, const struct fbk_ffn *f);
/* att: n_heads * att_stride floats of scratch for the scores */
cudaError_t fbk_cuda_attention(cudaStream_t s, struct fbk_ref out, struct fbk_ref q, struct fbk_ref k_cache,
                               struct fbk_ref v_cache, float *att, int att_stride, int n_pos, int n_heads,
                               int n_kv_heads, int head_dim);
cudaError_t fbk_cuda_norm(cudaStream_t s, struct fbk_ref out, struct fbk_ref x, struct fbk_ref weight,
                          struct fbk_ref bias, int d, int kind, float eps);
cudaError_t fbk_cuda_rope(cudaStream_t s, struct fbk_ref vec, int n_heads, int head_dim, int rot_dims, int pos,
                          struct fbk_ref inv_freq, float scale);
cudaError_t fbk_cuda_add(cudaStream_t s, struct fbk_ref y, struct fbk_ref x, int n);
cudaError_t fbk_cuda_embed(cudaStream_t s, struct fbk_ref out, struct fbk_ref table, int t, int r, int d,
                           float scale);
/* ffn_act's activation (g's p NULL without a gate) */
struct fbk_act {
    int n, glu, act_up, act;
    float threshold;
};
cudaError_t fbk_cuda_ffn_act(cudaStream_t s, struct fbk_ref h, struct fbk_ref z, struct fbk_ref g,
                             const struct fbk_act *a);
/* moves: n (int32 dst, src) pairs over rows rows of row_bytes at base; the
 * first move outside them is not done and its number + 1 lands in *fault
 * (device-reachable memory the host reads after the queue passes). */
cudaError_t fbk_cuda_move_rows(cudaStream_t s, struct fbk_ref base, size_t row_bytes, size_t rows,
                               struct fbk_ref moves, int n, int *fault);

#ifdef __cplusplus
}
#endif

#endif
