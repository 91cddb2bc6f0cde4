/* What each of the sim backend's commands does on its queue thread
 * (backend_sim.h): the copies, the CPU kernels on the sim's memory, the
 * ids and rows checked against their buffers first, the injected fault
 * and delay, the guard zones checked after. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/compute/backend_sim_impl.h"

const char *sim_kind_name(enum sim_kind k)
{
    static const char *const names[] = {"upload", "download", "move_rows", "event", "matvec", "ffn_rows",
                                        "ffn_ids", "attention", "norm", "rope", "add", "embed", "ffn_act"};
    return (size_t)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* Fails the backend with the command named before the reason. */
static int cmd_fail(struct backend *b, const struct sim_cmd *c, const char *why)
{
    b->base.failed = true;
    return bk_fail(&b->base, "command %llu (%s): %s", (unsigned long long)c->seq, sim_kind_name(c->kind), why);
}

static int exec_move_rows(struct backend *b, const struct sim_cmd *c)
{
    const struct row_move *mv = (const struct row_move *)sim_at(c->u.move.moves);
    struct dev_ref base = c->u.move.base;
    size_t rb = c->u.move.row_bytes, rows = (base.buf->bytes - base.off) / rb;
    for (int i = 0; i < c->u.move.n; i++) {
        if (mv[i].dst < 0 || mv[i].src < 0 || (size_t)mv[i].dst >= rows || (size_t)mv[i].src >= rows) {
            char why[160];
            snprintf(why, sizeof why, "move %d (%d <- %d) is outside the %zu rows", i, mv[i].dst, mv[i].src, rows);
            return cmd_fail(b, c, why);
        }
        memmove(sim_at(base) + (size_t)mv[i].dst * rb, sim_at(base) + (size_t)mv[i].src * rb, rb);
    }
    b->base.counts.bytes_moved += (uint64_t)c->u.move.n * rb;
    return 0;
}

static int exec_copy(struct backend *b, const struct sim_cmd *c)
{
    switch (c->kind) {
    case SIM_UPLOAD:
        memmove(sim_at(c->u.up.dst), c->u.up.src, c->u.up.bytes);
        b->base.counts.bytes_up += c->u.up.bytes;
        break;
    case SIM_DOWNLOAD:
        memmove(c->u.down.dst, sim_at(c->u.down.src), c->u.down.bytes);
        b->base.counts.bytes_down += c->u.down.bytes;
        break;
    case SIM_MOVE_ROWS:
    /* not copies: sim_exec sends only the kinds up to SIM_MOVE_ROWS here */
    case SIM_EVENT:
    case SIM_MATVEC:
    case SIM_FFN_ROWS:
    case SIM_FFN_IDS:
    case SIM_ATTENTION:
    case SIM_NORM:
    case SIM_ROPE:
    case SIM_ADD:
    case SIM_EMBED:
    case SIM_FFN_ACT:
        if (exec_move_rows(b, c))
            return -1;
    }
    b->base.counts.copies++;
    return 0;
}

/* The ids against the bundles the buffer holds (and their biases), as
 * the cpu backend checks them: a bad id is a failure, not a stray read. */
static int check_ids(struct backend *b, const struct sim_cmd *c)
{
    const int32_t *id = (const int32_t *)sim_at(c->u.ffn.ids);
    struct dev_ref bundles = c->u.ffn.rows, ub = c->u.ffn.up_bias;
    size_t held = (bundles.buf->bytes - bundles.off) / c->u.ffn.row_stride;
    size_t biases = ub.buf ? (ub.buf->bytes - ub.off) / sizeof(float) : held;
    for (int i = 0; i < c->u.ffn.n; i++)
        if (id[i] < 0 || (size_t)id[i] >= held || (size_t)id[i] >= biases) {
            char why[160];
            snprintf(why, sizeof why, "id %d (at %d) is outside the %zu bundles", id[i], i, held);
            return cmd_fail(b, c, why);
        }
    return 0;
}

