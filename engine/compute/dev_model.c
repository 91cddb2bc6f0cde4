/* The model's weights on a backend (dev_model.h). */
#include "engine/compute/dev_model.h"

#include <stdint.h>
#include <string.h>

#include "common/errbuf.h"

static int region_in(const void *base, size_t bytes, const void *p)
{
    uintptr_t b = (uintptr_t)base, q = (uintptr_t)p;
    return base && q >= b && q < b + bytes;
}

struct dev_ref dev_model_ref(const struct dev_model *dm, const void *p)
{
    const struct model *m = dm->m;
    if (!p)
        return (struct dev_ref){0};
    if (region_in(m->dram, m->dram_bytes, p))
        return (struct dev_ref){dm->dram, (size_t)((const char *)p - (const char *)m->dram)};
    if (region_in(m->ffn_matrices, m->ffn_matrices_bytes, p))
        return (struct dev_ref){dm->mats, (size_t)((const char *)p - (const char *)m->ffn_matrices)};
    return (struct dev_ref){dm->ffn, (size_t)((const char *)p - (const char *)m->ffn)};
}

/* One region: registered in place where the host's memory is the
 * device's (cpu), else a device buffer filled by one upload. */
static int load_region(struct dev_model *dm, void *host, size_t bytes, struct dev_buf **out, const char *what,
                       char *err, size_t errlen)
{
    struct backend_device info;
    dm->ops->info(dm->be, &info);
    int rc = info.host_visible ? dm->ops->register_host(dm->be, host, bytes, out)
                               : dm->ops->alloc(dm->be, bytes, BUF_DEVICE, out);
    if (rc == 0 && !info.host_visible)
        rc = dm->ops->upload(dm->be, (struct dev_ref){*out, 0}, host, bytes);
    if (rc != 0)
        return err_set(err, errlen, "%s backend: the model's %s (%zu MiB): %s", dm->ops->name, what, bytes >> 20,
                       dm->ops->error(dm->be));
    return 0;
}

/* Every weight the forward pass reads lies in one of the regions: a
 * model put together another way is refused here, not misread later. */
static int check_layer(const struct model *m, const struct layer_weights *L)
{
    const void *w[] = {L->attn_norm, L->attn_norm_bias, L->wq,       L->wk,        L->wv,
                       L->wo,        L->bq,             L->bk,       L->bv,        L->bo,
                       L->q_norm,    L->q_norm_bias,    L->k_norm,   L->k_norm_bias, L->ffn_norm,
                       L->ffn_norm_bias, L->ffn_up_bias, L->ffn_down_bias, L->ffn_bundles, L->post_attn_norm,
                       L->post_ffn_norm};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (w[i] && !region_in(m->dram, m->dram_bytes, w[i]) && !region_in(m->ffn, m->ffn_bytes, w[i]))
            return -1;
    const void *mats[] = {L->ffn_up, L->ffn_gate, L->ffn_down};
    for (size_t i = 0; i < 3; i++)
        if (mats[i] && !region_in(m->ffn_matrices, m->ffn_matrices_bytes, mats[i]))
            return -1;
    return 0;
}

static int check_regions(const struct model *m, char *err, size_t errlen)
{
    const void *w[] = {m->tok_embedding, m->pos_embedding, m->final_norm, m->final_norm_bias, m->output,
                       m->output_bias};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (w[i] && !region_in(m->dram, m->dram_bytes, w[i]))
            return err_set(err, errlen, "%s: a weight lies outside the model's memory", m->dir);
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        if (check_layer(m, &m->layers[l]))
            return err_set(err, errlen, "%s: a weight of layer %u lies outside the model's memory", m->dir, l);
    return 0;
}

int dev_model_load(struct dev_model *dm, const struct model *m, const struct backend_ops *ops, struct backend *be,
                   char *err, size_t errlen)
{
    *dm = (struct dev_model){.m = m, .ops = ops, .be = be};
    if (check_regions(m, err, errlen) || load_region(dm, m->dram, m->dram_bytes, &dm->dram, "DRAM tensors", err, errlen))
        return -1;
    if ((m->ffn && load_region(dm, m->ffn, m->ffn_bytes, &dm->ffn, "FFN bundles", err, errlen)) ||
        (m->ffn_matrices &&
         load_region(dm, m->ffn_matrices, m->ffn_matrices_bytes, &dm->mats, "FFN matrices", err, errlen))) {
        dev_model_free(dm);
        return -1;
    }
    if (ops->sync(be) != 0) {
        err_set(err, errlen, "%s backend: uploading the model: %s", ops->name, ops->error(be));
        dev_model_free(dm);
        return -1;
    }
    return 0;
}

void dev_model_free(struct dev_model *dm)
{
    if (dm->ops && dm->be) {
        dm->ops->buf_free(dm->be, dm->dram);
        dm->ops->buf_free(dm->be, dm->ffn);
        dm->ops->buf_free(dm->be, dm->mats);
    }
    memset(dm, 0, sizeof *dm);
}
