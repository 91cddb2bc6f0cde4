/* The flash FFN's compute on a device (ffn_flash_dev.h). */
#include "engine/ffn/ffn_flash_dev.h"

#include <string.h>

#include "common/errbuf.h"

int fdev_init(struct flash_dev *fd, const struct backend_ops *ops, struct backend *be, const struct model *m,
              uint32_t staging_rows, char *err, size_t errlen)
{
    memset(fd, 0, sizeof *fd);
    fd->ops = ops;
    fd->be = be;
    fd->m = m;
    fd->staging_rows = staging_rows ? staging_rows : 1;
    size_t d = m->shape.d_model * sizeof(float);
    bool bias = false;
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        bias = bias || m->layers[l].ffn_up_bias;
    if (ops->alloc(be, d, BUF_DEVICE, &fd->tmp) || ops->alloc(be, d, BUF_PINNED, &fd->x_pinned) ||
        ops->alloc(be, (size_t)fd->staging_rows * m->bundle_stride, BUF_DEVICE, &fd->stage_rows) ||
        (bias && ops->alloc(be, (size_t)fd->staging_rows * sizeof(float), BUF_DEVICE, &fd->stage_bias)))
        return err_set(err, errlen, "%s backend: the flash FFN's staging area (%u rows of %llu bytes): %s", ops->name,
                       fd->staging_rows, (unsigned long long)m->bundle_stride, ops->error(be));
    fd->x_host = ops->host_ptr(be, fd->x_pinned);
    if (!fd->x_host)
        return err_set(err, errlen, "%s backend: its pinned memory has no host address", ops->name);
    return 0;
}

void fdev_free(struct flash_dev *fd)
{
    if (!fd->be)
        return;
    struct dev_buf *bufs[] = {fd->tmp, fd->x_pinned, fd->stage_rows, fd->stage_bias};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            fd->ops->buf_free(fd->be, bufs[i]);
    memset(fd, 0, sizeof *fd);
}

int fdev_layer_begin(struct flash_dev *fd, struct dev_ref x, struct dev_ref out, bool need_x)
{
    fd->x = x;
    fd->out = out;
    fd->written = false;
    if (!need_x)
        return 0;
    uint64_t ev;
    return fd->ops->download(fd->be, fd->x_host, x, fd->m->shape.d_model * sizeof(float)) ||
                   fd->ops->event_record(fd->be, &ev) || fd->ops->event_wait(fd->be, ev)
               ? -1
               : 0;
}

int fdev_rows(struct flash_dev *fd, struct dev_ref rows, uint32_t n, struct dev_ref bias)
{
    const struct model *m = fd->m;
    int d = (int)m->shape.d_model;
    if (fd->written && n == 0)
        return 0;
    if (!rows.buf || n == 0) /* no rows: any buffer, none read */
        rows = (struct dev_ref){fd->stage_rows, 0}, bias = (struct dev_ref){0};
    /* the host's out = 0 + first group is the first group's bits (a sum
     * from +0 is never -0): written directly */
    struct dev_ref to = fd->written ? (struct dev_ref){fd->tmp, 0} : fd->out;
    if (fd->ops->ffn_rows(fd->be, to, rows, m->bundle_stride, (int)n, bias, fd->x, d, m->dtype, &m->arch))
        return -1;
    if (fd->written)
        return fd->ops->add(fd->be, fd->out, to, d);
    fd->written = true;
    return 0;
}

struct dev_ref fdev_stage_rows(const struct flash_dev *fd, uint32_t k)
{
    return (struct dev_ref){fd->stage_rows, (size_t)k * fd->m->bundle_stride};
}

struct dev_ref fdev_stage_bias(const struct flash_dev *fd, uint32_t k)
{
    return fd->stage_bias ? (struct dev_ref){fd->stage_bias, (size_t)k * sizeof(float)} : (struct dev_ref){0};
}

int fdev_layer_end(struct flash_dev *fd, struct dev_ref down_bias)
{
    if (!fd->written && fdev_rows(fd, (struct dev_ref){0}, 0, (struct dev_ref){0}))
        return -1;
    return down_bias.buf ? fd->ops->add(fd->be, fd->out, down_bias, (int)fd->m->shape.d_model) : 0;
}
