/* Up and gate rows out of the neuron bundles (ffn_matrix.h). */
#include "engine/model/ffn_matrix.h"

#include <string.h>

#include "engine/model/model_format.h"

static const uint8_t *row_of(const struct model *m, uint32_t layer, enum ffn_part part, uint32_t i)
{
    uint64_t off = part == FFN_PART_GATE ? ffn_bundle_gate(&m->shape) : ffn_bundle_up();
    return (const uint8_t *)m->layers[layer].ffn_bundles + (uint64_t)i * m->bundle_stride +
           wtype_row_bytes(m->dtype, off);
}

void ffn_matrix_copy(const struct model *m, uint32_t layer, enum ffn_part part, void *dst)
{
    size_t row = wtype_row_bytes(m->dtype, m->shape.d_model);
    for (uint32_t i = 0; i < m->shape.d_ff; i++)
        memcpy((uint8_t *)dst + i * row, row_of(m, layer, part, i), row);
}

void ffn_matrix_f32(const struct model *m, uint32_t layer, enum ffn_part part, float *dst)
{
    size_t d = m->shape.d_model;
    for (uint32_t i = 0; i < m->shape.d_ff; i++)
        dtype_to_f32(dst + i * d, row_of(m, layer, part, i), m->dtype, d);
}
