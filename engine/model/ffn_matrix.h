/* One layer's up or gate projection gathered out of the FFN's neuron
 * bundles (model_format.h) into a contiguous d_ff x d_model matrix: what
 * matvec and the SVD need, since in a bundle each row sits beside its
 * neuron's other rows. The model's FFN must be in DRAM (model_open without
 * MODEL_FFN_ON_FLASH). Neither function allocates nor fails; threads:
 * any, the model is only read. */
#ifndef FLASHBED_ENGINE_FFN_MATRIX_H
#define FLASHBED_ENGINE_FFN_MATRIX_H

#include "engine/model/model.h"

enum ffn_part { FFN_PART_UP, FFN_PART_GATE };

/* dst: d_ff * d_model elements in the model's dtype. GATE needs a GLU FFN. */
void ffn_matrix_copy(const struct model *m, uint32_t layer, enum ffn_part part, void *dst);
/* The same widened to f32. */
void ffn_matrix_f32(const struct model *m, uint32_t layer, enum ffn_part part, float *dst);

#endif
