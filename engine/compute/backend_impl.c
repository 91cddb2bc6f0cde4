/* The checks and records every backend shares (backend_impl.h). */
#include "engine/compute/backend_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache/unit_geometry.h"
#include "common/errbuf.h"

int bk_fail(struct backend_base *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
    return -1;
}

int bk_span(struct backend_base *b, struct dev_ref ref, size_t bytes, bool may_be_absent, const char *what)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (!ref.buf)
        return may_be_absent ? 0 : bk_fail(b, "%s: no buffer", what);
    if (ref.off > ref.buf->bytes || bytes > ref.buf->bytes - ref.off)
        return bk_fail(b, "%s: %zu bytes at offset %zu run past its buffer of %zu bytes", what, bytes, ref.off,
                       ref.buf->bytes);
    return 0;
}

int bk_check_events(struct backend_base *b, uint64_t from, uint64_t to, uint64_t recorded)
{
    if (b->failed)
        return -1;
    for (int i = 0; i < 2; i++) {
        uint64_t e = i ? to : from;
        if (e == 0 || e > recorded)
            return bk_fail(b, "event_elapsed: event %llu was never recorded", (unsigned long long)e);
    }
    if (to < from)
        return bk_fail(b, "event_elapsed: event %llu was recorded before event %llu, not after",
                       (unsigned long long)to, (unsigned long long)from);
    if (recorded - from >= BACKEND_EVENTS_KEPT)
        return bk_fail(b, "event_elapsed: event %llu is older than the last %d recorded: its time is not kept",
                       (unsigned long long)from, BACKEND_EVENTS_KEPT);
    return 0;
}

struct dev_buf *bk_buf_new(struct backend_base *b, size_t bytes, enum buf_kind kind)
{
    struct dev_buf *d = calloc(1, sizeof *d);
    if (!d) {
        bk_fail(b, "out of host memory for a buffer record");
        return NULL;
    }
    d->bytes = bytes;
    d->kind = kind;
    return d;
}

size_t bk_bundle_bytes(int d, enum fb_dtype t, const struct arch *a)
{
    /* one neuron bundle's geometry: how many a layer has does not matter */
    struct unit_dims dims = {1, (uint32_t)d, 1, a->glu ? FFN_GLU : FFN_RELU, t};
    struct unit_geometry g;
    char err[128];
    return unit_geometry_make(UNIT_NEURON_BUNDLE, &dims, 0, &g, err, sizeof err) == 0 ? (size_t)g.bytes : 0;
}

static int check_positive(struct backend_base *b, const char *op, int n, const char *what)
{
    return n > 0 ? 0 : bk_fail(b, "%s: %s is %d, not positive", op, what, n);
}

int bk_check_matvec(struct backend_base *b, struct dev_ref out, struct dev_ref w, enum fb_dtype t, struct dev_ref x,
                    struct dev_ref bias, int rows, int cols)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (check_positive(b, "matvec", rows, "rows") || check_positive(b, "matvec", cols, "cols"))
        return -1;
    size_t r = (size_t)rows, c = (size_t)cols;
    if (bk_span(b, out, r * sizeof(float), false, "matvec out") || bk_span(b, x, c * sizeof(float), false, "matvec x") ||
        bk_span(b, w, r * wtype_row_bytes(t, c), false, "matvec weights") ||
        bk_span(b, bias, r * sizeof(float), true, "matvec bias"))
        return -1;
    if (out.buf == x.buf && out.off < x.off + c * sizeof(float) && x.off < out.off + r * sizeof(float))
        return bk_fail(b, "matvec: out overlaps x");
    return 0;
}

int bk_check_ffn(struct backend_base *b, struct dev_ref out, struct dev_ref rows, size_t row_stride, int n_rows,
                 struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (check_positive(b, "ffn", d, "d") || n_rows < 0)
        return n_rows < 0 ? bk_fail(b, "ffn: %d rows", n_rows) : -1;
    struct bk_bundle_memo *m = &b->bundle;
    if (m->d != d || m->t != t || m->glu != a->glu)
        *m = (struct bk_bundle_memo){d, t, a->glu, bk_bundle_bytes(d, t, a)};
    size_t bundle = m->bytes;
    if (row_stride < bundle)
        return bk_fail(b, "ffn: a row stride of %zu bytes is shorter than a bundle of %zu", row_stride, bundle);
    size_t span = n_rows ? (size_t)(n_rows - 1) * row_stride + bundle : 0;
    if (bk_span(b, out, (size_t)d * sizeof(float), false, "ffn out") ||
        bk_span(b, x, (size_t)d * sizeof(float), false, "ffn x") || bk_span(b, rows, span, false, "ffn rows") ||
        bk_span(b, up_bias, (size_t)n_rows * sizeof(float), true, "ffn up bias"))
        return -1;
    return 0;
}

int bk_check_attention(struct backend_base *b, struct dev_ref out, struct dev_ref q, struct dev_ref k_cache,
                       struct dev_ref v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (check_positive(b, "attention", n_pos, "positions") || check_positive(b, "attention", n_heads, "heads") ||
        check_positive(b, "attention", n_kv_heads, "kv heads") || check_positive(b, "attention", head_dim, "head dim"))
        return -1;
    if (n_heads % n_kv_heads)
        return bk_fail(b, "attention: %d heads are not a multiple of %d kv heads", n_heads, n_kv_heads);
    size_t qd = (size_t)n_heads * head_dim * sizeof(float), kv = (size_t)n_pos * n_kv_heads * head_dim * sizeof(float);
    if (bk_span(b, out, qd, false, "attention out") || bk_span(b, q, qd, false, "attention q") ||
        bk_span(b, k_cache, kv, false, "attention k cache") || bk_span(b, v_cache, kv, false, "attention v cache"))
        return -1;
    return 0;
}

