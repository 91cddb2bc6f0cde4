/* `flashbed model verify DIR` (issue 34): a whole model folder checked, and
 * every damaged place named. model.json against the files and the shape
 * (as model_open checks it), then every DRAM tensor, every tensor of
 * ffn_matrices.bin when the folder has one, and every FFN bundle:
 * its CRC-32C against the folder's checksums (model_format.h) when it has
 * them, and its values finite (a NaN or an infinity in f16 is what a file
 * overwritten with 0xff holds, and what the oracle and a predictor would
 * silently skip). Reads ffn.bin once, in order, a few MiB at a time; then
 * ffn_t.bin, when the folder has one, a layer at a time: each channel
 * bundle and row of down against ffn_t.crc32c (when recorded) and finite.
 *
 * Return convention: 0 when the folder could be checked (r says what is
 * damaged), -1 with err when it cannot even be opened (that message is
 * the damage). Not thread-safe within one report. */
#ifndef FLASHBED_ENGINE_MODEL_MODEL_VERIFY_H
#define FLASHBED_ENGINE_MODEL_MODEL_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/progress.h"

#define MODEL_VERIFY_LISTED 20 /* damaged places named; the rest counted */

struct model_verify_report {
    bool checked;              /* the folder has checksums (else: finite values and sizes only) */
    uint64_t tensors, bundles; /* looked at */
    bool has_transposed;       /* the folder has ffn_t.bin (model transpose): its units checked too */
    bool transposed_checked;   /* ffn_t.bin has checksums (ffn_t.crc32c), else finite values only */
    uint64_t channels, down_rows; /* ffn_t.bin's channel bundles and rows of down looked at */
    uint64_t bad_checksums;    /* tensors, bundles and ffn_t.bin units whose CRC-32C differs */
    uint64_t nonfinite;        /* tensors and bundles holding a NaN or an infinity */
    size_t n_listed;
    char listed[MODEL_VERIFY_LISTED][320];
};

static inline bool model_verify_intact(const struct model_verify_report *r)
{
    return r->bad_checksums == 0 && r->nonfinite == 0;
}

int model_verify(const char *dir, const struct progress_report *pr, struct model_verify_report *r, char *err,
                 size_t errlen);

#endif
