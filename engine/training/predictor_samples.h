/* Training samples for activation predictors (the paper's App. B): the
 * dense model is run over a text's tokens and, per layer and token, the
 * FFN input x after the layer's norm and which FFN neurons fire (through
 * ffn_probe.h) are kept. Row r of every layer is the same forward pass.
 *
 * The tokens are fed in windows of the engine's context, each led by BOS
 * at position 0, then the text's tokens (text_feed.h's BOS_LED, whatever
 * the vocabulary says: `flashbed perplexity`'s own rule where it adds BOS);
 * n tokens give n rows (BOS, t0, ..., t_{n-2} within the windows), so a
 * row's x is the model's state after the text before it.
 *
 * Memory: per row and layer d_model floats and d_ff bits, all held at once
 * (predictor_samples_bytes tells before allocating): stories260K 1.4 KB a
 * row, OPT-1.3B 220 KB (10k rows: 2.2 GB). Larger models need rows cut to
 * what fits; nothing is spilled to disk.
 *
 * Functions return 0, or -1 with the reason in err; collection also
 * returns 1 when interrupted (common/interrupt.h), keeping the rows done.
 * Collection runs the engine with its thread team; the callback is called
 * on the caller's thread. */
#ifndef FLASHBED_ENGINE_PREDICTOR_SAMPLES_H
#define FLASHBED_ENGINE_PREDICTOR_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/settings.h"
#include "engine/model/model.h"
#include "engine/predictor/predictor.h"

struct predictor_samples {
    uint32_t n_layers, d_model, d_ff;
    size_t cap, n_rows;     /* rows allocated, rows collected */
    size_t words;           /* uint64_t words per row of bits */
    float *x;               /* [n_layers][cap][d_model] */
    uint64_t *active;       /* [n_layers][cap][words]: bit i of a row: neuron i fired */
    uint64_t *n_active;     /* [n_layers] bits set over the rows collected */
    enum predictor_target target;
    float act_threshold;
};

static inline const float *samples_x(const struct predictor_samples *s, uint32_t layer, size_t row)
{
    return s->x + ((size_t)layer * s->cap + row) * s->d_model;
}

static inline const uint64_t *samples_bits(const struct predictor_samples *s, uint32_t layer, size_t row)
{
    return s->active + ((size_t)layer * s->cap + row) * s->words;
}

static inline bool samples_active(const uint64_t *bits, uint32_t i)
{
    return (bits[i / 64] >> (i % 64)) & 1u;
}

/* Bytes that rows rows of samples take. */
uint64_t predictor_samples_bytes(uint32_t n_layers, uint32_t d_model, uint32_t d_ff, size_t rows);

int predictor_samples_alloc(struct predictor_samples *s, uint32_t n_layers, uint32_t d_model, uint32_t d_ff,
                            size_t rows, char *err, size_t errlen);
void predictor_samples_free(struct predictor_samples *s);

/* Appends one row for layer (x and the activity bytes); the collector's
 * hook, public so tests can plant samples. Rows are counted by layer 0. */
void predictor_samples_put(struct predictor_samples *s, uint32_t layer, size_t row, const float *x,
                           const uint8_t *active);

struct predictor_collect_config {
    const struct fb_settings *settings; /* the engine's backend tuning */
    int threads;          /* the engine's compute threads */
    int context;          /* window length with BOS; 0: the model's */
    float act_threshold;  /* GLU models: what "active" means (ffn_probe.h) */
    /* optional: rows done of n, after each window and at the end */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *ctx;
};

/* Runs m (its FFN in DRAM) over tokens[0..n) into s (allocated for at
 * least n rows, the model's shape) on the cpu backend; s->target and
 * act_threshold are set. 0; 1 when interrupted; -1 with err (the engine
 * could not start, a forward pass failed). */
int predictor_samples_collect(struct predictor_samples *s, const struct model *m, const int *tokens, size_t n,
                              const struct predictor_collect_config *c, char *err, size_t errlen);

#endif
