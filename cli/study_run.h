/* One tail for the commands that run a study's plan (harness/reproduce.h):
 * `flashbed reproduce` and `flashbed sparsify study`. Runs the plan's steps
 * with flashbed's own path and this process's global options, drawing each
 * step on a terminal, then writes REPORT.md with the command's writer
 * (also after Ctrl-C or a failure: what finished), and says what ran.
 *
 * Return convention: the command's exit status (0; 130 interrupted, the
 * finished steps kept; 1 a step or the report failed), printed here. Not
 * thread-safe (the interrupt flag is the process's). */
#ifndef FLASHBED_CLI_STUDY_RUN_H
#define FLASHBED_CLI_STUDY_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "common/settings.h"
#include "harness/reproduce.h"

/* Writes REPORT.md of the plan (command_line: how it was run). 0 or -1. */
typedef int (*study_report_fn)(const struct repro_plan *p, const char *command_line, char *err, size_t errlen);

struct study_run_spec {
    const char *name;       /* the command, which prefixes its messages: "reproduce", "sparsify study" */
    const char *program;    /* flashbed's own path (study_own_path) */
    const char *out;        /* the study's folder: the report is written only where it holds reproduce.json */
    study_report_fn report;
    bool done_on_stdout;    /* the closing line on stdout, after the name (else as fb_info, on stderr) */
};

/* flashbed's own path (/proc/self/exe) into buf; -1 (printed, after name)
 * when it cannot be read. */
int study_own_path(const char *name, char *buf, size_t len);

/* Opens s->out as the study's result folder (plan->folder, closed again
 * before it returns), runs the plan's steps, then writes the report. */
int study_run(struct repro_plan *plan, const struct study_run_spec *s, const struct fb_settings *set);

#endif
