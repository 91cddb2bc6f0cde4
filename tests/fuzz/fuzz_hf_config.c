/* Fuzzes Hugging Face config.json as `convert` reads it (engine/import/import_hf.c
 * and one reader per architecture, import_hf_<arch>.c): model_type, sizes,
 * heads, activation, rotary settings, norms, special token ids. The folder
 * holds only config.json, so an accepted shape ends at the missing
 * model.safetensors: the shape's checks are what is fuzzed, and nothing is
 * ever written. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/import/import.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[512], out[512], err[1024];
    snprintf(dir, sizeof dir, "%s", fuzz_mkdir("hf"));
    snprintf(out, sizeof out, "%s", fuzz_path("out"));
    fuzz_write("hf/config.json", data, size);
    struct import_dtype dt = {.keep = true, .dtype = DTYPE_F32};
    int rc = import_hf(dir, NULL, out, &dt, NULL, err, sizeof err);
    fuzz_note("import_hf", rc, err);
    if (rc == 0) {
        fprintf(stderr, "import_hf converted a folder without weights\n");
        abort();
    }
    return 0;
}
