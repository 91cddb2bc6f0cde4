/* flashbed run's bookkeeping and result files: what each token cost
 * (struct token_row) and, with what the run was set up with
 * (engine/run/run_setup.h), run.json (the format predict --compare reads),
 * run.md (the paper's Table 3 layout) and tokens.csv with its Fig. 8 plot.
 * Part of cli/: it writes files and prints run.md. */
#ifndef FLASHBED_CLI_RUN_REPORT_H
#define FLASHBED_CLI_RUN_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/settings.h"
#include "engine/model/model.h"
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
};

struct run_outcome {
    struct token_row *rows;
    int n_rows, n_prompt, n_gen;
    const char *stop;
    char error[512];
};

/* What run.json records besides the setup and the rows. */
struct run_report_extra {
    const char *mode;      /* --mode as given */
    int cold;              /* tokens summarized apart as the cold start */
    uint64_t held_bytes;   /* what the flash FFN holds in DRAM (ffn_flash_dram_bytes) */
    uint64_t oracle_bytes; /* the oracle's rows, apart (not counted in held_bytes) */
    uint64_t read_align;   /* ffn.bin's direct-I/O alignment (ffn_flash_read_align) */
    uint64_t predictor_bytes; /* of held_bytes, what chooses the neurons (predictor, gate rows) */
    uint64_t predictor_madds; /* its multiply-adds per token */
    bool plot;             /* also fig8.png and fig8.svg (gnuplot) */
    const struct fb_settings *settings; /* where plot's script is (read only when plot) */
};

/* Writes dir/run.json, dir/run.md and dir/tokens.csv (a row per token: the
 * per-token fields, the phase, and whether it is a cold token), made with
 * dir when missing, with x->plot also fig8.png and fig8.svg from tokens.csv
 * (plots/fig8_token_latency.gp: the paper's Fig. 8), and prints run.md on
 * stderr; takes prov. 0, or -1 (printed). */
int run_report_write(const char *dir, const struct model *m, const struct run_setup *p, const struct run_outcome *r,
                     const struct run_report_extra *x, cJSON *prov);

#endif
