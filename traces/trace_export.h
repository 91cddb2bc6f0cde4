/* Exporting a trace for tools that read neither flashbed's format nor its
 * Python module: one row per (token, layer, neuron) that was active (and,
 * when the trace has them, one per predicted neuron and one per input
 * channel kept: kind "channel", channel_*.u32), in one of two forms:
 *
 *   csv           DIR/neurons.csv   token,layer,neuron,kind (kind "active"
 *                                   or "predicted"), rows in token, layer,
 *                                   kind (active first), neuron order
 *                 DIR/tokens.csv    token,flags,generated,sequence_start
 *                                   (flags: TRACE_TOKEN_*, traces/trace.h)
 *   npz-friendly  flat little-endian arrays numpy reads with np.fromfile:
 *                 DIR/active_{token,layer,neuron}.u32 ("<u4", one element
 *                 per active row, in the CSV's order), predicted_*.u32 the
 *                 same when the trace has predicted sets, tokens_flags.u8
 *                 ("u1", one per token)
 *
 * Both write DIR/export.json: the format, each file (name, dtype or
 * columns, length, meaning), the trace's header fields (n_layers, d_model,
 * d_ff, n_tokens, has_predicted, source, ...) and the provenance given.
 *
 * The trace is read with the streaming reader (traces/trace.h), so memory
 * does not grow with the file; every checksum is checked on the way.
 *
 * DIR must not exist. It is written as "DIR.tmp.<pid>", registered with
 * common/cleanup.h (a signal removes it), and renamed into place only when
 * everything was written and the trace read to its verified end: a failure
 * leaves nothing. Missing parents of DIR are not made here (the caller
 * makes them: common/out_path.h).
 *
 * Returns 0, or -1 with one line in err naming the file at fault (the
 * trace, with its token and layer, or DIR/FILE, never the temporary). */
#ifndef FLASHBED_TRACES_TRACE_EXPORT_H
#define FLASHBED_TRACES_TRACE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

enum trace_export_format {
    TRACE_EXPORT_CSV,
    TRACE_EXPORT_NPZ_FRIENDLY,
};

/* "csv" or "npz-friendly"; 0, or -1 for another word. */
int trace_export_format_parse(const char *word, enum trace_export_format *fmt);

/* What an export wrote (rows per kind = elements per array). */
struct trace_export_counts {
    uint64_t tokens, active_rows, predicted_rows, channel_rows;
};

/* Exports the trace at trace_path into out_dir. provenance (may be NULL)
 * is taken in every case and goes into export.json. counts may be NULL. */
int trace_export(const char *trace_path, const char *out_dir, enum trace_export_format fmt, cJSON *provenance,
                 struct trace_export_counts *counts, char *err, size_t errlen);

#endif
