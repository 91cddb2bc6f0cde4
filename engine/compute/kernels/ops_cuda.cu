// The shared kernels (ops.kern) compiled by nvcc through compat_cuda.h,
// and their launches for the cuda backend (ops_cuda.h). Nothing here
// computes: each wrapper sizes the grid as ops.kern's comment on the
// kernel says ("G groups of FB_LSIZE work-items": a grid of G blocks),
// launches on the caller's stream and returns cudaGetLastError.
#include <cuda_runtime.h>

#include "engine/compute/kernels/compat_cuda.h"
#include "engine/compute/kernels/wtypes.kern"
#include "engine/compute/kernels/ops.kern"
#include "engine/compute/kernels/ops_cuda.h"

// The host's numbers are ops.kern's.
static_assert(FBK_ACT_RELU == FB_ACT_RELU && FBK_ACT_SILU == FB_ACT_SILU && FBK_ACT_GELU == FB_ACT_GELU &&
                  FBK_ACT_GELU_TANH == FB_ACT_GELU_TANH && FBK_ACT_SQUARED_RELU == FB_ACT_SQUARED_RELU &&
                  FBK_ACT_FATRELU == FB_ACT_FATRELU,
              "activation numbers");
static_assert(FBK_NORM_RMS == FB_NORM_RMS && FBK_NORM_LAYER == FB_NORM_LAYER, "norm numbers");

namespace {

// A group for n elements of work: the power of two from 32 (a warp) up to
// FB_MAX_GROUP that covers n, or FB_MAX_GROUP (the reductions halve it).
unsigned group_for(long long n)
{
    unsigned g = 32;
    while (g < FB_MAX_GROUP && (long long)g < n)
        g *= 2;
    return g;
}

// Groups of g work-items to cover n items one each.
unsigned groups_of(long long n, unsigned g)
{
    return (unsigned)((n + g - 1) / g);
}

fb_u8 *bytes(struct fbk_ref r)
{
    return static_cast<fb_u8 *>(r.p);
}

} // namespace

extern "C" cudaError_t fbk_cuda_matvec(cudaStream_t s, struct fbk_ref out, struct fbk_ref w, int t, struct fbk_ref x,
                                       struct fbk_ref bias, int rows, int cols)
{
    fb_matvec<<<rows, group_for(cols), 0, s>>>(bytes(out), out.off, bytes(w), w.off, t, bytes(x), x.off, bytes(bias),
                                               bias.off, bias.p != NULL, rows, cols);
    return cudaGetLastError();
}

// Two launches: the per-bundle values into h (none for no bundles), then
// the down projection, which writes every output (zeros for none).
extern "C" cudaError_t fbk_cuda_ffn(cudaStream_t s, struct fbk_ref out, float *h, const struct fbk_ffn *f)
{
    int use_ids = f->ids.p != NULL;
    if (f->n > 0)
        fb_ffn_h<<<f->n, group_for(f->d), 0, s>>>(reinterpret_cast<fb_u8 *>(h), 0, bytes(f->bundles),
                                                  f->bundles.off, f->stride, bytes(f->ids), f->ids.off, use_ids,
                                                  f->n, f->held, bytes(f->up_bias), f->up_bias.off,
                                                  f->up_bias.p != NULL, bytes(f->x), f->x.off, f->d, f->t, f->glu,
                                                  f->act_up, f->act, f->threshold);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    unsigned g = group_for(f->d);
    fb_ffn_down<<<groups_of(f->d, g), g, 0, s>>>(bytes(out), out.off, reinterpret_cast<fb_u8 *>(h), 0,
                                                 bytes(f->bundles), f->bundles.off, f->stride, bytes(f->ids),
                                                 f->ids.off, use_ids, f->n, f->d, f->t, f->glu);
    return cudaGetLastError();
}

extern "C" cudaError_t fbk_cuda_attention(cudaStream_t s, struct fbk_ref out, struct fbk_ref q,
                                          struct fbk_ref k_cache, struct fbk_ref v_cache, float *att, int att_stride,
                                          int n_pos, int n_heads, int n_kv_heads, int head_dim)
{
    unsigned g = group_for(n_pos > head_dim ? n_pos : head_dim);
    fb_attention<<<n_heads, g, 0, s>>>(bytes(out), out.off, bytes(q), q.off, bytes(k_cache), k_cache.off,
                                       bytes(v_cache), v_cache.off, reinterpret_cast<fb_u8 *>(att), 0, att_stride,
                                       n_pos, n_heads, n_kv_heads, head_dim);
    return cudaGetLastError();
}

extern "C" cudaError_t fbk_cuda_norm(cudaStream_t s, struct fbk_ref out, struct fbk_ref x, struct fbk_ref weight,
                                     struct fbk_ref bias, int d, int kind, float eps)
{
    fb_norm<<<1, group_for(d), 0, s>>>(bytes(out), out.off, bytes(x), x.off, bytes(weight), weight.off, bytes(bias),
                                       bias.off, bias.p != NULL, d, kind, eps);
    return cudaGetLastError();
}

// Nothing to turn (no rotated dims) is no launch.
extern "C" cudaError_t fbk_cuda_rope(cudaStream_t s, struct fbk_ref vec, int n_heads, int head_dim, int rot_dims,
                                     int pos, struct fbk_ref inv_freq, float scale)
{
    long long pairs = (long long)n_heads * (rot_dims / 2);
    if (pairs == 0)
        return cudaSuccess;
    unsigned g = group_for(pairs);
    fb_rope<<<groups_of(pairs, g), g, 0, s>>>(bytes(vec), vec.off, n_heads, head_dim, rot_dims, pos, bytes(inv_freq),
                                              inv_freq.off, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t fbk_cuda_add(cudaStream_t s, struct fbk_ref y, struct fbk_ref x, int n)
{
    unsigned g = group_for(n);
    fb_add<<<groups_of(n, g), g, 0, s>>>(bytes(y), y.off, bytes(x), x.off, n);
    return cudaGetLastError();
}

extern "C" cudaError_t fbk_cuda_ffn_act(cudaStream_t s, struct fbk_ref h, struct fbk_ref z, struct fbk_ref g,
                                        const struct fbk_act *a)
{
    unsigned gs = group_for(a->n);
    fb_ffn_act<<<groups_of(a->n, gs), gs, 0, s>>>(bytes(h), h.off, bytes(z), z.off, bytes(g), g.off, a->n, a->glu,
                                                  a->act_up, a->act, a->threshold);
    return cudaGetLastError();
}

extern "C" cudaError_t fbk_cuda_embed(cudaStream_t s, struct fbk_ref out, struct fbk_ref table, int t, int r, int d,
                                      float scale)
{
    unsigned g = group_for(d);
    fb_embed<<<groups_of(d, g), g, 0, s>>>(bytes(out), out.off, bytes(table), table.off, t, r, d, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t fbk_cuda_move_rows(cudaStream_t s, struct fbk_ref base, size_t row_bytes, size_t rows,
                                          struct fbk_ref moves, int n, int *fault)
{
    if (n == 0)
        return cudaSuccess;
    fb_move_rows<<<1, group_for((long long)(row_bytes / 4)), 0, s>>>(bytes(base), base.off, row_bytes, rows,
                                                                     bytes(moves), moves.off, n, fault);
    return cudaGetLastError();
}
