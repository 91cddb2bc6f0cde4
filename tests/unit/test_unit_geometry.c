/* The unit geometry (cache/unit_geometry.h): exact bytes and offsets of each
 * kind's extents in f32 and f16, GLU and not, strides padded and stated,
 * the cache's view of a unit, and the refusals. */
#include <stdint.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/unit_geometry.h"
#include "check.h"

static char err[256];

static void check_extent(const struct unit_extent *e, const char *role, uint64_t offset, uint64_t bytes,
                         uint64_t elems, enum fb_dtype t)
{
    CHECK_STR(e->role, role);
    CHECK_U64(e->offset, offset);
    CHECK_U64(e->bytes, bytes);
    CHECK_U64(e->elems, elems);
    CHECK(e->type == t);
}

/* Llama-2-7B's bundle in f32 (GLU) and OPT's in f16 (no gate). */
static void test_neuron_bundles(void)
{
    struct unit_geometry g;
    struct unit_dims llama = {32, 4096, 11008, FFN_GLU, DTYPE_F32};
    CHECK(unit_geometry_make(UNIT_NEURON_BUNDLE, &llama, 4096, &g, err, sizeof err) == 0);
    CHECK(g.kind == UNIT_NEURON_BUNDLE);
    CHECK_U64(g.n_layers, 32);
    CHECK_U64(g.units, 11008);
    CHECK_U64(g.n_extents, 3);
    check_extent(&g.ext[0], "up", 0, 16384, 4096, DTYPE_F32);
    check_extent(&g.ext[1], "gate", 16384, 16384, 4096, DTYPE_F32);
    check_extent(&g.ext[2], "down", 32768, 16384, 4096, DTYPE_F32);
    CHECK_U64(g.bytes, 49152);
    CHECK_U64(g.stride, 49152); /* already a multiple of 4096 */
    CHECK_U64(unit_geometry_elems(&g), 3 * 4096);
    CHECK_U64(unit_geometry_layer_bytes(&g), 49152ull * 11008);
    CHECK_U64(unit_geometry_file_bytes(&g), 49152ull * 11008 * 32);

    struct unit_dims opt = {2, 100, 300, FFN_RELU, DTYPE_F16};
    CHECK(unit_geometry_make(UNIT_NEURON_BUNDLE, &opt, 4096, &g, err, sizeof err) == 0);
    CHECK_U64(g.n_extents, 2);
    check_extent(&g.ext[0], "up", 0, 200, 100, DTYPE_F16);
    check_extent(&g.ext[1], "down", 200, 200, 100, DTYPE_F16);
    CHECK_U64(g.bytes, 400);
    CHECK_U64(g.stride, 4096);
    CHECK_U64(g.units, 300);
    CHECK(unit_geometry_make(UNIT_NEURON_BUNDLE, &opt, 0, &g, err, sizeof err) == 0);
    CHECK_U64(g.stride, 400); /* packed */
}

/* Input sparsity's two units: channel bundles (d_model per layer, up and
 * gate columns of d_ff) and rows of down (d_ff per layer of d_model). */
static void test_transposed_units(void)
{
    struct unit_geometry g;
    struct unit_dims llama = {32, 4096, 11008, FFN_GLU, DTYPE_F16};
    CHECK(unit_geometry_make(UNIT_CHANNEL_BUNDLE, &llama, 0, &g, err, sizeof err) == 0);
    CHECK_U64(g.units, 4096);
    CHECK_U64(g.n_extents, 2);
    check_extent(&g.ext[0], "up", 0, 22016, 11008, DTYPE_F16);
    check_extent(&g.ext[1], "gate", 22016, 22016, 11008, DTYPE_F16);
    CHECK_U64(g.bytes, 44032);
    CHECK_U64(g.stride, 44032);
    CHECK(unit_geometry_make(UNIT_DOWN_ROW, &llama, 0, &g, err, sizeof err) == 0);
    CHECK_U64(g.units, 11008);
    CHECK_U64(g.n_extents, 1);
    check_extent(&g.ext[0], "down", 0, 8192, 4096, DTYPE_F16);

    struct unit_dims small = {2, 100, 300, FFN_RELU, DTYPE_F32};
    CHECK(unit_geometry_make(UNIT_CHANNEL_BUNDLE, &small, 4096, &g, err, sizeof err) == 0);
    CHECK_U64(g.n_extents, 1);
    check_extent(&g.ext[0], "up", 0, 1200, 300, DTYPE_F32);
    CHECK_U64(g.stride, 4096);
    CHECK(unit_geometry_make(UNIT_DOWN_ROW, &small, 4096, &g, err, sizeof err) == 0);
    CHECK_U64(g.bytes, 400);
    CHECK_U64(g.stride, 4096);
}

/* Strides that are not a power of two, stated strides, and the bytes per
 * weight of a trace header. */
static void test_strides(void)
{
    struct unit_geometry g;
    struct unit_dims opt = {2, 100, 300, FFN_RELU, DTYPE_F16};
    CHECK(unit_geometry_make(UNIT_NEURON_BUNDLE, &opt, 96, &g, err, sizeof err) == 0);
    CHECK_U64(g.stride, 480); /* 400 up to a multiple of 96 */
    CHECK(unit_geometry_set_stride(&g, 401, err, sizeof err) == 0);
    CHECK_U64(g.stride, 401);
    CHECK(unit_geometry_set_stride(&g, 0, err, sizeof err) == 0);
    CHECK_U64(g.stride, 400);
    CHECK(unit_geometry_set_stride(&g, 399, err, sizeof err) == -1);
    CHECK(strstr(err, "399") && strstr(err, "neuron bundle is 400 bytes"));
    CHECK_U64(unit_padded(400, 1), 400);
    CHECK_U64(unit_padded(0, 4096), 0);
}

