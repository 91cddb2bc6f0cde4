/* The cpu backend: the CPU kernels in place, on host memory. Its buffers
 * are host allocations (pinned or not, the same here), a registered
 * buffer is the host memory itself, and its queue runs each call before
 * returning: events are passed as soon as they are recorded, and an
 * event's time (event_elapsed) is the host's monotonic clock when it was
 * recorded: the work between two events ran in the calling thread. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "engine/compute/backend.h"
#include "engine/compute/backend_impl.h"

struct backend {
    struct backend_base base;
    struct cpu_kernels *k; /* the engine's: not ours to free */
    uint64_t events;
    uint64_t stamp_ns[BACKEND_EVENTS_KEPT]; /* event e's record time at e % BACKEND_EVENTS_KEPT */
};

static void *at(struct dev_ref r)
{
    return r.buf ? (char *)r.buf->host + r.off : NULL;
}

static struct backend *cpu_create(const struct backend_config *cfg, char *err, size_t errlen)
{
    if (!cfg->host) {
        err_set(err, errlen, "cpu backend: no CPU kernels to compute with");
        return NULL;
    }
    struct backend *b = calloc(1, sizeof *b);
    if (!b) {
        err_set(err, errlen, "cpu backend: out of memory");
        return NULL;
    }
    b->k = cfg->host;
    return b;
}

static void cpu_destroy(struct backend *b)
{
    free(b);
}

static const char *cpu_error(struct backend *b)
{
    return b->base.err;
}

static void cpu_device(struct backend_device *out)
{
    *out = (struct backend_device){.device = "host CPU", .host_visible = true, .zeroed = true};
}

static int cpu_describe(const struct fb_settings *set, struct backend_device *out, char *err, size_t errlen)
{
    (void)set, (void)err, (void)errlen;
    cpu_device(out);
    return 0;
}

static void cpu_info(struct backend *b, struct backend_device *out)
{
    (void)b;
    cpu_device(out);
}

static void cpu_counts(struct backend *b, struct backend_counts *out)
{
    *out = b->base.counts;
}

static int cpu_alloc(struct backend *b, size_t bytes, enum buf_kind kind, struct dev_buf **out)
{
    struct dev_buf *d = bk_buf_new(&b->base, bytes, kind);
    if (!d)
        return -1;
    /* calloc: a large buffer (the KV cache for the whole context) comes
     * from the kernel's zero pages, backed only where it is written, as
     * the engine's calloc'd state was before the backend interface;
     * aligned up by hand to 64 bytes (handle keeps what to free) */
    d->handle = calloc(1, bytes + 64);
    if (!d->handle) {
        free(d);
        return bk_fail(&b->base, "cannot allocate %zu bytes of host memory", bytes);
    }
    d->host = (void *)(((uintptr_t)d->handle + 63) & ~(uintptr_t)63);
    *out = d;
    return 0;
}

static int cpu_register(struct backend *b, void *host, size_t bytes, struct dev_buf **out)
{
    struct dev_buf *d = bk_buf_new(&b->base, bytes, BUF_PINNED);
    if (!d)
        return -1;
    d->host = host;
    d->registered = true;
    *out = d;
    return 0;
}

static void cpu_buf_free(struct backend *b, struct dev_buf *buf)
{
    (void)b;
    if (!buf)
        return;
    if (!buf->registered)
        free(buf->handle);
    free(buf);
}

static void *cpu_host_ptr(struct backend *b, struct dev_buf *buf)
{
    (void)b;
    return buf->host;
}

static int cpu_upload(struct backend *b, struct dev_ref dst, const void *src, size_t bytes)
{
    if (bk_span(&b->base, dst, bytes, false, "upload destination"))
        return -1;
    memmove(at(dst), src, bytes);
    b->base.counts.bytes_up += bytes;
    b->base.counts.copies++;
    return 0;
}

