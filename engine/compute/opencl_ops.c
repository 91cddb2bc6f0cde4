/* The opencl backend's compute ops (opencl_impl.h): each checks its
 * operands as every backend does (backend_impl.h), sets its kernel's
 * arguments, one (buffer, byte offset) pair per operand as ops.kern
 * takes them, and enqueues it. The FFN is two kernels through the h
 * scratch; attention writes its scores into the att scratch. */
#include "engine/compute/opencl_impl.h"

#include "engine/compute/kernels/wtypes_check.h"

/* ---- the host's enums as ops.kern numbers them (by name; a weight
 * type's: wtype_kernel_code) ---- */

static int act_code(enum activation act)
{
    switch (act) {
    case ACT_RELU:
        return 0;
    case ACT_SILU:
        return 1;
    case ACT_GELU:
        return 2;
    case ACT_GELU_TANH:
        return 3;
    case ACT_SQUARED_RELU:
        return 4;
    case ACT_FATRELU:
        return 5;
    }
    return -1;
}

static int norm_code(enum norm_kind kind)
{
    return kind == NORM_LAYER ? 1 : 0;
}

/* ---- a kernel's arguments, in order; the first failure is kept ---- */

struct args {
    struct backend *b;
    cl_kernel k;
    cl_uint i;
    cl_int rc;
};

static struct args args_of(struct backend *b, enum ocl_kernel k)
{
    return (struct args){b, b->k[k], 0, CL_SUCCESS};
}

static void arg(struct args *a, size_t size, const void *v)
{
    if (a->rc == CL_SUCCESS)
        a->rc = clSetKernelArg(a->k, a->i, size, v);
    a->i++;
}

static void arg_mem(struct args *a, cl_mem m)
{
    arg(a, sizeof m, &m);
}

static void arg_u64(struct args *a, uint64_t v)
{
    cl_ulong u = v;
    arg(a, sizeof u, &u);
}

static void arg_int(struct args *a, int v)
{
    cl_int i = v;
    arg(a, sizeof i, &i);
}

static void arg_float(struct args *a, float v)
{
    cl_float f = v;
    arg(a, sizeof f, &f);
}

static void arg_ref(struct args *a, struct dev_ref r)
{
    arg_mem(a, ocl_mem(r));
    arg_u64(a, r.off);
}

/* An operand that may be absent: its pair (any buffer when absent: the
 * kernel does not read it) and the flag that says whether it is there. */
static void arg_opt(struct args *a, struct dev_ref r)
{
    arg_mem(a, r.buf ? ocl_mem(r) : a->b->fault);
    arg_u64(a, r.buf ? r.off : 0);
    arg_int(a, r.buf != NULL);
}

static size_t groups_for(const struct backend *b, size_t n)
{
    return (n + b->group - 1) / b->group;
}

/* Enqueues a's kernel over groups groups (none: nothing to do). */
static int launch(struct args *a, size_t groups, const char *op)
{
    if (ocl_check(a->b, a->rc, op))
        return -1;
    if (groups == 0)
        return 0;
    size_t local = a->b->group, global = groups * local;
    return ocl_check(a->b, clEnqueueNDRangeKernel(a->b->q, a->k, 1, NULL, &global, &local, 0, NULL, NULL), op);
}

/* A scratch buffer of at least bytes: a new one when it is smaller (the
 * old one lives on until the work enqueued on it is done). */
