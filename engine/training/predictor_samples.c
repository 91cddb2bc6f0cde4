/* Collecting predictor training samples (predictor_samples.h). */
#include "engine/training/predictor_samples.h"

#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/interrupt.h"
#include "engine/ffn/ffn_probe.h"
#include "engine/forward/engine.h"
#include "engine/forward/text_feed.h"

uint64_t predictor_samples_bytes(uint32_t n_layers, uint32_t d_model, uint32_t d_ff, size_t rows)
{
    uint64_t words = (d_ff + 63) / 64;
    return (uint64_t)n_layers * rows * ((uint64_t)d_model * sizeof(float) + words * sizeof(uint64_t));
}

int predictor_samples_alloc(struct predictor_samples *s, uint32_t n_layers, uint32_t d_model, uint32_t d_ff,
                            size_t rows, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    *s = (struct predictor_samples){.n_layers = n_layers, .d_model = d_model, .d_ff = d_ff, .cap = rows,
                                    .words = (d_ff + 63) / 64};
    size_t nx = (size_t)n_layers * rows * d_model, nb = (size_t)n_layers * rows * s->words;
    s->x = malloc((nx ? nx : 1) * sizeof *s->x);
    s->active = calloc(nb ? nb : 1, sizeof *s->active);
    s->n_active = calloc(n_layers ? n_layers : 1, sizeof *s->n_active);
    if (!s->x || !s->active || !s->n_active) {
        predictor_samples_free(s);
        return err_set(err, errlen, "cannot allocate %llu bytes for %zu rows of samples (%u layers, d_model %u, "
                       "d_ff %u)", (unsigned long long)predictor_samples_bytes(n_layers, d_model, d_ff, rows),
                       rows, n_layers, d_model, d_ff);
    }
    return 0;
}

void predictor_samples_free(struct predictor_samples *s)
{
    free(s->x);
    free(s->active);
    free(s->n_active);
    memset(s, 0, sizeof *s);
}

void predictor_samples_put(struct predictor_samples *s, uint32_t layer, size_t row, const float *x,
                           const uint8_t *active)
{
    memcpy(s->x + ((size_t)layer * s->cap + row) * s->d_model, x, s->d_model * sizeof *x);
    uint64_t *bits = s->active + ((size_t)layer * s->cap + row) * s->words;
    memset(bits, 0, s->words * sizeof *bits);
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->d_ff; i++)
        if (active[i]) {
            bits[i / 64] |= 1ull << (i % 64);
            n++;
        }
    s->n_active[layer] += n;
    if (layer == 0)
        s->n_rows = row + 1;
}

struct collector {
    struct predictor_samples *s;
    size_t row; /* the forward pass being run */
    const struct predictor_collect_config *c;
};

static void observe(void *ctx, int layer, int pos, const float *x, const float *h, const uint8_t *active)
{
    (void)pos, (void)h;
    struct collector *c = ctx;
    predictor_samples_put(c->s, (uint32_t)layer, c->row, x, active);
}

static void feed_before(void *ctx, size_t i)
{
    ((struct collector *)ctx)->row = i; /* the probe's observe() files this token's rows under i */
}

static void feed_progress(void *ctx, size_t done, size_t n)
{
    const struct collector *col = ctx;
    if (col->c->progress)
        col->c->progress(col->c->ctx, done, n);
}

/* Feeds tokens in BOS-led windows of the engine's context (engine/forward/text_feed.h); 1 if interrupted. */
static int feed(struct engine *e, struct collector *col, const int *tokens, size_t n,
                const struct predictor_collect_config *c)
{
    col->c = c;
    const struct text_feed f = {.before = feed_before, .progress = feed_progress, .ctx = col};
    return text_feed_run(e, tokens, n, &f);
}

int predictor_samples_collect(struct predictor_samples *s, const struct model *m, const int *tokens, size_t n,
                              const struct predictor_collect_config *c, char *err, size_t errlen)
{
    const struct model_shape *sh = &m->shape;
    if (s->n_layers != sh->n_layers || s->d_model != sh->d_model || s->d_ff != sh->d_ff || s->cap < n)
        return err_set(err, errlen, "samples for %zu rows of %u layers x %u x %u do not fit %zu tokens of the "
                       "model (%u x %u x %u)", s->cap, s->n_layers, s->d_model, s->d_ff, n, sh->n_layers,
                       sh->d_model, sh->d_ff);
    if (predictor_target_of(&m->arch, &s->target, err, errlen) != 0)
        return -1;
    s->act_threshold = s->target == PREDICT_GLU_ABS ? c->act_threshold : 0.0f;
    struct collector col = {.s = s};
    struct ffn_probe_config pc = {.target = s->target, .act_threshold = s->act_threshold, .observe = observe,
                                  .ctx = &col};
    struct engine e;
    if (engine_init_with(&e, c->settings, m, &backend_cpu, &ffn_probe, &pc, c->threads, c->context, err, errlen) != 0)
        return -1;
    if (e.max_seq < 2) {
        int context = e.max_seq; /* read before engine_free clears it */
        engine_free(&e);
        return err_set(err, errlen, "a context of %d position%s leaves no room for text after BOS", context,
                       context == 1 ? "" : "s");
    }
    int rc = feed(&e, &col, tokens, n, c);
    if (rc == TEXT_FEED_FAILED)
        rc = err_set(err, errlen, "collecting samples: %s", e.err);
    engine_free(&e);
    return rc;
}
