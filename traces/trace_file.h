/* The fixed parts of a trace file (layout in traces/trace.h): header and
 * footer, shared by writer and reader. Internal to traces/. */
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
/* magic 8 + version 4 + six u32 fields */
#define TRACE_N_TOKENS_OFFSET (8 + 4 + 6 * 4)
#define TRACE_MAX_SOURCE (1u << 20)

/* snprintf into err; returns -1, so that "return trace_err(...)" reads well. */
int trace_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

int trace_header_put(struct byte_buf *b, const struct trace_meta *m, uint64_t n_tokens);
int trace_footer_put(struct byte_buf *b, uint64_t n_tokens, uint64_t active_events,
                     uint64_t pred_events);
int trace_put_u64_file(FILE *f, uint64_t v);
int trace_get_u64(FILE *f, uint64_t *v);

/* Reads and checks the header; 0, or -1 with a reason in why. */
int trace_header_get(FILE *f, struct trace_meta *m, uint64_t *n_tokens, char *why, size_t whylen);

#endif