static int cpu_download(struct backend *b, void *dst, struct dev_ref src, size_t bytes)
{
    if (bk_span(&b->base, src, bytes, false, "download source"))
        return -1;
    memmove(dst, at(src), bytes);
    b->base.counts.bytes_down += bytes;
    b->base.counts.copies++;
    return 0;
}

static int cpu_move_rows(struct backend *b, struct dev_ref base, size_t row_bytes, struct dev_ref moves, int n)
{
    if (bk_check_move_rows(&b->base, base, row_bytes, moves, n))
        return -1;
    const struct row_move *mv = at(moves);
    size_t rows = (base.buf->bytes - base.off) / row_bytes;
    for (int i = 0; i < n; i++) {
        if (mv[i].dst < 0 || mv[i].src < 0 || (size_t)mv[i].dst >= rows || (size_t)mv[i].src >= rows)
            return bk_fail(&b->base, "move_rows: move %d (%d <- %d) is outside the %zu rows", i, mv[i].dst,
                           mv[i].src, rows);
        memmove((char *)at(base) + (size_t)mv[i].dst * row_bytes, (char *)at(base) + (size_t)mv[i].src * row_bytes,
                row_bytes);
    }
    b->base.counts.bytes_moved += (uint64_t)n * row_bytes;
    b->base.counts.copies++;
    return 0;
}

static int cpu_event_record(struct backend *b, uint64_t *event)
{
    *event = ++b->events;
    b->stamp_ns[*event % BACKEND_EVENTS_KEPT] = now_ns();
    return 0;
}

/* Every recorded event has passed: only the checks of backend.h. */
static int cpu_event_elapsed(struct backend *b, uint64_t from, uint64_t to, double *ms)
{
    if (bk_check_events(&b->base, from, to, b->events))
        return -1;
    uint64_t t0 = b->stamp_ns[from % BACKEND_EVENTS_KEPT], t1 = b->stamp_ns[to % BACKEND_EVENTS_KEPT];
    *ms = (double)(t1 - t0) * 1e-6;
    return 0;
}

static int cpu_event_wait(struct backend *b, uint64_t event)
{
    if (event > b->events)
        return bk_fail(&b->base, "event %llu was never recorded", (unsigned long long)event);
    b->base.counts.syncs++;
    return 0;
}

static int cpu_sync(struct backend *b)
{
    b->base.counts.syncs++;
    return 0;
}

static int cpu_matvec(struct backend *b, struct dev_ref out, struct dev_ref w, enum fb_dtype t, struct dev_ref x,
                      struct dev_ref bias, int rows, int cols)
{
    if (bk_check_matvec(&b->base, out, w, t, x, bias, rows, cols))
        return -1;
    ck_matvec(b->k, at(out), at(w), t, at(x), at(bias), rows, cols);
    b->base.counts.launches++;
    return 0;
}

static int cpu_ffn_rows(struct backend *b, struct dev_ref out, struct dev_ref rows, size_t row_stride, int n_rows,
                        struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a)
{
    if (bk_check_ffn(&b->base, out, rows, row_stride, n_rows, up_bias, x, d, t, a))
        return -1;
    ck_ffn_rows(b->k, at(out), at(rows), row_stride, n_rows, at(up_bias), at(x), d, t, a);
    b->base.counts.launches++;
    return 0;
}

/* The ids are checked against the bundles the buffer holds before the
 * kernel reads them: a bad id is an error, not a stray read. */
static int cpu_ffn_ids(struct backend *b, struct dev_ref out, struct dev_ref bundles, size_t row_stride,
                       struct dev_ref ids, int n_ids, struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t,
                       const struct arch *a)
{
    if (bk_check_ffn_ids(&b->base, out, bundles, row_stride, ids, n_ids, x, d, t, a))
        return -1;
    const int32_t *id = at(ids);
    size_t held = (bundles.buf->bytes - bundles.off) / row_stride;
    size_t biases = up_bias.buf ? (up_bias.buf->bytes - up_bias.off) / sizeof(float) : held;
    for (int i = 0; i < n_ids; i++)
        if (id[i] < 0 || (size_t)id[i] >= held || (size_t)id[i] >= biases)
            return bk_fail(&b->base, "ffn ids: id %d (at %d) is outside the %zu bundles", id[i], i, held);
    ck_ffn_ids(b->k, at(out), at(bundles), row_stride, id, n_ids, at(up_bias), at(x), d, t, a);
    b->base.counts.launches++;
    return 0;
}

