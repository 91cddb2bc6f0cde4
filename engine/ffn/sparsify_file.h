/* sparsify.json: the training-free sparsity thresholds that `flashbed
 * sparsify calibrate` chooses on a calibration text and writes into the
 * model folder, read back by the neuron sources gate-cal and teal
 * (neuron_select.h). Per layer, for a target sparsity S:
 *
 *   gate (CATS-style)   t_l: a share S of |act(gate·x)| falls at or below it;
 *                       and gate_global, one cut for all layers pooled
 *   input (TEAL-style)  u_l: a share S of the FFN input's |x_j| (after the
 *                       norm) falls at or below it (those channels dropped);
 *                       v_l: a share S of |h|, h = act(gate·x)·(up·x) from
 *                       the kept channels, falls at or below it (rows of
 *                       down dropped)
 *
 * A negative threshold drops nothing (sparsity 0). The file names the model
 * it was made for (shape, dtype, a fingerprint of its weights) so that a
 * file from another model is refused, naming the file and the key.
 *
 * Functions return 0, or -1 with the reason in err (naming the file and,
 * for a bad value, the key). Not thread-safe per object. */
#ifndef FLASHBED_ENGINE_SPARSIFY_FILE_H
#define FLASHBED_ENGINE_SPARSIFY_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine/model/model.h"

#define SPARSIFY_FILE "sparsify.json"

enum sparsify_kind { SPARSIFY_GATE = 1, SPARSIFY_INPUT = 2, SPARSIFY_BOTH = 3 };

struct sparsify_thresholds {
    uint32_t n_layers;
    double sparsity;       /* the target share dropped */
    enum sparsify_kind kind; /* which thresholds are present */
    float *gate;           /* [n_layers] with SPARSIFY_GATE, else NULL */
    float gate_global;     /* with SPARSIFY_GATE: one cut for every layer (a share S of all layers'
                            * |act(gate.x)| pooled at or below it; sparsify_calibrate.h) */
    float *input;          /* [n_layers] with SPARSIFY_INPUT, else NULL */
    float *inter;          /* [n_layers] with SPARSIFY_INPUT, else NULL */
};

/* Allocates the arrays kind asks for (zeroed). */
int sparsify_alloc(struct sparsify_thresholds *t, uint32_t n_layers, enum sparsify_kind kind, char *err,
                   size_t errlen);
void sparsify_free(struct sparsify_thresholds *t);

/* "gate", "input", "both"; parse returns false for other text. */
const char *sparsify_kind_name(enum sparsify_kind k);
bool sparsify_kind_parse(const char *name, enum sparsify_kind *out);

/* What identifies m: a SHA-256 over its shape, dtype, every layer's FFN
 * norm and first and last neuron bundles (read from ffn.bin when the FFN
 * stays on flash). Two conversions of one checkpoint share it. */
int sparsify_model_fingerprint(const struct model *m, char hex[65], char *err, size_t errlen);

/* Writes path (NULL: m->dir/sparsify.json) atomically: t, the model's
 * identity, and `extra`'s members (text, its hash, tokens, provenance:
 * moved in, extra is consumed). */
int sparsify_write(const struct model *m, const struct sparsify_thresholds *t, cJSON *extra, const char *path,
                   char *err, size_t errlen);

/* Reads path (NULL: m->dir/sparsify.json) into t, refusing a file for
 * another model and one without the thresholds `need` asks for. 1 (err
 * says so) when there is no such file. */
int sparsify_load(const struct model *m, const char *path, enum sparsify_kind need, struct sparsify_thresholds *t,
                  char *err, size_t errlen);

bool sparsify_present(const char *model_dir);

#endif
