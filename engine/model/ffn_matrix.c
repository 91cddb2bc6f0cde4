/* Up and gate rows out of the neuron bundles (ffn_matrix.h). */
#include "engine/model/ffn_matrix.h"

#include <string.h>

#include "engine/model/model_format.h"

/* Where part's extent lies in m's bundles, and its bytes; NULL for a part
 * the bundle lacks (a ReLU's gate: callers ask for the gate of a GLU only). */
static const struct unit_extent *part_of(const struct model *m, enum ffn_part part, struct unit_geometry *g)
{
    char err[256];
    if (model_unit_geometry(m, g, err, sizeof err) != 0)
        return NULL;
    return unit_extent_named(g, part == FFN_PART_GATE ? "gate" : "up");
}

static const uint8_t *row_of(const struct model *m, uint32_t layer, const struct unit_extent *e, uint32_t i)
{
    return (const uint8_t *)m->layers[layer].ffn_bundles + (uint64_t)i * m->bundle_stride + e->offset;
}

void ffn_matrix_copy(const struct model *m, uint32_t layer, enum ffn_part part, void *dst)
{
    struct unit_geometry g;
    const struct unit_extent *e = part_of(m, part, &g);
    for (uint32_t i = 0; e && i < m->shape.d_ff; i++)
        memcpy((uint8_t *)dst + i * e->bytes, row_of(m, layer, e, i), e->bytes);
}

void ffn_matrix_f32(const struct model *m, uint32_t layer, enum ffn_part part, float *dst)
{
    size_t d = m->shape.d_model;
    struct unit_geometry g;
    const struct unit_extent *e = part_of(m, part, &g);
    for (uint32_t i = 0; e && i < m->shape.d_ff; i++)
        dtype_to_f32(dst + i * d, row_of(m, layer, e, i), m->dtype, d);
}
