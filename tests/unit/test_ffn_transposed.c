/* ffn_t.bin (engine/model/ffn_transposed.h) round trip: every element of
 * every channel bundle and down row equals its element in ffn.bin's
 * bundles, bit for bit, padding zero, for f32, f16 and bf16 on a GLU
 * (llama-tiny) and a ReLU FFN (opt-tiny); the record checks; an existing
 * file is kept without force and replaced with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/crc32c.h"
#include "common/model_shape.h"
#include "common/settings.h"
#include "engine/import/import.h"
#include "engine/import/synthetic.h"
#include "engine/model/ffn_transposed.h"
#include "engine/model/model_format.h"
#include "model_fixture.h"

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len ? *len : 1);
    if (b && fread(b, 1, *len, f) != *len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

/* Counts elements that differ from ffn.bin's (m's FFN in DRAM). */
static uint64_t mismatches(const struct model *m, const struct ffn_t_layout *t, const uint8_t *file)
{
    const struct model_shape *s = &m->shape;
    size_t w = wtype_row_bytes(m->dtype, 1); /* an element's bytes: the float types */
    uint64_t bad = 0;
    for (uint32_t l = 0; l < s->n_layers; l++) {
        const uint8_t *b = m->layers[l].ffn_bundles;
        for (uint32_t j = 0; j < s->d_model; j++) {
            const uint8_t *col = file + ffn_t_chan_offset(t, l, j);
            for (uint32_t i = 0; i < s->d_ff; i++) {
                const uint8_t *bi = b + (uint64_t)i * m->bundle_stride;
                bad += memcmp(col + (uint64_t)i * w, bi + (uint64_t)j * w, w) != 0;
                if (m->arch.glu)
                    bad += memcmp(col + ((uint64_t)s->d_ff + i) * w, bi + (ffn_bundle_gate(s) + j) * w, w) != 0;
            }
            for (uint64_t k = (uint64_t)(m->arch.glu ? 2 : 1) * s->d_ff * w; k < t->g.chan.row_bytes; k++)
                bad += col[k] != 0;
        }
        for (uint32_t i = 0; i < s->d_ff; i++)
            bad += memcmp(file + ffn_t_down_offset(t, l, i),
                          b + (uint64_t)i * m->bundle_stride + ffn_bundle_down(s) * w, (uint64_t)s->d_model * w) != 0;
    }
    return bad;
}

/* Units of the file whose CRC-32C differs from ffn_t.crc32c's. */
static uint64_t bad_units(const struct ffn_t_layout *t, const uint32_t *crc, const uint8_t *file)
{
    uint64_t bad = 0;
    for (uint32_t l = 0; l < t->g.chan.n_layers; l++) {
        for (uint32_t j = 0; j < t->g.chan.d_ff; j++)
            bad += crc32c(file + ffn_t_chan_offset(t, l, j), ffn_t_unit_bytes(&t->g.chan)) !=
                   crc[ffn_t_unit_index(t, l, false, j)];
        for (uint32_t i = 0; i < t->g.down.d_ff; i++)
            bad += crc32c(file + ffn_t_down_offset(t, l, i), ffn_t_unit_bytes(&t->g.down)) !=
                   crc[ffn_t_unit_index(t, l, true, i)];
    }
    return bad;
}

/* ffn_t.crc32c read back: one CRC-32C per unit, each matching the file;
 * one flipped byte of the last layer's last row of down makes exactly one
 * differ, and a flipped byte of its padding none. */
static void check_sums(const struct model *m, const struct ffn_t_layout *t, uint8_t *file)
{
    uint32_t *crc = NULL;
    char err[8400];
    CHECK(ffn_t_has_checksums(m->dir));
    CHECK(ffn_t_checksums_read(m, t, &crc, err, sizeof err) == 0);
    CHECK(crc != NULL);
    if (!crc)
        return;
    CHECK_U64(bad_units(t, crc, file), 0);
    uint64_t last = ffn_t_down_offset(t, t->g.down.n_layers - 1, t->g.down.d_ff - 1);
    file[last + ffn_t_unit_bytes(&t->g.down) - 1] ^= 0x10;
    CHECK_U64(bad_units(t, crc, file), 1);
    file[last + ffn_t_unit_bytes(&t->g.down) - 1] ^= 0x10;
    if (ffn_t_unit_bytes(&t->g.down) < t->g.down.row_bytes) {
        file[last + ffn_t_unit_bytes(&t->g.down)] ^= 0x10;
        CHECK_U64(bad_units(t, crc, file), 0);
    }
    free(crc);
}

static void round_trip(const char *shape_name, enum fb_dtype dt)
{
    char tmp[] = "/tmp/fb-transposed-XXXXXX", hf[600], dir[600], err[1024];
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape shape;
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(hf, sizeof hf, "%s/hf", tmp);
    snprintf(dir, sizeof dir, "%s/m", tmp);
    struct import_dtype idt = {.keep = false, .dtype = dt};
    int rc = model_shape_load(&set, shape_name, &shape, err, sizeof err);
    if (rc == 0)
        rc = synthetic_hf(&shape, DTYPE_F32, 3, -1, NULL, hf, NULL, err, sizeof err);
    if (rc == 0)
        rc = import_hf(hf, NULL, dir, &idt, NULL, err, sizeof err);
    struct model m;
    if (rc != 0 || model_open(&m, dir, err, sizeof err) != 0) {
        fprintf(stderr, "%s %s: %s\n", shape_name, wtype_name(dt), err);
        CHECK(0);
        fixture_remove(tmp);
        return;
    }
    struct ffn_t_layout t;
    CHECK(!ffn_transposed_present(dir));
    CHECK(ffn_transposed_open(&m, &t, err, sizeof err) != 0);
    CHECK(strstr(err, "flashbed model transpose") != NULL);
    CHECK(ffn_transposed_write(&m, false, NULL, err, sizeof err) == 0);
    CHECK(ffn_transposed_open(&m, &t, err, sizeof err) == 0);
    CHECK_U64(t.g.chan.row_bytes % FFN_ALIGN, 0);
    CHECK_U64(t.g.down.row_bytes % FFN_ALIGN, 0);
    size_t len = 0;
    uint8_t *file = read_all(t.path, &len);
    CHECK(file != NULL);
    CHECK_U64(len, t.bytes);
    if (file && len == t.bytes) {
        CHECK_U64(mismatches(&m, &t, file), 0);
        check_sums(&m, &t, file);
    }
    free(file);
    CHECK(ffn_transposed_write(&m, false, NULL, err, sizeof err) != 0);
    CHECK(strstr(err, "--force") != NULL);
    CHECK(ffn_transposed_write(&m, true, NULL, err, sizeof err) == 0);
    CHECK(ffn_transposed_open(&m, &t, err, sizeof err) == 0);
    model_close(&m);
    fixture_remove(tmp);
}

int main(void)
{
    static const enum fb_dtype types[] = {DTYPE_F32, DTYPE_F16, DTYPE_BF16};
    for (int k = 0; k < 3; k++) {
        round_trip("llama-tiny", types[k]);
        round_trip("opt-tiny", types[k]);
    }
    return check_report("ffn_transposed");
}
