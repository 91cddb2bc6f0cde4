/* A run's stops for wrong answers (issue 47): after each forward pass of a
 * run (its measured tokens and hot's warm-up), before its logits are
 * sampled or its costs become results, the pass is refused when
 *   - its logits are not finite (NaN or infinity), at any position, the
 *     prompt's too: the message names the first layer whose FFN input or
 *     output held such values (struct ffn_flash_sanity, engine/ffn/ffn_sanity.h),
 *     or says none on the host did;
 *   - the oracle, choosing a flash run's neurons, found none active in
 *     any layer (NaN pre-activations are never active: an oracle on NaN
 *     rows computes nothing and reads nothing). A predictor's, the gate's
 *     or teal's choice of none is a guess a weak chooser may rightly make
 *     (a tiny model's predictor does): not a stop.
 * Either means the answer would be wrong while the run looked fine; the
 * weights' checksums (model_integrity.h) catch damage as it is loaded, and
 * these catch what passes them (--verify off, a folder without checksums,
 * a model whose values overflow). Pure reads of the engine's state. */
#ifndef FLASHBED_ENGINE_RUN_STOP_H
#define FLASHBED_ENGINE_RUN_STOP_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/forward/engine.h"

/* The pass just computed at position pos for token id token on e (flash:
 * e's FFN is the flash FFN, whose token has not been taken yet). 0 when it
 * stands; -1 with err naming the position, the token and the layer. */
int run_stop_check(const struct engine *e, bool flash, int pos, int token, char *err, size_t errlen);

#endif
