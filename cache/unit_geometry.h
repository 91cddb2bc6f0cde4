/* A caching unit's geometry: what one unit streamed from flash is, how many
 * a layer has, its stride on flash and the parts (extents) it is made of.
 * Computed once, from the numbers model.json or a trace header carry, and
 * read by cache/, the replay, run's plan and the cost model, so that no
 * caller works a unit's size out again.
 *
 * Contract:
 * - A kind is a row of one table (unit_kind_desc): which of the
 *   shape's dimensions counts its units per layer, and its parts, each a
 *   run of elements of the weight type whose length is a shape dimension
 *   (a part may exist only in a GLU: the gate). Kinds with no file behind
 *   them yet (an expert) are described and refused by the constructor.
 * - A unit's parts lie back to back in the table's order from byte 0; each
 *   part's bytes come only from wtype_row_bytes (common/wtype.h), `bytes` is
 *   their sum, and `stride` (>= bytes) is how far apart units lie on flash:
 *   bytes padded to an alignment, or a stride a caller states (replay's
 *   --row-stride). Unit i of layer l starts at (l * units + i) * stride.
 * - Plain values and pure functions; errors as 0 / -1 with err (err_set). */
#ifndef FLASHBED_CACHE_UNIT_GEOMETRY_H
#define FLASHBED_CACHE_UNIT_GEOMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/model_shape.h"
#include "common/unit_kind.h"
#include "common/wtype.h"

/* The kinds (common/unit_kind.h: names and file codes):
 * UNIT_NEURON_BUNDLE   ffn.bin: neuron i's up row, gate row (GLU), down column; d_ff per layer
 * UNIT_CHANNEL_BUNDLE  ffn_t.bin (input sparsity): input channel j's up column, gate column
 *                      (GLU) of d_ff weights each; d_model per layer
 * UNIT_DOWN_ROW        ffn_t.bin: neuron i's row of down [d_model]; d_ff per layer
 * UNIT_EXPERT          a mixture-of-experts expert's up, gate and down matrices (their scales
 *                      ride in a quantized type's blocks); described, not yet built */

/* The shape dimensions a kind's table names. */
enum unit_dim {
    UNIT_DIM_D_MODEL,
    UNIT_DIM_D_FF,
    UNIT_DIM_MATRIX,    /* d_model x d_ff */
    UNIT_DIM_N_EXPERTS, /* the count of an expert layer's units (no shape carries it yet) */
};

#define UNIT_MAX_EXTENTS 4

struct unit_part_desc {
    const char *role;     /* "up", "gate", "down" */
    enum unit_dim length; /* elements */
    bool glu_only;        /* present only in a GLU FFN */
};

struct unit_kind_desc {
    enum unit_dim per_layer;   /* what counts the units of one layer */
    bool constructible;        /* a file holds it today */
    uint32_t n_parts;
    struct unit_part_desc parts[UNIT_MAX_EXTENTS];
};

/* kind's row; NULL outside the enum. */
const struct unit_kind_desc *unit_kind_desc(enum unit_kind kind);

/* The numbers a unit's geometry is built from: model.json's shape or a
 * trace header's, and the weight type. */
struct unit_dims {
    uint32_t n_layers, d_model, d_ff;
    enum ffn_kind ffn_kind;
    enum fb_dtype type;
};

struct unit_extent {
    const char *role;  /* the part's role (unit_part_desc) */
    uint64_t offset;   /* bytes from the unit's start */
    uint64_t bytes;    /* wtype_row_bytes(type, elems) */
    uint64_t elems;
    enum fb_dtype type;
};

struct unit_geometry {
    enum unit_kind kind;
    uint32_t n_layers;
    uint32_t units;    /* per layer */
    uint64_t bytes;    /* one unit's data: its extents back to back */
    uint64_t stride;   /* one unit on flash, padding included (>= bytes) */
    uint32_t n_extents;
    struct unit_extent ext[UNIT_MAX_EXTENTS];
};

/* Builds kind's geometry from d with units `align` apart rounded up (0 or
 * 1: packed, stride = bytes). -1 with err for a kind no file holds yet, a
 * type outside the table, a part that is not whole blocks of the type, or a
 * zero dimension. */
int unit_geometry_make(enum unit_kind kind, const struct unit_dims *d, uint64_t align, struct unit_geometry *g,
                       char *err, size_t errlen);

/* The dims of a model shape with weight type t. */
struct unit_dims unit_dims_of_shape(const struct model_shape *s, enum fb_dtype t);

/* Sets g's stride to one a caller states (0: packed); -1 with err when it is
 * below the unit's bytes. */
int unit_geometry_set_stride(struct unit_geometry *g, uint64_t stride, char *err, size_t errlen);

/* The stride rounded up to align (0 or 1: unchanged). */
uint64_t unit_padded(uint64_t bytes, uint64_t align);

/* g's extent of role ("up", "gate", "down"); NULL when the unit has none
 * (a ReLU bundle's gate). */
const struct unit_extent *unit_extent_named(const struct unit_geometry *g, const char *role);

/* Elements of one unit (its extents'). */
uint64_t unit_geometry_elems(const struct unit_geometry *g);

/* One layer's units on flash (stride x units), and every layer's. */
uint64_t unit_geometry_layer_bytes(const struct unit_geometry *g);
uint64_t unit_geometry_file_bytes(const struct unit_geometry *g);

/* The elements of one neuron bundle of shape s (up, gate for a GLU, down):
 * what the cost model prices a bundle's reads and compute by. */
uint64_t unit_neuron_weights(const struct model_shape *s);

#endif