int bk_check_move_rows(struct backend_base *b, struct dev_ref base, size_t row_bytes, struct dev_ref moves, int n)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (n < 0 || row_bytes == 0)
        return bk_fail(b, "move_rows: %d moves of %zu bytes", n, row_bytes);
    return bk_span(b, moves, (size_t)n * sizeof(struct row_move), false, "move_rows moves") ||
                   bk_span(b, base, 0, false, "move_rows base")
               ? -1
               : 0;
}

int bk_check_ffn_ids(struct backend_base *b, struct dev_ref out, struct dev_ref bundles, size_t row_stride,
                     struct dev_ref ids, int n_ids, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (n_ids < 0)
        return bk_fail(b, "ffn ids: %d ids", n_ids);
    return bk_check_ffn(b, out, bundles, row_stride, 0, (struct dev_ref){0}, x, d, t, a) ||
                   bk_span(b, ids, (size_t)n_ids * sizeof(int32_t), false, "ffn ids")
               ? -1
               : 0;
}

int bk_check_norm(struct backend_base *b, struct dev_ref out, struct dev_ref x, struct dev_ref weight,
                  struct dev_ref bias, int d)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (check_positive(b, "norm", d, "d"))
        return -1;
    size_t n = (size_t)d * sizeof(float);
    return bk_span(b, out, n, false, "norm out") || bk_span(b, x, n, false, "norm x") ||
                   bk_span(b, weight, n, false, "norm weight") || bk_span(b, bias, n, true, "norm bias")
               ? -1
               : 0;
}

int bk_check_rope(struct backend_base *b, struct dev_ref vec, int n_heads, int head_dim, int rot_dims,
                  struct dev_ref inv_freq)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (n_heads <= 0 || rot_dims < 0 || rot_dims > head_dim || rot_dims % 2)
        return bk_fail(b, "rope: %d heads, %d of %d dims rotated", n_heads, rot_dims, head_dim);
    return bk_span(b, vec, (size_t)n_heads * head_dim * sizeof(float), false, "rope vector") ||
                   bk_span(b, inv_freq, (size_t)(rot_dims / 2) * sizeof(float), false, "rope frequencies")
               ? -1
               : 0;
}

int bk_check_add(struct backend_base *b, struct dev_ref y, struct dev_ref x, int n)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (check_positive(b, "add", n, "n"))
        return -1;
    size_t bytes = (size_t)n * sizeof(float);
    return bk_span(b, y, bytes, false, "add y") || bk_span(b, x, bytes, false, "add x") ? -1 : 0;
}

int bk_check_ffn_act(struct backend_base *b, struct dev_ref h, struct dev_ref z, struct dev_ref g, int n,
                     const struct arch *a)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (check_positive(b, "ffn_act", n, "n"))
        return -1;
    if (a->glu != (g.buf != NULL))
        return bk_fail(b, "ffn_act: %s", a->glu ? "a GLU needs its gate" : "a gate given to an FFN without one");
    size_t bytes = (size_t)n * sizeof(float);
    return bk_span(b, h, bytes, false, "ffn_act h") || bk_span(b, z, bytes, false, "ffn_act z") ||
                   (a->glu && bk_span(b, g, bytes, false, "ffn_act g"))
               ? -1
               : 0;
}

int bk_check_embed(struct backend_base *b, struct dev_ref out, struct dev_ref table, enum fb_dtype t, int r, int d)
{
    if (b->failed) /* the reason the queue gave stays the error */
        return -1;
    if (check_positive(b, "embed", d, "d") || r < 0)
        return r < 0 ? bk_fail(b, "embed: row %d", r) : -1;
    size_t row = wtype_row_bytes(t, (uint64_t)d);
    return bk_span(b, out, (size_t)d * sizeof(float), false, "embed out") ||
                   bk_span(b, table, (size_t)r * row + row, false, "embed row")
               ? -1
               : 0;
}

bool bk_cpu_kernels_support(enum backend_op op, enum fb_dtype t)
{
    (void)op; /* every op: cpu is the model (backend.h) */
    switch (t) {
    case DTYPE_F32:
    case DTYPE_F16:
    case DTYPE_BF16:
    case DTYPE_Q4_0:
    case DTYPE_Q4_1:
    case DTYPE_Q5_0:
    case DTYPE_Q5_1:
    case DTYPE_Q8_0:
    case DTYPE_Q2_K:
    case DTYPE_Q3_K:
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
    case DTYPE_Q6_K:
        return true;
    }
    return false; /* a value outside the enum */
}

bool bk_device_kernels_support(enum backend_op op, enum fb_dtype t)
{
    (void)op; /* ops.kern has every op, each decoding the types below */
    switch (t) {
    case DTYPE_F32:
    case DTYPE_F16:
    case DTYPE_BF16:
    case DTYPE_Q4_0:
    case DTYPE_Q4_1:
    case DTYPE_Q5_0:
    case DTYPE_Q5_1:
    case DTYPE_Q8_0:
    case DTYPE_Q2_K:
    case DTYPE_Q3_K:
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
    case DTYPE_Q6_K:
        return true; /* fb_elem decodes each (ops.kern) */
    }
    return false; /* a value outside the enum */
}
