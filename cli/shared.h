/* What the commands share. The library reports a failure in a buffer and
 * prints nothing; these helpers do the library's work and print why it
 * failed, the way every command does ("flashbed: error: ..."). */
#ifndef FLASHBED_CLI_SHARED_H
#define FLASHBED_CLI_SHARED_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "cli/progress_bar.h"

/* The result folder: out when given, else results/<command>-<timestamp>,
 * with -2, -3, ... added when a folder of that name exists already. */
void result_dir_name(const char *out, const char *command, char *dir, size_t len);

/* A result file written whole or not at all (common/atomic_file.h);
 * 0, or -1 with the reason printed. */
struct out_manifest;
int write_json_file(struct out_manifest *folder, const char *path, const cJSON *json);

/* The global options every step of a plan (reproduce, sparsify study) gets:
 * what this process runs with, into globals (NULL-ended; min_parallel holds
 * a number they point at). */
struct fb_settings;
void cli_step_globals(const struct fb_settings *set, char *min_parallel, size_t len, const char *globals[8]);
int write_text_file(struct out_manifest *folder, const char *path, const char *text);
/* DIR/json_name (json) and DIR/names[i] (texts[i]; NULL: out of memory)
 * appear together, or none changes (common/atomic_file.h's set); 0, or -1
 * after printing why. */
int write_file_set(struct out_manifest *folder, const char *dir, const cJSON *json, const char *json_name,
                   const char *const *names, const char *const *texts, int n);

/* The checks of common/out_path.h, done right after option parsing so a
 * bad output path is refused before any work: the refusal is printed as
 * "WHAT: why" (WHAT names the command and option, e.g. "replay --out").
 * 0, or -1 after printing. */
int out_dir_ok(const char *what, const char *dir);
/* out_dir_ok for a command's result folder (--out), which it then opens as
 * *folder (common/out_manifest.h), passed to every writer that writes into
 * it: a file of the user's at a path the command writes is refused, naming
 * it, unless force (the command's --force); files of its earlier runs not
 * written this time are removed when it closes the folder (keep_old:
 * never, a study that resumes). 0, or -1 printed (*folder NULL). */
#define FORCE_HELP                                                                                                \
    "replace files of yours in --out at the paths this command writes (refused without it: flashbed replaces "   \
    "only files it wrote there, listed in the folder's .flashbed-files)"
/* names (NULL-terminated, may be NULL): the files it will surely write,
 * checked now so that a refusal comes before the long work; names[0] its
 * JSON result, whose provenance marks a folder flashbed wrote before
 * folders had a list (then these names are taken as flashbed's). */
int out_result_dir_ok(const char *what, const char *dir, bool force, bool keep_old, const char *const *names,
                      struct out_manifest **folder);
/* The command is done with folder (NULL: none opened): out_manifest_close.
 * Returns rc, the command's exit status, or 1 where that was 0 and closing
 * failed (printed). */
int out_result_dir_close(struct out_manifest *folder, int rc);
int out_new_dir_ok(const char *what, const char *dir);
int out_file_ok(const char *what, const char *path, int make_parent);
/* Makes the missing folders above path (common/out_path.h's
 * out_parents_make), the failure printed as "WHAT: why"; p then goes to
 * out_parents_keep or out_parents_undo. */
struct out_parents;
int out_parents_ok(const char *what, const char *path, struct out_parents *p);
/* out_file_ok, and path is none of the command's input files (NULL
 * entries: options not given) nor a file of its model folder (NULL: none). */
int out_file_ok_beside(const char *what, const char *path, int make_parent, const char *const *inputs,
                       size_t n_inputs, const char *model_dir);

/* A command's option for one of the settings a sweep can refuse
 * (harness/sweep.h); tables end with {0, NULL}. */
struct sweep_flag {
    unsigned setting;
    const char *flag;
};

/* Checks and runs a sweep (cmd_sweep.c; calibrate measures flash through
 * it), printing a refusal as "CMD --option: why", the notes and the
 * summary. Takes params. Returns 0, 1 on error, 130 when interrupted.
 * *folder: c->out_dir opened as the result folder (NULL when it was not),
 * for the caller to close with out_result_dir_close when it is done. */
struct sweep_config;
int run_sweep(const char *cmd, const struct sweep_flag *flags, const struct sweep_config *c, cJSON *params, bool force,
              struct out_manifest **folder);

/* The bar a library's progress_report draws (common/progress.h): begun by
 * its first report, a new label beginning it again; the caller ends it
 * once the call returns. */
struct cli_progress {
    struct progress bar;
    bool begun;
    char label[64];
};
struct progress_report cli_progress_report(struct cli_progress *p);
void cli_progress_end(struct cli_progress *p);

#endif