static void exec_ffn(struct backend *b, const struct sim_cmd *c)
{
    const struct sim_ffn *f = &c->u.ffn;
    if (c->kind == SIM_FFN_ROWS)
        ck_ffn_rows(b->k, (float *)sim_at(f->out), sim_at(f->rows), f->row_stride, f->n,
                    (const float *)sim_at(f->up_bias), (const float *)sim_at(f->x), f->d, f->t, &f->a);
    else
        ck_ffn_ids(b->k, (float *)sim_at(f->out), sim_at(f->rows), f->row_stride, (const int32_t *)sim_at(f->ids),
                   f->n, (const float *)sim_at(f->up_bias), (const float *)sim_at(f->x), f->d, f->t, &f->a);
}

static int exec_kernel(struct backend *b, const struct sim_cmd *c)
{
    const union sim_args *u = &c->u;
    switch (c->kind) {
    case SIM_MATVEC:
        ck_matvec(b->k, (float *)sim_at(u->matvec.out), sim_at(u->matvec.w), u->matvec.t,
                  (const float *)sim_at(u->matvec.x), (const float *)sim_at(u->matvec.bias), u->matvec.rows,
                  u->matvec.cols);
        break;
    case SIM_FFN_IDS:
        if (check_ids(b, c))
            return -1;
        exec_ffn(b, c);
        break;
    case SIM_FFN_ROWS:
        exec_ffn(b, c);
        break;
    case SIM_ATTENTION:
        ck_attention(b->k, (float *)sim_at(u->att.out), (const float *)sim_at(u->att.q),
                     (const float *)sim_at(u->att.k), (const float *)sim_at(u->att.v), u->att.n_pos, u->att.n_heads,
                     u->att.n_kv_heads, u->att.head_dim);
        break;
    case SIM_NORM:
        ck_norm(b->k, (float *)sim_at(u->norm.out), (const float *)sim_at(u->norm.x),
                (const float *)sim_at(u->norm.weight), (const float *)sim_at(u->norm.bias), u->norm.d, u->norm.kind,
                u->norm.eps);
        break;
    case SIM_ROPE:
        ck_rope(b->k, (float *)sim_at(u->rope.vec), u->rope.n_heads, u->rope.head_dim, u->rope.rot_dims, u->rope.pos,
                (const float *)sim_at(u->rope.inv_freq), u->rope.scale);
        break;
    case SIM_ADD:
        ck_add(b->k, (float *)sim_at(u->add.y), (const float *)sim_at(u->add.x), u->add.n);
        break;
    case SIM_FFN_ACT:
        ck_ffn_act(b->k, (float *)sim_at(u->act.h), (const float *)sim_at(u->act.z),
                   u->act.g.buf ? (const float *)sim_at(u->act.g) : NULL, u->act.n, &u->act.a);
        break;
    case SIM_EMBED:
    /* not launches: sim_exec sends only the kinds after SIM_MOVE_ROWS here */
    case SIM_UPLOAD:
    case SIM_DOWNLOAD:
    case SIM_MOVE_ROWS:
    case SIM_EVENT:
        ck_embed(b->k, (float *)sim_at(u->embed.out), sim_at(u->embed.table), u->embed.t, u->embed.r, u->embed.d);
        ck_scale(b->k, (float *)sim_at(u->embed.out), u->embed.scale, u->embed.d);
    }
    b->base.counts.launches++;
    return 0;
}

static void sleep_us(uint64_t us)
{
    struct timespec t = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};
    while (nanosleep(&t, &t) != 0)
        ; /* interrupted by a signal: sleep the rest */
}

void sim_exec(struct backend *b, const struct sim_cmd *c)
{
    if (b->base.failed || c->kind == SIM_EVENT)
        return; /* after a failure the rest of the ring is dropped; an event's mark is the queue's */
    if (b->delay_us)
        sleep_us(b->delay_us);
    if (c->seq == b->fail_at) {
        char why[96];
        snprintf(why, sizeof why, "an injected failure (sim_fail_at %llu)", (unsigned long long)b->fail_at);
        cmd_fail(b, c, why);
        return;
    }
    if ((c->kind <= SIM_MOVE_ROWS ? exec_copy(b, c) : exec_kernel(b, c)) != 0 || !c->writes)
        return;
    char when[64];
    snprintf(when, sizeof when, "after command %llu (%s)", (unsigned long long)c->seq, sim_kind_name(c->kind));
    sim_guard_check(b, c->writes, when);
}
