/* The CPU kernels: the compute steps of the forward pass on host memory,
 * f32 vectors over weights of every type of the table, on a team of
 * threads. The float types (f32, f16, bf16) are widened and multiplied in
 * f32; the block formats (q4_0 ... q6_k) take the block path: x quantized
 * once per call to the type's 8-bit activation blocks and each row an
 * integer dot product (quant_dot.h), as llama.cpp computes them, while
 * rows added up (axpy_rows, the FFN's down) are decoded a block at a time
 * (dtype_quant.h) and added in f32. They are
 * what the cpu backend (backend.h) runs in place and what the sim backend
 * runs on its queue thread; the FFNs that compute on the host (the neuron
 * cache, selected and probed FFNs) and the predictors call them directly.
 * None of them allocates: scratch is sized once at create. A kernel
 * cannot fail (its inputs are checked by its caller); create reports why
 * it failed. Threading: one caller at a time per instance. */
#ifndef FLASHBED_ENGINE_CPU_KERNELS_H
#define FLASHBED_ENGINE_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/settings.h"
#include "engine/model/dtype.h"
#include "engine/model/model.h"

struct cpu_kernels;

/* An instance with `threads` compute threads and scratch for vectors of
 * up to max_dim floats (d_model, d_ff, FFN rows) and attention over
 * max_seq positions for max_heads heads, tuned by set (min_parallel_work
 * and pin_threads, read here: pinned, the calling thread is the team's
 * worker 0 on its CPU until destroy, threadpool.h). NULL, with the reason
 * in err, on failure. */
struct cpu_kernels *ck_create(const struct fb_settings *set, int threads, size_t max_dim, size_t max_seq,
                              size_t max_heads, char *err, size_t errlen);
void ck_destroy(struct cpu_kernels *k);
/* Whether its team is pinned one thread per CPU (a team of one never is). */
bool ck_pinned(const struct cpu_kernels *k);

/* out[rows] = W[rows, cols] . x[cols] (+ bias[rows] when bias is not
 * NULL). out must not alias x. For a block type x is quantized into the
 * instance's scratch, so cols is at most max_dim there (as the FFN's d). */
void ck_matvec(struct cpu_kernels *k, float *out, const void *w, enum fb_dtype t, const float *x, const float *bias,
               int rows, int cols);
/* The FFN over neuron bundles (model_format.h): for each of n_rows
 * bundles r at rows + r * row_stride, with z = up_r . x (+ up_bias[r]),
 * h = act(gate_r . x) * z when a->glu (act(gate_r . x) * act(z) with
 * a->act_on_up, dReLU), else act(z), act being a->act
 * (FATReLU at a->fatrelu_threshold); out[d] = sum h * down_r. Dense
 * passes all d_ff bundles of a layer; a neuron cache passes its compact
 * rows and their biases. out is overwritten. The result does not depend
 * on the number of threads. */
void ck_ffn_rows(struct cpu_kernels *k, float *out, const void *rows, size_t row_stride, int n_rows,
                 const float *up_bias, const float *x, int d, enum fb_dtype t, const struct arch *a);
/* The same over the n_ids bundles ids[0..n_ids) of a layer's bundles
 * (up_bias indexed by id): what a predictor selected, read in place. */
void ck_ffn_ids(struct cpu_kernels *k, float *out, const void *bundles, size_t row_stride, const int32_t *ids,
                int n_ids, const float *up_bias, const float *x, int d, enum fb_dtype t, const struct arch *a);
/* out[n_heads * head_dim] = softmax(q k^T / sqrt(head_dim)) v over
 * positions 0..n_pos-1 of one layer's cache (kv_dim floats per position;
 * query head h reads kv head h / (n_heads / n_kv_heads)). */
void ck_attention(struct cpu_kernels *k, float *out, const float *q, const float *k_cache, const float *v_cache,
                  int n_pos, int n_heads, int n_kv_heads, int head_dim);
/* out[d] = norm(x) * weight (+ bias): RMSNorm, or LayerNorm when kind
 * says so. out may alias x. */
void ck_norm(struct cpu_kernels *k, float *out, const float *x, const float *weight, const float *bias, int d,
             enum norm_kind kind, float eps);
/* y[0..n) += sum over r < n_rows of a[r] * rows[r][0..n) (dtype t), rows
 * anywhere in memory: input sparsity's FFN on flash (ffn_transposed.h)
 * sums the kept channels' columns of up and gate, weighted by x_j, and
 * the kept rows of down, weighted by h_i. A row with a[r] == 0 is skipped.
 * y's elements are shared out over the team; each sums the rows in order,
 * so the result does not depend on the number of threads. */
void ck_axpy_rows(struct cpu_kernels *k, float *y, int n, const void *const *rows, const float *a, int n_rows,
                  enum fb_dtype t);
/* Rotates adjacent pairs (i, i+1) of the first rot_dims dims of each head
 * of vec (n_heads heads of head_dim) by pos * inv_freq[i/2] (the model's
 * frequencies as data: arch_rope_freqs), cos and sin times scale; the
 * other dims are left as they are (partial RoPE). */
void ck_rope(struct cpu_kernels *k, float *vec, int n_heads, int head_dim, int rot_dims, int pos, const float *inv_freq,
             float scale);
/* y[n] += x[n] */
void ck_add(struct cpu_kernels *k, float *y, const float *x, int n);
/* h[n] = ffn_neuron_value(a, z[i], g[i]) (g NULL without a gate; h may be z) */
void ck_ffn_act(struct cpu_kernels *k, float *h, const float *z, const float *g, int n, const struct arch *a);
/* out[d] = row r of table (dtype t), widened to f32 */
void ck_embed(struct cpu_kernels *k, float *out, const void *table, enum fb_dtype t, int r, int d);
/* x[n] *= s; nothing when s is 1 (the values stay as they are) */
void ck_scale(struct cpu_kernels *k, float *x, float s, int n);
/* Reads buf[bytes] (32-byte aligned) once with the whole team and returns
 * the seconds it took: the read-only ceiling that decode's weight
 * bandwidth is compared with, measured on the same threads. */
double ck_read_pass(struct cpu_kernels *k, const void *buf, size_t bytes);

#endif
