/* The caching units' table and their geometry (unit_geometry.h). */
#include "cache/unit_geometry.h"

#include <string.h>

#include "common/errbuf.h"

static const struct unit_kind_desc kinds[UNIT_KIND_COUNT] = {
    [UNIT_NEURON_BUNDLE] = {UNIT_DIM_D_FF, true, 3,
                            {{"up", UNIT_DIM_D_MODEL, false},
                             {"gate", UNIT_DIM_D_MODEL, true},
                             {"down", UNIT_DIM_D_MODEL, false}}},
    [UNIT_CHANNEL_BUNDLE] = {UNIT_DIM_D_MODEL, true, 2,
                             {{"up", UNIT_DIM_D_FF, false}, {"gate", UNIT_DIM_D_FF, true}}},
    [UNIT_DOWN_ROW] = {UNIT_DIM_D_FF, true, 1, {{"down", UNIT_DIM_D_MODEL, false}}},
    [UNIT_EXPERT] = {UNIT_DIM_N_EXPERTS, false, 3,
                     {{"up", UNIT_DIM_MATRIX, false},
                      {"gate", UNIT_DIM_MATRIX, true},
                      {"down", UNIT_DIM_MATRIX, false}}},
};

const struct unit_kind_desc *unit_kind_desc(enum unit_kind kind)
{
    return (unsigned)kind < UNIT_KIND_COUNT ? &kinds[kind] : NULL;
}

/* A dimension's value in d; 0 for one d does not carry (the expert count). */
static uint64_t dim_value(enum unit_dim dim, const struct unit_dims *d)
{
    switch (dim) {
    case UNIT_DIM_D_MODEL:
        return d->d_model;
    case UNIT_DIM_D_FF:
        return d->d_ff;
    case UNIT_DIM_MATRIX:
        return (uint64_t)d->d_model * d->d_ff;
    case UNIT_DIM_N_EXPERTS:
        return 0;
    }
    return 0;
}

uint64_t unit_padded(uint64_t bytes, uint64_t align)
{
    return align > 1 ? (bytes + align - 1) / align * align : bytes;
}

struct unit_dims unit_dims_of_shape(const struct model_shape *s, enum fb_dtype t)
{
    return (struct unit_dims){s->n_layers, s->d_model, s->d_ff, s->ffn_kind, t};
}

/* The parts of k present for d, back to back from byte 0. */
static int lay_extents(enum unit_kind kind, const struct unit_dims *d, struct unit_geometry *g, char *err,
                       size_t errlen)
{
    const struct unit_kind_desc *k = &kinds[kind];
    g->n_extents = 0;
    g->bytes = 0;
    for (uint32_t p = 0; p < k->n_parts; p++) {
        const struct unit_part_desc *part = &k->parts[p];
        if (part->glu_only && d->ffn_kind != FFN_GLU)
            continue;
        uint64_t n = dim_value(part->length, d);
        if (!wtype_row_fits(d->type, n))
            return err_set(err, errlen, "%s: its %s (%llu weights) is not whole blocks of %s", unit_kind_name(kind),
                           part->role, (unsigned long long)n, wtype_name(d->type));
        uint64_t bytes = wtype_row_bytes(d->type, n);
        g->ext[g->n_extents++] = (struct unit_extent){part->role, g->bytes, bytes, n, d->type};
        g->bytes += bytes;
    }
    return 0;
}

int unit_geometry_make(enum unit_kind kind, const struct unit_dims *d, uint64_t align, struct unit_geometry *g,
                       char *err, size_t errlen)
{
    const struct unit_kind_desc *k = unit_kind_desc(kind);
    *g = (struct unit_geometry){.kind = kind};
    if (!k)
        return err_set(err, errlen, "unit kind %d: not in the table", (int)kind);
    if (!k->constructible)
        return err_set(err, errlen, "unit %s: no file holds one yet", unit_kind_name(kind));
    if (!wtype_valid(d->type))
        return err_set(err, errlen, "weight type %d: not in the table", (int)d->type);
    if (!d->n_layers || !d->d_model || !d->d_ff)
        return err_set(err, errlen, "unit %s: a shape of %u layers, d_model %u, d_ff %u", unit_kind_name(kind),
                       d->n_layers, d->d_model, d->d_ff);
    if (lay_extents(kind, d, g, err, errlen) != 0)
        return -1;
    g->n_layers = d->n_layers;
    g->units = (uint32_t)dim_value(k->per_layer, d);
    g->stride = unit_padded(g->bytes, align);
    return 0;
}

int unit_geometry_set_stride(struct unit_geometry *g, uint64_t stride, char *err, size_t errlen)
{
    if (stride && stride < g->bytes)
        return err_set(err, errlen, "a stride of %llu bytes: a %s is %llu bytes", (unsigned long long)stride,
                       unit_kind_name(g->kind), (unsigned long long)g->bytes);
    g->stride = stride ? stride : g->bytes;
    return 0;
}

const struct unit_extent *unit_extent_named(const struct unit_geometry *g, const char *role)
{
    for (uint32_t e = 0; e < g->n_extents; e++)
        if (!strcmp(g->ext[e].role, role))
            return &g->ext[e];
    return NULL;
}

uint64_t unit_geometry_elems(const struct unit_geometry *g)
{
    uint64_t n = 0;
    for (uint32_t e = 0; e < g->n_extents; e++)
        n += g->ext[e].elems;
    return n;
}

uint64_t unit_geometry_layer_bytes(const struct unit_geometry *g)
{
    return g->stride * g->units;
}

uint64_t unit_geometry_file_bytes(const struct unit_geometry *g)
{
    return unit_geometry_layer_bytes(g) * g->n_layers;
}

uint64_t unit_neuron_weights(const struct model_shape *s)
{
    const struct unit_kind_desc *k = &kinds[UNIT_NEURON_BUNDLE];
    struct unit_dims d = unit_dims_of_shape(s, DTYPE_F32);
    uint64_t n = 0;
    for (uint32_t p = 0; p < k->n_parts; p++)
        if (!k->parts[p].glu_only || s->ffn_kind == FFN_GLU)
            n += dim_value(k->parts[p].length, &d);
    return n;
}
