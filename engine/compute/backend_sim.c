/* The sim backend's calls (backend_sim.h): each checks its operands as
 * every backend does (backend_impl.h), then puts a command on the queue
 * and returns; the waits run the queue and report what failed on it. */
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/compute/backend_sim_impl.h"

static void sim_destroy(struct backend *b);

static struct backend *sim_create(const struct backend_config *cfg, char *err, size_t errlen)
{
    struct fb_settings defaults = fb_settings_defaults();
    const struct fb_settings *set = cfg->set ? cfg->set : &defaults;
    struct backend *b = calloc(1, sizeof *b);
    if (!b) {
        err_set(err, errlen, "sim backend: out of memory");
        return NULL;
    }
    b->fail_at = set->sim_fail_at;
    b->delay_us = set->sim_delay_us;
    /* its own kernels: the engine's (cfg->host) serve the host thread,
     * which may run a host FFN on them between waits */
    struct fb_settings unpinned = *set; /* the team's worker 0 is the queue thread, not this one */
    unpinned.pin_threads = false;
    b->k = ck_create(&unpinned, cfg->threads < 1 ? 1 : cfg->threads, cfg->max_dim, cfg->max_seq, cfg->max_heads, err,
                     errlen);
    if (!b->k || sim_queue_start(b, err, errlen) != 0) {
        sim_destroy(b);
        return NULL;
    }
    return b;
}

/* Joins the queue (what is on it is dropped) and frees everything, the
 * buffers the caller did not free included, failed or not. */
static void sim_destroy(struct backend *b)
{
    if (!b)
        return;
    sim_queue_stop(b);
    sim_free_all(b);
    ck_destroy(b->k);
    free(b);
}

static const char *sim_error(struct backend *b)
{
    return b->base.err;
}

static void sim_device(struct backend_device *out)
{
    *out = (struct backend_device){.device = "sim (CPU kernels on a queue thread)", .emulated = true};
}

static int sim_describe(const struct fb_settings *set, struct backend_device *out, char *err, size_t errlen)
{
    (void)set, (void)err, (void)errlen;
    sim_device(out);
    return 0;
}

static void sim_info(struct backend *b, struct backend_device *out)
{
    (void)b;
    sim_device(out);
}

static void sim_counts(struct backend *b, struct backend_counts *out)
{
    *out = b->base.counts;
}

/* A copy or launch: numbered (sim_fail_at counts these) and queued. */
static int push(struct backend *b, struct sim_cmd *c)
{
    c->seq = ++b->commands;
    sim_queue_push(b, c);
    return 0;
}

static int sim_upload(struct backend *b, struct dev_ref dst, const void *src, size_t bytes)
{
    if (bk_span(&b->base, dst, bytes, false, "upload destination"))
        return -1;
    if (!src && bytes)
        return bk_fail(&b->base, "upload: no source");
    return push(b, &(struct sim_cmd){.kind = SIM_UPLOAD, .writes = dst.buf, .u.up = {dst, src, bytes}});
}

/* The destination is poisoned now: read before the wait, it is NaN. */
static int sim_download(struct backend *b, void *dst, struct dev_ref src, size_t bytes)
{
    if (bk_span(&b->base, src, bytes, false, "download source"))
        return -1;
    if (!dst && bytes)
        return bk_fail(&b->base, "download: no destination");
    if (bytes)
        memset(dst, SIM_POISON_BYTE, bytes);
    return push(b, &(struct sim_cmd){.kind = SIM_DOWNLOAD, .u.down = {dst, src, bytes}});
}

static int sim_move_rows(struct backend *b, struct dev_ref base, size_t row_bytes, struct dev_ref moves, int n)
{
    if (bk_check_move_rows(&b->base, base, row_bytes, moves, n))
        return -1;
    return push(b, &(struct sim_cmd){.kind = SIM_MOVE_ROWS, .writes = base.buf,
                                     .u.move = {base, moves, row_bytes, n}});
}

static int sim_event_record(struct backend *b, uint64_t *event)
{
    if (b->base.failed)
        return -1;
    *event = ++b->events;
    sim_queue_push(b, &(struct sim_cmd){.kind = SIM_EVENT, .seq = *event});
    return 0;
}

/* What a wait reports: a failure on the queue, else the zones of every
 * buffer (a host that wrote past a pinned one). */
static int wait_result(struct backend *b, const char *when)
{
    b->base.counts.syncs++;
    if (b->base.failed)
        return -1;
    return sim_guard_check_all(b, when);
}

static int sim_event_wait(struct backend *b, uint64_t event)
{
    if (b->base.failed)
        return -1;
    if (event == 0 || event > b->events)
        return bk_fail(&b->base, "event %llu was never recorded", (unsigned long long)event);
    sim_queue_until_event(b, event);
    if (event > b->waited)
        b->waited = event;
    return wait_result(b, "at an event wait");
}

static int sim_sync(struct backend *b)
{
    if (b->base.failed)
        return -1;
    sim_queue_drain(b);
    b->waited = b->events;
    return wait_result(b, "at sync");
}

/* Strict: an event the host has not waited for (nor one after it) is
 * refused, even where a full ring happened to run its mark. */
static int sim_event_elapsed(struct backend *b, uint64_t from, uint64_t to, double *ms)
{
    if (bk_check_events(&b->base, from, to, b->events))
        return -1;
    if (to > b->waited)
        return bk_fail(&b->base, "event_elapsed: event %llu has not been waited for (on sim it has not run)",
                       (unsigned long long)to);
    *ms = (double)(sim_queue_stamp(b, to) - sim_queue_stamp(b, from)) * 1e-6;
    return 0;
}

