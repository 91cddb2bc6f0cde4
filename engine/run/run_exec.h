/* flashbed run's measuring loop and its recording, over an engine built
 * from a run's setup (engine/run/run_setup.h):
 *
 *   run_exec          the decode loop (engine/forward/decode.h) with a row
 *                     of costs per computed position (struct token_row,
 *                     engine/run/run_report.h): the forward pass's time
 *                     and, with the flash FFN, its I/O, memory-management,
 *                     FFN, predictor and --check times and counts; compute
 *                     is the rest of the pass, attention the rest of
 *                     compute. The flash FFN is told before each pass
 *                     whether the token starts the sequence and whether it
 *                     was generated, which a recorded trace keeps;
 *   run_record_open   --record's trace writer, its metadata and source
 *                     taken from the model and the setup (--active teal:
 *                     channel sets beside the kept rows of down, no
 *                     predicted sets, chosen_by and the sparsify file).
 *
 * The loop measures what run_report_write then writes, so that
 * cli/cmd_run.c only draws the progress bar and writes the text, in the
 * per-token hook.
 * No printing. Failures return -1 (run_exec) or NULL (run_record_open)
 * with one line of why in err, written with err_set, which the caller
 * prefixes with the command and option ("run: ", "run --record: "); like
 * run_setup's, the one about a dense run names run's way out (--mode). Not
 * thread-safe: one run at a time on an engine; the hook runs on the
 * calling thread, between forward passes. */
#ifndef FLASHBED_ENGINE_RUN_EXEC_H
#define FLASHBED_ENGINE_RUN_EXEC_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/forward/decode.h"
#include "engine/forward/engine.h"
#include "engine/model/model.h"
#include "engine/run/run_report.h"
#include "engine/run/run_setup.h"
#include "traces/trace.h"

/* Told of each row once it is complete: the decode step it measured
 * (position, token, the token sampled from it) and the row itself. */
typedef void (*run_exec_hook)(void *ctx, const struct decode_step *step, const struct token_row *row);

struct run_exec_config {
    struct decode_config decode; /* the prompt, n and sampling, as decode_run takes them */
    bool dense;                  /* the engine's FFN is dense: no flash costs, nothing told per token */
    run_exec_hook token;         /* optional */
    void *ctx;                   /* the hook's */
};

/* Runs c->decode on e (built with ffn_flash over a setup's cfg, or
 * ffn_dense when c->dense) into *out, which it zeroes first: rows[0..n_rows)
 * (room for n_prompt + n; a run to the end computes n_prompt + n - 1),
 * n_prompt, n_gen and stop (decode_stop_name). Returns 0 when the loop ran,
 * whatever stopped it: an interruption ("interrupted"), or the flash FFN
 * failing, when out->error says why, stop is "error" and the last row, the
 * failed token's, holds its costs but no compute or attention split and
 * was not given to the hook; the rows are results either way (the caller
 * frees out->rows). Returns -1 with err, out->rows NULL and nothing to
 * report, when the rows cannot be allocated or decode_run fails (the
 * configuration does not fit e, or a pass whose answer would be wrong:
 * non-finite logits at any position, or no neuron needed in any layer,
 * engine/run/run_stop.h; after the hook saw the positions before). */
int run_exec(struct engine *e, const struct run_exec_config *c, struct run_outcome *out, char *err,
             size_t errlen);

/* Builds e over model m for setup p: the dense FFN for a dense run, else
 * the flash FFN with p->cfg (its record sink already set when recording).
 * 0, or -1 with err (engine_init_with's). */
int run_engine_init(struct engine *e, const struct fb_settings *set, const struct model *m,
                    const struct backend_ops *be, struct run_setup *p, int threads, int max_seq, char *err,
                    size_t errlen);

/* What run.json records of the built engine beside the setup and the rows:
 * the DRAM the flash FFN holds (caches, staging, its chooser; the oracle's
 * rows apart), ffn.bin's read alignment, the chooser's bytes and
 * multiply-adds per token, whether the FFN ran on a device whose memory
 * is not the host's. Zero (false) for a dense run. */
void run_engine_extra(struct engine *e, const struct model *m, const struct run_setup *p,
                      struct run_report_extra *x);

struct out_manifest;

/* Opens the trace that a run set up as p on m records to path: the model's
 * trace metadata, with predicted sets beside the true ones when a predictor
 * or the gate chooses, and a source JSON naming the model, the threshold,
 * the source and what the active sets are (a chooser's record without
 * --check holds its choice in their place, and says so). The caller hands
 * it to the flash FFN (trace_writer_sink as p->cfg.record), then closes it,
 * or aborts it when the run failed. NULL with err when p is dense (it
 * looks at no activations) or the file cannot be opened (err naming path,
 * not its temporary). path is claimed in folder, the command's result
 * folder (common/out_manifest.h; NULL: none). */
struct trace_writer *run_record_open(struct out_manifest *folder, const char *path, const struct model *m,
                                     const struct run_setup *p, char *err, size_t errlen);

#endif
