/* Writes a test predictor (tests/unit/predictor_fixture.h: exact, every,
 * weak, slice:R) into a model folder, for the integration tests' CLI
 * checks and for timing a predictor of a given rank:
 *
 *   fb_test_predictor MODEL_DIR exact|every|weak|slice:R [SEED]
 *
 * An existing predictor is replaced. Exit 0, or 1 with the reason. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/model/model.h"
#include "predictor_fixture.h"

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s MODEL_DIR exact|every|weak|slice:R [SEED]\n", argv[0]);
        return 2;
    }
    char err[1024];
    struct model m;
    struct predictor p;
    if (model_open(&m, argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int rc = fixture_predictor(&m, argv[2], argc > 3 ? strtoull(argv[3], NULL, 10) : 1, &p, err, sizeof err);
    if (rc == 0) {
        rc = predictor_save(&p, argv[1], true, err, sizeof err);
        predictor_free(&p);
    }
    model_close(&m);
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    return rc == 0 ? 0 : 1;
}
