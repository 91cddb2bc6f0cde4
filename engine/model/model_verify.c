/* A whole model folder checked (model_verify.h). */
#include "engine/model/model_verify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/crc32c.h"
#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/model/dtype_quant.h"
#include "engine/model/ffn_transposed.h"
#include "engine/model/model.h"
#include "engine/model/model_format.h"
#include "engine/model/model_integrity.h"
#include "engine/model/model_table.h"

#define CHUNK_BYTES (8u << 20)

static void note(struct model_verify_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct model_verify_report *r, const char *fmt, ...)
{
    if (r->n_listed >= MODEL_VERIFY_LISTED)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->listed[r->n_listed++], sizeof r->listed[0], fmt, ap);
    va_end(ap);
}

/* A quantized block's values are its halves (scale, min) times small
 * integers: NaN or infinite exactly when a half is. */
static bool quant_block_nonfinite(const char *p, enum fb_dtype t)
{
    int off[2];
    uint16_t h;
    for (int k = quant_block_halves(t, off); k-- > 0;) {
        memcpy(&h, p + off[k], sizeof h);
        if ((h & 0x7c00u) == 0x7c00u)
            return true;
    }
    return false;
}

/* Whether the block of type t at p holds a NaN or an infinity. Bit
 * tests: an all-ones exponent in the type's own layout. */
static bool block_nonfinite(const char *p, enum fb_dtype t)
{
    uint32_t u32;
    uint16_t u16;
    switch (t) {
    case DTYPE_F32:
        memcpy(&u32, p, sizeof u32);
        return (u32 & 0x7f800000u) == 0x7f800000u;
    case DTYPE_F16:
        memcpy(&u16, p, sizeof u16);
        return (u16 & 0x7c00u) == 0x7c00u;
    case DTYPE_BF16:
        memcpy(&u16, p, sizeof u16);
        return (u16 & 0x7f80u) == 0x7f80u;
    case DTYPE_Q4_0:
    case DTYPE_Q4_1:
    case DTYPE_Q5_0:
    case DTYPE_Q5_1:
    case DTYPE_Q8_0:
    case DTYPE_Q2_K:
    case DTYPE_Q3_K:
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
    case DTYPE_Q6_K:
        return quant_block_nonfinite(p, t);
    }
    return false;
}

/* How many of the whole blocks of type t in bytes at p (values, for the
 * float types) are NaN or infinite; *first: the first one's byte offset. */
static uint64_t count_nonfinite(const void *p, uint64_t bytes, enum fb_dtype t, uint64_t *first)
{
    uint64_t bad = 0, step = wtype_block_bytes(t);
    for (uint64_t at = 0; at + step <= bytes; at += step)
        if (block_nonfinite((const char *)p + at, t) && bad++ == 0)
            *first = at;
    return bad;
}

/* One tensor entry of f's table (dram.bin's, ffn_matrices.bin's): its
 * checksum (when the folder has them) and its values. The loader has
 * checked its bounds and dtype already. */
static void verify_tensor(const struct model *m, const struct tensor_file *f, const cJSON *e,
                          struct model_verify_report *r)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *crc = cJSON_GetObjectItemCaseSensitive(e, MODEL_CHECKSUM_ALGORITHM);
    const char *nm = cJSON_IsString(name) ? name->valuestring : "?";
    uint64_t off, n, want = 0, first = 0;
    enum fb_dtype t;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    if (json_number_u64(cJSON_GetObjectItemCaseSensitive(e, "offset"), "offset", 0, f->bytes, &off, "", NULL, 0) ||
        json_number_u64(cJSON_GetObjectItemCaseSensitive(e, "bytes"), "bytes", 0, f->bytes - off, &n, "", NULL, 0) ||
        !cJSON_IsString(dt) || wtype_parse(dt->valuestring, &t)) {
        r->bad_checksums++;
        note(r, "%s: tensor '%s': its entry in %s is malformed", f->file, nm, MODEL_JSON);
        return;
    }
    const char *p = (const char *)f->base + off;
    r->tensors++;
    bool has = crc && !json_number_u64(crc, "crc32c", 0, UINT32_MAX, &want, "", NULL, 0);
    if (m->checked && (!has || crc32c(p, n) != (uint32_t)want)) {
        r->bad_checksums++;
        note(r, "%s: tensor '%s' (bytes %llu to %llu): %s", f->file, nm, (unsigned long long)off,
             (unsigned long long)(off + n), has ? "checksum mismatch" : "no checksum in model.json");
    }
    uint64_t bad = count_nonfinite(p, n, t, &first);
    if (bad) {
        r->nonfinite++;
        note(r, "%s: tensor '%s': %llu value%s NaN or infinite (the first at byte %llu)", f->file, nm,
             (unsigned long long)bad, bad == 1 ? "" : "s", (unsigned long long)(off + first));
    }
}

