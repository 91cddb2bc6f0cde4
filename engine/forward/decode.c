/* The one decode loop (engine/forward/decode.h): prompt, sampling, stop rules,
 * a callback per computed position. */
#include "engine/forward/decode.h"

#include <stdio.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "common/interrupt.h"
#include "engine/forward/sampler.h"

const char *decode_stop_name(enum decode_stop stop)
{
    switch (stop) {
    case DECODE_LENGTH:
        return "length";
    case DECODE_EOS:
        return "end of sequence";
    case DECODE_INTERRUPTED:
        return "interrupted";
    case DECODE_ERROR:
        return "error";
    }
    return "error";
}

bool decode_is_stop(const struct model *m, int id)
{
    for (int i = 0; i < m->n_stop; i++)
        if (m->stop_ids[i] == id)
            return true;
    return false;
}

/* The configuration against the engine's KV cache; 0 or -1 with err set. */
static int check_config(const struct engine *e, const struct decode_config *c, char *err, size_t errlen)
{
    if (c->n_prompt < 1 || c->n < 0) {
        err_set(err, errlen, "the decode loop needs a prompt of at least one token (BOS) and n >= 0, not %d and %d",
                 c->n_prompt, c->n);
        return -1;
    }
    /* the n-th generated token is not fed back */
    long positions = (long)c->n_prompt + (c->n > 0 ? c->n - 1 : 0);
    if (positions > e->max_seq) {
        err_set(err, errlen, "%d prompt and %d generated tokens need %ld positions, the engine holds %d",
                 c->n_prompt, c->n, positions, e->max_seq);
        return -1;
    }
    return 0;
}

/* The forward pass of step->token at step->pos, timed, then the token
 * sampled from its logits when the prompt is done and tokens are still
 * due (*eos: it was a stop token); r counts the pass. 0, or -1 with err
 * set: the forward pass failed (the backend's reason; not counted), the
 * check hook refused it, or the logits are not finite. */
static int decode_step_run(struct engine *e, const struct decode_config *c, const struct decode_hooks *h,
                           struct sampler *smp, struct decode_result *r, struct decode_step *step, bool *eos,
                           char *err, size_t errlen)
{
    step->start_ns = now_ns();
    int rc = engine_forward(e, step->token, step->pos);
    step->end_ns = now_ns();
    if (rc != 0)
        return err_set(err, errlen, "position %d: %s", step->pos, e->err);
    r->n_forward++;
    if (h->check && h->check(h->ctx, step, err, errlen) != 0)
        return -1;
    *eos = false;
    if (step->pos + 1 < c->n_prompt || r->n_generated >= c->n)
        return 0;
    int next = sampler_sample(smp, e->s.logits);
    if (next == SAMPLER_NOT_FINITE)
        return err_set(err, errlen,
                       "the logits for generated token %d (position %d) are not finite (NaN or infinity): "
                       "the model's weights hold such values or its activations overflow",
                       r->n_generated + 1, step->pos);
    *eos = !c->ignore_eos && decode_is_stop(e->m, next);
    step->sampled = *eos ? -1 : next;
    return 0;
}

int decode_run(struct engine *e, const struct decode_config *c, const struct decode_hooks *h,
               struct decode_result *r, char *err, size_t errlen)
{
    *r = (struct decode_result){.stop = DECODE_LENGTH};
    if (check_config(e, c, err, errlen) != 0)
        return -1;
    struct sampler smp;
    if (sampler_init(&smp, (int)e->m->shape.vocab_size, c->temperature, c->top_p, c->seed) != 0) {
        err_set(err, errlen, "cannot allocate the sampler");
        return -1;
    }
    int token = c->prompt[0], rc = 0;
    for (int pos = 0;; pos++) {
        if (interrupted()) {
            r->stop = DECODE_INTERRUPTED;
            break;
        }
        struct decode_step step = {.pos = pos, .token = token, .generated = pos >= c->n_prompt, .sampled = -1};
        if (h->before)
            h->before(h->ctx, pos, step.generated);
        bool eos;
        if (decode_step_run(e, c, h, &smp, r, &step, &eos, err, errlen) != 0) {
            r->stop = DECODE_ERROR;
            rc = -1;
            break;
        }
        if (h->token && h->token(h->ctx, &step) != 0) {
            r->stop = DECODE_ERROR;
            break;
        }
        if (pos + 1 < c->n_prompt) {
            token = c->prompt[pos + 1];
            continue;
        }
        if (eos) {
            r->stop = DECODE_EOS;
            break;
        }
        if (step.sampled < 0 || ++r->n_generated == c->n) /* sampled < 0: n was 0 */
            break;
        token = step.sampled;
    }
    sampler_free(&smp);
    return rc;
}
