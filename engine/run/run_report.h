/* flashbed run's result files, from what the run was set up with
 * (engine/run/run_setup.h) and what each of its tokens cost (struct
 * token_row, filled by run_exec's decode loop, engine/run/run_exec.h):
 *
 *   run.json    provenance, a row per token and the summaries (steady
 *               state, cold, prompt, generated): the format sim/'s
 *               run_summary_read reads back for predict --compare and
 *               reproduce's tables;
 *   run.md      the steady state as the paper's Table 3, whose text also
 *               comes back to the caller, which prints it;
 *   tokens.csv  a row per token, and with a plot fig8.png and fig8.svg
 *               drawn from it (plots/fig8_token_latency.gp: the paper's
 *               Fig. 8).
 *
 * The writer lives in the run layer, beside the setup it reports, so that
 * cli/cmd_run.c only parses, calls and prints. No printing: run_report_write
 * returns 0, or -1 or -2 (below) with one line of why in err. It keeps no
 * state: calls for different folders may run on different threads (the
 * temporaries' clean-up list is thread-safe), though the peak RSS it
 * records is the whole process's. */
#ifndef FLASHBED_ENGINE_RUN_REPORT_H
#define FLASHBED_ENGINE_RUN_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/settings.h"
#include "engine/model/model.h"
#include "engine/run/run_reader.h"
#include "engine/run/run_setup.h"

/* One token's measured costs. */
struct token_row {
    int id;
    bool generated;
    double total_ms, io_ms, mem_ms, compute_ms, ffn_ms, predictor_ms, attention_ms;
    double bytes_read, reads, io_requests, dram_bytes_read, rows_inserted, rows_deleted, cache_rows, needed,
        overflow_rows, window_shrinks;
    double check_ms;              /* --check: the true activations' time, inside compute, apart from attention */
    double active, missed, extra; /* --check: truly active; active but not computed; chosen but not active */
    double read_ms, h2d_ms;       /* the reads' whole time (io_ms the exposed part of it); the
                                   * device's time in uploads (ffn_flash.h) */
    double h2d_bytes, row_moves;  /* uploaded to the device, rows moved there (ffn_flash.h); run.json has
                                   * them on a device whose memory is not the host's only */
    double d2h_bytes, launches, syncs; /* on such a device, the backend's counts over the token
                                        * (backend.h: struct backend_counts); run.json has them beside h2d_bytes */
    double layers_ahead;          /* layers whose reads went ahead (ffn_flash.h); run.json has it, and
                                   * read_ms, on the host with read-ahead only */
    double chan_bytes, chan_reads, down_bytes, down_reads, kept_channels; /* the transposed layout's two
                                   * streams (ffn_flash.h); run.json has them under that layout only */
    double read_retries;          /* reads tried again (ffn_flash.h); run.json's summary has their sum */
    double verify_ms, rows_verified, verify_retries; /* --verify (ffn_flash.h); run.json's
                                   * summary has their sums and verify_ms's mean */
    /* not in run.json: what the flash FFN gave the device's queue (ffn_flash.h), for sim/device_terms.h */
    double copies, staged_groups, append_groups, move_batches, upload_runs, ring_waits, read_waits, step_waits;
};

/* What the run's tokens gave: rows[0..n_rows), a row per computed position. */
struct run_outcome {
    struct token_row *rows;
    int n_rows, n_prompt, n_gen; /* n_prompt + n_gen: the tokens asked for (n_rows counts those computed) */
    const char *stop;            /* why decoding stopped (decode_stop_name), run.json's stop_reason */
    char error[512];             /* the run's failure, if any (run.json's summary.error) */
};

struct out_manifest;

/* What run.json records besides the setup and the rows. */
struct run_report_extra {
    const char *mode;      /* --mode as given */
    int cold;              /* tokens summarized apart as the cold start */
    uint64_t held_bytes;   /* what the flash FFN holds in DRAM (ffn_flash_dram_bytes) */
    uint64_t oracle_bytes; /* the oracle's rows, apart (not counted in held_bytes) */
    uint64_t read_align;   /* ffn.bin's direct-I/O alignment (ffn_flash_read_align) */
    uint64_t predictor_bytes; /* of held_bytes, what chooses the neurons (predictor, gate rows) */
    uint64_t predictor_madds; /* its multiply-adds per token */
    bool device;           /* the backend's memory is not the host's: run.json's rows and summaries
                            * also give h2d_bytes and row_moves (a cpu run's files keep their keys) */
    uint64_t device_bytes; /* device: what the flash FFN holds in device memory (ffn_flash_device_bytes) */
    bool staging_pinned;   /* device: its staging ring is pinned (else ordinary memory, slower uploads) */
    bool read_ahead;       /* on the host, layers' reads went ahead (ffn_flash_reads_ahead): the rows
                            * also give read_ms, and io_ms is the exposed part of it */
    bool transposed;       /* input sparsity's two streams (the transposed layout): the rows also give
                            * each stream's bytes and reads and the channels kept */
    float suggested_threshold;   /* the oracle on a SiLU or GELU FFN: the median |h| of the first tokens
                                  * (ffn_flash_threshold_cut), which run.md suggests when every neuron
                                  * came out active; -1 otherwise */
    uint64_t suggested_from;     /* how many values it is the median of */
    bool plot;             /* also fig8.png and fig8.svg (gnuplot) */
    const struct run_reader_choice *reader; /* --io-engine auto's measurements, or NULL */
    const struct fb_settings *settings; /* where plot's script is (read only when plot) */
    struct out_manifest *folder; /* the command's result folder the files are claimed in
                                  * (common/out_manifest.h; NULL: none) */
};

/* Writes dir/run.json, dir/run.md and dir/tokens.csv (a row per token: the
 * per-token fields, the phase, and whether it is a cold token), made with
 * dir when missing, with x->plot also fig8.png and fig8.svg from tokens.csv.
 * Takes prov (freed on every path). *md gets run.md's text (caller frees)
 * whenever it was made, on a failure too, else NULL: the caller prints it
 * after the error, as run always has. Returns 0; -1 when the folder or a
 * file could not be written (the files after it are not tried); -2 when
 * the three files were written but the plot could not be drawn, so that
 * the caller can name the option (run --plot). */
int run_report_write(const char *dir, const struct model *m, const struct run_setup *p, const struct run_outcome *r,
                     const struct run_report_extra *x, cJSON *prov, char **md, char *err, size_t errlen);

#endif