/* The cache's view: units as rows, extents as a split read's vectors. */
static void test_cache_view(void)
{
    struct unit_geometry u;
    struct unit_dims d = {3, 4, 8, FFN_GLU, DTYPE_F16};
    CHECK(unit_geometry_make(UNIT_NEURON_BUNDLE, &d, 64, &u, err, sizeof err) == 0);
    struct cache_geometry g;
    cache_geometry_of_unit(&u, 16, &g);
    CHECK_U64(g.n_layers, 3);
    CHECK_U64(g.d_ff, 8);
    CHECK_U64(g.vec[0].bytes, 8);
    CHECK_U64(g.vec[1].offset, 8);
    CHECK_U64(g.vec[2].offset, 16);
    CHECK_U64(g.unit_bytes, 24);
    CHECK_U64(g.vecs_per_row, 3);
    CHECK_U64(g.row_bytes, 64);
    CHECK_U64(g.read_align, 16);
}

/* Caches sharing a budget: one takes it all (cache_capacity_rows); two
 * split it in proportion to their sizes (Llama-2-7B's two streams in f16:
 * the channel bundles take 2/3, and half the FFN keeps half of each). */
static void test_shared_capacity(void)
{
    struct unit_geometry u[2];
    uint64_t rows[2];
    struct unit_dims opt = {2, 100, 300, FFN_RELU, DTYPE_F16};
    CHECK(unit_geometry_make(UNIT_NEURON_BUNDLE, &opt, 0, &u[0], err, sizeof err) == 0);
    cache_shared_capacity(400 * 2 * 17 + 399, u, 1, rows);
    CHECK_U64(rows[0], 17);
    CHECK_U64(rows[0], cache_capacity_rows(400 * 2 * 17 + 399, 400, 2, 300));
    struct unit_dims llama = {32, 4096, 11008, FFN_GLU, DTYPE_F16};
    CHECK(unit_geometry_make(UNIT_CHANNEL_BUNDLE, &llama, 0, &u[0], err, sizeof err) == 0);
    CHECK(unit_geometry_make(UNIT_DOWN_ROW, &llama, 0, &u[1], err, sizeof err) == 0);
    uint64_t ffn = 32ull * 4096 * 11008 * 2 * 3;
    cache_shared_capacity(ffn / 2, u, 2, rows);
    CHECK_U64(rows[0], 2048);
    CHECK_U64(rows[1], 5504);
    cache_shared_capacity(0, u, 2, rows);
    CHECK_U64(rows[0] + rows[1], 0);
}

/* The table: the expert described and refused; what a neuron bundle holds
 * agrees with the shape's FFN matrices. */
static void test_table_and_refusals(void)
{
    struct unit_geometry g;
    struct unit_dims d = {2, 8, 16, FFN_GLU, DTYPE_F32};
    const struct unit_kind_desc *k = unit_kind_desc(UNIT_EXPERT);
    CHECK(k && !k->constructible && k->n_parts == 3);
    CHECK(unit_geometry_make(UNIT_EXPERT, &d, 0, &g, err, sizeof err) == -1);
    CHECK(strstr(err, "expert") != NULL);
    CHECK(unit_kind_desc((enum unit_kind)UNIT_KIND_COUNT) == NULL);
    CHECK(unit_geometry_make((enum unit_kind)UNIT_KIND_COUNT, &d, 0, &g, err, sizeof err) == -1);
    struct unit_dims bad = d;
    bad.type = (enum fb_dtype)DTYPE_COUNT;
    CHECK(unit_geometry_make(UNIT_NEURON_BUNDLE, &bad, 0, &g, err, sizeof err) == -1);
    bad = d;
    bad.d_ff = 0;
    CHECK(unit_geometry_make(UNIT_DOWN_ROW, &bad, 0, &g, err, sizeof err) == -1);
    for (int kind = 0; kind < 2; kind++) {
        struct model_shape s;
        memset(&s, 0, sizeof s);
        s.n_layers = 2;
        s.d_model = 8;
        s.d_ff = 16;
        s.ffn_kind = kind ? FFN_GLU : FFN_RELU;
        CHECK_U64(unit_neuron_weights(&s), 8ull * model_shape_ffn_matrices(&s));
        struct unit_dims sd = unit_dims_of_shape(&s, DTYPE_BF16);
        CHECK(unit_geometry_make(UNIT_NEURON_BUNDLE, &sd, 0, &g, err, sizeof err) == 0);
        CHECK_U64(g.n_extents, model_shape_ffn_matrices(&s));
        CHECK_U64(g.bytes, 2 * unit_neuron_weights(&s));
    }
}

int main(void)
{
    test_neuron_bundles();
    test_transposed_units();
    test_strides();
    test_cache_view();
    test_shared_capacity();
    test_table_and_refusals();
    return check_report("test_unit_geometry");
}
