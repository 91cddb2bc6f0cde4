/* The decode loop every generating command runs (generate, run): the prompt
 * fed one position at a time, then tokens sampled (engine/forward/sampler.h) and fed
 * back, until a stop rule ends it. Library code: it prints nothing; what a
 * command shows (text, progress, timings) it does in its callback.
 *
 * Positions 0 .. n_prompt - 1 take the prompt's tokens. After the forward
 * pass of the last prompt position, and of every generated one, a token is
 * sampled from the logits; the n-th sampled token is not fed back (nothing
 * would read its logits), so a run to the end computes n_prompt + n - 1
 * positions and generates n tokens. The stop rules, in the order checked:
 *
 *   - interrupted (common/interrupt.h): before each forward pass
 *   - the callback returned non-zero: after the forward pass it was told of
 *   - end of sequence: a sampled token is one of the model's stop tokens
 *     (EOS, and BOS for llama2.c models), unless ignore_eos; it is not
 *     generated (the callback sees sampled = -1)
 *   - length: n tokens generated
 *
 * Hooks, per position, in this order:
 *
 *   before(pos, generated)   optional; before the forward pass (and its clock)
 *   forward pass             timed: start_ns, end_ns (now_ns)
 *   sampling                 only after the last prompt position and later
 *   token(step)              optional; the position, its token, whether that
 *                            token was generated, the pass's times and the
 *                            token sampled from it. Non-zero stops the loop
 *                            with DECODE_ERROR (the callback keeps its reason).
 *
 * Nothing is allocated per token; the sampler is set up once per call. */
#ifndef FLASHBED_ENGINE_DECODE_H
#define FLASHBED_ENGINE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/forward/engine.h"

enum decode_stop {
    DECODE_LENGTH,      /* n tokens generated (or n was 0) */
    DECODE_EOS,         /* a stop token was sampled */
    DECODE_INTERRUPTED, /* SIGINT/SIGTERM */
    DECODE_ERROR,       /* the callback said stop */
};

/* "length", "end of sequence", "interrupted", "error": the stop_reason of
 * result files. */
const char *decode_stop_name(enum decode_stop stop);

struct decode_config {
    const int *prompt; /* BOS first */
    int n_prompt;      /* >= 1 */
    int n;             /* tokens to generate at most, >= 0 */
    bool ignore_eos;   /* generate all n (for measurements) */
    float temperature; /* 0: greedy */
    float top_p;       /* nucleus mass; outside (0, 1): the full distribution */
    uint64_t seed;
};

/* One computed position, as the token callback sees it. */
struct decode_step {
    int pos;                 /* the position just computed */
    int token;               /* the token fed there */
    bool generated;          /* that token was sampled, not the prompt's */
    uint64_t start_ns, end_ns; /* the forward pass alone (now_ns) */
    int sampled;             /* the token sampled from this position's logits, generated
                              * (fed next unless it was the n-th); -1: the prompt goes on,
                              * or nothing was generated (end of sequence, n reached) */
};

struct decode_hooks {
    void (*before)(void *ctx, int pos, bool generated);
    int (*token)(void *ctx, const struct decode_step *step);
    /* after each forward pass, before its logits are sampled: non-zero,
     * with err set, stops the loop as failed (decode_run returns -1); a
     * run's stops (engine/run/run_stop.h). NULL: none */
    int (*check)(void *ctx, const struct decode_step *step, char *err, size_t errlen);
    void *ctx;
};

struct decode_result {
    enum decode_stop stop;
    int n_forward;   /* positions computed */
    int n_generated; /* tokens sampled and reported (stop tokens are not) */
};

/* Runs the loop on e (its KV cache from position 0) with hooks h (required;
 * either hook may be NULL). 0 when it ran,
 * whatever stopped it (r->stop); -1 with err set and nothing run when the
 * configuration does not fit e (n_prompt < 1, n < 0, more positions than
 * e->max_seq) or the sampler cannot be allocated; -1 with err naming the
 * position, after the hooks saw the positions before it, when the check
 * hook refuses a pass, when the logits
 * to sample from are not finite (NaN or infinite weights) or when its
 * forward pass failed (engine_forward: the backend's reason, a device
 * fault; r->stop is then DECODE_ERROR and the engine is spent). */
int decode_run(struct engine *e, const struct decode_config *c, const struct decode_hooks *h,
               struct decode_result *r, char *err, size_t errlen);

/* Whether generation ends at token id (the model's stop tokens). */
bool decode_is_stop(const struct model *m, int id);

#endif
