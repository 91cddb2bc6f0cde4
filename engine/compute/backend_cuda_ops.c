/* The cuda backend's ops (backend_cuda_impl.h): each checks its operands
 * as every backend does (bk_check_*), and the scratch sized at create,
 * then launches the shared kernels through ops_cuda.h on the stream. An
 * op counts one launch, however many kernels it takes, as on cpu. */
#include "common/errbuf.h"
#include "engine/compute/backend_cuda_impl.h"
#include "engine/compute/kernels/ops_cuda.h"
#include "engine/compute/kernels/wtypes_check.h"

static struct fbk_ref ref(struct dev_ref r)
{
    return (struct fbk_ref){r.buf ? r.buf->handle : NULL, r.buf ? r.off : 0};
}

/* The kernels' numbers for the host's enums, by name (a weight type's:
 * wtype_kernel_code). */
static int kact(enum activation a)
{
    switch (a) {
    case ACT_RELU:
        return FBK_ACT_RELU;
    case ACT_SILU:
        return FBK_ACT_SILU;
    case ACT_GELU:
        return FBK_ACT_GELU;
    case ACT_GELU_TANH:
        return FBK_ACT_GELU_TANH;
    case ACT_SQUARED_RELU:
        return FBK_ACT_SQUARED_RELU;
    case ACT_FATRELU:
        return FBK_ACT_FATRELU;
    }
    return -1;
}

/* The end of a launch: its status, and one launch counted. */
static int launched(struct backend *b, cudaError_t e, const char *op)
{
    if (cu_check(b, e, op))
        return -1;
    b->base.counts.launches++;
    return 0;
}

/* A move outside the rows is found where the kernel runs: it lands in
 * the fault word (pinned), read when the queue is next waited for. */
int cuda_move_rows(struct backend *b, struct dev_ref base, size_t row_bytes, struct dev_ref moves, int n)
{
    if (bk_check_move_rows(&b->base, base, row_bytes, moves, n))
        return -1;
    size_t rows = (base.buf->bytes - base.off) / row_bytes;
    if (cu_check(b, fbk_cuda_move_rows(b->stream, ref(base), row_bytes, rows, ref(moves), n, b->move_fault),
                 "move_rows launch"))
        return -1;
    b->base.counts.bytes_moved += (uint64_t)n * row_bytes;
    b->base.counts.copies++;
    return 0;
}

int cuda_matvec(struct backend *b, struct dev_ref out, struct dev_ref w, enum fb_dtype t, struct dev_ref x,
                struct dev_ref bias, int rows, int cols)
{
    if (bk_check_matvec(&b->base, out, w, t, x, bias, rows, cols))
        return -1;
    return launched(b, fbk_cuda_matvec(b->stream, ref(out), ref(w), wtype_kernel_code(t), ref(x), ref(bias), rows, cols),
                    "matvec launch");
}

/* Both FFNs: n bundles (or ids) into the per-bundle scratch, then down. */
static int ffn(struct backend *b, struct dev_ref out, struct fbk_ffn *f, const struct arch *a, enum fb_dtype t)
{
    if ((size_t)f->n > b->max_dim)
        return bk_fail(&b->base, "ffn: %d bundles pass the %zu the backend was created for", f->n, b->max_dim);
    f->t = wtype_kernel_code(t);
    f->glu = a->glu;
    f->act_up = a->act_on_up;
    f->act = kact(a->act);
    f->threshold = a->fatrelu_threshold;
    return launched(b, fbk_cuda_ffn(b->stream, ref(out), b->ffn_h, f), "ffn launch");
}

int cuda_ffn_rows(struct backend *b, struct dev_ref out, struct dev_ref rows, size_t row_stride, int n_rows,
                  struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a)
{
    if (bk_check_ffn(&b->base, out, rows, row_stride, n_rows, up_bias, x, d, t, a))
        return -1;
    struct fbk_ffn f = {.bundles = ref(rows), .stride = row_stride, .n = n_rows, .held = (size_t)n_rows,
                        .up_bias = ref(up_bias), .x = ref(x), .d = d};
    return ffn(b, out, &f, a, t);
}

