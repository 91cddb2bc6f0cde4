/* What every backend shares inside engine/compute (not for callers of
 * backend.h): the buffer record, the error and counts every instance
 * keeps, and the checks every op makes before it enqueues anything, so
 * that a bad reference is the same clear error on every device. */
#ifndef FLASHBED_ENGINE_BACKEND_IMPL_H
#define FLASHBED_ENGINE_BACKEND_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/printf_attr.h"
#include "engine/compute/backend.h"

struct dev_buf {
    size_t bytes;
    enum buf_kind kind;
    bool registered; /* host memory its owner keeps */
    void *host;      /* the host address, or NULL (device memory) */
    void *handle;    /* the backend's own: cl_mem, a CUDA pointer, sim's memory */
};

/* Every backend's instance starts with this. */
/* A neuron bundle's bytes for one (d, type, GLU): bk_check_ffn's row stride
 * check works it out once (a model's FFN calls all share it) and again only
 * when an FFN of another shape comes. d 0: none yet. */
struct bk_bundle_memo {
    int d;
    enum fb_dtype t;
    bool glu;
    size_t bytes;
};

struct backend_base {
    char err[512];
    bool failed; /* a fault in the queue: every later call fails */
    struct backend_counts counts;
    struct bk_bundle_memo bundle; /* zeroed with the backend */
};

/* Sets the error (one line) and returns -1. */
int bk_fail(struct backend_base *b, const char *fmt, ...) FB_PRINTF(2, 3);
/* 0 when ref (named what) holds bytes bytes inside its buffer; else -1
 * with the reason. An absent ref (buf NULL) fits when may_be_absent. */
int bk_span(struct backend_base *b, struct dev_ref ref, size_t bytes, bool may_be_absent, const char *what);
/* A new dev_buf record (the memory is the caller's to attach); NULL with
 * the error set when out of memory. */
struct dev_buf *bk_buf_new(struct backend_base *b, size_t bytes, enum buf_kind kind);

/* event_elapsed's checks of its two events against the recorded ones
 * (backend.h): 0 when both were recorded (1..recorded), from <= to, and
 * from is among the last BACKEND_EVENTS_KEPT; else -1 with the reason.
 * Whether they have completed is the backend's to check. Refuses at once
 * on a failed backend, its error kept. */
int bk_check_events(struct backend_base *b, uint64_t from, uint64_t to, uint64_t recorded);

/* The checks of each op's operands against its contract (backend.h): 0,
 * or -1 with the error naming the operand. Every backend runs them, and
 * they (and bk_span) refuse at once on a failed backend, its error kept:
 * so a backend's calls need no check of their own for that. */
int bk_check_matvec(struct backend_base *b, struct dev_ref out, struct dev_ref w, enum fb_dtype t, struct dev_ref x,
                    struct dev_ref bias, int rows, int cols);
int bk_check_ffn(struct backend_base *b, struct dev_ref out, struct dev_ref rows, size_t row_stride, int n_rows,
                 struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a);
int bk_check_attention(struct backend_base *b, struct dev_ref out, struct dev_ref q, struct dev_ref k_cache,
                       struct dev_ref v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim);
/* ids' span only: the ids themselves are read where the kernel runs,
 * which skips (cpu, sim: refuses) an id past the bundles held */
int bk_check_ffn_ids(struct backend_base *b, struct dev_ref out, struct dev_ref bundles, size_t row_stride,
                     struct dev_ref ids, int n_ids, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a);
int bk_check_norm(struct backend_base *b, struct dev_ref out, struct dev_ref x, struct dev_ref weight,
                  struct dev_ref bias, int d);
int bk_check_rope(struct backend_base *b, struct dev_ref vec, int n_heads, int head_dim, int rot_dims,
                  struct dev_ref inv_freq);
int bk_check_add(struct backend_base *b, struct dev_ref y, struct dev_ref x, int n);
int bk_check_embed(struct backend_base *b, struct dev_ref out, struct dev_ref table, enum fb_dtype t, int r, int d);
int bk_check_ffn_act(struct backend_base *b, struct dev_ref h, struct dev_ref z, struct dev_ref g, int n,
                     const struct arch *a);
int bk_check_move_rows(struct backend_base *b, struct dev_ref base, size_t row_bytes, struct dev_ref moves, int n);

/* The supports() of each kernel family: the CPU kernels (cpu and sim,
 * every op for every type: backend.h's rule) and the device kernels of
 * kernels/ops.kern (opencl and cuda). Each answers from one switch over
 * every weight type with no default, so a new row of common/wtypes.def
 * does not compile until both families have said whether they decode it. */
bool bk_cpu_kernels_support(enum backend_op op, enum fb_dtype t);
bool bk_device_kernels_support(enum backend_op op, enum fb_dtype t);

/* The bytes of one FFN bundle's up (and gate) rows and down row: d
 * elements of t each, 2 or 3 rows as a->glu says. */
size_t bk_bundle_bytes(int d, enum fb_dtype t, const struct arch *a);

#endif
