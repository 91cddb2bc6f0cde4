/* ffn_t.bin written from ffn.bin and checked (ffn_transposed.h). */
#include "engine/model/ffn_transposed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/atomic_file.h"
#include "common/crc32c.h"
#include "common/errbuf.h"
#include "common/json_file.h"
#include "common/provenance.h"
#include "engine/model/model_format.h"
#include "engine/model/model_integrity.h"

int model_transposed_geometry(const struct model *m, struct transposed_geometry *g, char *err, size_t errlen)
{
    struct unit_dims d = unit_dims_of_shape(&m->shape, m->dtype);
    return cache_transposed_geometry(&d, FFN_ALIGN, g, err, errlen);
}

void ffn_t_layout_of(const struct model *m, struct ffn_t_layout *t)
{
    char err[256];
    if (model_transposed_geometry(m, &t->g, err, sizeof err) != 0)
        memset(&t->g, 0, sizeof t->g); /* a shape the loader let through always makes one */
    t->layer_bytes = unit_geometry_layer_bytes(&t->g.chan_unit) + unit_geometry_layer_bytes(&t->g.down_unit);
    t->bytes = t->layer_bytes * m->shape.n_layers;
    snprintf(t->path, sizeof t->path, "%s/%s", m->dir, MODEL_FFN_T_FILE);
}

static cJSON *model_json_read(const char *dir, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, MODEL_JSON);
    return read_json_file(path);
}

bool ffn_transposed_present(const char *dir)
{
    char path[4200];
    cJSON *o = model_json_read(dir, path, sizeof path);
    bool recorded = o && cJSON_GetObjectItemCaseSensitive(o, MODEL_FFN_T_KEY);
    cJSON_Delete(o);
    snprintf(path, sizeof path, "%s/%s", dir, MODEL_FFN_T_FILE);
    return recorded || access(path, F_OK) == 0;
}

/* One layer's bundles (in) as channel bundles and down rows (out,
 * layer_bytes, padding zero). It moves single elements (a column of up is
 * element j of every row), so w is one element's bytes: a type of
 * one-element blocks. */
static void transpose_layer(const struct model *m, const struct ffn_t_layout *t, const uint8_t *in, uint8_t *out)
{
    const struct model_shape *s = &m->shape;
    size_t w = wtype_row_bytes(m->dtype, 1);
    uint64_t gate = wtype_row_bytes(m->dtype, ffn_bundle_gate(s)), down = wtype_row_bytes(m->dtype, ffn_bundle_down(s));
    memset(out, 0, t->layer_bytes);
    for (uint32_t j = 0; j < s->d_model; j++) {
        uint8_t *col = out + (uint64_t)j * t->g.chan.row_bytes;
        for (uint32_t i = 0; i < s->d_ff; i++) {
            const uint8_t *b = in + (uint64_t)i * m->bundle_stride;
            memcpy(col + (uint64_t)i * w, b + (uint64_t)j * w, w);
            if (m->arch.glu)
                memcpy(col + ((uint64_t)s->d_ff + i) * w, b + gate + (uint64_t)j * w, w);
        }
    }
    uint8_t *rows = out + (uint64_t)s->d_model * t->g.chan.row_bytes;
    for (uint32_t i = 0; i < s->d_ff; i++)
        memcpy(rows + (uint64_t)i * t->g.down.row_bytes, in + (uint64_t)i * m->bundle_stride + down,
               wtype_row_bytes(m->dtype, s->d_model));
}

/* Every layer of ffn.bin (src) transposed into dst, each bundle checked
 * against ffn.crc32c when the model has it; the 64-bit FNV-1a of what was
 * read into hash, each unit's CRC-32C written into crc. */
static int transpose_file(const struct model *m, const struct ffn_t_layout *t, FILE *src, FILE *dst,
                          const struct progress_report *report, uint64_t *hash, uint32_t *crc, char *err,
                          size_t errlen)
{
    const struct model_shape *s = &m->shape;
    uint64_t in_bytes = (uint64_t)s->d_ff * m->bundle_stride;
    uint8_t *in = malloc(in_bytes ? in_bytes : 1), *out = malloc(t->layer_bytes ? t->layer_bytes : 1);
    int rc = in && out ? 0 : err_set(err, errlen, "cannot allocate one layer (%llu + %llu bytes) to transpose",
                                     (unsigned long long)in_bytes, (unsigned long long)t->layer_bytes);
    *hash = 0xcbf29ce484222325ull;
    for (uint32_t l = 0; rc == 0 && l < s->n_layers; l++) {
        if (fread(in, 1, in_bytes, src) != in_bytes) {
            rc = err_set(err, errlen, "%s: short read in layer %u", m->ffn_path, l);
            break;
        }
        for (uint64_t k = 0; k < in_bytes; k++)
            *hash = (*hash ^ in[k]) * 0x100000001b3ull;
        for (uint32_t i = 0; rc == 0 && i < s->d_ff; i++) /* a damaged bundle is not copied on */
            if (!model_bundle_intact(m, l, i, in + (uint64_t)i * m->bundle_stride))
                rc = model_bundle_damaged(m, l, i, err, errlen);
        if (rc != 0)
            break;
        transpose_layer(m, t, in, out);
        ffn_t_layer_checksums(t, l, out, crc);
        if (fwrite(out, 1, t->layer_bytes, dst) != t->layer_bytes)
            rc = err_set(err, errlen, "%s: write failed in layer %u: %s", t->path, l, strerror(errno));
        progress_report(report, "transpose", l + 1, s->n_layers, NULL);
    }
    free(in);
    free(out);
    return rc;
}