/* An id past the bundles held (or past the up biases) is skipped where
 * the kernel reads it (backend_impl.h's bk_check_ffn_ids). */
int cuda_ffn_ids(struct backend *b, struct dev_ref out, struct dev_ref bundles, size_t row_stride, struct dev_ref ids,
                 int n_ids, struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a)
{
    if (bk_check_ffn_ids(&b->base, out, bundles, row_stride, ids, n_ids, x, d, t, a))
        return -1;
    size_t held = (bundles.buf->bytes - bundles.off) / row_stride;
    if (up_bias.buf) {
        size_t biases = up_bias.off <= up_bias.buf->bytes ? (up_bias.buf->bytes - up_bias.off) / sizeof(float) : 0;
        held = biases < held ? biases : held;
    }
    struct fbk_ffn f = {.bundles = ref(bundles), .stride = row_stride, .ids = ref(ids), .n = n_ids, .held = held,
                        .up_bias = ref(up_bias), .x = ref(x), .d = d};
    return ffn(b, out, &f, a, t);
}

int cuda_attention(struct backend *b, struct dev_ref out, struct dev_ref q, struct dev_ref k_cache,
                   struct dev_ref v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim)
{
    if (bk_check_attention(&b->base, out, q, k_cache, v_cache, n_pos, n_heads, n_kv_heads, head_dim))
        return -1;
    if ((size_t)n_pos > b->max_seq || (size_t)n_heads > b->max_heads)
        return bk_fail(&b->base, "attention: %d positions of %d heads pass the %zu of %zu the backend was created for",
                       n_pos, n_heads, b->max_seq, b->max_heads);
    return launched(b,
                    fbk_cuda_attention(b->stream, ref(out), ref(q), ref(k_cache), ref(v_cache), b->att,
                                       (int)b->max_seq, n_pos, n_heads, n_kv_heads, head_dim),
                    "attention launch");
}

int cuda_norm(struct backend *b, struct dev_ref out, struct dev_ref x, struct dev_ref weight, struct dev_ref bias,
              int d, enum norm_kind kind, float eps)
{
    if (bk_check_norm(&b->base, out, x, weight, bias, d))
        return -1;
    int k = kind == NORM_LAYER ? FBK_NORM_LAYER : FBK_NORM_RMS;
    return launched(b, fbk_cuda_norm(b->stream, ref(out), ref(x), ref(weight), ref(bias), d, k, eps), "norm launch");
}

int cuda_rope(struct backend *b, struct dev_ref vec, int n_heads, int head_dim, int rot_dims, int pos,
              struct dev_ref inv_freq, float scale)
{
    if (bk_check_rope(&b->base, vec, n_heads, head_dim, rot_dims, inv_freq))
        return -1;
    return launched(b, fbk_cuda_rope(b->stream, ref(vec), n_heads, head_dim, rot_dims, pos, ref(inv_freq), scale),
                    "rope launch");
}

int cuda_add(struct backend *b, struct dev_ref y, struct dev_ref x, int n)
{
    if (bk_check_add(&b->base, y, x, n))
        return -1;
    return launched(b, fbk_cuda_add(b->stream, ref(y), ref(x), n), "add launch");
}

int cuda_ffn_act(struct backend *b, struct dev_ref h, struct dev_ref z, struct dev_ref g, int n, const struct arch *a)
{
    if (bk_check_ffn_act(&b->base, h, z, g, n, a))
        return -1;
    struct fbk_act k = {.n = n, .glu = a->glu, .act_up = a->act_on_up, .act = kact(a->act),
                        .threshold = a->fatrelu_threshold};
    return launched(b, fbk_cuda_ffn_act(b->stream, ref(h), ref(z), ref(g), &k), "ffn_act launch");
}

int cuda_embed(struct backend *b, struct dev_ref out, struct dev_ref table, enum fb_dtype t, int r, int d, float scale)
{
    if (bk_check_embed(&b->base, out, table, t, r, d))
        return -1;
    return launched(b, fbk_cuda_embed(b->stream, ref(out), ref(table), wtype_kernel_code(t), r, d, scale),
                    "embed launch");
}
