/* The fixed parts of a trace file (layout in traces/trace.h): header,
 * footer and the checksums around them, shared by writer and reader.
 * Internal to traces/. */
#ifndef FLASHBED_TRACES_TRACE_FILE_H
#define FLASHBED_TRACES_TRACE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "traces/set_codec.h"
#include "traces/trace.h"

#define TRACE_MAGIC "FBTRACE"   /* 8 bytes with its NUL */
#define TRACE_END_MAGIC "FBTREND"
#define TRACE_TOKEN_MARK 0xA7
/* magic 8 + version 4 + eight u32 fields + u64 n_tokens + u32 source_len;
 * versions 1 and 2 have six u32 fields (no unit kind and count) */
#define TRACE_HEADER_FIXED (8 + 4 + 8 * 4 + 8 + 4)
#define TRACE_HEADER_FIXED_V2 (8 + 4 + 6 * 4 + 8 + 4)
#define TRACE_FOOTER_BYTES (8 + 3 * 8) /* before its CRC */
#define TRACE_CRC_BYTES 4
#define TRACE_MAX_SOURCE (1u << 20)
#define TRACE_FLAG_PREDICTED 1u  /* header flags */
#define TRACE_FLAG_CHANNELS 2u


/* Appends the header, with its CRC, for version TRACE_VERSION. */
int trace_header_put(struct byte_buf *b, const struct trace_meta *m, uint64_t n_tokens);
/* Appends the footer, with its CRC. */
int trace_footer_put(struct byte_buf *b, uint64_t n_tokens, uint64_t active_events,
                     uint64_t pred_events);
void trace_put_u32(uint8_t p[4], uint32_t v);
uint32_t trace_get_u32(const uint8_t p[4]);
uint64_t trace_get_u64_at(const uint8_t p[8]);

/* Where the CRC of block (token, layer) starts: the CRC of the two numbers,
 * which the block's bytes then continue. */
uint32_t trace_block_crc_start(uint64_t token, uint32_t layer);

/* The largest block (one layer's sets, without length and CRC) a writer
 * produces: a reader refuses a longer length before reading it. */
static inline uint64_t trace_block_max(const struct trace_meta *m)
{
    return (m->has_predicted ? 2 : 1) * set_record_max(m->d_ff) + (m->has_channels ? set_record_max(m->d_model) : 0);
}

/* How many sets a block holds: active, predicted, channels as flagged. */
static inline int trace_sets_per_block(const struct trace_meta *m)
{
    return 1 + (m->has_predicted ? 1 : 0) + (m->has_channels ? 1 : 0);
}

/* Whether ids[0..n) is a set of the trace: strictly ascending neuron ids
 * below d_ff. 0, or -1 with why ("active neuron 9 >= d_ff 8"; what names
 * the set) for the caller to place (writer and builder alike). */
int trace_check_ids(const uint32_t *ids, uint32_t n, uint32_t d_ff, const char *what, char *why, size_t whylen);

/* The same for a channel set: strictly ascending ids below d_model
 * ("kept channel 9 >= d_model 8"). */
int trace_check_channels(const uint32_t *ids, uint32_t n, uint32_t d_model, char *why, size_t whylen);

/* Whether m's type and units are ones a trace holds (trace.h's rule for
 * units). 0, or -1 with why; the writer, the builder and the reader ask. */
int trace_meta_check(const struct trace_meta *m, char *why, size_t whylen);

/* Appends n ids to a growing array (*len of *cap used). 0, or -1 out of memory. */
int trace_append_ids(uint32_t **ids, uint64_t *len, uint64_t *cap, const uint32_t *src, uint32_t n);

/* Reads and checks the header (its CRC from version 2 on) and *version;
 * 0, or -1 with a reason in why that says it is about the header. */
int trace_header_get(FILE *f, struct trace_meta *m, uint64_t *n_tokens, uint32_t *version, char *why,
                     size_t whylen);

#endif
