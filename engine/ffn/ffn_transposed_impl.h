/* The transposed flash FFN's private state (ffn_transposed.h), shared by
 * ffn_transposed_open.c (set-up, tear-down, the accessors) and
 * ffn_transposed.c (a layer's step). Not an interface. */
#ifndef FLASHBED_ENGINE_FFN_TRANSPOSED_IMPL_H
#define FLASHBED_ENGINE_FFN_TRANSPOSED_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/ffn/ffn_transposed.h"
#include "engine/ffn/streamer.h"
#include "engine/model/ffn_transposed.h"
#include "io/flash_reader.h"

/* One stream of ffn_t.bin (channel bundles, or rows of down): its
 * streamer, and the weights its rows are summed with (x, or h) into its
 * target (z and g, or y). */
struct t_stream {
    struct streamer s;
    const char *word;             /* "channel", "row of down": messages */
    bool down;
    const float *w;               /* the step's weights, by unit id */
    int len;                      /* the target's floats */
    const void **ptr;             /* [units] rows to sum */
    float *coef;                  /* [units] their weights */
    struct ffn *f;
};

struct t_ffn {
    struct ffn_flash_config cfg;
    struct ffn_t_layout file;
    struct flash_reader *reader;  /* ffn_t.bin, the two streamers' */
    uint32_t *crc;                /* ffn_t.crc32c's units (ffn_transposed.h) when --verify and the file has
                                   * them: each row read is checked before it is used or kept; else NULL */
    uint64_t align;
    struct t_stream chan, down;
    float *zg;                    /* [2 * d_ff]: up x' then gate x' */
    float *h;                     /* [d_ff] */
    unsigned next_flags;          /* the recorded trace's TRACE_TOKEN_* for the next token */
    struct ffn_flash_token acc;
    char error[512];              /* the recorder's failure; the streams' are theirs */
};

/* ffn_ops.forward (ffn_transposed.c). */
void ffn_transposed_forward(struct ffn *f, int layer, int pos, const float *x, float *out);
/* The streamers' hooks (ffn_transposed.c). */
extern const struct streamer_hooks ffn_transposed_hooks;

#endif
