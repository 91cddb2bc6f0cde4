/* A token's pass watched for wrong numbers (ffn_sanity.h). */
#include "engine/ffn/ffn_sanity.h"

#include <math.h>

void ffn_sanity_look(struct ffn_flash_sanity *s, uint32_t layer, bool input, const float *v, uint32_t n)
{
    if (!v)
        return;
    /* v * 0 is 0 for a finite value and NaN for NaN or infinity: the sum
     * is 0 exactly when every value is finite (one branch per vector) */
    float sum = 0.0f;
    for (uint32_t i = 0; i < n; i++)
        sum += v[i] * 0.0f;
    if (sum == 0.0f)
        return;
    if (s->nonfinite++ == 0) {
        s->first_nonfinite = layer;
        s->first_in_input = input;
    }
}
