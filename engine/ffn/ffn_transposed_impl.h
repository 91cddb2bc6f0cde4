/* The transposed flash FFN's private state (ffn_transposed.h), shared by
 * ffn_transposed_open.c (set-up, tear-down, the accessors) and
 * ffn_transposed.c (a layer's step). Not an interface. */
#ifndef FLASHBED_ENGINE_FFN_TRANSPOSED_IMPL_H
#define FLASHBED_ENGINE_FFN_TRANSPOSED_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "engine/ffn/ffn_transposed.h"
#include "engine/model/ffn_transposed.h"
#include "io/flash_reader.h"
#include "io/io_buffer.h"

#define T_NO_SLOT UINT32_MAX

/* Where a row is in this step (mark[] bits, cleared after the step). */
enum { T_NEED = 1, T_MISS = 2, T_DROP = 4 };

/* One stream (channel bundles, or down rows): its cache's decisions and
 * the rows it keeps, per layer a pool of slots. */
struct t_stream {
    const char *name;             /* "channel", "down": messages */
    struct cache decide;
    struct cache_geometry g;      /* g.d_ff: the stream's rows per layer; g.row_bytes: the stride */
    uint32_t slots;               /* rows kept per layer */
    uint8_t *store;               /* [n_layers][slots][row_bytes] */
    struct io_buffer store_mem;
    uint32_t *slot_of;            /* [n_layers][g.d_ff]: the row's slot, or T_NO_SLOT */
    uint32_t *free_slots;         /* [n_layers][slots]: a stack of free slots */
    uint32_t *n_free;             /* [n_layers] */
    uint8_t *staging;             /* [staging_rows][row_bytes]: rows used once */
    struct io_buffer staging_mem;
    uint32_t staging_rows;
    uint8_t *mark;                /* [g.d_ff] */
    struct flash_read *reqs;      /* [staging_rows + g.d_ff] a batch's reads */
    uint32_t *batch_ids;          /* [staging_rows + g.d_ff] their rows */
    const void **ptr;             /* [g.d_ff] rows to sum */
    float *coef;                  /* [g.d_ff] their weights */
    uint64_t resident;            /* rows kept, all layers */
};

struct t_ffn {
    struct ffn_flash_config cfg;
    struct ffn_t_layout file;
    struct flash_reader *reader;  /* ffn_t.bin */
    uint32_t *crc;                /* ffn_t.crc32c's units (ffn_transposed.h) when --verify and the file has
                                   * them: each row read is checked before it is used or kept; else NULL */
    uint64_t align, held_bytes;
    struct t_stream chan, down;
    uint32_t *ids;                /* [max(d_model, d_ff)] a layer's kept channels or rows */
    float *zg;                    /* [2 * d_ff]: up x' then gate x' */
    float *h;                     /* [d_ff] */
    int64_t token;                /* the token being computed (layer 0 starts the next) */
    unsigned next_flags;          /* the recorded trace's TRACE_TOKEN_* for the next token */
    struct ffn_flash_token acc;
    char error[512];
};

static inline uint8_t *t_slot_row(const struct t_stream *s, uint32_t layer, uint32_t slot)
{
    return s->store + ((uint64_t)layer * s->slots + slot) * s->g.row_bytes;
}

/* ffn_ops.forward (ffn_transposed.c). */
void ffn_transposed_forward(struct ffn *f, int layer, int pos, const float *x, float *out);

#endif
