/* A run's stops for wrong answers (engine/run/run_stop.h). */
#include "engine/run/run_stop.h"

#include <stdio.h>

#include "common/errbuf.h"
#include "engine/ffn/ffn_flash.h"

static bool all_finite(const float *v, uint32_t n)
{
    float sum = 0.0f; /* v * 0 is 0 for a finite value, NaN for NaN or infinity */
    for (uint32_t i = 0; i < n; i++)
        sum += v[i] * 0.0f;
    return sum == 0.0f;
}

/* Where the hidden state first turned, as the flash FFN saw it. */
static void where_nonfinite(const struct ffn_flash_sanity *s, bool flash, char *at, size_t len)
{
    if (!flash)
        snprintf(at, len, "the dense FFN does not say in which layer");
    else if (s->nonfinite)
        snprintf(at, len, "layer %u's FFN %s is the first that holds such values", s->first_nonfinite,
                 s->first_in_input ? "input" : "output");
    else
        snprintf(at, len, "every layer's FFN input and output seen on the host was finite: the attention, the "
                          "output head or the device turned them");
}

int run_stop_check(const struct engine *e, bool flash, int pos, int token, char *err, size_t errlen)
{
    const struct model *m = e->m;
    struct ffn_flash_sanity s = flash ? ffn_flash_sanity_of(&e->ffn) : (struct ffn_flash_sanity){0};
    if (!all_finite(e->s.logits, m->shape.vocab_size)) {
        char at[256];
        where_nonfinite(&s, flash, at, sizeof at);
        return err_set(err, errlen,
                       "position %d (token id %d): the logits are not finite (NaN or infinity); %s. The model's "
                       "weights hold such values or its activations overflow (flashbed model verify %s checks the "
                       "weights); no results written",
                       pos, token, at, m->dir);
    }
    uint32_t n = m->shape.n_layers;
    if (flash && n && s.layers_chosen == n && s.layers_empty == n)
        return err_set(err, errlen,
                       "position %d (token id %d): no layer (0 to %u) needed any neuron, so the FFN computed "
                       "nothing: NaN pre-activations are never active, and true activations that are none in "
                       "every layer are a wrong answer (flashbed model verify %s checks the weights); no results "
                       "written",
                       pos, token, n - 1, m->dir);
    return 0;
}
