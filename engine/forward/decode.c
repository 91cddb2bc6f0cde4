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

/* The forward pass of step->token at step->pos, timed. */
static void forward_timed(struct engine *e, struct decode_step *step)
{
    step->start_ns = now_ns();
    engine_forward(e, step->token, step->pos);
    step->end_ns = now_ns();
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
    int token = c->prompt[0];
    for (int pos = 0;; pos++) {
        if (interrupted()) {
            r->stop = DECODE_INTERRUPTED;
            break;
        }
        struct decode_step step = {.pos = pos, .token = token, .generated = pos >= c->n_prompt, .sampled = -1};
        if (h->before)
            h->before(h->ctx, pos, step.generated);
        forward_timed(e, &step);
        r->n_forward++;
        bool prompt_goes_on = pos + 1 < c->n_prompt, eos = false;
        if (!prompt_goes_on && r->n_generated < c->n) {
            int next = sampler_sample(&smp, e->s.logits);
            if (next == SAMPLER_NOT_FINITE) {
                err_set(err, errlen,
                         "the logits for generated token %d (position %d) are not finite (NaN or infinity): "
                         "the model's weights hold such values or its activations overflow",
                         r->n_generated + 1, pos);
                sampler_free(&smp);
                r->stop = DECODE_ERROR;
                return -1;
            }
            eos = !c->ignore_eos && decode_is_stop(e->m, next);
            step.sampled = eos ? -1 : next;
        }
        if (h->token && h->token(h->ctx, &step) != 0) {
            r->stop = DECODE_ERROR;
            break;
        }
        if (prompt_goes_on) {
            token = c->prompt[pos + 1];
            continue;
        }
        if (eos) {
            r->stop = DECODE_EOS;
            break;
        }
        if (step.sampled < 0) /* n was 0 */
            break;
        if (++r->n_generated == c->n)
            break;
        token = step.sampled;
    }
    sampler_free(&smp);
    return 0;
}