/* model.json's record of the file: geometry, dtype, where it came from. */
static cJSON *record_json(const struct model *m, const struct ffn_t_layout *t, uint64_t hash, uint32_t file_crc)
{
    cJSON *r = cJSON_CreateObject();
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash);
    cJSON_AddStringToObject(r, "file", MODEL_FFN_T_FILE);
    cJSON_AddStringToObject(r, "layout", m->arch.glu ? "transposed:channel(up,gate),down" : "transposed:channel(up),down");
    cJSON_AddStringToObject(r, "dtype", wtype_name(m->dtype));
    cJSON_AddNumberToObject(r, "chan_stride", (double)t->g.chan.row_bytes);
    cJSON_AddNumberToObject(r, "down_stride", (double)t->g.down.row_bytes);
    cJSON_AddNumberToObject(r, "alignment", FFN_ALIGN);
    cJSON_AddNumberToObject(r, "layer_bytes", (double)t->layer_bytes);
    cJSON_AddNumberToObject(r, "bytes", (double)t->bytes);
    cJSON *from = cJSON_AddObjectToObject(r, "derived_from");
    cJSON_AddStringToObject(from, "file", MODEL_FFN_FILE);
    cJSON_AddStringToObject(from, "fnv1a64", hex);
    cJSON *sums = cJSON_AddObjectToObject(r, "checksums");
    cJSON_AddStringToObject(sums, "algorithm", MODEL_CHECKSUM_ALGORITHM);
    cJSON_AddStringToObject(sums, "file", MODEL_FFN_T_CRC_FILE);
    cJSON_AddStringToObject(sums, "units", "per layer each channel bundle, then each row of down (data bytes, "
                                           "not padding)");
    cJSON_AddNumberToObject(sums, "file_crc32c", file_crc);
    cJSON_AddItemToObject(r, "provenance", provenance_new());
    return r;
}

/* What the writer commits: ffn_t.bin and ffn_t.crc32c's temporaries,
 * model.json's new text. */
struct t_out {
    struct atomic_file bin, sums;
    cJSON *json;
};

/* The checksums' temporary written; their file's own CRC-32C into *file_crc. */
static int write_sums(const char *dir, const struct ffn_t_layout *t, const uint32_t *crc, struct atomic_file *af,
                      uint32_t *file_crc, char *err, size_t errlen)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, MODEL_FFN_T_CRC_FILE);
    size_t n = (size_t)ffn_t_units(t);
    if (atomic_open(af, NULL, path, err, errlen) != 0)
        return -1;
    if (fwrite(crc, sizeof *crc, n, af->f) != n) {
        atomic_abort(af);
        return err_set(err, errlen, "%s: write failed: %s", path, strerror(errno));
    }
    *file_crc = crc32c(crc, n * sizeof *crc);
    return 0;
}

/* ffn_t.bin's and its checksums' temporaries written; model.json's new text. */
static int write_temp(const struct model *m, const struct ffn_t_layout *t, struct t_out *w,
                      const struct progress_report *report, char *err, size_t errlen)
{
    char path[4200];
    cJSON *o = model_json_read(m->dir, path, sizeof path);
    if (!o)
        return err_set(err, errlen, "%s: cannot read or parse", path);
    uint32_t *crc = malloc((size_t)ffn_t_units(t) * sizeof *crc + 1), file_crc = 0;
    FILE *src = fopen(m->ffn_path, "rb");
    int rc = !crc  ? err_set(err, errlen, "cannot allocate %s's checksums", MODEL_FFN_T_FILE)
             : !src ? err_set(err, errlen, "%s: cannot open: %s", m->ffn_path, strerror(errno))
                    : 0;
    uint64_t hash = 0;
    if (rc == 0)
        rc = atomic_open(&w->bin, NULL, t->path, err, errlen);
    if (rc == 0 && (rc = transpose_file(m, t, src, w->bin.f, report, &hash, crc, err, errlen)) != 0)
        atomic_abort(&w->bin);
    if (rc == 0 && (rc = write_sums(m->dir, t, crc, &w->sums, &file_crc, err, errlen)) != 0)
        atomic_abort(&w->bin);
    if (src)
        fclose(src);
    free(crc);
    if (rc == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, MODEL_FFN_T_KEY);
        cJSON_AddItemToObject(o, MODEL_FFN_T_KEY, record_json(m, t, hash, file_crc));
        w->json = o;
    } else
        cJSON_Delete(o);
    return rc;
}

