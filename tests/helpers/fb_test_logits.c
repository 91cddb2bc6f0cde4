/* Prints a model folder's logits for a token sequence, for comparing
 * flashbed's forward pass with an independent reference
 * (tools/hf_reference.py prints the same layout):
 *
 *   fb_test_logits MODEL_DIR ID [ID ...]
 *
 * The ids are fed from position 0 with the dense engine (f32 compute, one
 * thread); one line per position, its vocab_size logits as %.9g. Exit 0;
 * 3 when the model does not open (the reason, e.g. an architecture the
 * forward pass does not support yet, on stderr); 1 for other failures. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/forward/engine.h"

int main(int argc, char **argv)
{
    const struct fb_settings set = fb_settings_defaults();
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR ID [ID ...]\n", argv[0]);
        return 2;
    }
    char err[1024];
    struct model m;
    if (model_open(&m, argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 3;
    }
    struct engine e;
    int n = argc - 2;
    if (engine_init(&e, &set, &m, &backend_cpu, &ffn_dense, 1, n, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        model_close(&m);
        return 1;
    }
    int rc = 0;
    for (int p = 0; p < n && !rc; p++) {
        long id = strtol(argv[p + 2], NULL, 10);
        if (id < 0 || id >= (long)m.shape.vocab_size) {
            fprintf(stderr, "token id %s is outside 0..%u\n", argv[p + 2], m.shape.vocab_size - 1);
            rc = 1;
            break;
        }
        if (engine_forward(&e, (int)id, p) != 0) {
            fprintf(stderr, "position %d: %s\n", p, e.err);
            rc = 1;
            break;
        }
        for (uint32_t v = 0; v < m.shape.vocab_size; v++)
            printf(v ? " %.9g" : "%.9g", e.s.logits[v]);
        putchar('\n');
    }
    engine_free(&e);
    model_close(&m);
    return rc;
}
