/* Fuzzes the safetensors reader (engine/import/safetensors.c): the 8-byte header
 * length, the JSON header and every entry's dtype, shape and data_offsets
 * checked against the file; then every tensor the header lists is read
 * back as f32 with its own shape, as the importers read them, so that a
 * range the checks let through that lies outside the file shows; a
 * tensor accepted with more elements than the file has bytes is a crash
 * too (its size wrapped). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine/import/safetensors.h"
#include "fuzz_util.h"

enum { MAX_DIMS = 4 };

static void read_every_tensor(const struct st_set *s)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, s->files[0].header)
    {
        if (!strcmp(e->string, "__metadata__"))
            continue;
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
        int ndim = cJSON_GetArraySize(shape);
        if (ndim > MAX_DIMS)
            continue;
        uint64_t dims[MAX_DIMS];
        long double bytes = 1; /* no wrap: the tensor's true size */
        for (int i = 0; i < ndim; i++) {
            dims[i] = (uint64_t)cJSON_GetArrayItem(shape, i)->valuedouble; /* checked by st_open_file */
            bytes *= dims[i];
        }
        if (bytes > s->files[0].size)
            abort(); /* accepted a tensor that cannot fit in the file */
        char err[512];
        float *v = st_read_f32(s, e->string, ndim, dims, err, sizeof err);
        free(v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("model.safetensors", data, size);
    struct st_set s;
    char err[512];
    int rc = st_open_file(&s, path, err, sizeof err);
    fuzz_note("st_open_file", rc, err);
    if (rc == 0) {
        read_every_tensor(&s);
        st_close(&s);
    }
    return 0;
}
