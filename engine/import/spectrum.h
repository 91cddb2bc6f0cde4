/* Singular-value spectra for synthetic weight matrices. Random uniform
 * weights have a flat spectrum (Marchenko-Pastur: every direction of the
 * input carries about the same energy), so no low-rank activation
 * predictor can learn them; trained up projections concentrate their
 * energy in few directions. spectrum_matrix() writes a matrix with a
 * chosen spectrum, W = U diag(sigma) V^T, for model make's up projection. */
#ifndef FLASHBED_ENGINE_SPECTRUM_H
#define FLASHBED_ENGINE_SPECTRUM_H

#include <stddef.h>
#include <stdint.h>

enum spectrum_kind {
    SPECTRUM_FLAT,    /* iid uniform entries: not generated here (synthetic.c's fill) */
    SPECTRUM_POWER,   /* sigma_i proportional to (i+1)^-alpha, i = 0, 1, ... */
    SPECTRUM_LOWRANK, /* rank equal singular values, the rest noise times as large */
};

struct spectrum {
    enum spectrum_kind kind;
    double alpha;  /* POWER: 0 <= alpha <= SPECTRUM_MAX_ALPHA (0: exactly flat) */
    uint32_t rank; /* LOWRANK: >= 1 and at most the smaller dimension */
    double noise;  /* LOWRANK: 0 (exactly rank R) <= noise <= 1 (exactly flat) */
};

/* Beyond this every singular value past the first few is below f16's and
 * bf16's resolution anyway. */
#define SPECTRUM_MAX_ALPHA 16.0

/* Reads "flat", "power:ALPHA" or "lowrank:R:NOISE" into sp. 0, or -1 with
 * the reason in err (the text quoted; no option named). */
int spectrum_parse(const char *text, struct spectrum *sp, char *err, size_t errlen);

/* The canonical text of sp, which spectrum_parse reads back to the same
 * values ("power:1", "lowrank:8:0.1"): what provenance records. */
void spectrum_format(const struct spectrum *sp, char *buf, size_t len);

/* Whether sp fits a rows x cols matrix (a low rank must not exceed the
 * smaller dimension): 0, or -1 with the reason in err. */
int spectrum_check_shape(const struct spectrum *sp, uint64_t rows, uint64_t cols, char *err, size_t errlen);

/* The r = min(rows, cols) singular values of sp, largest first, scaled so
 * that their squares sum to frob2 (the squared Frobenius norm). */
void spectrum_sigmas(const struct spectrum *sp, uint64_t r, double frob2, double *sigma);

/* Fills w (rows x cols, row-major) with U diag(sigma) V^T: sigma from
 * spectrum_sigmas (so ||w||_F^2 = frob2 up to rounding), U and V random
 * orthogonal factors drawn from seed alone (the same seed, shape and
 * spectrum give the same bytes). sp must not be FLAT and must fit the
 * shape. Takes O(rows * cols * log(max(rows, cols))) time and a cols x cols
 * scratch matrix. 0, or -1 with the reason in err (out of memory). */
int spectrum_matrix(const struct spectrum *sp, uint64_t rows, uint64_t cols, double frob2, uint64_t seed,
                    float *w, char *err, size_t errlen);

#endif
