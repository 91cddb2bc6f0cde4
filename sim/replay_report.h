/* Result files of a replay: replay.json (provenance + one object per
 * policy x layout), replay.csv, replay.md (a table in the paper's style),
 * and the window-size sweep behind the bytes-per-token-vs-K plot. One table
 * of fields feeds JSON and CSV so they cannot disagree. */
#ifndef FLASHBED_SIM_REPLAY_REPORT_H
#define FLASHBED_SIM_REPLAY_REPORT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "sim/replay.h"

/* One result as JSON; per_token adds the per-token arrays. */
cJSON *replay_result_json(const struct replay_result *r, bool per_token);

/* {"provenance": prov (taken), "trace": ..., "complete": ..., "results": [...]} */
cJSON *replay_report_json(const struct replay_result *r, size_t n, cJSON *prov, const char *trace_path,
                          bool complete);
char *replay_report_csv(const struct replay_result *r, size_t n);
char *replay_report_markdown(const struct replay_result *r, size_t n, const char *trace_path);

/* The window sweep: k (tokens kept besides the current one, the paper's k)
 * = 0..16 replayed as window:k+1, one series per layout. */
char *replay_window_sweep_csv(const struct replay_result *r, size_t n_k, size_t n_layouts);

#endif
