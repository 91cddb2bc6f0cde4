/* Inside the cuda backend (backend_cuda.c: the instance, memory, copies
 * and the queue; backend_cuda_ops.c: the compute ops): the instance both
 * halves share, and how a CUDA status becomes the backend's error. Not
 * for callers of backend.h. Threading: as backend.h (one host thread at
 * a time; the instance uses device 0, the process's current device). */
#ifndef FLASHBED_ENGINE_BACKEND_CUDA_IMPL_H
#define FLASHBED_ENGINE_BACKEND_CUDA_IMPL_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "engine/compute/backend.h"
#include "engine/compute/backend_impl.h"

/* Events are CUDA events recorded on the stream, reused round a ring: the
 * counter names an event, and its slot is counter % CUDA_EVENT_RING.
 * They keep timing (event_elapsed), and are created as the ring first
 * reaches their slot. */
#define CUDA_EVENT_RING BACKEND_EVENTS_KEPT

struct backend {
    struct backend_base base;
    int device;
    cudaStream_t stream; /* the one in-order queue */
    cudaEvent_t ring[CUDA_EVENT_RING];
    uint64_t events;     /* recorded so far: the last one's number */
    float *ffn_h;        /* the FFN's per-bundle values: max_dim floats */
    float *att;          /* attention scores: max_heads * max_seq floats */
    int *move_fault;     /* pinned: move_rows' first move outside its rows, + 1 */
    size_t max_dim, max_seq, max_heads;
    struct backend_device desc; /* info()'s: device 0's name and memory */
};

/* 0 when e is cudaSuccess; else -1 with "what: CUDA's reason" as the
 * error. Any error but a refused allocation or registration leaves the
 * backend failed: CUDA's faults in the queue are sticky, and a call after
 * one would compute on a broken context. */
int cu_check(struct backend *b, cudaError_t e, const char *what);

/* The device address of a ref (its buffer's plus the offset), NULL when
 * absent. */
static inline void *cu_at(struct dev_ref r)
{
    return r.buf ? (char *)r.buf->handle + r.off : NULL;
}

/* The ops (backend_cuda_ops.c), for backend_cuda's table. */
int cuda_move_rows(struct backend *b, struct dev_ref base, size_t row_bytes, struct dev_ref moves, int n);
int cuda_matvec(struct backend *b, struct dev_ref out, struct dev_ref w, enum fb_dtype t, struct dev_ref x,
                struct dev_ref bias, int rows, int cols);
int cuda_ffn_rows(struct backend *b, struct dev_ref out, struct dev_ref rows, size_t row_stride, int n_rows,
                  struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a);
int cuda_ffn_ids(struct backend *b, struct dev_ref out, struct dev_ref bundles, size_t row_stride, struct dev_ref ids,
                 int n_ids, struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a);
int cuda_attention(struct backend *b, struct dev_ref out, struct dev_ref q, struct dev_ref k_cache,
                   struct dev_ref v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim);
int cuda_norm(struct backend *b, struct dev_ref out, struct dev_ref x, struct dev_ref weight, struct dev_ref bias,
              int d, enum norm_kind kind, float eps);
int cuda_rope(struct backend *b, struct dev_ref vec, int n_heads, int head_dim, int rot_dims, int pos,
              struct dev_ref inv_freq, float scale);
int cuda_add(struct backend *b, struct dev_ref y, struct dev_ref x, int n);
int cuda_embed(struct backend *b, struct dev_ref out, struct dev_ref table, enum fb_dtype t, int r, int d, float scale);
int cuda_ffn_act(struct backend *b, struct dev_ref h, struct dev_ref z, struct dev_ref g, int n, const struct arch *a);

#endif
