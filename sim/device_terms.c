/* The device's data-movement terms per token (device_terms.h). */
#include "sim/device_terms.h"

#include <string.h>

/* Launches of the forward pass but the FFN's. */
static uint64_t pass_launches(const struct dev_shape *s)
{
    uint64_t per_layer = s->parallel_block ? 8 : 9; /* norms, 4 matvecs, attention, adds */
    if (s->qk_norm)
        per_layer += (uint64_t)s->n_heads + s->n_kv_heads;
    if (s->rope)
        per_layer += 2;
    if (s->device_predictor)
        per_layer += 2;
    uint64_t embed = s->pos_embedding ? 3 : 1;
    return embed + per_layer * s->n_layers + 2; /* + the final norm and the head */
}

/* The FFN's launches: a first call per layer, two per later group, the down bias. */
static uint64_t ffn_launches(const struct dev_shape *s, const struct dev_volumes *v)
{
    uint64_t per_layer = 1 + (s->down_bias ? 1 : 0);
    return per_layer * s->n_layers + 2 * (v->staged_groups + v->append_groups);
}

void dev_terms_token(const struct dev_shape *s, const struct dev_volumes *v, struct dev_terms *out)
{
    memset(out, 0, sizeof *out);
    uint64_t bias = s->up_bias ? sizeof(float) : 0, row = s->row_stride + bias;
    uint64_t x_layers = s->host_reads_x ? s->n_layers : 0, p_layers = s->device_predictor ? s->n_layers : 0;
    out->bytes_up = v->rows_inserted * row + v->row_moves * 8;
    out->bytes_down = ((uint64_t)s->vocab + x_layers * s->d_model + p_layers * s->d_ff) * sizeof(float);
    out->bytes_moved = v->row_moves * row;
    /* each run's rows and biases; each batch's list and its moves on the rows and biases */
    out->uploads = v->upload_runs * (bias ? 2 : 1) + v->move_batches;
    out->downloads = 1 + x_layers + p_layers;
    out->copies = out->uploads + out->downloads + v->move_batches * (bias ? 2 : 1);
    out->launches = pass_launches(s) + ffn_launches(s, v);
    out->syncs = 1 + x_layers + p_layers + v->step_waits + v->ring_waits + v->read_waits;
}

/* ms for bytes in n copies, at the bandwidth of their mean size. */
static double copy_ms(const struct hw_profile *hw, bool h2d, bool pinned, uint64_t bytes, uint64_t n)
{
    if (!bytes || !n)
        return 0;
    double bw = hw_device_bw(hw, h2d, pinned, (double)bytes / (double)n);
    return bw > 0 ? 1e3 * (double)bytes / bw : 0;
}

void dev_terms_time(const struct hw_profile *hw, const struct dev_terms *t, bool pinned, struct dev_time *out)
{
    const struct hw_device *d = &hw->device;
    double wait_s = d->event_s > 0 ? d->event_s : d->sync_s;
    /* the rows go up from the pinned ring; x and the logits come down into pinned memory */
    out->h2d_ms = copy_ms(hw, true, pinned, t->bytes_up, t->uploads);
    out->d2h_ms = copy_ms(hw, false, true, t->bytes_down, t->downloads);
    out->launch_ms = 1e3 * (double)t->launches * d->launch_s;
    out->sync_ms = t->syncs ? 1e3 * (d->sync_s + (double)(t->syncs - 1) * wait_s) : 0;
}