/* ---- compute: the checks every backend makes, then a command ---- */

static int sim_matvec(struct backend *b, struct dev_ref out, struct dev_ref w, enum fb_dtype t, struct dev_ref x,
                      struct dev_ref bias, int rows, int cols)
{
    if (bk_check_matvec(&b->base, out, w, t, x, bias, rows, cols))
        return -1;
    return push(b, &(struct sim_cmd){.kind = SIM_MATVEC, .writes = out.buf,
                                     .u.matvec = {out, w, x, bias, t, rows, cols}});
}

static int sim_ffn_rows(struct backend *b, struct dev_ref out, struct dev_ref rows, size_t row_stride, int n_rows,
                        struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a)
{
    if (bk_check_ffn(&b->base, out, rows, row_stride, n_rows, up_bias, x, d, t, a))
        return -1;
    struct sim_ffn f = {.out = out, .rows = rows, .up_bias = up_bias, .x = x, .row_stride = row_stride, .n = n_rows,
                        .d = d, .t = t, .a = *a};
    return push(b, &(struct sim_cmd){.kind = SIM_FFN_ROWS, .writes = out.buf, .u.ffn = f});
}

/* The ids are read where the command runs: checked there against the
 * bundles held (a bad one fails the backend). */
static int sim_ffn_ids(struct backend *b, struct dev_ref out, struct dev_ref bundles, size_t row_stride,
                       struct dev_ref ids, int n_ids, struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t,
                       const struct arch *a)
{
    if (bk_check_ffn_ids(&b->base, out, bundles, row_stride, ids, n_ids, x, d, t, a))
        return -1;
    struct sim_ffn f = {.out = out, .rows = bundles, .ids = ids, .up_bias = up_bias, .x = x,
                        .row_stride = row_stride, .n = n_ids, .d = d, .t = t, .a = *a};
    return push(b, &(struct sim_cmd){.kind = SIM_FFN_IDS, .writes = out.buf, .u.ffn = f});
}

static int sim_attention(struct backend *b, struct dev_ref out, struct dev_ref q, struct dev_ref k_cache,
                         struct dev_ref v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim)
{
    if (bk_check_attention(&b->base, out, q, k_cache, v_cache, n_pos, n_heads, n_kv_heads, head_dim))
        return -1;
    return push(b, &(struct sim_cmd){.kind = SIM_ATTENTION, .writes = out.buf,
                                     .u.att = {out, q, k_cache, v_cache, n_pos, n_heads, n_kv_heads, head_dim}});
}

static int sim_norm(struct backend *b, struct dev_ref out, struct dev_ref x, struct dev_ref weight,
                    struct dev_ref bias, int d, enum norm_kind kind, float eps)
{
    if (bk_check_norm(&b->base, out, x, weight, bias, d))
        return -1;
    return push(b, &(struct sim_cmd){.kind = SIM_NORM, .writes = out.buf,
                                     .u.norm = {out, x, weight, bias, d, kind, eps}});
}

static int sim_rope(struct backend *b, struct dev_ref vec, int n_heads, int head_dim, int rot_dims, int pos,
                    struct dev_ref inv_freq, float scale)
{
    if (bk_check_rope(&b->base, vec, n_heads, head_dim, rot_dims, inv_freq))
        return -1;
    return push(b, &(struct sim_cmd){.kind = SIM_ROPE, .writes = vec.buf,
                                     .u.rope = {vec, inv_freq, n_heads, head_dim, rot_dims, pos, scale}});
}

static int sim_add(struct backend *b, struct dev_ref y, struct dev_ref x, int n)
{
    if (bk_check_add(&b->base, y, x, n))
        return -1;
    return push(b, &(struct sim_cmd){.kind = SIM_ADD, .writes = y.buf, .u.add = {y, x, n}});
}

static int sim_ffn_act(struct backend *b, struct dev_ref h, struct dev_ref z, struct dev_ref g, int n,
                       const struct arch *a)
{
    if (bk_check_ffn_act(&b->base, h, z, g, n, a))
        return -1;
    return push(b, &(struct sim_cmd){.kind = SIM_FFN_ACT, .writes = h.buf, .u.act = {h, z, g, n, *a}});
}

static int sim_embed(struct backend *b, struct dev_ref out, struct dev_ref table, enum fb_dtype t, int r, int d,
                     float scale)
{
    if (bk_check_embed(&b->base, out, table, t, r, d))
        return -1;
    return push(b, &(struct sim_cmd){.kind = SIM_EMBED, .writes = out.buf, .u.embed = {out, table, t, r, d, scale}});
}

const struct backend_ops backend_sim = {
    .name = "sim",
    .describe = sim_describe,
    .supports = bk_cpu_kernels_support,
    .create = sim_create,
    .destroy = sim_destroy,
    .error = sim_error,
    .info = sim_info,
    .counts = sim_counts,
    .alloc = sim_alloc,
    .register_host = sim_register,
    .buf_free = sim_buf_free,
    .host_ptr = sim_host_ptr,
    .upload = sim_upload,
    .download = sim_download,
    .move_rows = sim_move_rows,
    .event_record = sim_event_record,
    .event_wait = sim_event_wait,
    .event_elapsed = sim_event_elapsed,
    .sync = sim_sync,
    .matvec = sim_matvec,
    .ffn_rows = sim_ffn_rows,
    .ffn_ids = sim_ffn_ids,
    .attention = sim_attention,
    .norm = sim_norm,
    .rope = sim_rope,
    .add = sim_add,
    .embed = sim_embed,
    .ffn_act = sim_ffn_act,
};
