/* A token's pass watched for wrong numbers as the flash FFNs (ffn_flash.c,
 * ffn_transposed.c) run it, into struct ffn_flash_sanity (ffn_flash.h),
 * which a run's stops read (engine/run/run_stop.h, issue 47): each layer
 * whose true set the oracle computed, whether it found none, and the first
 * layer whose FFN input or output held NaN or infinity. Looking costs one
 * pass over d_model floats per layer and vector, beside the layer's
 * d_ff x d_model multiply-adds. Pure functions of their arguments. */
#ifndef FLASHBED_ENGINE_FFN_SANITY_H
#define FLASHBED_ENGINE_FFN_SANITY_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/ffn/ffn_flash.h"

/* A layer whose true set (the oracle's) has n neurons. */
static inline void ffn_sanity_chosen(struct ffn_flash_sanity *s, uint32_t n)
{
    s->layers_chosen++;
    s->layers_empty += n == 0;
}

/* Layer's FFN input (input) or output v[0..n) looked at: counted, and
 * kept as the first, when a value is NaN or infinite. v NULL (on a device,
 * where the host does not hold it): nothing looked at. */
void ffn_sanity_look(struct ffn_flash_sanity *s, uint32_t layer, bool input, const float *v, uint32_t n);

#endif
