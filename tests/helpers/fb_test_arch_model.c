/* Writes a model folder of any architecture the engine runs, with random
 * weights (tests/unit/arch_fixture.h), for the integration tests' CLI runs
 * of architectures that no importer writes yet:
 *
 *   fb_test_arch_model SHAPE DIR [SEED]
 *
 * SHAPE is a configs/models name or a .json path; the model is f32 with a
 * llama2.c-style tokenizer over the shape's vocabulary. Exit 0, or 1 with
 * the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch_fixture.h"

int main(int argc, char **argv)
{
    const struct fb_settings set = fb_settings_defaults();
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s SHAPE DIR [SEED]\n", argv[0]);
        return 2;
    }
    char err[4400], tok[4200];
    struct model_shape s;
    struct fx_model f;
    if (model_shape_load(&set, argv[1], &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    /* the up rows at 2.5/sqrt(d_model): pre-activations of spread ~1.4, so
     * the activation's curve matters (test_engine_reference does the same) */
    if (fx_init(&f, &s, argc > 3 ? strtoull(argv[3], NULL, 10) : 1, 2.5f) != 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    snprintf(tok, sizeof tok, "%s.tokenizer.%d", argv[2], (int)getpid());
    int rc = fx_write_tokenizer(tok, s.vocab_size);
    if (rc != 0)
        snprintf(err, sizeof err, "%s: cannot write", tok);
    else
        rc = fx_write(&f, argv[2], DTYPE_F32, tok, err, sizeof err);
    unlink(tok);
    fx_free(&f);
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    return rc == 0 ? 0 : 1;
}
