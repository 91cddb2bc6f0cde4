/* A layer's neuron cache mirrored on a device (neuron_cache_dev.h). */
#include "engine/ffn/neuron_cache_dev.h"

#include <string.h>

#include "common/errbuf.h"

int ncd_init(struct neuron_cache_dev *d, const struct backend_ops *ops, struct backend *be, uint32_t capacity,
             uint64_t row_stride, bool with_bias, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->ops = ops;
    d->be = be;
    d->capacity = capacity;
    d->row_stride = row_stride;
    size_t moves = (size_t)capacity * sizeof(struct row_move);
    if (ops->alloc(be, (size_t)capacity * row_stride, BUF_DEVICE, &d->rows) ||
        (with_bias && ops->alloc(be, (size_t)capacity * sizeof(float), BUF_DEVICE, &d->bias)) ||
        ops->alloc(be, moves, BUF_PINNED, &d->moves_pinned) || ops->alloc(be, moves, BUF_DEVICE, &d->moves_dev))
        return err_set(err, errlen, "%s backend: the neuron cache's %u rows of %llu bytes: %s", ops->name, capacity,
                       (unsigned long long)row_stride, ops->error(be));
    d->moves = ops->host_ptr(be, d->moves_pinned);
    if (!d->moves)
        return err_set(err, errlen, "%s backend: its pinned memory has no host address", ops->name);
    return 0;
}

void ncd_free(struct neuron_cache_dev *d)
{
    if (!d->be)
        return;
    struct dev_buf *bufs[] = {d->rows, d->bias, d->moves_pinned, d->moves_dev};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            d->ops->buf_free(d->be, bufs[i]);
    memset(d, 0, sizeof *d);
}

int ncd_begin(struct neuron_cache_dev *d, uint64_t covered)
{
    if (!d->be)
        return 0;
    d->n_moves = d->n_applied = 0;
    if (!d->pending)
        return 0;
    d->pending = false;
    if (d->done <= covered)
        return 0;
    d->waits++;
    return d->ops->event_wait(d->be, d->done);
}

void ncd_synced(struct neuron_cache_dev *d)
{
    d->pending = false;
}

int ncd_record_move(struct neuron_cache_dev *d, uint32_t dst, uint32_t src)
{
    if (!d->be)
        return 0;
    /* a step deletes at most the rows it holds: more is the engine's bug */
    if (d->n_moves == d->capacity)
        return -1;
    d->moves[d->n_moves++] = (struct row_move){(int32_t)dst, (int32_t)src};
    return 0;
}

int ncd_apply_moves(struct neuron_cache_dev *d, uint64_t *h2d)
{
    if (!d->be || d->n_applied == d->n_moves)
        return 0;
    int n = (int)(d->n_moves - d->n_applied);
    size_t at = d->n_applied * sizeof(struct row_move), bytes = (size_t)n * sizeof(struct row_move);
    struct dev_ref list = {d->moves_dev, at};
    /* this part of the list only: an earlier batch of the step may not have run yet */
    if (d->ops->upload(d->be, list, (const char *)d->moves + at, bytes) ||
        d->ops->move_rows(d->be, (struct dev_ref){d->rows, 0}, d->row_stride, list, n) ||
        (d->bias && d->ops->move_rows(d->be, (struct dev_ref){d->bias, 0}, sizeof(float), list, n)))
        return -1;
    *h2d += bytes;
    d->n_applied = d->n_moves;
    return 0;
}

int ncd_end(struct neuron_cache_dev *d)
{
    if (!d->be)
        return 0;
    if (d->ops->event_record(d->be, &d->done))
        return -1;
    d->pending = true;
    return 0;
}

struct dev_ref ncd_rows(const struct neuron_cache_dev *d, uint32_t first)
{
    return (struct dev_ref){d->rows, (size_t)first * d->row_stride};
}

struct dev_ref ncd_bias(const struct neuron_cache_dev *d, uint32_t first)
{
    return d->bias ? (struct dev_ref){d->bias, (size_t)first * sizeof(float)} : (struct dev_ref){0};
}
