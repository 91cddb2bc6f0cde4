/* model.json's "ffn_matrices": the FFN as a source stored it (model_format.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/model/model_format.h"
#include "engine/model/model_integrity.h"
#include "engine/model/model_load_impl.h"

/* Layer l's matrices found in tb: up and gate (d_ff, d_model), down (d_model, d_ff). */
static int find_layer(struct model *m, const struct table *tb, uint32_t l)
{
    struct layer_weights *L = &m->layers[l];
    uint64_t d = m->shape.d_model, ff = m->shape.d_ff;
    char n[96];
    L->ffn_up_type = L->ffn_gate_type = L->ffn_down_type = m->dtype;
    layer_tensor_name(n, sizeof n, (int)l, "ffn.up");
    if (!(L->ffn_up = tensor_of(tb, n, &L->ffn_up_type, 2, ff, d)))
        return -1;
    layer_tensor_name(n, sizeof n, (int)l, "ffn.gate");
    if (m->arch.glu && !(L->ffn_gate = tensor_of(tb, n, &L->ffn_gate_type, 2, ff, d)))
        return -1;
    layer_tensor_name(n, sizeof n, (int)l, "ffn.down");
    return (L->ffn_down = tensor_of(tb, n, &L->ffn_down_type, 2, d, ff)) ? 0 : -1;
}

/* The file read, or (the FFN on flash) its size checked. */
static int read_file(struct model *m, uint64_t bytes, bool read, char *err, size_t errlen)
{
    char fpath[4400];
    snprintf(fpath, sizeof fpath, "%s/%s", m->dir, MODEL_FFN_MATRICES_FILE);
    if (read)
        return (m->ffn_matrices = model_read_whole(fpath, bytes, &m->ffn_matrices_bytes, err, errlen)) ? 0 : -1;
    struct stat st;
    if (stat(fpath, &st) != 0)
        return err_set(err, errlen, "%s: cannot open: %s", fpath, strerror(errno));
    if ((uint64_t)st.st_size != bytes)
        return err_set(err, errlen, "%s: is %lld bytes, model.json says %llu", fpath, (long long)st.st_size,
                       (unsigned long long)bytes);
    return 0;
}

int model_matrices_open(struct model *m, const cJSON *model_json, unsigned flags, const char *json_path, char *err,
                        size_t errlen)
{
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(model_json, "ffn_matrices");
    if (!sec)
        return 0;
    uint64_t bytes;
    if (!cJSON_IsObject(sec))
        return err_set(err, errlen, "%s: \"ffn_matrices\" is not an object", json_path);
    if (json_get_u64(sec, "bytes", 0, SIZE_MAX / 2, &bytes, json_path, err, errlen))
        return -1;
    m->has_ffn_matrices = true;
    bool read = !(flags & MODEL_FFN_ON_FLASH) || (flags & MODEL_LOAD_MATRICES);
    if (read_file(m, bytes, read, err, errlen) != 0 || !read)
        return read ? -1 : 0;
    struct table tb = {.tensors = cJSON_GetObjectItemCaseSensitive(sec, "tensors"), .json_path = json_path, .m = m,
                       .file = {MODEL_FFN_MATRICES_FILE, "ffn_matrices", m->ffn_matrices, m->ffn_matrices_bytes},
                       .own_types = true, .err = err, .errlen = errlen};
    if (model_table_check(tb.tensors, &tb.file, json_path, err, errlen) != 0)
        return -1;
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        if (find_layer(m, &tb, l) != 0)
            return -1;
    return flags & MODEL_NO_VERIFY ? 0 : model_tensors_verify(m, &tb.file, tb.tensors, err, errlen);
}
