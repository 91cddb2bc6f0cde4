/* The operations the forward pass needs, as an ops table (as fio's
 * ioengines): the CPU backend implements them today; cuda and metal
 * backends slot in beside it by filling the same table. All vectors are
 * f32; matrices and FFN bundles are in the model's storage dtype. None of
 * the hooks allocates: scratch is sized once at create. */
#ifndef FLASHBED_ENGINE_BACKEND_H
#define FLASHBED_ENGINE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "common/settings.h"
#include "engine/model/dtype.h"
#include "engine/model/model.h"

struct backend;

struct backend_ops {
    const char *name;
    /* An instance with `threads` compute threads and scratch for vectors
     * of up to max_dim floats (d_model, d_ff, FFN rows) and attention over max_seq positions for
     * max_heads heads, tuned by set (read at create: the cpu backend's
     * min_parallel_work). NULL, with the reason in err, on failure. */
    struct backend *(*create)(const struct fb_settings *set, int threads, size_t max_dim, size_t max_seq,
                              size_t max_heads, char *err, size_t errlen);
    void (*destroy)(struct backend *b);
    /* out[rows] = W[rows, cols] . x[cols] (+ bias[rows] when bias is not
     * NULL). out must not alias x. */
    void (*matvec)(struct backend *b, float *out, const void *w, enum fb_dtype t, const float *x,
                   const float *bias, int rows, int cols);
    /* The FFN over neuron bundles (model_format.h): for each of n_rows
     * bundles r at rows + r * row_stride, with z = up_r . x (+ up_bias[r]),
     * h = act(gate_r . x) * z when a->glu, else act(z), act being a->act
     * (FATReLU at a->fatrelu_threshold); out[d] = sum h * down_r.
     * Dense passes all d_ff bundles of a layer; a neuron cache passes its
     * compact rows and their biases. out is overwritten. The result does
     * not depend on the number of threads. */
    void (*ffn_rows)(struct backend *b, float *out, const void *rows, size_t row_stride, int n_rows,
                     const float *up_bias, const float *x, int d, enum fb_dtype t, const struct arch *a);
    /* out[n_heads * head_dim] = softmax(q k^T / sqrt(head_dim)) v over
     * positions 0..n_pos-1 of one layer's cache (kv_dim floats per position;
     * query head h reads kv head h / (n_heads / n_kv_heads)). */
    void (*attention)(struct backend *b, float *out, const float *q, const float *k_cache,
                      const float *v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim);
    /* out[d] = norm(x) * weight (+ bias): RMSNorm, or LayerNorm when kind
     * says so. out may alias x. */
    void (*norm)(struct backend *b, float *out, const float *x, const float *weight,
                 const float *bias, int d, enum norm_kind kind, float eps);
    /* Rotates adjacent pairs (i, i+1) of the first rot_dims dims of each
     * head of vec (n_heads heads of head_dim) by pos * theta^(-i/rot_dims)
     * (HF's frequencies: over the rotated dims, not the head); the other
     * dims are left as they are (partial RoPE). */
    void (*rope)(struct backend *b, float *vec, int n_heads, int head_dim, int rot_dims, int pos,
                 float theta);
    /* y[n] += x[n] */
    void (*add)(struct backend *b, float *y, const float *x, int n);
    /* out[d] = row r of table (dtype t), widened to f32 */
    void (*embed)(struct backend *b, float *out, const void *table, enum fb_dtype t, int r, int d);
    /* Reads buf[bytes] (32-byte aligned, in the memory the weights stream
     * from) once with the whole team and returns the seconds it took: the
     * read-only ceiling that decode's weight bandwidth is compared with,
     * measured on the same threads between tokens. */
    double (*read_pass)(struct backend *b, const void *buf, size_t bytes);
};

extern const struct backend_ops backend_cpu;

/* A backend by name ("cpu"); NULL when unknown. */
const struct backend_ops *backend_find(const char *name);

#endif
