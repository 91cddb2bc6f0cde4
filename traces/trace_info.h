/* What `trace info` reports of a trace beyond its statistics
 * (trace_stats.h): how close a synthetic trace came to each target of the
 * profile it was calibrated to (the header's source "targets", written by
 * trace_synth.c), its bits per recorded neuron, and trace_info.json.
 * Pure functions of a trace, its statistics and its parsed source; any
 * thread. A statistic with no value (a target the header lacks, a window
 * longer than every sequence) is -1. */
#ifndef FLASHBED_TRACES_TRACE_INFO_H
#define FLASHBED_TRACES_TRACE_INFO_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "traces/trace.h"
#include "traces/trace_stats.h"

/* The most rows trace_calibration_rows fills. */
#define TRACE_CALIB_MAX_ROWS 16

/* One calibration statistic: its label, its key in the profile's targets,
 * the target and what the trace achieved, and whether it is a share
 * (printed as a percentage) or a ratio. */
struct trace_calib_row {
    const char *name, *key;
    double target, achieved;
    bool percent;
};

/* The calibration rows of tr (statistics s; source: the header's parsed
 * source JSON, may be NULL): the densities of the first, middle and last
 * layer and their mean, the 2-token window where the profile targets it,
 * with predicted sets the predictor's ratios, recall and windows, and with
 * channel sets the kept channels' mean density.
 * Fills rows[0..n) (room for TRACE_CALIB_MAX_ROWS) and returns n. */
int trace_calibration_rows(const struct trace *tr, const struct trace_stats *s, const cJSON *source,
                           struct trace_calib_row *rows);
/* Layer l's target density in source, -1 when it has none (traces recorded
 * by the engine, synthetic ones written before the profiles). */
double trace_layer_target(const cJSON *source, uint32_t l);
/* bytes of file per recorded id (active, predicted and kept channels), in bits. */
double trace_bits_per_neuron(const struct trace_stats *s, uint64_t bytes);
/* trace_info.json's object: the source, the shape, the statistics and the
 * calibration rows (null where a value is -1); takes prov. */
cJSON *trace_info_json(const struct trace *tr, const struct trace_stats *s, const cJSON *source, cJSON *prov);

#endif
