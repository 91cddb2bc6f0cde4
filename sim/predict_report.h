/* predict.json and predict.md, the result files of flashbed predict for a
 * list of policies priced under one configuration (sim/predict_list.h),
 * and the reader of what reproduce's tables take back from predict.json.
 * The format lives here, below both its writer (cli/cmd_predict.c, which
 * writes and prints what these return) and its reader
 * (harness/reproduce_tables.c), so the two cannot drift apart (issue 29).
 *
 * predict.json:
 *   "provenance"                     the caller's (referenced, not copied)
 *   "volume_source", "predictor_source", "prediction"
 *                                    only for a list of one policy: the
 *                                    shape predict.json had before lists
 *   "predictions": one entry per policy, in the list's order:
 *     "policy"                       the policy priced (window:auto as the
 *                                    window:K it chose)
 *     "window_auto"                  only when window:auto was asked:
 *                                    "asked", "window_k", "capacity_rows"
 *                                    (one layer's cache), "tokens",
 *                                    "chosen_from"
 *     "layout", "volume_source", "predictor_source"
 *     "prediction"                   the cost model's: "io_ms", "mem_ms",
 *                                    "compute_ms", their parts, totals,
 *                                    reads, throughput, rows and "dram"
 * predict.md: tables of latency, compute and flash reads, DRAM, with a row
 * per policy, then where each policy's predictor and volumes come from.
 *
 * No printing; thread-safe (no shared state). */
#ifndef FLASHBED_SIM_PREDICT_REPORT_H
#define FLASHBED_SIM_PREDICT_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "sim/predict_list.h"
#include "sim/run_summary.h"

/* predict.json's object for the n predictions of it (n >= 1), with prov
 * referenced as its "provenance" (prov stays the caller's, and must
 * outlive the object). The caller frees it with cJSON_Delete. */
cJSON *predict_report_json(const struct policy_prediction *it, size_t n, cJSON *prov);
/* A prediction's device terms per token (cost_model.h, on a profile with a
 * device) into d: bytes and counts up and down, row moves, launches,
 * syncs, their times and total_ms; predict.json's and table3.json's. */
void predict_device_json(cJSON *d, const struct cost_prediction *p);

/* predict.md's text for the n predictions s priced (heap: the caller
 * frees it), or NULL when out of memory. */
char *predict_report_md(const struct predict_setup *s, const struct policy_prediction *it, size_t n);

/* What reproduce's tables read back: the list's first entry. */
struct predict_first {
    bool predicted;              /* predictions[0] has a "prediction" */
    double part_ms[RUN_TOTAL];   /* its io_ms, mem_ms, compute_ms (run_summary's order); NAN where a key is
                                  * absent or not a number */
    double window_k;             /* window_auto's K; NAN when window:auto was not asked */
    double capacity_rows;        /* window_auto's rows of one layer's cache; NAN likewise */
};

/* Reads predictions[0] of the predict.json at path. 0, or -1 with err
 * naming the file when it cannot be read, is not JSON or has no
 * "predictions" entry. *out is set in every case, to nothing predicted
 * (predicted false, every number NAN) where the file does not say more,
 * so that a caller may take a file not written yet as not predicted. */
int predict_report_read_first(const char *path, struct predict_first *out, char *err, size_t errlen);

#endif
