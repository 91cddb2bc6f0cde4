/* The activation predictor on a device (predictor_dev.h). */
#include "engine/ffn/predictor_dev.h"

#include <string.h>

#include "common/errbuf.h"

int pdev_init(struct predictor_dev *d, const struct backend_ops *ops, struct backend *be, const struct predictor *p,
              char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->ops = ops;
    d->be = be;
    d->p = p;
    size_t logits = (size_t)p->d_ff * sizeof(float), rank = (size_t)predictor_max_rank(p) * sizeof(float);
    if (ops->alloc(be, p->mem_bytes ? p->mem_bytes : 1, BUF_DEVICE, &d->w) ||
        ops->alloc(be, rank ? rank : 1, BUF_DEVICE, &d->h) || ops->alloc(be, logits, BUF_DEVICE, &d->logits) ||
        ops->alloc(be, logits, BUF_PINNED, &d->pinned))
        return err_set(err, errlen, "%s backend: the predictor's %zu bytes: %s", ops->name, p->mem_bytes,
                       ops->error(be));
    d->host = ops->host_ptr(be, d->pinned);
    if (!d->host)
        return err_set(err, errlen, "%s backend: its pinned memory has no host address", ops->name);
    if ((p->mem_bytes && ops->upload(be, (struct dev_ref){d->w, 0}, p->mem, p->mem_bytes)) || ops->sync(be))
        return err_set(err, errlen, "%s backend: uploading the predictor: %s", ops->name, ops->error(be));
    return 0;
}

void pdev_free(struct predictor_dev *d)
{
    if (!d->be)
        return;
    struct dev_buf *bufs[] = {d->w, d->h, d->logits, d->pinned};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            d->ops->buf_free(d->be, bufs[i]);
    memset(d, 0, sizeof *d);
}

/* Where p's pointer q lies in the uploaded weights. */
static struct dev_ref weight_ref(const struct predictor_dev *d, const void *q)
{
    return (struct dev_ref){d->w, (size_t)((const char *)q - (const char *)d->p->mem)};
}

int pdev_choose(struct predictor_dev *d, uint32_t l, struct dev_ref x, uint32_t *out, uint32_t *n,
                uint64_t *waited)
{
    const struct predictor *p = d->p;
    const struct predictor_layer *L = &p->layers[l];
    struct dev_ref h = {d->h, 0}, logits = {d->logits, 0};
    uint64_t ev = 0;
    if (d->ops->matvec(d->be, h, weight_ref(d, L->a), p->dtype, x, (struct dev_ref){0}, (int)L->rank,
                       (int)p->d_model) ||
        d->ops->matvec(d->be, logits, weight_ref(d, L->b), p->dtype, h, weight_ref(d, L->bias), (int)p->d_ff,
                       (int)L->rank) ||
        d->ops->download(d->be, d->host, logits, (size_t)p->d_ff * sizeof(float)) ||
        d->ops->event_record(d->be, &ev) || d->ops->event_wait(d->be, ev))
        return -1;
    *waited = ev;
    *n = predictor_choose(p, l, d->host, out);
    return 0;
}

uint64_t pdev_bytes(const struct predictor_dev *d)
{
    if (!d->be)
        return 0;
    return d->p->mem_bytes + (uint64_t)predictor_max_rank(d->p) * sizeof(float) +
           (uint64_t)d->p->d_ff * sizeof(float);
}
