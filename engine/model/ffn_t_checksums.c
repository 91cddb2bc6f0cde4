/* ffn_t.bin's checksums: computed as it is written, read back for the
 * engine and `model verify`, and the message for a damaged unit
 * (ffn_transposed.h). */
#include "engine/model/ffn_transposed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/crc32c.h"
#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/model/model_format.h"
#include "engine/model/model_integrity.h"

void ffn_t_layer_checksums(const struct ffn_t_layout *t, uint32_t layer, const uint8_t *at, uint32_t *crc)
{
    const struct cache_geometry *c = &t->g.chan, *d = &t->g.down;
    uint32_t *out = crc + ffn_t_unit_index(t, layer, false, 0);
    for (uint32_t j = 0; j < c->d_ff; j++)
        out[j] = crc32c(at + (uint64_t)j * c->row_bytes, ffn_t_unit_bytes(c));
    const uint8_t *rows = at + (uint64_t)c->d_ff * c->row_bytes;
    for (uint32_t i = 0; i < d->d_ff; i++)
        out[c->d_ff + i] = crc32c(rows + (uint64_t)i * d->row_bytes, ffn_t_unit_bytes(d));
}

/* The record's "checksums", or NULL; *o the parsed model.json to free. */
static const cJSON *record_sums(const char *dir, cJSON **o, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, MODEL_JSON);
    *o = read_json_file(path);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(*o, MODEL_FFN_T_KEY);
    return cJSON_GetObjectItemCaseSensitive(r, "checksums");
}

bool ffn_t_has_checksums(const char *dir)
{
    char path[4200];
    cJSON *o = NULL;
    bool has = record_sums(dir, &o, path, sizeof path) != NULL;
    cJSON_Delete(o);
    return has;
}

/* The "checksums" entry's keys checked; the file's CRC into *want. */
static int sums_keys(const cJSON *sums, const char *path, uint64_t *want, char *err, size_t errlen)
{
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(sums, "algorithm");
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(sums, "file");
    if (!cJSON_IsString(alg) || strcmp(alg->valuestring, MODEL_CHECKSUM_ALGORITHM) != 0)
        return err_set(err, errlen, "%s: \"%s\" \"checksums\" \"algorithm\" must be \"%s\"", path, MODEL_FFN_T_KEY,
                       MODEL_CHECKSUM_ALGORITHM);
    if (!cJSON_IsString(file) || strcmp(file->valuestring, MODEL_FFN_T_CRC_FILE) != 0)
        return err_set(err, errlen, "%s: \"%s\" \"checksums\" \"file\" must be \"%s\"", path, MODEL_FFN_T_KEY,
                       MODEL_FFN_T_CRC_FILE);
    return json_get_u64(sums, "file_crc32c", 0, UINT32_MAX, want, path, err, errlen);
}

int ffn_t_checksums_read(const struct model *m, const struct ffn_t_layout *t, uint32_t **crc, char *err,
                         size_t errlen)
{
    char path[4200];
    cJSON *o = NULL;
    const cJSON *sums = record_sums(m->dir, &o, path, sizeof path);
    uint64_t want = 0;
    int rc = sums ? sums_keys(sums, path, &want, err, errlen) : 0;
    cJSON_Delete(o);
    *crc = NULL;
    if (rc != 0 || !sums)
        return rc; /* none: an ffn_t.bin from before checksums, read unchecked */
    snprintf(path, sizeof path, "%s/%s", m->dir, MODEL_FFN_T_CRC_FILE);
    *crc = model_crc_file_read(path, (size_t)ffn_t_units(t), (uint32_t)want, err, errlen);
    return *crc ? 0 : -1;
}

int ffn_t_unit_damaged(const struct ffn_t_layout *t, uint32_t layer, bool down, uint32_t id, char *err,
                       size_t errlen)
{
    uint64_t off = down ? ffn_t_down_offset(t, layer, id) : ffn_t_chan_offset(t, layer, id);
    return err_set(err, errlen,
                   "%s: layer %u %s %u (byte offset %llu, %llu bytes) does not match its checksum in %s: "
                   "the file is damaged",
                   t->path, layer, down ? "row of down" : "channel", id, (unsigned long long)off,
                   (unsigned long long)ffn_t_unit_bytes(down ? &t->g.down : &t->g.chan), MODEL_FFN_T_CRC_FILE);
}
