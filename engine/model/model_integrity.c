/* Reading and checking a model folder's checksums (model_integrity.h). */
#include "engine/model/model_integrity.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/model/model_format.h"

/* ffn.crc32c holds the machine's u32s as they are: little-endian on every
 * target flashbed builds for. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ffn.crc32c is little-endian");

uint32_t *model_crc_file_read(const char *path, size_t n, uint32_t want, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, errlen, "%s: cannot open: %s (model.json records checksums in it)", path, strerror(errno));
        return NULL;
    }
    uint32_t *crc = malloc(n ? n * sizeof *crc : 1);
    size_t got = crc ? fread(crc, sizeof *crc, n, f) : 0;
    int extra = crc && got == n ? fgetc(f) : EOF;
    fclose(f);
    if (!crc || got != n || extra != EOF) {
        err_set(err, errlen, "%s: %s (expected %zu checksums, %zu bytes)", path,
                !crc ? "out of memory" : got != n ? "too short" : "too long", n, n * sizeof *crc);
        free(crc);
        return NULL;
    }
    if (crc32c(crc, n * sizeof *crc) != want) {
        err_set(err, errlen, "%s: its CRC-32C differs from model.json's \"file_crc32c\": the checksums file is damaged",
                path);
        free(crc);
        return NULL;
    }
    return crc;
}

int model_checksums_read(struct model *m, const cJSON *model_json, const char *json_path, char *err,
                         size_t errlen)
{
    const cJSON *ffn = cJSON_GetObjectItemCaseSensitive(model_json, "ffn");
    const cJSON *sums = cJSON_GetObjectItemCaseSensitive(ffn, "checksums");
    m->ffn_crc = NULL;
    m->checked = false;
    if (!sums)
        return 0; /* written before checksums: read unchecked */
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(sums, "algorithm");
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(sums, "file");
    if (!cJSON_IsString(alg) || strcmp(alg->valuestring, MODEL_CHECKSUM_ALGORITHM) != 0)
        return err_set(err, errlen, "%s: \"ffn\" \"checksums\" \"algorithm\" must be \"%s\"", json_path,
                       MODEL_CHECKSUM_ALGORITHM);
    if (!cJSON_IsString(file) || strcmp(file->valuestring, MODEL_FFN_CRC_FILE) != 0)
        return err_set(err, errlen, "%s: \"ffn\" \"checksums\" \"file\" must be \"%s\"", json_path,
                       MODEL_FFN_CRC_FILE);
    uint64_t want;
    if (json_get_u64(sums, "file_crc32c", 0, UINT32_MAX, &want, json_path, err, errlen))
        return -1;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", m->dir, MODEL_FFN_CRC_FILE);
    size_t n = (size_t)m->shape.n_layers * m->shape.d_ff;
    if (!(m->ffn_crc = model_crc_file_read(path, n, (uint32_t)want, err, errlen)))
        return -1;
    m->checked = true;
    return 0;
}

/* One tensor entry's "crc32c" against its bytes in f (bounds were
 * checked when the tensors were found). */
static int verify_tensor(const struct model *m, const struct tensor_file *f, const cJSON *e, char *err,
                         size_t errlen)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "offset");
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(e, "bytes");
    const cJSON *crc = cJSON_GetObjectItemCaseSensitive(e, MODEL_CHECKSUM_ALGORITHM);
    if (!crc)
        return err_set(err, errlen, "%s/%s: tensor '%s' has no \"crc32c\" (the others have)", m->dir, MODEL_JSON,
                       cJSON_IsString(name) ? name->valuestring : "?");
    uint64_t o, n, want;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", m->dir, MODEL_JSON);
    if (json_number_u64(off, "tensor \"offset\"", 0, f->bytes, &o, path, err, errlen) ||
        json_number_u64(bytes, "tensor \"bytes\"", 0, f->bytes - o, &n, path, err, errlen) ||
        json_number_u64(crc, "tensor \"crc32c\"", 0, UINT32_MAX, &want, path, err, errlen))
        return -1;
    if (crc32c((const char *)f->base + o, n) != (uint32_t)want)
        return err_set(err, errlen,
                       "%s/%s: tensor '%s' (bytes %llu to %llu) does not match its checksum: the file is damaged",
                       m->dir, f->file, cJSON_IsString(name) ? name->valuestring : "?",
                       (unsigned long long)o, (unsigned long long)(o + n));
    return 0;
}

int model_tensors_verify(const struct model *m, const struct tensor_file *f, const cJSON *tensors, char *err,
                         size_t errlen)
{
    if (!m->checked)
        return 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, tensors)
    {
        if (verify_tensor(m, f, e, err, errlen) != 0)
            return -1;
    }
    return 0;
}

int model_bundle_damaged(const struct model *m, uint32_t l, uint32_t i, char *err, size_t errlen)
{
    uint64_t off = ((uint64_t)l * m->shape.d_ff + i) * m->bundle_stride;
    return err_set(err, errlen,
                   "%s: layer %u neuron %u (byte offset %llu, %llu bytes) does not match its checksum in %s: "
                   "the file is damaged",
                   m->ffn_path, l, i, (unsigned long long)off, (unsigned long long)m->bundle_bytes,
                   MODEL_FFN_CRC_FILE);
}

int model_bundle_check(const struct model *m, uint32_t l, uint32_t i, const void *bundle, char *err, size_t errlen)
{
    if (m->verify_off || model_bundle_intact(m, l, i, bundle))
        return 0;
    return model_bundle_damaged(m, l, i, err, errlen);
}

int model_ffn_verify_all(const struct model *m, char *err, size_t errlen)
{
    if (!m->ffn || !m->ffn_crc)
        return 0;
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        for (uint32_t i = 0; i < m->shape.d_ff; i++) {
            const char *b = (const char *)m->ffn + ((uint64_t)l * m->shape.d_ff + i) * m->bundle_stride;
            if (!model_bundle_intact(m, l, i, b))
                return model_bundle_damaged(m, l, i, err, errlen);
        }
    return 0;
}

unsigned model_bundles_intact3(const struct model *m, const uint32_t l[3], const uint32_t i[3],
                               const void *const at[3])
{
    if (!m->ffn_crc)
        return 7;
    uint32_t got[3];
    crc32c_x3(at, m->bundle_bytes, got);
    unsigned ok = 0;
    for (int k = 0; k < 3; k++)
        ok |= (unsigned)(got[k] == m->ffn_crc[(uint64_t)l[k] * m->shape.d_ff + i[k]]) << k;
    return ok;
}