static int grow(struct backend *b, cl_mem *m, size_t bytes, const char *what)
{
    cl_int rc;
    cl_mem n = clCreateBuffer(b->ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    if (rc != CL_SUCCESS)
        return bk_fail(&b->base, "%s scratch of %zu bytes: %s", what, bytes, ocl_error_name(rc));
    clReleaseMemObject(*m);
    *m = n;
    return 0;
}

/* ---- the ops ---- */

int ocl_matvec(struct backend *b, struct dev_ref out, struct dev_ref w, enum fb_dtype t, struct dev_ref x,
               struct dev_ref bias, int rows, int cols)
{
    if (bk_check_matvec(&b->base, out, w, t, x, bias, rows, cols))
        return -1;
    struct args a = args_of(b, K_MATVEC);
    arg_ref(&a, out);
    arg_ref(&a, w);
    arg_int(&a, wtype_kernel_code(t));
    arg_ref(&a, x);
    arg_opt(&a, bias);
    arg_int(&a, rows);
    arg_int(&a, cols);
    if (launch(&a, (size_t)rows, "matvec"))
        return -1;
    b->base.counts.launches++;
    return 0;
}

/* The FFN over n bundles (ids: which, or absent: the first n), those
 * numbered held or more skipped: h, then the down projection. */
static int ffn_run(struct backend *b, struct dev_ref out, struct dev_ref bundles, size_t stride, struct dev_ref ids,
                   int n, size_t held, struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t,
                   const struct arch *ar)
{
    if ((size_t)n > b->h_floats) {
        if (grow(b, &b->h, (size_t)n * sizeof(float), "ffn"))
            return -1;
        b->h_floats = (size_t)n;
    }
    struct args a = args_of(b, K_FFN_H);
    arg_mem(&a, b->h);
    arg_u64(&a, 0);
    arg_ref(&a, bundles);
    arg_u64(&a, stride);
    arg_opt(&a, ids);
    arg_int(&a, n);
    arg_u64(&a, held);
    arg_opt(&a, up_bias);
    arg_ref(&a, x);
    arg_int(&a, d);
    arg_int(&a, wtype_kernel_code(t));
    arg_int(&a, ar->glu);
    arg_int(&a, ar->act_on_up);
    arg_int(&a, act_code(ar->act));
    arg_float(&a, ar->fatrelu_threshold);
    if (launch(&a, (size_t)n, "ffn"))
        return -1;
    struct args o = args_of(b, K_FFN_DOWN);
    arg_ref(&o, out);
    arg_mem(&o, b->h);
    arg_u64(&o, 0);
    arg_ref(&o, bundles);
    arg_u64(&o, stride);
    arg_opt(&o, ids);
    arg_int(&o, n);
    arg_int(&o, d);
    arg_int(&o, wtype_kernel_code(t));
    arg_int(&o, ar->glu);
    if (launch(&o, groups_for(b, (size_t)d), "ffn"))
        return -1;
    b->base.counts.launches++;
    return 0;
}

int ocl_ffn_rows(struct backend *b, struct dev_ref out, struct dev_ref rows, size_t row_stride, int n_rows,
                 struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a)
{
    if (bk_check_ffn(&b->base, out, rows, row_stride, n_rows, up_bias, x, d, t, a))
        return -1;
    return ffn_run(b, out, rows, row_stride, (struct dev_ref){0}, n_rows, (size_t)n_rows, up_bias, x, d, t, a);
}

/* An id past the bundles (or the biases) the buffers hold is skipped
 * where the kernel reads it: the host does not see the ids. */
int ocl_ffn_ids(struct backend *b, struct dev_ref out, struct dev_ref bundles, size_t row_stride, struct dev_ref ids,
                int n_ids, struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a)
{
    if (bk_check_ffn_ids(&b->base, out, bundles, row_stride, ids, n_ids, x, d, t, a))
        return -1;
    size_t held = (bundles.buf->bytes - bundles.off) / row_stride;
    if (up_bias.buf) {
        size_t biases = up_bias.off <= up_bias.buf->bytes ? (up_bias.buf->bytes - up_bias.off) / sizeof(float) : 0;
        held = biases < held ? biases : held;
    }
    return ffn_run(b, out, bundles, row_stride, ids, n_ids, held, up_bias, x, d, t, a);
}

int ocl_attention(struct backend *b, struct dev_ref out, struct dev_ref q, struct dev_ref k_cache,
                  struct dev_ref v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim)
{
    if (bk_check_attention(&b->base, out, q, k_cache, v_cache, n_pos, n_heads, n_kv_heads, head_dim))
        return -1;
    if ((size_t)n_pos > b->att_stride || (size_t)n_heads > b->att_heads) {
        size_t stride = (size_t)n_pos > b->att_stride ? (size_t)n_pos : b->att_stride;
        size_t heads = (size_t)n_heads > b->att_heads ? (size_t)n_heads : b->att_heads;
        if (grow(b, &b->att, stride * heads * sizeof(float), "attention"))
            return -1;
        b->att_stride = stride;
        b->att_heads = heads;
    }
    struct args a = args_of(b, K_ATTENTION);
    arg_ref(&a, out);
    arg_ref(&a, q);
    arg_ref(&a, k_cache);
    arg_ref(&a, v_cache);
    arg_mem(&a, b->att);
    arg_u64(&a, 0);
    arg_int(&a, (int)b->att_stride);
    arg_int(&a, n_pos);
    arg_int(&a, n_heads);
    arg_int(&a, n_kv_heads);
    arg_int(&a, head_dim);
    if (launch(&a, (size_t)n_heads, "attention"))
        return -1;
    b->base.counts.launches++;
    return 0;
}

int ocl_norm(struct backend *b, struct dev_ref out, struct dev_ref x, struct dev_ref weight, struct dev_ref bias,
             int d, enum norm_kind kind, float eps)
{
    if (bk_check_norm(&b->base, out, x, weight, bias, d))
        return -1;
    struct args a = args_of(b, K_NORM);
    arg_ref(&a, out);
    arg_ref(&a, x);
    arg_ref(&a, weight);
    arg_opt(&a, bias);
    arg_int(&a, d);
    arg_int(&a, norm_code(kind));
    arg_float(&a, eps);
    if (launch(&a, 1, "norm"))
        return -1;
    b->base.counts.launches++;
    return 0;
}

int ocl_rope(struct backend *b, struct dev_ref vec, int n_heads, int head_dim, int rot_dims, int pos,
             struct dev_ref inv_freq, float scale)
{
    if (bk_check_rope(&b->base, vec, n_heads, head_dim, rot_dims, inv_freq))
        return -1;
    struct args a = args_of(b, K_ROPE);
    arg_ref(&a, vec);
    arg_int(&a, n_heads);
    arg_int(&a, head_dim);
    arg_int(&a, rot_dims);
    arg_int(&a, pos);
    arg_ref(&a, inv_freq);
    arg_float(&a, scale);
    if (launch(&a, groups_for(b, (size_t)n_heads * (size_t)(rot_dims / 2)), "rope"))
        return -1;
    b->base.counts.launches++;
    return 0;
}

int ocl_add(struct backend *b, struct dev_ref y, struct dev_ref x, int n)
{
    if (bk_check_add(&b->base, y, x, n))
        return -1;
    struct args a = args_of(b, K_ADD);
    arg_ref(&a, y);
    arg_ref(&a, x);
    arg_int(&a, n);
    if (launch(&a, groups_for(b, (size_t)n), "add"))
        return -1;
    b->base.counts.launches++;
    return 0;
}

int ocl_ffn_act(struct backend *b, struct dev_ref h, struct dev_ref z, struct dev_ref g, int n, const struct arch *ar)
{
    if (bk_check_ffn_act(&b->base, h, z, g, n, ar))
        return -1;
    struct args a = args_of(b, K_FFN_ACT);
    arg_ref(&a, h);
    arg_ref(&a, z);
    arg_mem(&a, g.buf ? ocl_mem(g) : b->fault); /* no gate: a buffer the kernel does not read */
    arg_u64(&a, g.buf ? g.off : 0);
    arg_int(&a, n);
    arg_int(&a, ar->glu);
    arg_int(&a, ar->act_on_up);
    arg_int(&a, act_code(ar->act));
    arg_float(&a, ar->fatrelu_threshold);
    if (launch(&a, groups_for(b, (size_t)n), "ffn_act"))
        return -1;
    b->base.counts.launches++;
    return 0;
}

int ocl_embed(struct backend *b, struct dev_ref out, struct dev_ref table, enum fb_dtype t, int r, int d, float scale)
{
    if (bk_check_embed(&b->base, out, table, t, r, d))
        return -1;
    struct args a = args_of(b, K_EMBED);
    arg_ref(&a, out);
    arg_ref(&a, table);
    arg_int(&a, wtype_kernel_code(t));
    arg_int(&a, r);
    arg_int(&a, d);
    arg_float(&a, scale);
    if (launch(&a, groups_for(b, (size_t)d), "embed"))
        return -1;
    b->base.counts.launches++;
    return 0;
}

/* One group does the moves in order; the fault word comes back right
 * behind it, so the wait that passes the call sees its verdict. */
int ocl_move_rows(struct backend *b, struct dev_ref base, size_t row_bytes, struct dev_ref moves, int n)
{
    if (bk_check_move_rows(&b->base, base, row_bytes, moves, n))
        return -1;
    struct args a = args_of(b, K_MOVE_ROWS);
    arg_ref(&a, base);
    arg_u64(&a, row_bytes);
    arg_u64(&a, (base.buf->bytes - base.off) / row_bytes);
    arg_ref(&a, moves);
    arg_int(&a, n);
    arg_mem(&a, b->fault);
    if (launch(&a, n > 0 ? 1 : 0, "move_rows"))
        return -1;
    if (n > 0) {
        cl_int rc = clEnqueueReadBuffer(b->q, b->fault, CL_FALSE, 0, sizeof b->fault_host, &b->fault_host, 0, NULL,
                                        NULL);
        if (ocl_check(b, rc, "move_rows"))
            return -1;
        b->moved = true;
        b->move_mark = b->events;
    }
    b->base.counts.bytes_moved += (uint64_t)n * row_bytes;
    b->base.counts.copies++;
    return 0;
}
