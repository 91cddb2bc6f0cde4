/* A measured run as flashbed run's run.json gives it (the "summary" the
 * command writes after its steady-state tokens), read once for the two
 * that compare with it: predict --compare and reproduce's tables. And the
 * comparison of a cost-model prediction with it, component by component
 * (the paper's Table 3: I/O, memory management, compute, their total;
 * errors as cost_rel_err gives them).
 * Returns 0, or -1 with err naming the file and the key; thread-safe. */
#ifndef FLASHBED_SIM_RUN_SUMMARY_H
#define FLASHBED_SIM_RUN_SUMMARY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "sim/cost_model.h"

enum { RUN_IO, RUN_MEM, RUN_COMPUTE, RUN_TOTAL, RUN_PARTS };
enum { RUN_DEVICE_KEYS = 5 };

struct run_summary {
    double part_ms[RUN_PARTS];       /* steady state per token; the total their sum */
    double window_k;                 /* NAN when absent: the policy kept no window */
    double capacity_rows;            /* per layer; NAN when absent (dense) */
    double predictor_ms, predictor_dram_bytes;
    double device[RUN_DEVICE_KEYS];  /* a device run's h2d_bytes, d2h_bytes, launches, syncs and h2d_ms
                                      * per token (run_device_keys); NAN when absent (a cpu run) */
    double read_ms;                  /* the reads' whole time of a run that overlapped them (a device's
                                      * ring, read-ahead; io_ms: their exposed part); NAN
                                      * when absent */
    bool verify;                     /* summary.verify.requested "on" (run --verify); absent, as in a run
                                      * from before verification existed: false, it checked nothing */
    double verify_ms;                /* summary.verify.verify_ms_per_token (inside mem_ms); NAN when absent */
    char active_source[32];          /* oracle, predictor, gate, gate-cal, teal, trace; "" when absent */
    char dram_budget[64];            /* --dram-budget as given; "none" */
    char layout[32];                 /* summary.layout: bundled, split, transposed, ...; "" when absent (dense) */
    char model[64], dtype[16];       /* provenance.model and .dtype; "" when absent */
    uint32_t shape[3];               /* provenance.shape: n_layers, d_model, d_ff; zeros when absent (a run
                                      * from before the shape was recorded) */
    cJSON *provenance;               /* the run's own (owned; run_summary_free) */
};

/* Reads path: every part must be a finite number >= 0; summary.verify.requested,
 * when there, "on" or "off". */
int run_summary_read(const char *path, struct run_summary *out, char *err, size_t errlen);
void run_summary_free(struct run_summary *s);

/* Whether the cost model can put a prediction beside the run at path: not a
 * run of input sparsity (layout transposed), whose reads the cost model
 * does not price as the run made them (it prices the two streams at packed
 * rows, within a share of the model; the run read ffn_t.bin's rows padded
 * to the direct-I/O block within its cache budget). 0, or -1 with err
 * saying what is missing and what counts the run's reads instead. */
int run_summary_check_comparable(const char *path, char *err, size_t errlen);

/* Whether a prediction priced at shape and dtype (--model, --dtype as given:
 * model_arg names them in the message) is of the run's model: the same
 * layers, d_model, d_ff and dtype. A run that did not record its shape is
 * checked by dtype alone. 0, or -1 with err naming both and what to give. */
int run_summary_check_shape(const struct run_summary *m, const char *path, const struct model_shape *shape,
                            const char *dtype, char *err, size_t errlen);

/* Names of the parts as run.json and compare.json spell them. */
extern const char *const run_part_keys[RUN_PARTS];
/* The device's counts per token as run.json and compare.json spell them,
 * and the uploads' device time. */
extern const char *const run_device_keys[RUN_DEVICE_KEYS];

/* A prediction beside a run: per part predicted, measured and the relative
 * error (predicted - measured) / measured (0 when nothing was measured);
 * the mean absolute error over the three components that were measured.
 * The cost model prices a token's reads serially; a run that overlapped
 * some of its reads with compute (read-ahead, a device's ring: read_ms
 * above io_ms) is compared by its reads' whole time and the serial sum of
 * its parts, its exposed I/O and its token's real time kept beside.
 * With a predictor or the gate choosing, its time and DRAM too (apart:
 * inside compute, and held); a device run against a profile with a
 * device, the device's counts per token too (sim/device_terms.h). */
struct run_comparison {
    double predicted[RUN_PARTS], measured[RUN_PARTS], rel_err[RUN_PARTS];
    double mape_pct;
    int overlapped;            /* the run hid part of its reads behind compute: measured[RUN_IO] is read_ms */
    double exposed_io_ms;      /* then the run's io_ms, the reads' part that was not hidden */
    double overlapped_total_ms; /* and the token's real time (io_ms + mem_ms + compute_ms) */
    int has_predictor;
    double predictor_ms[3], predictor_dram[3]; /* predicted, measured, rel_err */
    int has_verify;            /* the run checked its reads (summary.verify, requested on) */
    double verify_ms[3];       /* predicted, measured, rel_err: inside mem_ms, not in the total again */
    int has_device;            /* a device run priced on a profile with a device */
    double device[RUN_DEVICE_KEYS][3]; /* run_device_keys': predicted, measured, rel_err */
};

void run_compare(const struct cost_prediction *p, const struct run_summary *m, struct run_comparison *out);

/* A prediction "holds" on a run when its total is within this share of
 * the measured total (as reproduce's report judges its rows). */
#define RUN_COMPARE_HOLDS 0.15
/* A token shorter than this (ms) is mostly fixed per-token costs. */
#define RUN_COMPARE_SHORT_MS 2.0

/* The comparison's verdict in one paragraph: holds or misses, by how
 * much, and the component with the largest gap in ms. Writes at most len
 * bytes to buf (always terminated); returns buf. */
const char *run_compare_verdict(const struct run_comparison *c, char *buf, size_t len);

#endif