static int cpu_attention(struct backend *b, struct dev_ref out, struct dev_ref q, struct dev_ref k_cache,
                         struct dev_ref v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim)
{
    if (bk_check_attention(&b->base, out, q, k_cache, v_cache, n_pos, n_heads, n_kv_heads, head_dim))
        return -1;
    ck_attention(b->k, at(out), at(q), at(k_cache), at(v_cache), n_pos, n_heads, n_kv_heads, head_dim);
    b->base.counts.launches++;
    return 0;
}

static int cpu_norm(struct backend *b, struct dev_ref out, struct dev_ref x, struct dev_ref weight,
                    struct dev_ref bias, int d, enum norm_kind kind, float eps)
{
    if (bk_check_norm(&b->base, out, x, weight, bias, d))
        return -1;
    ck_norm(b->k, at(out), at(x), at(weight), at(bias), d, kind, eps);
    b->base.counts.launches++;
    return 0;
}

static int cpu_rope(struct backend *b, struct dev_ref vec, int n_heads, int head_dim, int rot_dims, int pos,
                    struct dev_ref inv_freq, float scale)
{
    if (bk_check_rope(&b->base, vec, n_heads, head_dim, rot_dims, inv_freq))
        return -1;
    ck_rope(b->k, at(vec), n_heads, head_dim, rot_dims, pos, at(inv_freq), scale);
    b->base.counts.launches++;
    return 0;
}

static int cpu_add(struct backend *b, struct dev_ref y, struct dev_ref x, int n)
{
    if (bk_check_add(&b->base, y, x, n))
        return -1;
    ck_add(b->k, at(y), at(x), n);
    b->base.counts.launches++;
    return 0;
}

static int cpu_embed(struct backend *b, struct dev_ref out, struct dev_ref table, enum fb_dtype t, int r, int d,
                     float scale)
{
    if (bk_check_embed(&b->base, out, table, t, r, d))
        return -1;
    ck_embed(b->k, at(out), at(table), t, r, d);
    ck_scale(b->k, at(out), scale, d);
    b->base.counts.launches++;
    return 0;
}

static int cpu_ffn_act(struct backend *b, struct dev_ref h, struct dev_ref z, struct dev_ref g, int n,
                       const struct arch *a)
{
    if (bk_check_ffn_act(&b->base, h, z, g, n, a))
        return -1;
    ck_ffn_act(b->k, at(h), at(z), g.buf ? at(g) : NULL, n, a);
    b->base.counts.launches++;
    return 0;
}

const struct backend_ops backend_cpu = {
    .name = "cpu",
    .describe = cpu_describe,
    .supports = bk_cpu_kernels_support,
    .create = cpu_create,
    .destroy = cpu_destroy,
    .error = cpu_error,
    .info = cpu_info,
    .counts = cpu_counts,
    .alloc = cpu_alloc,
    .register_host = cpu_register,
    .buf_free = cpu_buf_free,
    .host_ptr = cpu_host_ptr,
    .upload = cpu_upload,
    .download = cpu_download,
    .move_rows = cpu_move_rows,
    .event_record = cpu_event_record,
    .event_wait = cpu_event_wait,
    .event_elapsed = cpu_event_elapsed,
    .sync = cpu_sync,
    .matvec = cpu_matvec,
    .ffn_rows = cpu_ffn_rows,
    .ffn_ids = cpu_ffn_ids,
    .attention = cpu_attention,
    .norm = cpu_norm,
    .rope = cpu_rope,
    .add = cpu_add,
    .embed = cpu_embed,
    .ffn_act = cpu_ffn_act,
};