/* The layout moves single weights (a column of up is element j of every
 * row): a block format has none to move, its columns would have to be
 * requantized. Refused, naming the type. */
static int refuse_blocks(const struct model *m, char *err, size_t errlen)
{
    if (!wtype_traits(m->dtype)->quantized)
        return 0;
    return err_set(err, errlen, "%s: input sparsity's transposed layout moves single weights; %s weights are blocks "
                   "of %u (transposing them needs a requantization, not done)", m->dir, wtype_name(m->dtype),
                   (unsigned)wtype_block_elems(m->dtype));
}

int ffn_transposed_write(const struct model *m, bool force, const struct progress_report *report, char *err,
                         size_t errlen)
{
    if (refuse_blocks(m, err, errlen) != 0)
        return -1;
    struct ffn_t_layout t;
    ffn_t_layout_of(m, &t);
    if (!force && ffn_transposed_present(m->dir))
        return err_set(err, errlen, "%s: the model already has %s; --force replaces it", m->dir, MODEL_FFN_T_FILE);
    struct t_out w = {.json = NULL};
    if (write_temp(m, &t, &w, report, err, errlen) != 0)
        return -1;
    char path[4200], sums[4300];
    snprintf(path, sizeof path, "%s/%s", m->dir, MODEL_JSON);
    snprintf(sums, sizeof sums, "%s", w.sums.path);
    /* the files first, then their record: a record never names a file that is not there */
    int rc = atomic_commit(&w.bin, err, errlen);
    if (rc != 0)
        atomic_abort(&w.sums);
    else if ((rc = atomic_commit(&w.sums, err, errlen)) != 0 ||
             (rc = atomic_write_json(NULL, path, w.json, err, errlen)) != 0) {
        unlink(t.path); /* no record: the files are not the model's */
        unlink(sums);
    }
    cJSON_Delete(w.json);
    return rc;
}

/* The record's number key equal to want. */
static int record_u64(const cJSON *r, const char *key, uint64_t want, const char *path, char *err, size_t errlen)
{
    uint64_t v;
    if (json_get_u64(r, key, 0, UINT64_MAX / 2, &v, path, err, errlen) != 0)
        return -1;
    if (v != want)
        return err_set(err, errlen, "%s: \"%s\".\"%s\" is %llu, the model's shape gives %llu (rewrite it with "
                       "flashbed model transpose DIR --force)", path, MODEL_FFN_T_KEY, key, (unsigned long long)v,
                       (unsigned long long)want);
    return 0;
}

int ffn_transposed_open(const struct model *m, struct ffn_t_layout *t, char *err, size_t errlen)
{
    ffn_t_layout_of(m, t);
    if (refuse_blocks(m, err, errlen) != 0)
        return -1;
    char path[4200];
    cJSON *o = model_json_read(m->dir, path, sizeof path);
    const cJSON *r = o ? cJSON_GetObjectItemCaseSensitive(o, MODEL_FFN_T_KEY) : NULL;
    const cJSON *dt = r ? cJSON_GetObjectItemCaseSensitive(r, "dtype") : NULL;
    struct stat st;
    int rc = 0;
    if (!r || stat(t->path, &st) != 0)
        rc = err_set(err, errlen, "%s: no transposed FFN file (%s) for input sparsity on flash: write it with "
                     "flashbed model transpose %s", m->dir, MODEL_FFN_T_FILE, m->dir);
    else if (!cJSON_IsString(dt) || strcmp(dt->valuestring, wtype_name(m->dtype)) != 0)
        rc = err_set(err, errlen, "%s: \"%s\".\"dtype\" is not the model's %s", path, MODEL_FFN_T_KEY,
                     wtype_name(m->dtype));
    else if (record_u64(r, "chan_stride", t->g.chan.row_bytes, path, err, errlen) ||
             record_u64(r, "down_stride", t->g.down.row_bytes, path, err, errlen) ||
             record_u64(r, "bytes", t->bytes, path, err, errlen))
        rc = -1;
    else if ((uint64_t)st.st_size != t->bytes)
        rc = err_set(err, errlen, "%s: %llu bytes, model.json records %llu (rewrite it with flashbed model "
                     "transpose %s --force)", t->path, (unsigned long long)st.st_size, (unsigned long long)t->bytes,
                     m->dir);
    cJSON_Delete(o);
    return rc;
}
