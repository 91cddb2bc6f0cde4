/* The trace reader and writer (traces/trace.h) as a flat interface for a
 * foreign-function caller: python/flashbed_trace.py loads it with ctypes
 * from libflashbed_trace.so (built from traces/ and common/ by
 * traces/CMakeLists.txt), so Python reads and writes traces at the C
 * library's speed and, writing, produces the C writer's bytes. Plain
 * integers, strings and arrays only: no struct layout to mirror on the
 * other side.
 *
 * Returns: 0 / -1 (or NULL) with the reason in err, as the functions they
 * wrap. Threading: one reader or writer per thread, as traces/trace.h. */
#ifndef FLASHBED_TRACES_TRACE_CAPI_H
#define FLASHBED_TRACES_TRACE_CAPI_H

#include <stddef.h>
#include <stdint.h>

struct trace_capi_reader;
struct trace_writer;

/* Bumped when a signature below changes: the caller checks it. */
#define TRACE_CAPI_VERSION 2
int fbt_capi_version(void);

/* trace_reader_open; NULL + err. */
struct trace_capi_reader *fbt_reader_open(const char *path, char *err, size_t errlen);

/* The header: out[] = version, n_layers, d_model, d_ff, weight type code
 * (common/wtypes.def: ggml's, f32 0, f16 1, bf16 30; an older file's bytes
 * per weight as traces/trace.h maps them), ffn_kind, has_predicted,
 * has_channels, n_tokens, unit kind code (common/unit_kinds.def), units per
 * layer. (Version 1 of this interface gave bytes per weight in the type's
 * place and ended at n_tokens.) */
#define FBT_HEADER_FIELDS 11
void fbt_reader_header(const struct trace_capi_reader *r, uint64_t out[FBT_HEADER_FIELDS]);
const char *fbt_reader_source(const struct trace_capi_reader *r);

/* The next token: 1 with *flags and its sets in one array (fbt_reader_ids),
 * set i = slot * n_layers + layer at ids[off[i]..off[i+1]) (fbt_reader_offsets,
 * sets_per_token * n_layers + 1 entries), slots in the order active,
 * predicted, channels, each only where the trace holds it; valid until the
 * next call. 0 once the footer is read and agrees; -1 with err. */
int fbt_reader_next(struct trace_capi_reader *r, uint32_t *flags, char *err, size_t errlen);
const uint32_t *fbt_reader_ids(const struct trace_capi_reader *r);
const uint64_t *fbt_reader_offsets(const struct trace_capi_reader *r);

/* Bytes of checksums and block lengths read so far (trace info's overhead). */
uint64_t fbt_reader_check_bytes(const struct trace_capi_reader *r);
void fbt_reader_close(struct trace_capi_reader *r);

/* trace_writer_open with the header's fields as numbers: shape[] =
 * n_layers, d_model, d_ff, weight type code, ffn_kind, unit kind code,
 * units per layer (codes as fbt_reader_header's). NULL + err. The
 * writer is then driven with trace_writer_begin_token, _layer_channels,
 * _layer, _close and _abort themselves. */
#define FBT_SHAPE_FIELDS 7
struct trace_writer *fbt_writer_open(const char *path, const uint32_t shape[FBT_SHAPE_FIELDS], int has_predicted,
                                     int has_channels, const char *source, char *err, size_t errlen);

#endif
