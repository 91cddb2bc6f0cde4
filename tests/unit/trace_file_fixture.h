/* A trace file of a model's shape for the engine tests that read one
 * (a run's --active trace): token t needs, in layer l, the neurons i with
 * (3i + 5t + 7l) mod 16 < 3, 3 in 16: consecutive tokens share some, so a
 * policy under a budget both hits and drops rows a token needs (lru
 * misses, belady keeps the ones needed soonest: the second batch of row
 * moves on a device). */
#ifndef FLASHBED_TESTS_TRACE_FILE_FIXTURE_H
#define FLASHBED_TESTS_TRACE_FILE_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/model/model.h"
#include "traces/trace.h"

/* n_tokens tokens into path, recorded as ffn_kind's; with predicted, each
 * token also predicted to need the neurons with (3i + 5t + 7l + 1) mod 16
 * < 4 (partly the same). 0, or -1 (nothing left but a failed write). */
static inline int write_mod16_trace_as(const char *path, const struct model *m, uint32_t n_tokens, uint32_t ffn_kind,
                                       bool predicted)
{
    char err[512];
    const struct model_shape *s = &m->shape;
    struct trace_meta tm = {.n_layers = s->n_layers, .d_model = s->d_model, .d_ff = s->d_ff, .dtype = DTYPE_F32,
                            .ffn_kind = ffn_kind, .has_predicted = predicted, .source = "{}", .has_channels = false};
    trace_meta_set_units(&tm);
    struct trace_writer *w = trace_writer_open(NULL, path, &tm, err, sizeof err);
    uint32_t *set = malloc(2 * (size_t)s->d_ff * sizeof *set), *pred = set ? set + s->d_ff : NULL;
    int rc = w && set ? 0 : -1;
    for (uint32_t t = 0; rc == 0 && t < n_tokens; t++) {
        rc = trace_writer_begin_token(w, 0, err, sizeof err);
        for (uint32_t l = 0; rc == 0 && l < s->n_layers; l++) {
            uint32_t n = 0, np = 0;
            for (uint32_t i = 0; i < s->d_ff; i++) {
                if ((3 * i + 5 * t + 7 * l) % 16 < 3)
                    set[n++] = i;
                if (predicted && (3 * i + 5 * t + 7 * l + 1) % 16 < 4)
                    pred[np++] = i;
            }
            rc = trace_writer_layer(w, l, set, n, predicted ? pred : NULL, np, err, sizeof err);
        }
    }
    free(set);
    if (rc != 0) {
        if (w)
            trace_writer_abort(w);
        return -1;
    }
    return trace_writer_close(w, err, sizeof err);
}

/* The ReLU trace without predicted sets. */
static inline int write_mod16_trace(const char *path, const struct model *m, uint32_t n_tokens)
{
    return write_mod16_trace_as(path, m, n_tokens, FFN_RELU, false);
}

#endif