/* Bundle (l, i) as read from ffn.bin at byte offset off. */
static void verify_bundle(const struct model *m, uint32_t l, uint32_t i, const char *b, uint64_t off,
                          struct model_verify_report *r)
{
    uint64_t first = 0;
    r->bundles++;
    if (!model_bundle_intact(m, l, i, b)) {
        r->bad_checksums++;
        note(r, "%s: layer %u neuron %u (byte offset %llu): checksum mismatch", MODEL_FFN_FILE, l, i,
             (unsigned long long)off);
    }
    uint64_t bad = count_nonfinite(b, m->bundle_bytes, m->dtype, &first);
    if (bad) {
        r->nonfinite++;
        note(r, "%s: layer %u neuron %u (byte offset %llu): %llu value%s NaN or infinite (the first at byte %llu)",
             MODEL_FFN_FILE, l, i, (unsigned long long)off, (unsigned long long)bad, bad == 1 ? "" : "s",
             (unsigned long long)(off + first));
    }
}

/* ffn.bin in order, CHUNK_BYTES at a time. */
static int verify_ffn(const struct model *m, const struct progress_report *pr, struct model_verify_report *r,
                      char *err, size_t errlen)
{
    uint64_t total = (uint64_t)m->shape.n_layers * m->shape.d_ff, per = CHUNK_BYTES / m->bundle_stride + 1;
    char *buf = malloc(per * m->bundle_stride);
    int fd = open(m->ffn_path, O_RDONLY);
    int rc = buf && fd >= 0 ? 0 : err_set(err, errlen, "%s: cannot read: %s", m->ffn_path, strerror(errno));
    for (uint64_t k = 0; rc == 0 && k < total; k += per) {
        uint64_t n = total - k < per ? total - k : per, want = n * m->bundle_stride;
        ssize_t got = pread(fd, buf, want, (off_t)(k * m->bundle_stride));
        if (got != (ssize_t)want) {
            rc = err_set(err, errlen, "%s: read failed at byte %llu: %s", m->ffn_path,
                         (unsigned long long)(k * m->bundle_stride), got < 0 ? strerror(errno) : "end of file");
            break;
        }
        for (uint64_t j = 0; j < n; j++)
            verify_bundle(m, (uint32_t)((k + j) / m->shape.d_ff), (uint32_t)((k + j) % m->shape.d_ff),
                          buf + j * m->bundle_stride, (k + j) * m->bundle_stride, r);
        progress_report(pr, "verify ffn.bin", k + n, total, NULL);
    }
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

/* One unit of ffn_t.bin (layer l, channel or row of down id) as read at b. */
static void verify_unit(const struct ffn_t_layout *t, enum fb_dtype dt, const uint32_t *crc, uint32_t l, bool down,
                        uint32_t id, const uint8_t *b, struct model_verify_report *r)
{
    const struct cache_geometry *g = down ? &t->g.down : &t->g.chan;
    uint64_t off = down ? ffn_t_down_offset(t, l, id) : ffn_t_chan_offset(t, l, id), first = 0;
    const char *what = down ? "row of down" : "channel";
    *(down ? &r->down_rows : &r->channels) += 1;
    if (crc && crc32c(b, ffn_t_unit_bytes(g)) != crc[ffn_t_unit_index(t, l, down, id)]) {
        r->bad_checksums++;
        note(r, "%s: layer %u %s %u (byte offset %llu): checksum mismatch", MODEL_FFN_T_FILE, l, what, id,
             (unsigned long long)off);
    }
    uint64_t bad = count_nonfinite(b, ffn_t_unit_bytes(g), dt, &first);
    if (bad) {
        r->nonfinite++;
        note(r, "%s: layer %u %s %u (byte offset %llu): %llu value%s NaN or infinite (the first at byte %llu)",
             MODEL_FFN_T_FILE, l, what, id, (unsigned long long)off, (unsigned long long)bad, bad == 1 ? "" : "s",
             (unsigned long long)(off + first));
    }
}

/* One layer of ffn_t.bin read at buf: its channel bundles, then its rows of down. */
static void verify_t_layer(const struct ffn_t_layout *t, enum fb_dtype dt, const uint32_t *crc, uint32_t l,
                           const uint8_t *buf, struct model_verify_report *r)
{
    for (uint32_t j = 0; j < t->g.chan.d_ff; j++)
        verify_unit(t, dt, crc, l, false, j, buf + (uint64_t)j * t->g.chan.row_bytes, r);
    const uint8_t *rows = buf + (uint64_t)t->g.chan.d_ff * t->g.chan.row_bytes;
    for (uint32_t i = 0; i < t->g.down.d_ff; i++)
        verify_unit(t, dt, crc, l, true, i, rows + (uint64_t)i * t->g.down.row_bytes, r);
}

/* ffn_t.bin, when the folder has one (its record and size as the engine
 * checks them), a layer at a time. */
static int verify_ffn_t(const struct model *m, const struct progress_report *pr, struct model_verify_report *r,
                        char *err, size_t errlen)
{
    struct ffn_t_layout t;
    uint32_t *crc = NULL;
    if (!ffn_transposed_present(m->dir))
        return 0;
    r->has_transposed = true;
    if (ffn_transposed_open(m, &t, err, errlen) != 0 || ffn_t_checksums_read(m, &t, &crc, err, errlen) != 0)
        return -1;
    r->transposed_checked = crc != NULL;
    uint8_t *buf = malloc(t.layer_bytes ? t.layer_bytes : 1);
    int fd = open(t.path, O_RDONLY);
    int rc = buf && fd >= 0 ? 0 : err_set(err, errlen, "%s: cannot read: %s", t.path, strerror(errno));
    for (uint32_t l = 0; rc == 0 && l < m->shape.n_layers; l++) {
        ssize_t got = pread(fd, buf, t.layer_bytes, (off_t)(l * t.layer_bytes));
        if (got != (ssize_t)t.layer_bytes)
            rc = err_set(err, errlen, "%s: read failed at byte %llu: %s", t.path,
                         (unsigned long long)(l * t.layer_bytes), got < 0 ? strerror(errno) : "end of file");
        else
            verify_t_layer(&t, m->dtype, crc, l, buf, r);
        progress_report(pr, "verify ffn_t.bin", l + 1, m->shape.n_layers, NULL);
    }
    if (fd >= 0)
        close(fd);
    free(buf);
    free(crc);
    return rc;
}

int model_verify(const char *dir, const struct progress_report *pr, struct model_verify_report *r, char *err,
                 size_t errlen)
{
    memset(r, 0, sizeof *r);
    struct model m;
    if (model_open_flags(&m, dir, MODEL_FFN_ON_FLASH | MODEL_NO_VERIFY | MODEL_LOAD_MATRICES, err, errlen) != 0)
        return -1;
    r->checked = m.checked;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, MODEL_JSON);
    char *text = read_text_file(path, NULL);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    free(text);
    int rc = o ? 0 : err_set(err, errlen, "%s: cannot read it again", path);
    const cJSON *e;
    const struct tensor_file dram = {MODEL_DRAM_FILE, "dram", m.dram, m.dram_bytes},
                             mats = {MODEL_FFN_MATRICES_FILE, "ffn_matrices", m.ffn_matrices, m.ffn_matrices_bytes};
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "dram"), "tensors"))
    {
        verify_tensor(&m, &dram, e, r);
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "ffn_matrices"),
                                                           "tensors"))
    {
        verify_tensor(&m, &mats, e, r);
    }
    cJSON_Delete(o);
    if (rc == 0)
        rc = verify_ffn(&m, pr, r, err, errlen);
    if (rc == 0)
        rc = verify_ffn_t(&m, pr, r, err, errlen);
    model_close(&m);
    return rc;
}
